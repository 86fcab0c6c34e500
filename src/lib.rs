//! retrystorm: a discrete-event simulator for retry storms.
pub mod budget;
pub mod cli;
pub mod engine;
pub mod metrics;
pub mod model;
pub mod report;
pub mod runner;
pub mod scenario;
