#!/usr/bin/env bash
# bench/concurrent.sh - many runs at once into one store, none lost.
#
# Starts RUNS (default 400) `hutch run -- true` jobs, AT_ONCE (default 16)
# at a time, all recording into one fresh store, and checks that every
# one of them is there, finished with status success: the store's busy
# handling and the run row written beside the sandbox's setup must never
# drop a run under contention. Prints the wall time and the per-run
# median and p99 (each run timed on its own).
#
# Usage: bench/concurrent.sh [RUNS [AT_ONCE]]    HUTCH=path/to/hutch
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
runs=${1:-400}
at_once=${2:-16}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
bench_need_epochrealtime

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-concurrent.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
HUTCH=$hutch
export HUTCH_STATE_DIR=$tmp/state HUTCH

"$hutch" ls >/dev/null   # create the store before the crowd arrives

one() {
        local t0 t1 rc=0
        t0=$EPOCHREALTIME
        "$HUTCH" run -- true >/dev/null 2>>"$HUTCH_STATE_DIR/../errors" || rc=$?
        t1=$EPOCHREALTIME
        echo "$rc $(( (${t1/./} - ${t0/./}) ))"
}
export -f one
t0=$EPOCHREALTIME
seq "$runs" | xargs -P "$at_once" -I{} bash -c one >"$tmp/times"
t1=$EPOCHREALTIME

failed=$(awk '$1 != 0' "$tmp/times" | wc -l)
recorded=$("$hutch" ls --json --limit $((runs * 2)) | wc -l)
succeeded=$("$hutch" ls --json --status success --limit $((runs * 2)) | wc -l)
awk '{ print $2 }' "$tmp/times" | sort -n | awk -v runs="$runs" -v n="$at_once" -v wall=$(( (${t1/./} - ${t0/./}) / 1000 )) '
        { v[NR] = $1 }
        END {
                p = int(NR * 0.99 + 0.999); if (p > NR) p = NR
                printf "runs:      %d, %d at a time, in %.1f s\n", runs, n, wall / 1000
                printf "per run:   median %.1f ms, p99 %.1f ms\n", v[int((NR + 1) / 2)] / 1000, v[p] / 1000
        }'
echo "recorded:  $recorded rows, $succeeded success, $failed runs exited non-zero"
if [ "$recorded" -ne "$runs" ] || [ "$succeeded" -ne "$runs" ] || [ "$failed" -ne 0 ]; then
        echo "LOST OR FAILED RUNS" >&2
        head -5 "$tmp/errors" >&2 || true
        exit 1
fi
