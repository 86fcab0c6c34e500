#!/bin/bash
# The served path's figures (docs/PERFORMANCE.md, "The served path") from one run: criterion's
# `served` and `small_runs` groups of benches/scenarios.rs, then what they mean, read from
# criterion's estimates of this run (means): the model ÷ its bare queue loop on both workloads
# (goal ≤ 1.5×), the fixed part of a short replication (goal < 10%) and the scaling from one to
# two threads (goal ≥ 1.9×), with the load average before and after. Extra arguments go to
# criterion (e.g. `--measurement-time 8`). About three minutes; it is never a test.
#
#   benches/served.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC"
cargo bench --bench scenarios -- "$@" 'small_runs|served/'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC"
python3 - <<'EOF'
import json

def ms(path):
    with open(f"target/criterion/{path}/new/estimates.json") as f:
        return json.load(f)["mean"]["point_estimate"] / 1e6

for workload in ("metastable_collapse", "mm1"):
    model, bare = ms(f"served/model/{workload}"), ms(f"served/bare_loop/{workload}")
    print(f"served {workload}: model {model:.1f} ms / bare {bare:.1f} ms = {model / bare:.2f}x (goal <= 1.5x)")
long, one, two = ms("small_runs/one_long_run/2000"), ms("small_runs/replications/1"), ms("small_runs/replications/2")
print(f"short runs: 2,000 runs of 1 s {one:.1f} ms, one run of 2,000 s {long:.1f} ms")
print(f"  fixed part {(one - long) / one:.1%} of the total, {(one - long) / 2000 * 1000:.1f} us per run (goal < 10%)")
print(f"two threads: {one:.1f} / {two:.1f} ms = {one / two:.2f}x (goal >= 1.9x)")
EOF
