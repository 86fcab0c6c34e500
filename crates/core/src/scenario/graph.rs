//! Call graphs and connection pools in the scenario file (docs/MODEL.md, "Call graphs
//! and connection pools"). A scenario is a *chain* (hop i calls hop i+1 with its
//! `downstream_policy`) unless some hop has `calls`; then it is a *graph*: every hop lists its
//! own calls, `downstream_policy` is refused, and the first `[[hop]]` is the entry point. Either
//! way validation produces `HopSpec::calls`, a chain hop's being its one edge.

use super::checks::{count, positive, unknown, V};
use super::error::Invalid;
use super::raw::{RawHop, RawScenario};
use crate::engine::Nanos;
use crate::model::{CallsMode, Edge, HopSpec, PoolSpec, RetryPolicy, SimSpec, TenantSpec};

/// Most connections a pool may have.
pub const POOL_SIZE_MAX: i64 = 10_000_000;

/// The edges of every hop when the scenario is a graph (`None` for a chain), with names,
/// probabilities and duplicates checked and the graph proved acyclic.
pub(super) fn edges(raw: &RawScenario, policy_names: &[&str]) -> V<Option<Vec<Vec<Edge>>>> {
    let Some(first) = raw.hop.iter().find(|h| h.calls.is_some()) else { return Ok(None) };
    let hop_names: Vec<&str> = raw.hop.iter().map(|h| h.name.as_str()).collect();
    let mut out = Vec::with_capacity(raw.hop.len());
    for h in &raw.hop {
        if h.downstream_policy.is_some() {
            return Err(Invalid::at(
                &format!("hop.{}.downstream_policy", h.name),
                format!("this scenario describes its calls with `calls` (hop `{}` has them), so the chain's downstream_policy is not used; write this hop's call as calls = [{{ hop = \"NEXT\", policy = \"POLICY\" }}]", first.name),
            ));
        }
        out.push(hop_edges(h, &hop_names, policy_names)?);
    }
    acyclic(&hop_names, &out)?;
    bounded_fan_out(&hop_names, &out)?;
    Ok(Some(out))
}

/// Most hop visits one request may make through the call graph, retries aside.
pub const VISITS_PER_REQUEST_MAX: f64 = 1_000_000.0;

/// Refuses a graph whose fan-out multiplies level after level: the expected visits of one
/// request to every hop (from the entry hop, each call weighted by its probability, before any
/// retry) above [`VISITS_PER_REQUEST_MAX`]. A diamond repeated 30 times reaches its last hops
/// along 2^30 paths: every request would make a billion calls, and the run never ends.
fn bounded_fan_out(names: &[&str], edges: &[Vec<Edge>]) -> V<()> {
    // Hops in an order where every caller comes before the hops it calls (the graph is acyclic).
    fn post_order(u: usize, edges: &[Vec<Edge>], seen: &mut [bool], out: &mut Vec<usize>) {
        seen[u] = true;
        for e in &edges[u] {
            if !seen[e.hop] {
                post_order(e.hop, edges, seen, out);
            }
        }
        out.push(u);
    }
    let mut order = Vec::with_capacity(names.len());
    post_order(0, edges, &mut vec![false; names.len()], &mut order);
    let mut visits = vec![0.0f64; names.len()];
    visits[0] = 1.0;
    for &u in order.iter().rev() {
        for e in &edges[u] {
            visits[e.hop] += visits[u] * e.probability;
        }
    }
    let total: f64 = visits.iter().sum();
    if total > VISITS_PER_REQUEST_MAX {
        let (most, n) =
            visits.iter().enumerate().fold((0, 0.0), |best, (h, &v)| if v > best.1 { (h, v) } else { best });
        return Err(Invalid::at(
            &format!("hop.{}", names[most]),
            format!(
                "one request reaches this hop {n:.3e} times through the calls (the graph makes {total:.3e} calls per request before any retry; at most {VISITS_PER_REQUEST_MAX:.0e}): fan-out multiplies at every level of calls; remove calls, or lower their probability"
            ),
        ));
    }
    Ok(())
}

