#!/bin/bash
# Compares the current build with a saved baseline on the headline benchmarks and prints the
# ratios (current / baseline time: above 1 is slower). Run it before every performance-relevant
# commit, on an otherwise idle machine; it is never a test.
#
#   benches/compare.sh save NAME [criterion flags…]   # run the headline benchmarks, keep them as NAME
#   benches/compare.sh NAME [criterion flags…]        # run them again and print current / NAME
#
# e.g. `benches/compare.sh save before` on the parent commit, then `benches/compare.sh before`.
# Criterion flags pass through: `--quick` or `--sample-size 10` for a faster, noisier check.
# Headline benchmarks: the outage herd at 1M clients (full model and bare loop, and their ratio,
# the issue-18 goal, in wall time and in CPU time of the bench thread), M/M/1 with 1M customers,
# the three-hop chain and the bare M/M/1 loop.
# Takes about three minutes without flags. Baselines live in target/criterion/<bench>/NAME/.
# $HEADLINE (a regex on criterion ids) replaces the set, e.g. HEADLINE='^mm1/' for one benchmark.
set -euo pipefail
HEADLINE=${HEADLINE:-'^(outage_herd(_cpu)?/(full_jitter|full_jitter_queued|bare_loop)/1000000|mm1/customers/1000000|chain/three_hops/50000|bare_mm1/radix_heap/1000000)$'}
if [ $# -lt 1 ] || { [ "$1" = save ] && [ $# -lt 2 ]; }; then
    sed -n '6,7p' "$0" | sed 's/^# *//' >&2
    exit 2
fi
if [ "$1" = save ]; then
    mode=save name=$2
    shift 2
else
    mode=compare name=$1
    shift
fi
case $name in '' | current | new | base | *[!A-Za-z0-9_.-]*)
    echo "baseline name '$name': use letters, digits, '.', '_' or '-', and not current/new/base" >&2
    exit 2 ;;
esac
cd "$(dirname "$0")/.."
criterion=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/criterion
if [ $mode = compare ] && [ ! -f "$criterion/$name.commit" ]; then
    echo "no baseline '$name' in $criterion: run benches/compare.sh save $name first (on the old build)" >&2
    exit 2
fi
saved=$([ $mode = save ] && echo "$name" || echo current)
cargo bench --bench engine --bench scenarios -- --save-baseline "$saved" "$@" "$HEADLINE"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src benches Cargo.toml Cargo.lock || echo +changes)"
echo "$commit" >"$criterion/$saved.commit"
if [ $mode = save ]; then
    echo "saved baseline '$name' at $commit"
    exit 0
fi
python3 - "$criterion" "$name" "$HEADLINE" <<'PY'
import json, os, re, sys

root, base, headline = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])

def means(baseline):
    """Mean time (ns) per benchmark id saved under `baseline`."""
    found = {}
    for dirpath, _, files in os.walk(root):
        if os.path.basename(dirpath) == "new" and "benchmark.json" in files:
            bench_id = json.load(open(os.path.join(dirpath, "benchmark.json")))["full_id"]
            estimates = os.path.join(os.path.dirname(dirpath), baseline, "estimates.json")
            if headline.match(bench_id) and os.path.exists(estimates):
                found[bench_id] = json.load(open(estimates))["mean"]["point_estimate"]
    return found

def commit(name):
    return open(os.path.join(root, name + ".commit")).read().strip()

old, new = means(base), means("current")
print(f"\n{'benchmark':<40} {base + ' (' + commit(base) + ')':>22} {'current (' + commit('current') + ')':>22} {'ratio':>7}")
for bench_id in sorted(set(old) | set(new)):
    o, n = old.get(bench_id), new.get(bench_id)
    ratio = f"{n / o:7.3f}" if o and n else "    n/a"
    show = lambda v: f"{v / 1e6:19.1f} ms" if v else f"{'missing':>22}"
    print(f"{bench_id:<40} {show(o)} {show(n)} {ratio}")
for label, times in ((base, old), ("current", new)):
    for bench_id, bare in sorted(times.items()):
        group, name, clients = (bench_id.split("/") + ["", "", ""])[:3]
        if group in ("outage_herd", "outage_herd_cpu") and name == "bare_loop":
            full = times.get(f"{group}/full_jitter/{clients}")
            clock = "CPU time" if group.endswith("_cpu") else "wall time"
            if full:
                print(f"full model / bare herd loop at {clients} clients, {label}, {clock}: {full / bare:.2f}x (goal at 1M: <= 1.0x)")
PY
