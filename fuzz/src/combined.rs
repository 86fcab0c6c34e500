//! Random *valid* scenarios that combine features (issue 35): replicas and balancers, health
//! checks and outlier ejection, chains and call graphs, caches, connection pools, hedging,
//! cancellation, every queue discipline and admission limit, shedding, budgets, breakers,
//! idempotency stores, load-dependent latency, autoscaling of workers and of replicas, and
//! faults of every kind (on whole hops or on one replica) — small ones (a few clients, a horizon
//! of one or two seconds), so that thousands run in a minute.
//!
//! The generator reads its decisions from a [`Choices`] stream: a list of numbers where a number
//! past the end reads as 0, and 0 always means "the simplest": no feature, the first kind, the
//! smallest count. So the proptest strategy (`tests/combined.rs`, a vector of numbers) shrinks a
//! failing scenario towards a plain one, and the libFuzzer target (`fuzz/fuzz_targets/combined.rs`,
//! the input bytes) explores it by mutation, both through this one function.
//!
//! [`check`] validates the text (a refusal is a bug of the generator: it must only write valid
//! scenarios) and runs every replication with the engine's conservation assertions on: every
//! request ends once, connections, workers and in-flight counts return to zero, no attempt or
//! live request is left behind, no live request is pruned (`model::sim`, `Simulation::finish`).

use retrystorm::model::sim;
use retrystorm::scenario::Scenario;

/// Decisions for the generator: a number past the end of the list reads as 0 (the simplest).
pub struct Choices<'a> {
    values: &'a [u32],
    at: usize,
}

