//! retrystorm's simulation core: a scenario (TOML) read and validated into a model, simulated on a
//! virtual clock by the runner, measured by the metrics, with no command line, charts or sockets.
//!
//! The layers, bottom up: [`engine`] (clock, event queue, random streams) → [`model`] (the
//! validated simulation spec and the event loop) → [`scenario`] (the file format, read into a
//! model) → [`runner`] (variants × replications, in parallel, and the studies built on them:
//! sweeps, plans, maps, rare-event estimates) → [`metrics`] (every metric, its confidence
//! interval and the verdict's objective). The `retrystorm` crate above writes reports and charts,
//! runs the emulator and parses the command line.
//!
//! ```
//! use retrystorm_core::metrics::catalogue::Metric;
//! use retrystorm_core::runner::{run_study, RunOptions};
//! use retrystorm_core::scenario::{parse_assignment, Scenario};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/outage-herd.toml");
//! let overrides = ["tenant.main.clients=1000", "replications=3"].map(|s| parse_assignment(s).unwrap());
//! let scenario = Scenario::load(path, &overrides).expect("valid scenario");
//! let variants = scenario.jitter_variants(&["exponential".into()]).unwrap();
//! let study = run_study(&scenario, &variants, &RunOptions::default());
//! // Un-jittered exponential backoff: exactly 8 attempts per client (see the scenario's comment).
//! assert_eq!(study.variants[0].metrics.mean(Metric::Attempts), Some(8000.0));
//! ```
#![warn(missing_docs)]
pub use retrystorm_engine as engine;
pub mod metrics;
pub mod model;
pub mod retry_window;
pub mod runner;
pub mod scenario;
