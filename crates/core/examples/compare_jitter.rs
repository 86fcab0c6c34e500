//! Load a bundled scenario, compare two jitter strategies on common random numbers, read a metric
//! with its 95% interval and the verdict's ranking: the library's face in twenty lines.
//!
//! `cargo run --release -p retrystorm-core --example compare_jitter`

use retrystorm_core::metrics::catalogue::Metric;
use retrystorm_core::runner::{run_study, RunOptions};
use retrystorm_core::scenario::{parse_assignment, Scenario};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // outage-herd, smaller: 2,000 clients, 5 replications (the `--set` paths of the CLI).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/outage-herd.toml");
    let overrides = ["tenant.main.clients=2000", "replications=5"]
        .iter()
        .map(|s| parse_assignment(s))
        .collect::<Result<Vec<_>, _>>()?;
    let scenario = Scenario::load(path, &overrides)?;
    let variants = scenario.jitter_variants(&["exponential".to_string(), "full".to_string()])?;
    let study = run_study(&scenario, &variants, &RunOptions::default());

    for variant in &study.variants {
        let (succeeded, peak) =
            (variant.metrics.get(Metric::SuccessRatio), variant.metrics.get(Metric::PeakAfterOverCapacity));
        // A metric no replication observed has no mean (null in summary.json), so both are options.
        let show = |stat: Option<&retrystorm_core::metrics::stats::Stat>| match stat.map(|s| (s.mean, s.ci95)) {
            Some((Some(mean), Some([low, high]))) => format!("{mean:.3} (95% CI {low:.3}–{high:.3})"),
            Some((Some(mean), None)) => format!("{mean:.3}"),
            _ => "not observed".to_string(),
        };
        println!("{:>12}: succeeded {}, peak after recovery ÷ capacity {}", variant.name, show(succeeded), show(peak));
    }
    let verdict = study.verdict();
    for ranked in &verdict.ranking {
        println!("rank {}: {}", ranked.rank, ranked.variant);
    }
    match (&verdict.recommended, &verdict.abstain_reason) {
        (Some(best), _) => println!("recommended: {best}"),
        (None, Some(why)) => println!("no recommendation: {why}"),
        (None, None) => println!("no recommendation"),
    }
    Ok(())
}
