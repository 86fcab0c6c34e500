#!/usr/bin/env bash
# Replays the hostile corpus against a built binary and checks the contract of issue 17:
# no exit 101 (panic) or 134 (abort), no timeout, an exit code of 0, 1 or 2 only, and nothing
# written outside the command's --out directory. docs/TESTING.md, "Replaying the hostile corpus".
#
# Usage: scripts/replay-hostile.sh [BINARY] [TIMEOUT_S]
#   BINARY     default target/release/retrystorm (build it first: cargo build --release)
#   TIMEOUT_S  per command, default 30
#
# The corpus: every scenario in tests/bad_scenarios/ and fuzz/regressions/ (validate and run),
# hostile arguments on a good scenario (names that are paths, out-of-range flags, absurd sizes,
# special files), damaged run directories for `plot` and `merge` (each JSON and CSV file of
# a real run and of two sweep shards replaced by a FIFO, a link to /dev/zero or a directory,
# emptied, truncated, or with numbers replaced by NaN, inf, -1, 0, 1e999 and u64::MAX), and
# plan shards whose plan.json is damaged the same ways. Prints one line per failure and a
# summary; exits 1 when any command broke the contract.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$repo/target/release/retrystorm}")
limit=${2:-30}
[ -x "$bin" ] || { echo "no binary at $bin: cargo build --release" >&2; exit 2; }

# The sandbox is three levels deep so that a name like ../../x lands inside $root, where the
# snapshot sees it.
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
work="$root/a/b/work"
mkdir -p "$work/outs"
cp -r "$repo/tests/bad_scenarios" "$work/bad"
cp -r "$repo/fuzz/regressions" "$work/fuzz"
# The small good scenario the integration tests use (tests/common/mod.rs, GOOD).
sed -n '/^pub const GOOD: &str = r#"/,/^"#;/p' "$repo/tests/common/mod.rs" | sed '1s/.*r#"//; $d' > "$work/good.toml"
grep -q '^\[\[hop\]\]' "$work/good.toml" || { echo "GOOD not found in tests/common/mod.rs" >&2; exit 2; }

commands=0 failures=0
declare -A codes=()
# Everything under $root but outs/ (where --out points) and damaged/ (the run directories that
# `plot` re-renders in place).
snapshot() {
    (cd "$root" && find . \( -path ./a/b/work/outs -o -path ./a/b/work/damaged \) -prune -o -printf '%p %s %T@\n' | sort)
}

# check NAME ARGS...: runs ARGS in $work and checks the exit code and that nothing changed
# outside outs/ and damaged/. An argument OUT becomes a fresh directory outs/N.
check() {
    local name=$1
    shift
    local before after rc err args=()
    for a in "$@"; do
        if [ "$a" = OUT ]; then args+=("outs/$commands"); else args+=("$a"); fi
    done
    set -- "${args[@]}"
    before=$(snapshot)
    err=$( (cd "$work" && timeout "$limit" "$bin" "$@" 2>&1 >/dev/null) )
    rc=$?
    after=$(snapshot)
    commands=$((commands + 1))
    codes[$rc]=$((${codes[$rc]:-0} + 1))
    local why=""
    case $rc in
        0 | 1 | 2) ;;
        124) why="timeout after ${limit}s" ;;
        101) why="panic (exit 101)" ;;
        134) why="abort (exit 134)" ;;
        *) why="exit $rc" ;;
    esac
    if [[ $err == *panicked* ]]; then why="${why:+$why, }panic message"; fi
    if [ "$before" != "$after" ]; then
        why="${why:+$why, }wrote outside --out: $(diff <(echo "$before") <(echo "$after") | grep '^>' | head -3 | tr '\n' ' ')"
        # Undo it so later commands are judged alone.
        diff <(echo "$before") <(echo "$after") | sed -n 's/^> \.\/\([^ ]*\) .*/\1/p' | while read -r p; do
            grep -q "^\./$p " <<<"$before" || rm -rf "${root:?}/$p"
        done
    fi
    if [ -n "$why" ]; then
        failures=$((failures + 1))
        echo "FAIL [$name] retrystorm $* -> $why; stderr: ${err:0:300}"
    fi
}