fn hop_edges(h: &RawHop, hop_names: &[&str], policy_names: &[&str]) -> V<Vec<Edge>> {
    let mut edges: Vec<Edge> = Vec::new();
    for (j, c) in h.calls.iter().flatten().enumerate() {
        let at = |field: &str| format!("hop.{}.calls.{j}.{field}", h.name);
        let hop =
            hop_names.iter().position(|n| *n == c.hop).ok_or_else(|| unknown(&at("hop"), "hop", &c.hop, hop_names))?;
        let policy = policy_names
            .iter()
            .position(|n| *n == c.policy)
            .ok_or_else(|| unknown(&at("policy"), "policy", &c.policy, policy_names))?;
        let probability = c.probability.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&probability) {
            return Err(Invalid::at(
                &at("probability"),
                format!("is {probability}; the chance that a served attempt makes this call must be within [0, 1]"),
            ));
        }
        if let Some(k) = edges.iter().position(|e| e.hop == hop) {
            return Err(Invalid::at(
                &at("hop"),
                format!("hop `{}` calls `{}` twice (calls {k} and {j}); merge them into one call", h.name, c.hop),
            ));
        }
        edges.push(Edge { hop, policy, probability, required: c.required.unwrap_or(true), stage: j as u32 });
    }
    Ok(edges)
}

/// Refuses a cycle, naming its path (`api → svc → api`): a job would wait on itself.
fn acyclic(names: &[&str], edges: &[Vec<Edge>]) -> V<()> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(u: usize, names: &[&str], edges: &[Vec<Edge>], marks: &mut [Mark], path: &mut Vec<usize>) -> V<()> {
        marks[u] = Mark::OnPath;
        path.push(u);
        for e in &edges[u] {
            match marks[e.hop] {
                Mark::OnPath => {
                    let start = path.iter().position(|&p| p == e.hop).expect("on the path");
                    let cycle: Vec<&str> = path[start..].iter().chain([&e.hop]).map(|&p| names[p]).collect();
                    return Err(Invalid::at(
                        &format!("hop.{}.calls", names[u]),
                        format!("the calls form a cycle: {}; a call graph must be acyclic (a job would wait on itself): remove one of these calls", cycle.join(" → ")),
                    ));
                }
                Mark::New => visit(e.hop, names, edges, marks, path)?,
                Mark::Done => {}
            }
        }
        path.pop();
        marks[u] = Mark::Done;
        Ok(())
    }
    let mut marks = vec![Mark::New; names.len()];
    for u in 0..names.len() {
        if marks[u] == Mark::New {
            visit(u, names, edges, &mut marks, &mut Vec::new())?;
        }
    }
    Ok(())
}

/// The longest deadline of the policies calling hop `h` in a graph (clients' for the entry
/// point): the window an `idempotency.ttl = "window…"` at `h` derives from.
pub(super) fn caller_deadline(
    edges: &[Vec<Edge>],
    h: usize,
    policies: &[RetryPolicy],
    tenants: &[TenantSpec],
) -> Option<Nanos> {
    let clients = tenants.iter().filter(|_| h == 0).filter_map(|t| policies[t.policy].deadline);
    let hops = edges.iter().flatten().filter(|e| e.hop == h).filter_map(|e| policies[e.policy].deadline);
    clients.chain(hops).max()
}

/// Fills each hop's `calls` (a chain hop's one edge from its `downstream_policy`), `calls_mode`
/// and `pool`.
pub(super) fn attach(hops: &mut [HopSpec], raw: &[RawHop], graph: Option<Vec<Vec<Edge>>>) -> V<()> {
    let n = hops.len();
    let mut graph = graph;
    for (i, (hop, h)) in hops.iter_mut().zip(raw).enumerate() {
        let at = |field: &str| format!("hop.{}.{field}", h.name);
        hop.calls = match graph.as_mut() {
            Some(g) => std::mem::take(&mut g[i]),
            None => hop
                .downstream_policy
                .filter(|_| i + 1 < n)
                .map(|policy| Edge { hop: i + 1, policy, probability: 1.0, required: true, stage: 0 })
                .into_iter()
                .collect(),
        };
        // A register writes neither `calls` nor `downstream_policy` (`hop_kind.rs` refuses them),
        // so it has no edge here.
        hop.calls_mode = calls_mode(h, &at)?;
        stages(hop, h, &at)?;
        hop.pool = match &h.pool {
            None => None,
            Some(_) if hop.calls.is_empty() => {
                return Err(Invalid::at(
                    &at("pool"),
                    format!("hop `{}` makes no downstream calls, so its connection pool would never be used; remove it (a pool belongs to the calling hop)", h.name),
                ))
            }
            Some(p) => Some(PoolSpec {
                size: count(p.size, &at("pool.size"), 1, POOL_SIZE_MAX)? as u32,
                acquire_timeout: p
                    .acquire_timeout
                    .map(|d| {
                        positive(d, &at("pool.acquire_timeout")).map_err(|_| {
                            Invalid::at(&at("pool.acquire_timeout"), "is 0; to fail at once when no connection is free, set pool.queue_limit = 0 instead")
                        })
                    })
                    .transpose()?,
                queue_limit: count(p.queue_limit.unwrap_or(i64::from(u32::MAX)), &at("pool.queue_limit"), 0, i64::from(u32::MAX))?
                    as u32,
            }),
        };
    }
    Ok(())
}

