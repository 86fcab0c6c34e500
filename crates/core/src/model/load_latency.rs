//! Load-dependent latency: a hop's service draw multiplied by a function of its utilisation.
//!
//! Utilisation is Stability Sim's definition (`server.ts`, `getUtilization`): the workers busy
//! at the moment the service starts, this attempt included, divided by the workers in force
//! (after a `capacity` fault and autoscaling). A service starts only on a free worker, so
//! u ∈ (0, 1]. The multiplier is fixed for the whole service, as in Stability Sim
//! (`applyLoadDependentLatency` in `shared.ts`); it draws no random number, so variants with
//! and without it see the same base draws (common random numbers).

/// The multiplier's shape (`load_latency = { kind = … }` on a hop): the one definition of the
/// kinds, read through serde (`scenario::tagged`), each variant's fields the parameters that kind
/// takes; a field of another kind is refused.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(tag = "kind")]
pub enum LoadLatency {
    /// 1 + slope·u.
    Linear {
        /// Extra latency per unit of utilisation (1 doubles the latency at u = 1).
        slope: f64,
    },
    /// 1 + coefficient·u^exponent.
    Polynomial {
        /// Factor of the power.
        coefficient: f64,
        /// Power of the utilisation (Stability Sim's default 2).
        #[serde(default = "two")]
        exponent: f64,
    },
    /// e^(rate·u): the GC death spiral's runaway.
    Exponential {
        /// Growth rate (e^rate at u = 1).
        rate: f64,
    },
}

/// Serde default of the polynomial's exponent.
fn two() -> f64 {
    2.0
}

impl LoadLatency {
    /// The multiplier at utilisation `u`.
    pub fn factor(self, u: f64) -> f64 {
        match self {
            LoadLatency::Linear { slope } => 1.0 + slope * u,
            LoadLatency::Polynomial { coefficient, exponent } => 1.0 + coefficient * u.powf(exponent),
            LoadLatency::Exponential { rate } => (rate * u).exp(),
        }
    }

    /// The multiplier with `busy` of `workers` busy (this attempt included).
    pub fn factor_at(self, busy: u32, workers: u32) -> f64 {
        self.factor(f64::from(busy) / f64::from(workers.max(1)))
    }

    /// The kind's name in the scenario format.
    pub fn name(self) -> &'static str {
        match self {
            LoadLatency::Linear { .. } => "linear",
            LoadLatency::Polynomial { .. } => "polynomial",
            LoadLatency::Exponential { .. } => "exponential",
        }
    }

    /// One line for reports: `× e^(4·u)`.
    pub fn words(self) -> String {
        match self {
            LoadLatency::Linear { slope } => format!("× (1 + {slope}·u)"),
            LoadLatency::Polynomial { coefficient, exponent } => format!("× (1 + {coefficient}·u^{exponent})"),
            LoadLatency::Exponential { rate } => format!("× e^({rate}·u)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_match_stability_sims_formulas() {
        let lin = LoadLatency::Linear { slope: 2.0 };
        assert_eq!(lin.factor_at(5, 10), 2.0);
        let poly = LoadLatency::Polynomial { coefficient: 4.0, exponent: 3.0 };
        assert_eq!(poly.factor_at(10, 10), 5.0);
        assert_eq!(poly.factor_at(5, 10), 1.5);
        let exp = LoadLatency::Exponential { rate: 4.0 };
        assert!((exp.factor_at(10, 10) - 4f64.exp()).abs() < 1e-12);
        assert!((exp.factor_at(1, 10) - 0.4f64.exp()).abs() < 1e-12);
    }
}