# 1. The scenario corpus, validated and run.
for f in "$work"/bad/*.toml "$work"/fuzz/*.toml; do
    rel=${f#"$work/"}
    check "$rel" validate "$rel"
    check "$rel" run "$rel" --quiet --out OUT
done

# 1b. Generated inputs whose refusal must not take quadratic time (tests/hostile.rs prints their
# times; the timeout here is what catches a hang): a 300,000-character policy name, 70,000
# tenants, and a 316 × 316 sweep grid.
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
good = open(f"{work}/good.toml").read()
open(f"{work}/long.toml", "w").write(good.replace('policy = "client"', 'policy = "' + "c" * 300_000 + '"'))
head = 'name = "many"\nhorizon = "1s"\n[policy.client]\njitter = "full"\n[[hop]]\nname = "api"\nservice = { dist = "constant", mean = "1ms" }\n'
tenant = '[[tenant]]\nname = "t{}"\nclients = 1\narrival = {{ kind = "herd" }}\npolicy = "client"\n'
open(f"{work}/many.toml", "w").write(head + "".join(tenant.format(i) for i in range(70_000)))
PY
grid=$(seq -s, 1 316)
check "generated" validate long.toml
check "generated" validate many.toml
check "generated" sweep good.toml --quiet --out OUT --vary "tenant.main.clients=$grid" --vary "policy.client.max_attempts=$grid" --max-memory 64MiB

# 2. Hostile arguments on a good scenario.
while IFS= read -r line; do
    [ -z "$line" ] && continue
    # shellcheck disable=SC2086
    eval "set -- $line"
    check "args" "$@"
done <<EOF
run good.toml --quiet --set name=../../x
run good.toml --quiet --set name=/tmp/retrystorm-replay-escape
run good.toml --quiet --set name=..
run good.toml --quiet --set name=.
run good.toml --quiet --set 'name=a$(printf '\033')b'
run good.toml --quiet --set name=
run good.toml --quiet --out good.toml
run good.toml --quiet --out /dev/null
run good.toml --quiet --out OUT --threads 10000
run good.toml --quiet --out OUT --threads 0
run good.toml --quiet --out OUT --seed -1
run good.toml --quiet --out OUT --seed 18446744073709551616
run good.toml --quiet --out OUT --replications 0
run good.toml --quiet --out OUT --max-memory 1
run good.toml --quiet --out OUT --max-memory 0
run good.toml --quiet --out OUT --set tenant.main.clients=50000000 --replications 2 --max-memory 4GiB
run good.toml --quiet --out OUT --set bucket=1us --set horizon=1s --replications 40 --max-memory 4GiB
run good.toml --quiet --out OUT --set tenant.main.clients=9000000 --set 'policy.client.budget={ kind = "token_bucket", scope = "client" }' --threads 1 --max-memory 4GiB
run good.toml --quiet --out OUT --set horizon=0s
run good.toml --quiet --out OUT --set bucket=0s
run good.toml --quiet --out OUT --set policy.clinet.jitter=none
run good.toml --quiet --out OUT --set tenant.main.arrival.kind=closed
run good.toml --quiet --out OUT --set 'tenant.main.arrival={ kind = "closed", think = "0s" }' --set 'hop.api.service={ dist = "constant", mean = "0s" }'
compare good.toml --quiet --out OUT --jitter full --jitter full
sweep good.toml --quiet --out OUT --vary tenant.main.clients=10,10
sweep good.toml --quiet --out OUT --vary policy.client.base=10ms,10000us
sweep good.toml --quiet --out OUT --vary tenant.main.clients=1 --shard 0/2
sweep good.toml --quiet --out OUT --vary tenant.main.clients=1 --shard 3/2
validate /dev/zero
validate /dev/null
validate .
validate missing.toml
plot /dev/null
plot .
plot missing
merge --out OUT
budget --window 0s
budget --window -1s
EOF

# 3. Damaged run directories for plot and merge: a real run and two sweep shards, then every
# JSON and CSV file in them damaged one way at a time.
(cd "$work" && "$bin" run good.toml --quiet --out pristine/run && \
    "$bin" sweep good.toml --quiet --vary tenant.main.clients=10,20 --shard 1/2 --out pristine/s1 && \
    "$bin" sweep good.toml --quiet --vary tenant.main.clients=10,20 --shard 2/2 --out pristine/s2) \
    || { echo "could not make the pristine runs" >&2; exit 2; }
damage() { # FILE KIND
    case $2 in
        fifo) rm -f "$1" && mkfifo "$1" ;;
        devzero) rm -f "$1" && ln -s /dev/zero "$1" ;;
        dir) rm -f "$1" && mkdir "$1" ;;
        empty) : > "$1" ;;
        half) head -c $(($(wc -c < "$1") / 2)) "$1" > "$1.tmp" && mv "$1.tmp" "$1" ;;
        binary) head -c 4096 /dev/urandom > "$1" ;;
        *) sed -E -i "s/(^|[^0-9A-Za-z_.])[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/\1$2/g" "$1" ;;
    esac
}
for kind in fifo devzero dir empty half binary NaN inf -inf -1 0 1e999 18446744073709551615; do
    for target in run s1 s2; do
        for file in $(cd "$work/pristine/$target" && ls | grep -E '\.(json|csv)$'); do
            case_dir="damaged/$target-$file-$kind"
            rm -rf "${work:?}/damaged"
            mkdir -p "$work/damaged"
            cp -r "$work/pristine/$target" "$work/$case_dir"
            damage "$work/$case_dir/$file" "$kind"
            if [ "$target" = run ]; then
                check "plot $file $kind" plot --quiet "$case_dir"
            else
                other=s2
                [ "$target" = s2 ] && other=s1
                check "merge $file $kind" merge "$case_dir" "pristine/$other" --out OUT
                check "plot shard $file $kind" plot --quiet "$case_dir"
            fi
        done
    done
done
rm -rf "${work:?}/damaged"

# 4. Plan shards for `merge`: a real `plan --shard 1/2`, then the other shard's plan.json a FIFO
# (which blocked `merge` forever), `/dev/zero` (read until memory ran out) or a directory, and
# the first shard's plan.json damaged the same ways.
(cd "$work" && "$bin" plan good.toml --quiet --vary tenant.main.clients=1..20 --require 'success_ratio>=0.5' \
    --shard 1/2 --out pristine/p1) || { echo "could not make the pristine plan shard" >&2; exit 2; }
for kind in fifo devzero dir empty half binary; do
    rm -rf "${work:?}/damaged"
    mkdir -p "$work/damaged/p2"
    case $kind in
        fifo | devzero | dir) damage "$work/damaged/p2/plan.json" "$kind" ;;
        *) cp "$work/pristine/p1/plan.json" "$work/damaged/p2/plan.json" && damage "$work/damaged/p2/plan.json" "$kind" ;;
    esac
    check "merge plan.json $kind" merge pristine/p1 damaged/p2 --out OUT
    check "merge plan.json $kind first" merge damaged/p2 pristine/p1 --out OUT
done
rm -rf "${work:?}/damaged"

[ -e /tmp/retrystorm-replay-escape ] && { failures=$((failures + 1)); echo "FAIL: /tmp/retrystorm-replay-escape was written"; }
summary=""
for c in $(printf '%s\n' "${!codes[@]}" | sort -n); do summary+=" exit $c: ${codes[$c]};"; done
echo "replayed $commands commands:$summary failures: $failures"
[ "$failures" -eq 0 ]