fn calls_mode(h: &RawHop, at: &dyn Fn(&str) -> String) -> V<CallsMode> {
    let staged = h.calls.iter().flatten().any(|c| c.stage.is_some());
    match (h.calls_mode.as_deref(), h.calls.is_some()) {
        (None, _) if staged => Ok(CallsMode::Stages),
        (None, _) => Ok(CallsMode::Sequence),
        (Some(_), false) => Err(Invalid::at(&at("calls_mode"), "is only used with `calls`; list the hop's calls or remove it")),
        (Some(_), true) if staged => Err(Invalid::at(
            &at("calls_mode"),
            "is set but the calls have a `stage`: give each call a stage (calls of one stage run in parallel, stages in order) or use calls_mode, not both",
        )),
        (Some(name), true) => match super::tagged::read_name(name) {
            Ok(WrittenCallsMode::Sequence) => Ok(CallsMode::Sequence),
            Ok(WrittenCallsMode::Parallel) => Ok(CallsMode::Parallel),
            Err(names) => Err(unknown(&at("calls_mode"), "calls mode", name, names)),
        },
    }
}

/// The `calls_mode` a scenario may write ([`CallsMode::Stages`] follows from the calls' `stage`);
/// the names listed in messages come from this type.
#[derive(Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum WrittenCallsMode {
    Sequence,
    Parallel,
}

/// Each edge's stage: its position (`sequence`), 0 (`parallel`) or as written (stages, which
/// every call must then have, in non-decreasing order).
fn stages(hop: &mut HopSpec, h: &RawHop, at: &dyn Fn(&str) -> String) -> V<()> {
    let raw_calls = h.calls.as_deref().unwrap_or(&[]);
    for (j, edge) in hop.calls.iter_mut().enumerate() {
        edge.stage = match hop.calls_mode {
            CallsMode::Sequence => j as u32,
            CallsMode::Parallel => 0,
            CallsMode::Stages => {
                let field = at(&format!("calls.{j}.stage"));
                let Some(stage) = raw_calls[j].stage else {
                    return Err(Invalid::at(
                        &at(&format!("calls.{j}")),
                        "has no `stage` while other calls of the hop have one; give every call a stage",
                    ));
                };
                count(stage, &field, 0, 1_000_000)? as u32
            }
        };
    }
    if let Some(j) = (1..hop.calls.len()).find(|&j| hop.calls[j].stage < hop.calls[j - 1].stage) {
        return Err(Invalid::at(
            &at(&format!("calls.{j}.stage")),
            format!(
                "is {} but the call before it has stage {}; list the calls in stage order",
                hop.calls[j].stage,
                hop.calls[j - 1].stage
            ),
        ));
    }
    Ok(())
}

/// The hops every request passes through: the entry point and the hops it reaches by required
/// calls made with probability 1 (every hop of a chain).
pub(crate) fn always_called(spec: &SimSpec) -> Vec<bool> {
    let mut must = vec![false; spec.hops.len()];
    let mut stack = vec![0];
    must[0] = true;
    while let Some(u) = stack.pop() {
        for e in spec.hops[u].calls.iter().filter(|e| e.required && e.probability >= 1.0) {
            if !must[e.hop] {
                must[e.hop] = true;
                stack.push(e.hop);
            }
        }
    }
    must
}

/// Hops that no hop reachable from the entry point calls: they receive no traffic. A warning,
/// not an error, so that a variant can switch a call off (`calls = []`) and keep the hop.
pub(crate) fn warnings(spec: &SimSpec) -> Vec<String> {
    let mut reached = vec![false; spec.hops.len()];
    let mut stack = vec![0];
    reached[0] = true;
    while let Some(u) = stack.pop() {
        for e in &spec.hops[u].calls {
            if !reached[e.hop] {
                reached[e.hop] = true;
                stack.push(e.hop);
            }
        }
    }
    (0..spec.hops.len())
        .filter(|&h| !reached[h])
        .map(|h| {
            format!(
                "hop `{}` is not reachable from the entry point `{}` (the first [[hop]]) through any calls: it receives no traffic",
                spec.hops[h].name, spec.hops[0].name
            )
        })
        .collect()
}
