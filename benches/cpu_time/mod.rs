//! A criterion measurement of the CPU time of the benchmarking thread, for a machine shared with
//! other work: wall time then counts the time the thread waited for a core, CPU time does not
//! (cache and memory-bandwidth contention still count). Linux only: it reads the first field of
//! `/proc/thread-self/schedstat`, the nanoseconds the thread has run on a CPU.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// CPU time of the current thread, in nanoseconds.
pub struct ThreadCpu;

fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux /proc/thread-self/schedstat");
    text.split_whitespace().next().and_then(|t| t.parse().ok()).expect("schedstat starts with run time in ns")
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, started: u64) -> u64 {
        thread_cpu_ns() - started
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Formats nanoseconds of CPU time as criterion formats wall time (ns … s), suffixed "cpu".
struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical {
            t if t < 1e3 => (1.0, "ns cpu"),
            t if t < 1e6 => (1e-3, "µs cpu"),
            t if t < 1e9 => (1e-6, "ms cpu"),
            _ => (1e-9, "s cpu"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let Throughput::Elements(n) = *throughput else { return self.scale_values(typical, values) };
        // Elements per CPU second.
        values.iter_mut().for_each(|v| *v = n as f64 * 1e9 / *v);
        "elem/cpu-s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
