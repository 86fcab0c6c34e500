//! Validation of a service or network `dist` table: the kind, the fields it reads, its values.

use super::checks::{unknown, V};
use super::error::Invalid;
use super::kind_fields::{refuse_unread, DistFields};
use super::raw::{Dur, RawDist};
use crate::model::Dist;

pub(super) fn dist(d: &RawDist, at: &str) -> V<Dist> {
    let field = |f: &str| format!("{at}.{f}");
    let need = |v: Option<Dur>, f: &str| {
        v.map(|d| d.0).ok_or_else(|| Invalid::at(at, format!("dist `{}` needs `{f}`", d.dist)))
    };
    let name = super::tagged::read_name::<DistName>(&d.dist)
        .map_err(|names| unknown(&field("dist"), "dist", &d.dist, names))?;
    refuse_unread::<DistFields>("dist", &d.dist, &d.written(), at)?;
    match name {
        DistName::Empirical => super::empirical::dist(d, at),
        DistName::Lognormal
            if d.p50.is_some()
                || d.p75.is_some()
                || d.p90.is_some()
                || d.p95.is_some()
                || d.p99.is_some()
                || d.p999.is_some() =>
        {
            Ok(super::empirical::fitted_lognormal(d, at)?.expect("percentiles are given"))
        }
        name @ (DistName::Constant | DistName::Exponential) => {
            let mean = need(d.mean, "mean")?;
            Ok(if name == DistName::Constant { Dist::Constant { mean } } else { Dist::Exponential { mean } })
        }
        name @ (DistName::Lognormal | DistName::NormalAbs) => {
            let (mean, sd) = (need(d.mean, "mean")?, need(d.sd, "sd")?);
            if name == DistName::Lognormal {
                if mean == 0 {
                    return Err(Invalid::at(&field("mean"), "is 0; a log-normal needs a positive mean"));
                }
                Ok(Dist::LogNormal { mean, sd })
            } else {
                Ok(Dist::NormalAbs { mean, sd })
            }
        }
        DistName::Load => {
            Ok(Dist::Load { base: need(d.base, "base")?, per_inflight: need(d.per_inflight, "per_inflight")? })
        }
    }
}

/// A service or network `dist` as written (the validated one is `model::Dist`); the names
/// listed in messages come from this type, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DistName {
    Constant,
    Exponential,
    Lognormal,
    NormalAbs,
    Load,
    Empirical,
}
