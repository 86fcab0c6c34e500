//! A large trace is streamed: reading a 2-million-line CSV (≈ 190 MB of text) raises the
//! process's peak memory by about the 8 bytes a request it keeps, not by the size of the text.
//! (Its own test binary, so that the peak is this test's alone.)

use retrystorm::model::Arrival;
use retrystorm::report::summary::peak_memory_bytes;
use retrystorm::scenario::Scenario;
use std::io::Write;

#[test]
fn a_two_million_line_trace_is_not_held_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("big.csv");
    let lines: u64 = 2_000_000;
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&trace).expect("create"));
        writeln!(w, "timestamp,method,path,status,user_agent").expect("write");
        for i in 0..lines {
            let (s, us) = (i / 20_000, (i % 20_000) * 50);
            writeln!(
                w,
                "2026-11-24T14:{:02}:{:02}.{us:06}Z,POST,/api/v1/checkout/orders,200,Mozilla/5.0 (X11; Linux x86_64)",
                s / 60,
                s % 60
            )
            .expect("write");
        }
    }
    let text_bytes = std::fs::metadata(&trace).expect("meta").len();
    let scenario = format!(
        "name = \"big\"\nhorizon = \"100s\"\n[[tenant]]\nname = \"t\"\nclients = 10\n\
         arrival = {{ kind = \"trace\", file = \"{}\" }}\npolicy = \"p\"\n[policy.p]\njitter = \"full\"\n\
         [[hop]]\nname = \"api\"\nservice = {{ dist = \"constant\", mean = \"1ms\" }}\n",
        trace.display()
    );
    let Some(before) = peak_memory_bytes() else {
        eprintln!("no /proc/self/status VmHWM on this platform: nothing to measure");
        return;
    };
    let loaded = Scenario::from_source("big.toml", &scenario, &[]).unwrap_or_else(|e| panic!("{e}"));
    let after = peak_memory_bytes().expect("measured before");
    let Arrival::Trace(t) = &loaded.base.tenants[0].arrival else {
        panic!("a trace arrival expected, got {:?}", loaded.base.tenants[0].arrival)
    };
    assert_eq!(t.data.requests(), lines as f64);
    // The kept times are 16 MB (8 bytes × 2 M; the vector may have doubled once: 32 MB). The text
    // is ~190 MB: holding it would raise the peak by at least that much.
    let grown = after.saturating_sub(before);
    eprintln!("peak memory grew by {grown} bytes reading a {text_bytes}-byte trace of {lines} lines");
    assert!(text_bytes > 90_000_000, "the file is {text_bytes} bytes");
    assert!(grown < text_bytes / 2, "peak memory grew by {grown} bytes reading a {text_bytes}-byte trace");
}
