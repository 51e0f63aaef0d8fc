#!/bin/sh
# bench/kernel-parallel.sh - many live sandboxes with a kernel each,
# called in parallel (the issue's target: 8 sandboxes, 25 calls each, no
# failure, each supervisor under 8 MiB resident).
#
# Starts SANDBOXES live sandboxes, warms a Python kernel in each, then
# runs CALLS `hutch exec NAME --kernel python -c 'n += 1'` per sandbox,
# all sandboxes at once, and checks every call succeeded and every
# counter reached CALLS. Prints the wall time, the failures and the
# largest supervisor RSS.
#
# Usage: bench/kernel-parallel.sh [SANDBOXES [CALLS]]    HUTCH=path/to/hutch
set -eu

N=${1:-8}
CALLS=${2:-25}
top=$(cd "$(dirname "$0")/.." && pwd)
HUTCH=${HUTCH:-$top/src/hutch}
export HUTCH_DATADIR="${HUTCH_DATADIR:-$top/share}"
HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-kpar.XXXXXX")
export HUTCH_STATE_DIR
trap 'for i in $(seq "$N"); do "$HUTCH" sandbox stop "kp$i" >/dev/null 2>&1 || true; done; rm -rf "$HUTCH_STATE_DIR"' EXIT INT TERM

for i in $(seq "$N"); do
        "$HUTCH" sandbox start "kp$i" --timeout none >/dev/null
        "$HUTCH" exec "kp$i" --kernel python -c 'n = 0' >/dev/null
done
s=$(date +%s%N)
for i in $(seq "$N"); do
        (
                f=0
                for _ in $(seq "$CALLS"); do
                        "$HUTCH" exec "kp$i" --kernel python -c 'n += 1' >/dev/null 2>&1 || f=$((f + 1))
                done
                echo "$f" >"$HUTCH_STATE_DIR/fail.$i"
        ) &
done
wait
e=$(date +%s%N)
fails=0
for i in $(seq "$N"); do
        fails=$((fails + $(cat "$HUTCH_STATE_DIR/fail.$i")))
        got=$("$HUTCH" exec "kp$i" --kernel python -c 'n')
        [ "$got" = "$CALLS" ] || { echo "kp$i: counter $got, not $CALLS" >&2; fails=$((fails + 1)); }
done
rss=0
for i in $(seq "$N"); do
        pid=$(jq -r .supervisor_pid "$HUTCH_STATE_DIR/sandboxes/kp$i.json")
        r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
        [ "$r" -gt "$rss" ] && rss=$r
done
echo "sandboxes:   $N, $CALLS kernel calls each, in parallel"
echo "wall:        $(( (e - s) / 1000000 )) ms for $((N * CALLS)) calls"
echo "failures:    $fails"
echo "supervisor:  max RSS $((rss / 1024)).$(( (rss % 1024) * 10 / 1024 )) MiB"
[ "$fails" -eq 0 ]
