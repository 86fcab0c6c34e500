//! Call graphs and connection pools: the downstream calls a hop makes while it serves
//! an attempt, and the pool of connections those calls go through.
//!
//! A chain scenario (hop i calls hop i+1 with its `downstream_policy`) is the one-edge special
//! case: validation turns it into one required edge with probability 1, so the simulation has one
//! code path for both.

use crate::engine::Nanos;

/// One downstream call of a hop: made with probability `probability` per served attempt, with
/// its own retry policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// The called hop (index into `SimSpec::hops`).
    pub hop: usize,
    /// The policy the call retries with (index into `SimSpec::policies`).
    pub policy: usize,
    /// Chance that a served attempt makes this call, in [0, 1].
    pub probability: f64,
    /// A failed required call fails the job; an optional call's failure is tolerated.
    pub required: bool,
    /// Calls of one stage run in parallel; stages run one after another, in increasing order
    /// (`sequence`: stage = position in the list; `parallel`: every call in stage 0). A hop's
    /// edges are sorted by stage.
    pub stage: u32,
}

/// How a hop's downstream calls were described (each edge's `stage` says how they run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CallsMode {
    /// One after another, in the listed order; a failed required call stops the rest.
    #[default]
    Sequence,
    /// All at once; the job waits for every call it made (a join).
    Parallel,
    /// By each call's `stage`: one stage after another, the calls of a stage in parallel.
    Stages,
}

impl CallsMode {
    /// The name in scenario files.
    pub const fn name(self) -> &'static str {
        match self {
            CallsMode::Sequence => "sequence",
            CallsMode::Parallel => "parallel",
            CallsMode::Stages => "stages",
        }
    }
}

/// A pool of connections a hop's downstream calls go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// Connections (≥ 1). An attempt holds one from the moment it is sent until its caller
    /// stops waiting for it (reply or attempt timeout).
    pub size: u32,
    /// Longest wait for a connection; the attempt then fails locally (`None`: wait for ever).
    pub acquire_timeout: Option<Nanos>,
    /// Most calls waiting for a connection; one more fails at once.
    pub queue_limit: u32,
}

/// The coin deciding whether the attempt keyed `draw_key` makes edge `edge` of its hop: a
/// uniform in [0, 1) derived from the key (no random stream is consumed), so the same attempt
/// makes the same calls in every variant of a comparison (common random numbers).
pub fn edge_coin(draw_key: u64, edge: usize) -> f64 {
    let mut z = draw_key ^ (0xC0FF_EE00_0000_0000 | edge as u64);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_coin_is_uniform_and_depends_on_the_edge() {
        // 100,000 keys: the mean of U(0,1) is 0.5 with sd 1/sqrt(12·n) ≈ 0.00091; 5 sd is 0.0046.
        let n = 100_000u64;
        let mean = (0..n).map(|k| edge_coin(k.wrapping_mul(0x2545_F491_4F6C_DD1D), 0)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.0046, "mean {mean}");
        let same = (0..1000u64).filter(|&k| edge_coin(k, 0) == edge_coin(k, 1)).count();
        assert_eq!(same, 0);
        assert!((0..1000u64).all(|k| (0.0..1.0).contains(&edge_coin(k, 3))));
    }
}
