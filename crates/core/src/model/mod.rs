//! The retry-storm model: tenants and clients, hops, faults, retry policies and one run.

pub mod arrivals;
pub mod autoscale;
pub mod breaker;
pub mod budget;
pub mod cache;
pub mod dist;
pub mod empirical;
pub mod fault;
pub mod graph;
pub mod hedge;
pub mod load_latency;
pub mod overload;
pub mod policy;
pub mod replicas;
pub mod sim;
pub mod sliding;
pub mod spec;
pub mod tokens;
pub mod trace;

pub use autoscale::{AutoscaleSpec, ScaleMetric, ScaleUnit};
pub use breaker::BreakerSpec;
pub use budget::{BudgetKind, BudgetSpec, Scope};
pub use dist::Dist;
pub use fault::{Fault, FaultKind};
pub use graph::{CallsMode, Edge, PoolSpec};
pub use hedge::{HedgeAfter, HedgeSpec, HedgeThrottle};
pub use load_latency::LoadLatency;
pub use overload::{Admission, Discipline, OverloadSpec, RejectReply};
pub use policy::{DeadlineMode, Jitter, JitterState, LateReply, RetryAfterMode, RetryOn, RetryPolicy};
pub use replicas::{Balancer, HealthCheck, OutlierDetection, ReplicaSpec};
pub use spec::{Arrival, ClientTiming, HopKind, HopSpec, IdempotencySpec, InProgress, SimSpec, TenantSpec};
