#!/usr/bin/env bash
# bench/exec.sh - what an exec into a live sandbox costs, against a
# fresh `hutch run` and bubblewrap's start-up, measured in the same run.
#
# Each round runs, in an order that rotates from round to round (so no
# command always follows the same one on a noisy host):
#   exec:   hutch exec bench -- /bin/true   (a live sandbox started once;
#           every exec a complete, durable record)
#   run:    hutch run -- /bin/true          (a new sandbox and its record)
#   bwrap:  bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev
#           --proc /proc --tmpfs /tmp /bin/true
#   kernel: hutch exec bench --kernel python -c 'x+=1'   (a call into the
#           sandbox's Python kernel, each a complete, durable record;
#           left out without python3)
#   true:   /bin/true                       (the floor of any process start)
# Times come from bash's $EPOCHREALTIME, so no timer process runs between
# two commands. Prints each command's median, mean and 99th percentile in
# milliseconds, then the targets of issue 41 as ratios of the medians:
# exec/run (target <= 0.5), exec/bwrap (target < 1.0) and kernel/true
# (target <= 1.5).
# HUTCH_BASE=path/to/another/hutch adds that build's exec (and kernel
# call) into its own live sandbox as "base" (and "kbase"), and prints
# exec/base (kernel/kbase): the way to measure a change on a host whose
# load moves between two runs.
#
#   bench/exec.sh [ROUNDS]   (default 200; HUTCH=path/to/hutch)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-200}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
bench_need bwrap "apt-get install bubblewrap"
bench_need_epochrealtime

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-exec.XXXXXX")
export HUTCH_STATE_DIR=$tmp/state
base=${HUTCH_BASE:-}
stop() {
        "$hutch" sandbox stop bench >/dev/null 2>&1 || true
        [ -z "$base" ] || HUTCH_STATE_DIR=$tmp/state-base "$base" sandbox stop bench >/dev/null 2>&1 || true
        rm -rf "$tmp"
}
trap stop EXIT INT TERM

names=(exec run bwrap true)
"$hutch" sandbox start bench --idle-timeout none >/dev/null ||
        { echo "bench/exec.sh: hutch sandbox start fails here (see hutch doctor)" >&2; exit 1; }
if [ -n "$base" ]; then
        names+=(base)
        HUTCH_STATE_DIR=$tmp/state-base "$base" sandbox start bench --idle-timeout none >/dev/null
fi
kernel=
if command -v python3 >/dev/null && "$hutch" exec bench --kernel python -c 'x = 0' >/dev/null 2>&1; then
        kernel=1
        names+=(kernel)
        if [ -n "$base" ]; then
                HUTCH_STATE_DIR=$tmp/state-base "$base" exec bench --kernel python -c 'x = 0' >/dev/null
                names+=(kbase)
        fi
fi

cmd_bwrap=(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp)
run_named() {
        case $1 in
        exec) "$hutch" exec bench -- /bin/true ;;
        run) "$hutch" run -- /bin/true ;;
        bwrap) "${cmd_bwrap[@]}" /bin/true ;;
        true) /bin/true ;;
        base) HUTCH_STATE_DIR=$tmp/state-base "$base" exec bench -- /bin/true ;;
        kernel) "$hutch" exec bench --kernel python -c 'x+=1' ;;
        kbase) HUTCH_STATE_DIR=$tmp/state-base "$base" exec bench --kernel python -c 'x+=1' ;;
        esac
}

bench_check_runs ""
bench_warm_up 5
bench_pass "$rounds" rotate bench_timed >"$tmp/times"

echo "rounds:   $rounds of each command, order rotating; $(bench_host)"
bench_table "$tmp/times"
bench_target ratio "$tmp/times" exec run '<=' 0.5
bench_target "" "$tmp/times" exec bwrap '<' 1.0
awk -v e="$(bench_stats exec "$tmp/times")" -v t="$(bench_stats true "$tmp/times")" 'BEGIN {
        split(e, E, " "); split(t, T, " ")
        printf "           exec is %.2f ms above the floor of a process start (/bin/true)\n", E[1] - T[1]
}'
[ -z "$kernel" ] || bench_target "" "$tmp/times" kernel true '<=' 1.5
if [ -n "$base" ]; then
        bench_versus "" "$tmp/times" exec base
        [ -z "$kernel" ] || bench_versus "" "$tmp/times" kernel kbase
fi
