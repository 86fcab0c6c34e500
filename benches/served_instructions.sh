#!/bin/bash
# The fixed part of a short replication in instructions, which this machine's noise does not move
# (in time it moves by ±10 points from run to run: docs/PERFORMANCE.md, "Not robust on this machine").
# Counts, under valgrind's cachegrind (no cache simulation), the instructions of each program of
# benches/served.rs's fixed-part pairs run alone once, less those of loading the scenarios:
#   long        one M/M/1 run of 2,000 s (sim::run)
#   runs        2,000 runs of 1 s, simulated alone in a loop
#   summarised  the same, each also summarised (summary::scalars)
#   study       the same 2,000 runs as a study on one thread (run_study: runs, summaries, folding
#               into the variant's results, the statistics at its end)
# and prints what each step adds per run and the fixed part 1 − long ÷ study, the definition of
# benches/served.rs (goal < 10%). Needs valgrind (apt-get install -y valgrind); takes about 25 s
# after the build. It is never a test.
#
#   benches/served_instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind: apt-get install -y valgrind" >&2; exit 2; }
BIN=$(cargo bench --bench served --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[ -x "$BIN" ] || { echo "could not find the served bench's executable" >&2; exit 1; }
count() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$BIN" --bench "$1" 2>&1 \
        | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
echo "instructions (valgrind $(valgrind --version | sed 's/valgrind-//'), $(git rev-parse --short HEAD)$(git diff --quiet || echo +), $(date -u +%H:%M:%S) UTC)"
none=$(count none)
declare -A n
for program in long runs summarised study; do
    n[$program]=$(( $(count "$program") - none ))
done
awk -v long="${n[long]}" -v runs="${n[runs]}" -v summarised="${n[summarised]}" -v study="${n[study]}" 'BEGIN {
    printf "  one run of 2,000 s:            %7.1f M\n", long / 1e6
    printf "  2,000 runs of 1 s alone:       %7.1f M  each run'"'"'s setup and end:    %6.0f per run\n", runs / 1e6, (runs - long) / 2000
    printf "  and their summaries:           %7.1f M  the summaries:               %6.0f per run\n", summarised / 1e6, (summarised - runs) / 2000
    printf "  as a study on one thread:      %7.1f M  folding and the statistics:  %6.0f per run\n", study / 1e6, (study - summarised) / 2000
    printf "fixed part by instructions: %.1f%% of the study, %.0f per run (goal < 10%%)\n", (1 - long / study) * 100, (study - long) / 2000
}'
