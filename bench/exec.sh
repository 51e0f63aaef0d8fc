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
rounds=${1:-200}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v bwrap >/dev/null || { echo "bench/exec.sh: bwrap not installed (apt-get install bubblewrap)" >&2; exit 77; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/exec.sh: needs bash 5 (\$EPOCHREALTIME)" >&2; exit 77; }

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

# one timed run: "NAME MICROSECONDS" on stdout
timed() {
        local t0 t1
        t0=$EPOCHREALTIME
        run_named "$1" >/dev/null
        t1=$EPOCHREALTIME
        echo "$1 $(( ${t1/./} - ${t0/./} ))"
}

for n in "${names[@]}"; do
        run_named "$n" >/dev/null || { echo "bench/exec.sh: $n cannot run here" >&2; exit 1; }
done
# a few unrecorded rounds first: page cache, the compiled filter's cache
for ((i = 0; i < 5; i++)); do for n in "${names[@]}"; do run_named "$n" >/dev/null; done; done

nn=${#names[@]}
for ((i = 0; i < rounds; i++)); do
        for ((k = 0; k < nn; k++)); do
                timed "${names[(i + k) % nn]}"
        done
done >"$tmp/times"

# NAME -> "median mean p99" in ms
stats() {
        awk -v n="$1" '$1 == n { print $2 }' "$tmp/times" | sort -n | awk '
                { v[NR] = $1; s += $1 }
                END {
                        if (NR == 0) { print "0 0 0"; exit }
                        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                        p = int(NR * 0.99 + 0.999); if (p > NR) p = NR; if (p < 1) p = 1
                        printf "%.2f %.2f %.2f\n", m / 1000, s / NR / 1000, v[p] / 1000
                }'
}

echo "rounds:   $rounds of each command, order rotating; $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-8s %9s %9s %9s\n' "" median mean p99
for n in "${names[@]}"; do
        read -r m a p < <(stats "$n")
        printf '  %-8s %6.2f ms %6.2f ms %6.2f ms\n' "$n" "$m" "$a" "$p"
done
awk -v e="$(stats exec)" -v r="$(stats run)" -v b="$(stats bwrap)" -v t="$(stats true)" 'BEGIN {
        split(e, E, " "); split(r, R, " "); split(b, B, " "); split(t, T, " ")
        x = E[1] / R[1]; y = E[1] / B[1]
        printf "  ratio    %.2f exec/run of the medians (target <= 0.5)%s\n", x, x <= 0.5 ? "" : "  OVER TARGET"
        printf "           %.2f exec/bwrap of the medians (target < 1.0)%s\n", y, y < 1.0 ? "" : "  OVER TARGET"
        printf "           exec is %.2f ms above the floor of a process start (/bin/true)\n", E[1] - T[1]
}'
if [ -n "$kernel" ]; then
        awk -v k="$(stats kernel)" -v t="$(stats true)" 'BEGIN {
                split(k, K, " "); split(t, T, " ")
                x = K[1] / T[1]
                printf "           %.2f kernel/true of the medians (target <= 1.5)%s\n", x, x <= 1.5 ? "" : "  OVER TARGET"
        }'
fi
if [ -n "$base" ]; then
        awk -v e="$(stats exec)" -v o="$(stats base)" 'BEGIN {
                split(e, E, " "); split(o, O, " ")
                printf "           %.2f exec/base of the medians, %.2f of the p99s\n", E[1] / O[1], E[3] / O[3]
        }'
        [ -z "$kernel" ] || awk -v e="$(stats kernel)" -v o="$(stats kbase)" 'BEGIN {
                split(e, E, " "); split(o, O, " ")
                printf "           %.2f kernel/kbase of the medians, %.2f of the p99s\n", E[1] / O[1], E[3] / O[3]
        }'
fi
