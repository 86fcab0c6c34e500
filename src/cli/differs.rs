//! "What differs": every metric whose paired difference between some variant and the baseline
//! is significant, per scope (system, each hop, each tenant); the rest collapse to one line.

use crate::metrics::catalogue::{Better, Metric, Scope};
use crate::metrics::stats::{Stat, StatRow};
use crate::report::values;
use crate::runner::compare::difference;
use crate::runner::Study;
use std::fmt::Write;

/// Picks one scope's row out of a variant.
type RowPick = dyn Fn(&crate::runner::VariantResult) -> Option<&StatRow>;

/// Metrics that describe the run rather than compare variants.
const SKIP: [Metric; 3] = [Metric::Events, Metric::Requests, Metric::CapacityPerS];

/// True when `a` and `b` differ: the paired 95% interval of a − b excludes zero (with one pair,
/// any difference), or one has a value where the other has none.
fn differs(a: &Stat, b: &Stat) -> bool {
    if a.values.len() != b.values.len() {
        return false;
    }
    let nulls_differ = a.values.iter().zip(&b.values).any(|(x, y)| x.is_some() != y.is_some());
    let d = difference(a, b).paired;
    let n = d.values.iter().flatten().count();
    let significant = match (d.mean, d.ci95) {
        (Some(m), _) if n == 1 => m != 0.0,
        (Some(_), Some([lo, hi])) => lo > 0.0 || hi < 0.0,
        _ => false,
    };
    nulls_differ || significant
}

/// The "what differs" section of stdout (empty with a single variant).
pub fn differs_text(study: &Study) -> String {
    let mut out = String::new();
    if study.variants.len() < 2 {
        return out;
    }
    let first = &study.variants[0];
    let mut scopes: Vec<(String, Scope, Box<RowPick>)> =
        vec![("system".into(), Scope::Global, Box::new(|v| Some(&v.metrics)))];
    let several_hops = first.hops.len() > 1;
    for (h, (name, _)) in first.hops.iter().enumerate() {
        scopes.push((format!("hop {name}"), Scope::Hop, Box::new(move |v| v.hops.get(h).map(|x| &x.1))));
    }
    let several_tenants = first.tenants.len() > 1;
    for (t, (name, _)) in first.tenants.iter().enumerate() {
        scopes.push((format!("tenant {name}"), Scope::Tenant, Box::new(move |v| v.tenants.get(t).map(|x| &x.1))));
    }
    let mut same: Vec<String> = Vec::new();
    let _ = writeln!(out, "What differs (paired 95% intervals vs {}, same seeds):", first.name);
    let mut any = false;
    for (label, scope, pick) in &scopes {
        // A lone hop or tenant repeats the system figures: show only what the system row lacks.
        let lone = match scope {
            Scope::Hop => !several_hops,
            Scope::Tenant => !several_tenants,
            Scope::Global => false,
        };
        let Some(base_row) = pick(first) else { continue };
        for (metric, base) in base_row.iter() {
            if SKIP.contains(metric) || (lone && metric.def().scopes.global) {
                continue;
            }
            let others: Vec<(&str, &Stat)> =
                study.variants.iter().filter_map(|v| Some((v.name.as_str(), pick(v)?.get(*metric)?))).collect();
            if others.iter().skip(1).any(|(_, s)| differs(s, base)) {
                any = true;
                let cells: Vec<String> =
                    others.iter().map(|(n, s)| format!("{n} {}", values::value(*metric, Some(s)))).collect();
                let arrow = match metric.def().better {
                    Better::Lower => " (lower is better)",
                    Better::Higher => " (higher is better)",
                    Better::Neither => "",
                };
                let name = metric.def().label.trim_end_matches(" (s)");
                let _ = writeln!(out, "  {label} · {name}{arrow}: {}", cells.join(" | "));
            } else if *scope == Scope::Global {
                same.push(metric.name().to_string());
            }
        }
    }
    if !any {
        let _ = writeln!(out, "  no metric differs significantly between the variants");
    }
    if !same.is_empty() {
        let _ = writeln!(out, "  equal in every variant (system): {}", same.join(", "));
    }
    out
}