impl<'a> Choices<'a> {
    pub fn new(values: &'a [u32]) -> Choices<'a> {
        Choices { values, at: 0 }
    }

    /// A number in `0..n` (0 when the list is exhausted).
    pub fn below(&mut self, n: u32) -> u32 {
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        if n == 0 {
            0
        } else {
            v % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability about 1/`one_in` (false when exhausted).
    pub fn one_in(&mut self, one_in: u32) -> bool {
        self.below(one_in) == one_in - 1
    }

    /// One of `items` (the first when exhausted).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u32) as usize]
    }
}

/// Bytes as a choice list (two bytes a number): the libFuzzer target's input.
#[allow(dead_code)] // used by the fuzz target, not the test
pub fn choices_of_bytes(data: &[u8]) -> Vec<u32> {
    data.chunks(2).map(|c| c.iter().fold(0u32, |v, &b| (v << 8) | u32::from(b))).collect()
}

fn ms(v: u32) -> String {
    format!("\"{v}ms\"")
}

/// A service or network time of a few milliseconds.
fn dist(c: &mut Choices, allow_zero: bool) -> String {
    let mean = c.range(u32::from(!allow_zero), 4);
    match c.below(4) {
        0 => format!("{{ dist = \"exponential\", mean = {} }}", ms(mean.max(1))),
        1 => format!("{{ dist = \"constant\", mean = {} }}", ms(mean)),
        2 => format!("{{ dist = \"lognormal\", mean = {}, sd = {} }}", ms(mean.max(1)), ms(c.range(0, 3))),
        _ => format!("{{ dist = \"load\", base = {}, per_inflight = {} }}", ms(mean), ms(c.range(0, 1))),
    }
}

const JITTERS: [&str; 6] = ["full", "none", "equal", "decorrelated", "exponential", "proportional"];
const BUDGETS: [&str; 7] =
    ["aws_quota", "grpc_throttle", "finagle", "ratio", "adaptive_throttle", "token_bucket", "concurrent_retries"];
const SCOPES: [&str; 3] = ["client", "tenant", "global"];

/// Policy `p{index}`: retries, timeouts, deadline (and its propagation), cancellation, hedging
/// (fixed or quantile delay, with or without the throttle), budgets and breakers.
fn policy(c: &mut Choices, index: usize) -> String {
    let jitter = c.pick(&JITTERS);
    let mut t = format!(
        "[policy.p{index}]\njitter = \"{jitter}\"\nbase = {}\nmax_attempts = {}\n",
        ms(c.range(1, 20)),
        c.range(1, 5)
    );
    if jitter == "proportional" {
        t += "ratio = 0.5\n";
    }
    if !c.one_in(4) {
        t += &format!("attempt_timeout = {}\n", ms(c.range(1, 60)));
    }
    if c.one_in(3) {
        t += &format!("deadline = {}\n", ms(c.range(5, 400)));
        if c.one_in(2) {
            t += "deadline_mode = \"propagate\"\n";
        }
    }
    if c.one_in(2) {
        t += "cancel_on_timeout = true\n";
    }
    let (mut hedge, mut throttle) = (String::new(), None);
    if c.one_in(2) {
        let after = match c.below(3) {
            0 => "\"1ns\"".to_string(),
            1 => ms(c.range(1, 10)),
            _ => format!("\"p{}\"", c.range(50, 99)),
        };
        let share = f64::from(c.range(1, 10)) / 10.0;
        hedge = format!("hedge = {{ after = {after}, max_share = {share}");
        if c.one_in(3) {
            throttle = Some((c.range(1, 20), c.one_in(2)));
        }
    }
    let budget = c.one_in(3).then(|| (c.pick(&BUDGETS), c.pick(&SCOPES)));
    if !hedge.is_empty() {
        // A `grpc_throttle` budget is the hedges' throttle too (gRFC A6: one bucket); only
        // `charge_unanswered` may then be written in `hedge.throttle`.
        match (throttle, budget) {
            (Some((_, charge)), Some(("grpc_throttle", _))) => {
                hedge += &format!(", throttle = {{ charge_unanswered = {charge} }}");
            }
            (Some((tokens, charge)), _) => {
                hedge += &format!(
                    ", throttle = {{ max_tokens = {tokens}, token_ratio = 0.1, charge_unanswered = {charge} }}"
                );
            }
            (None, _) => {}
        }
        t += &hedge;
        t += " }\n";
    }
    if let Some((kind, scope)) = budget {
        t += &format!("budget = {{ kind = \"{kind}\", scope = \"{scope}\" }}\n");
    }
    if c.one_in(3) {
        t += &format!(
            "breaker = {{ scope = \"{}\", window = \"200ms\", min_calls = {}, open_for = {}, retries_only = {} }}\n",
            c.pick(&SCOPES),
            c.range(1, 10),
            ms(c.range(10, 300)),
            c.one_in(3)
        );
    }
    t
}

const DISCIPLINES: [&str; 5] = ["fifo", "lifo", "adaptive_lifo", "codel", "deadline_drop"];
const BALANCERS: [&str; 6] = [
    "round_robin",
    "random",
    "least_connections",
    "power_of_two",
    "least_connections_random",
    "least_connections_first",
];

/// The shape of hop `h` decided before its text (its faults need to know it).
#[derive(Clone, Copy)]
struct HopShape {
    cache: bool,
    occ: bool,
    replicas: u32,
    /// Replicas the hop may have (autoscaled replicas: its `max`).
    replicas_max: u32,
}

/// The overload, replica and scaling fields of a service hop.
fn service_hop_fields(c: &mut Choices, shape: HopShape) -> String {
    let workers = c.range(1, 4);
    let mut t = format!("workers = {workers}\nservice = {}\n", dist(c, false));
    if c.one_in(3) {
        t += &format!("queue_limit = {}\n", c.range(0, 30));
    }
    if c.one_in(3) {
        t += "scheduling = \"fair\"\n";
    }
    let discipline = c.pick(&DISCIPLINES);
    if discipline != "fifo" {
        t += &format!("discipline = \"{discipline}\"\n");
        if discipline == "codel" {
            let target = c.range(1, 5);
            t += &format!("codel_target = {}\ncodel_interval = {}\n", ms(target), ms(target + c.range(1, 20)));
        } else if discipline == "adaptive_lifo" {
            t += &format!("codel_interval = {}\n", ms(c.range(1, 50)));
        }
    }
    if c.one_in(4) {
        t += &format!("shed_queue_length = {}\n", c.range(1, 20));
    }
    if c.one_in(4) {
        t += &format!("shed_retries_queue_length = {}\n", c.range(0, 10));
    }
    if c.one_in(4) {
        t += "retry_priority = true\n";
    }
    let reject = if c.one_in(3) { ", reject = \"429\", retry_after = \"20ms\"" } else { "" };
    match c.below(5) {
        0 => {}
        1 => t += &format!("admission = {{ kind = \"concurrency\", limit = {}{reject} }}\n", c.range(1, 8)),
        2 => {
            t += &format!(
                "admission = {{ kind = \"token_bucket\", rate_per_s = {}.0, burst = {}{reject} }}\n",
                c.range(10, 500),
                c.range(1, 10)
            )
        }
        3 => {
            t += &format!(
                "admission = {{ kind = \"aimd\", initial = {}, min = 1, max = 50, latency = {}{reject} }}\n",
                c.range(1, 20),
                ms(c.range(1, 30))
            )
        }
        _ => {
            t += &format!(
                "admission = {{ kind = \"gradient\", initial = {}, min = 1, max = 50{reject} }}\n",
                c.range(1, 20)
            )
        }
    }
    if c.one_in(4) {
        t += &match c.below(3) {
            0 => format!("load_latency = {{ kind = \"linear\", slope = {}.0 }}\n", c.range(0, 3)),
            1 => format!(
                "load_latency = {{ kind = \"polynomial\", coefficient = {}.0, exponent = 2.0 }}\n",
                c.range(0, 4)
            ),
            _ => format!("load_latency = {{ kind = \"exponential\", rate = {}.0 }}\n", c.range(0, 4)),
        };
    }
    let scaled_replicas = shape.replicas_max > shape.replicas;
    if shape.replicas > 1 || scaled_replicas {
        t += &format!("replicas = {}\n", shape.replicas);
        t += &format!("balancer = \"{}\"\n", c.pick(&BALANCERS));
        if c.one_in(2) {
            t += &format!(
                "health_check = {{ interval = {}, unhealthy_threshold = {}, healthy_threshold = 1 }}\n",
                ms(c.range(20, 300)),
                c.range(1, 3)
            );
        }
        if c.one_in(2) {
            t += &format!(
                "outlier_detection = {{ consecutive_errors = {}, base_ejection_time = {}, max_ejection_percent = {}.0 }}\n",
                c.range(1, 5),
                ms(c.range(10, 300)),
                c.range(10, 100)
            );
        }
    }
    if scaled_replicas {
        t += &format!(
            "autoscale = {{ unit = \"replicas\", target = 0.5, evaluation_period = {}, scale_up_delay = {}, scale_down_cooldown = {}, min = 1, max = {} }}\n",
            ms(c.range(20, 300)),
            ms(c.range(1, 200)),
            ms(c.range(1, 300)),
            shape.replicas_max
        );
    } else if shape.replicas == 1 && c.one_in(4) {
        let metric = if c.one_in(2) { "queue_per_unit" } else { "utilization" };
        t += &format!(
            "autoscale = {{ metric = \"{metric}\", target = {}, evaluation_period = {}, scale_up_delay = {}, scale_down_cooldown = {}, max = {} }}\n",
            if metric == "utilization" { 0.6 } else { 2.0 },
            ms(c.range(20, 300)),
            ms(c.range(1, 200)),
            ms(c.range(1, 300)),
            workers + c.range(0, 4)
        );
    }
    if c.one_in(4) {
        let ttl = ["\"300ms\"", "\"2s\""];
        let mode = if c.one_in(2) { "wait" } else { "conflict" };
        t += &format!("idempotency = {{ ttl = {}, in_progress = \"{mode}\" }}\n", c.pick(&ttl));
    } else if c.one_in(4) {
        t += "effect = true\n";
    }
    t
}

/// A whole valid scenario (see the module documentation).
pub fn scenario_text(c: &mut Choices) -> String {
    let horizon_ms = c.range(500, 2000);
    let mut out = format!(
        "name = \"combined\"\nseed = {}\nhorizon = {}\nbucket = {}\nreplications = 1\nmax_events = 300000\n\n",
        c.below(1 << 20),
        ms(horizon_ms),
        ms(c.pick(&[50, 100, 20]))
    );
    let policies = c.range(1, 3) as usize;
    for t in 0..c.range(1, 2) {
        let arrival = match c.below(4) {
            0 => format!("{{ kind = \"poisson\", rate_per_s = {}.0 }}", c.range(20, 400)),
            1 => format!(
                "{{ kind = \"herd\", spread = {}, requests_per_client = {} }}",
                ms(c.range(0, 500)),
                c.range(1, 3)
            ),
            2 => format!("{{ kind = \"closed\", spread = {}, think = {} }}", ms(c.range(0, 200)), ms(c.range(1, 100))),
            _ => format!("{{ kind = \"ramp\", rate_per_s = {}.0, over = {} }}", c.range(20, 400), ms(c.range(1, 1000))),
        };
        out += &format!(
            "[[tenant]]\nname = \"t{t}\"\nclients = {}\narrival = {arrival}\npolicy = \"p{}\"\ninvalid_fraction = {}\npoison_fraction = {}\n\n",
            c.range(1, 30),
            c.below(policies as u32),
            f64::from(c.below(3)) / 100.0,
            f64::from(c.below(3)) / 100.0
        );
    }
    for p in 0..policies {
        out += &policy(c, p);
        out += "\n";
    }
    let hops = c.range(2, 4) as usize;
    let graph = c.one_in(2);
    // Shapes first: a cache needs a backend after it; an `occ` register is the chain's last hop.
    let shapes: Vec<HopShape> = (0..hops)
        .map(|h| {
            let last = h + 1 == hops;
            let cache = !last && c.one_in(4);
            let occ = last && !graph && c.one_in(6);
            let replicas = if cache || occ { 1 } else { c.pick(&[1, 1, 2, 3]) };
            let replicas_max = if cache || occ || !c.one_in(4) { replicas } else { replicas + c.range(1, 2) };
            HopShape { cache, occ, replicas, replicas_max }
        })
        .collect();
    for (h, &shape) in shapes.iter().enumerate() {
        let last = h + 1 == hops;
        out += &format!("[[hop]]\nname = \"h{h}\"\n");
        if c.one_in(2) {
            out += &format!("network = {}\n", dist(c, true));
        }
        if shape.occ {
            out += "kind = \"occ\"\n\n";
            continue;
        }
        if shape.cache {
            let dist = if c.one_in(2) { "{ zipf = 0.9 }".to_string() } else { "\"uniform\"".to_string() };
            out += &format!(
                "kind = \"cache\"\ncache = {{ keys = {}, key_distribution = {dist}, ttl = {}, ttl_jitter = 0.1, capacity = {}, eviction = \"{}\", coalesce = {} }}\n",
                c.range(1, 200),
                ms(c.range(10, 1000)),
                c.range(1, 100),
                c.pick(&["lru", "fifo"]),
                c.one_in(2)
            );
        } else {
            out += &service_hop_fields(c, shape);
        }
        // Calls: a chain's next hop, or a graph's later hops (acyclic by construction).
        let mut makes_calls = false;
        if graph {
            let mut calls = Vec::new();
            for to in h + 1..hops {
                // A cache calls its backend (the next hop) for sure, and so does the entry point
                // (without a call it would be a chain); others choose.
                if ((shape.cache || h == 0) && to == h + 1) || c.one_in(2) {
                    let mut call = format!("{{ hop = \"h{to}\", policy = \"p{}\"", c.below(policies as u32));
                    if !shape.cache && c.one_in(3) {
                        call += &format!(", probability = {}", f64::from(c.range(0, 10)) / 10.0);
                    }
                    if !shape.cache && c.one_in(3) {
                        call += ", required = false";
                    }
                    calls.push(call + " }");
                }
            }
            if !calls.is_empty() {
                makes_calls = true;
                out += &format!("calls = [{}]\n", calls.join(", "));
                if calls.len() > 1 && c.one_in(2) {
                    out += "calls_mode = \"parallel\"\n";
                }
            }
        } else if !last {
            makes_calls = true;
            out += &format!("downstream_policy = \"p{}\"\n", c.below(policies as u32));
        }
        if makes_calls && !shape.cache && c.one_in(3) {
            out += &format!("pool = {{ size = {}", c.range(1, 4));
            if c.one_in(2) {
                out += &format!(", acquire_timeout = {}", ms(c.range(1, 50)));
            }
            if c.one_in(2) {
                out += &format!(", queue_limit = {}", c.range(0, 10));
            }
            out += " }\n";
        }
        out += "\n";
    }
    // Faults: each in its own slot of the horizon, so that windows never overlap.
    let faults = c.below(5);
    let slot = horizon_ms / 5;
    for i in 0..faults {
        let h = c.below(hops as u32) as usize;
        let shape = shapes[h];
        let kind = if shape.cache {
            match c.below(3) {
                0 => "kind = \"cache_flush\"".to_string(),
                1 => "kind = \"hang\"".to_string(),
                _ => "kind = \"outage\"".to_string(),
            }
        } else {
            match c.below(8) {
                0 => format!("kind = \"outage\"\nin_service = \"{}\"", c.pick(&["reset", "lost", "complete"])),
                1 => "kind = \"hang\"".to_string(),
                2 => format!("kind = \"throttle\"\nretry_after = {}", ms(c.range(1, 200))),
                3 => format!("kind = \"error_rate\"\np = {}", f64::from(c.range(0, 10)) / 10.0),
                4 => format!("kind = \"slow\"\nfactor = {}.0", c.range(1, 30)),
                5 if !shape.occ => format!("kind = \"capacity\"\nworkers = {}", c.range(0, 2)),
                _ => format!("kind = \"lost_reply\"\np = {}", f64::from(c.range(1, 10)) / 10.0),
            }
        };
        let from = slot * i + c.below(slot / 2);
        let to = from + c.range(1, slot / 2);
        out += &format!("[[fault]]\nhop = \"h{h}\"\n{kind}\nfrom = {}\nto = {}\n", ms(from), ms(to));
        if shape.replicas_max > 1 && c.one_in(2) {
            out += &format!("replica = {}\n", c.below(shape.replicas_max));
        }
        out += "\n";
    }
    out
}

/// Validates `text` and runs it with the engine's assertions on. Panics (naming the scenario)
/// when the generator wrote an invalid scenario; the engine panics, with the seed, on a broken
/// conservation rule.
pub fn check(text: &str) {
    let scenario = Scenario::from_source("combined.toml", text, &[])
        .unwrap_or_else(|e| panic!("the generator wrote a scenario the validation refuses: {e}\n{text}"));
    for variant in scenario.run_variants() {
        for replication in 0..u64::from(scenario.replications) {
            let spec = &variant.spec;
            let run = std::panic::catch_unwind(|| sim::run(spec, scenario.seed, replication));
            let record = run.unwrap_or_else(|e| {
                let why = e.downcast_ref::<String>().map(String::as_str).or(e.downcast_ref::<&str>().copied());
                panic!("{}\n--- scenario ---\n{text}", why.unwrap_or("a panic"))
            });
            for (t, tenant) in record.tenants.iter().enumerate() {
                let ended = tenant.succeeded + tenant.rejected + tenant.dlq + record.in_flight[t];
                assert_eq!(tenant.requests, ended, "tenant {t}: requests ≠ ended + in flight\n{text}");
            }
        }
    }
}

/// The generator and the check on one choice list (the fuzz target's body).
pub fn check_choices(values: &[u32]) {
    let text = scenario_text(&mut Choices::new(values));
    check(&text);
}
