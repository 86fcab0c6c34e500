//! The simulation engine: virtual clock, pending-event queue and seeded random streams.
//!
//! This layer knows nothing about retries, hops or clients: it orders events in virtual time
//! and hands out deterministic random numbers.

pub mod duration_schema;
pub mod pages;
pub mod prefetch;
pub mod queue;
pub mod rng;
pub(crate) mod slab;
pub mod text;
pub mod time;

pub use queue::EventQueue;
pub use rng::{mix64, stream, stream_key, KeyedDraws, StreamKind};
pub use slab::{Handle, Slab};
pub use time::{secs_to_ns, Nanos, NS_PER_MS, NS_PER_S};
