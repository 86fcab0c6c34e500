//! retrystorm: a discrete-event simulator for retry storms.
//!
//! A scenario (TOML) describes tenants of clients, a chain of hops, retry policies and faults;
//! [`runner::run_study`] simulates its variants × replications on a virtual clock and returns
//! every metric with a confidence interval; [`report::write_study`] writes the files and charts.
//!
//! ```
//! use retrystorm::metrics::catalogue::Metric;
//! use retrystorm::runner::{run_study, RunOptions};
//! use retrystorm::scenario::{parse_assignment, Scenario};
//!
//! // The bundled outage-herd scenario, smaller, with two jitter strategies side by side.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml");
//! let overrides = ["tenant.main.clients=1000", "replications=3"].map(|s| parse_assignment(s).unwrap());
//! let scenario = Scenario::load(path, &overrides).expect("valid scenario");
//! let variants = scenario.jitter_variants(&["exponential".into(), "full".into()]).unwrap();
//! let study = run_study(&scenario, &variants, &RunOptions::default());
//!
//! for variant in &study.variants {
//!     let attempts = variant.metrics.get(Metric::Attempts).unwrap();
//!     println!("{}: {:?} attempts, 95% CI {:?}", variant.name, attempts.mean, attempts.ci95);
//! }
//! // Un-jittered exponential backoff: exactly 8 attempts per client (see the scenario's comment).
//! let exponential = &study.variants[0].metrics;
//! assert_eq!(exponential.mean(Metric::Attempts), Some(8000.0));
//! ```
pub mod cli;
pub mod emulate;
pub use retrystorm_core::{engine, metrics, model, retry_window, runner, scenario};
pub mod report;
