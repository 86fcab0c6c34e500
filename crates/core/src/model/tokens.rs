//! The one token-bucket arithmetic: retry budgets (`aws_quota`, `grpc_throttle`,
//! `token_bucket`), the `token_bucket` admission and the hedge's share cap and throttle keep
//! their levels as `f64` and move them only through [`TokenBucket`], so that every bucket
//! compares with the same float tolerance: ten deposits of 0.1 make one whole token, as they do
//! in the sources' decimal arithmetic, although ten binary 0.1s add up to 0.9999999999999999.

/// Tolerance of every comparison of a token level: a level within this of a cost pays it, and a
/// level must exceed a threshold by more than this to count as above it.
pub const EPS: f64 = 1e-9;

/// A bucket of at most `capacity` tokens. The level lives with its owner (a budget state, a
/// replica's admission state, a hedge state): 8 bytes each, of which ten million may exist.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    /// Most tokens held.
    pub capacity: f64,
}

impl TokenBucket {
    /// A bucket of at most `capacity` tokens.
    pub fn new(capacity: f64) -> Self {
        TokenBucket { capacity }
    }

    /// `level` after adding `amount`, at most the capacity.
    pub fn deposit(&self, level: &mut f64, amount: f64) {
        *level = (*level + amount).min(self.capacity);
    }

    /// Does `level` cover `cost` (within [`EPS`])?
    pub fn covers(level: f64, cost: f64) -> bool {
        level >= cost - EPS
    }

    /// Takes `cost` from `level` when it covers it (within [`EPS`]; never leaves it below 0).
    pub fn try_take(level: &mut f64, cost: f64) -> bool {
        let paid = Self::covers(*level, cost);
        if paid {
            Self::withdraw(level, cost);
        }
        paid
    }

    /// Takes `amount` from `level` whatever it holds, down to 0 at least (a gRPC failure).
    pub fn withdraw(level: &mut f64, amount: f64) {
        *level = (*level - amount).max(0.0);
    }

    /// Is `level` above `threshold` by more than [`EPS`]? (gRPC's "more than half left".)
    pub fn above(level: f64, threshold: f64) -> bool {
        level > threshold + EPS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten deposits of 0.1 make one token; binary floating point alone says 0.9999999999999999.
    #[test]
    fn ten_tenths_make_one_token() {
        let bucket = TokenBucket::new(10.0);
        let mut level = 0.0;
        for _ in 0..10 {
            bucket.deposit(&mut level, 0.1);
        }
        assert!(level < 1.0, "the float sum is below 1 ({level}), which is why the tolerance exists");
        assert!(TokenBucket::try_take(&mut level, 1.0), "ten tenths pay one token");
        assert_eq!(level, 0.0, "never below zero");
        for _ in 0..9 {
            bucket.deposit(&mut level, 0.1);
        }
        assert!(!TokenBucket::try_take(&mut level, 1.0), "nine tenths do not");
    }

    /// Twenty deposits of 0.05, and a cost of 14 out of 140 tenths, behave as their decimals.
    #[test]
    fn other_decimal_sums_are_whole_too() {
        let bucket = TokenBucket::new(100.0);
        let mut level = 0.0;
        for _ in 0..20 {
            bucket.deposit(&mut level, 0.05);
        }
        assert!(TokenBucket::covers(level, 1.0));
        let mut level = 0.0;
        for _ in 0..140 {
            bucket.deposit(&mut level, 0.1);
        }
        assert!(TokenBucket::try_take(&mut level, 14.0));
    }

    /// The capacity bounds deposits; a withdrawal floors at zero; `above` is strict with the
    /// tolerance: 5 + ten tenths − 1 is "5" and not above half of 10.
    #[test]
    fn capacity_floor_and_threshold() {
        let bucket = TokenBucket::new(10.0);
        let mut level = 9.95;
        bucket.deposit(&mut level, 0.1);
        assert_eq!(level, 10.0);
        TokenBucket::withdraw(&mut level, 11.0);
        assert_eq!(level, 0.0);
        let mut level = 5.0;
        for _ in 0..10 {
            bucket.deposit(&mut level, 0.1);
        }
        TokenBucket::withdraw(&mut level, 1.0);
        assert!(!TokenBucket::above(level, 5.0), "{level} is five tokens, not more");
        bucket.deposit(&mut level, 0.1);
        assert!(TokenBucket::above(level, 5.0));
    }
}
