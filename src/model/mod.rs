//! The retry-storm model: tenants and clients, hops, faults, retry policies and one run.

pub mod arrivals;
pub mod budget;
pub mod dist;
pub mod empirical;
pub mod fault;
pub mod hedge;
pub mod overload;
pub mod policy;
pub mod sim;
pub mod spec;
pub mod trace;

pub use budget::{BreakerSpec, BudgetKind, BudgetSpec, Scope};
pub use dist::Dist;
pub use fault::{Fault, FaultKind};
pub use hedge::{HedgeAfter, HedgeSpec};
pub use overload::{Admission, Discipline, OverloadSpec, RejectReply};
pub use policy::{DeadlineMode, Jitter, JitterState, RetryAfterMode, RetryOn, RetryPolicy};
pub use spec::{Arrival, HopSpec, IdempotencySpec, InProgress, SimSpec, TenantSpec};
