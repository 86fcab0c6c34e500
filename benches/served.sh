#!/bin/bash
# The served path's figures (docs/PERFORMANCE.md, "The plain served path") from one run of
# benches/served.rs, which times every pair alternated, round by round, and gives each figure as
# the median over the rounds with the median's 95% interval: the model ÷ its bare queue
# loop on both workloads (goal ≤ 1.5×), the fixed part of a short replication (goal < 10%) and the
# scaling from one to two threads (goal ≥ 1.9×), with the load average before and after. The
# argument is the number of rounds (default 21, about a minute). It is never a test.
# (Criterion's `served` and `small_runs` groups of benches/scenarios.rs time the same programs
# one after the other: `cargo bench --bench scenarios -- 'small_runs|served/'`.)
# The fixed part in instructions, which the machine's noise does not move:
# benches/served_instructions.sh.
#
#   benches/served.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --bench served --no-run 2>&1 | grep -v '^ *Executable' || true
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC"
cargo bench --bench served -- "${1:-21}" 2>/dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S) UTC"
