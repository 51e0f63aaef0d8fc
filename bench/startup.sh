#!/usr/bin/env bash
# bench/startup.sh - start-up cost of hutch against bubblewrap and the
# plain unshare(1) floor, measured in the same run.
#
# Each round runs, in an order shuffled afresh each round (so no command
# always follows the same one, whose pages and load it would inherit):
#   hutch:   hutch run -- /bin/true       (every protection on, and the record)
#   bwrap:   bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev
#            --proc /proc --tmpfs /tmp /bin/true
#   unshare: unshare -Urmpf --mount-proc /bin/true   (namespaces, nothing else)
#   landlock: hutch run --isolation landlock -- /bin/true   (hutch's tier for hosts
#            that refuse user namespaces: no namespace, Landlock, seccomp;
#            left out where the kernel has no Landlock, or with LANDLOCK=0)
# and then the same again under load: LOAD (default 2) copies of each
# command at once, every copy timed on its own. Times come from bash's
# $EPOCHREALTIME, so no timer process runs between two commands.
#
# Prints, for each command and each pass, the median, the mean and the
# 99th percentile in milliseconds; then hutch/bwrap of the medians
# (target <= 1.0) and hutch's distance from the unshare floor, and the
# landlock tier against bwrap and against hutch's namespace tier.
# A last pass says where the time goes: each command runs `date +%s.%N`
# as its job, and the stamp the job prints splits the run in two, from
# the caller's start to the job's print ("to the job": the sandbox's
# set-up plus date's own start, the same in every command) and from
# the print to the caller's wake-up ("after the job": date's exit, the
# sandbox's teardown and, for hutch, the record's final update).
# hutch-static (./configure --enable-static), when it is built next to
# hutch (or HUTCH_STATIC=path names it; HUTCH_STATIC= leaves it out), is
# a fourth command, "static", with its own state dir: both builds against
# bwrap in one run, "ratio" lines for each.
# HUTCH_BASE=path/to/another/hutch adds that build as a fourth command,
# "base", with its own state dir, and prints hutch/base too: the way to
# measure a change on a host whose load moves between two runs.
#
# FIFO=1 runs every command of the bench under SCHED_FIFO (chrt -f 1,
# inherited by hutch, bwrap and unshare alike): on a host whose other
# users keep every CPU busy, the commands then wait for no one's time
# slice but each other's and the kernel threads', which is close to a
# quiet host. It needs root (or CAP_SYS_NICE); the first line says so.
#
#   bench/startup.sh [ROUNDS]   (default 200; HUTCH=path/to/hutch, HUTCH_STATIC=path/to/hutch-static,
#                                LOAD=2; LOAD=0: no loaded pass;
#                                PHASES=0: no split pass; LANDLOCK=0: no landlock tier;
#                                FIFO=1: SCHED_FIFO)
set -euo pipefail
if [ "${FIFO:-0}" = 1 ] && [ -z "${HUTCH_BENCH_FIFO:-}" ]; then
        command -v chrt >/dev/null || { echo "bench/startup.sh: FIFO=1 needs chrt (util-linux)" >&2; exit 77; }
        HUTCH_BENCH_FIFO=1 exec chrt -f 1 "$0" "$@"
fi
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-200}
load=${LOAD:-2}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
bench_need bwrap "apt-get install bubblewrap"
bench_need unshare util-linux
bench_need_epochrealtime

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-startup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export HUTCH_STATE_DIR=${HUTCH_STATE_DIR:-$tmp/state}

# each command without its job, which run_named appends
cmd_hutch=("$hutch" run --)
cmd_bwrap=(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp)
cmd_unshare=(unshare -Urmpf --mount-proc)
cmd_landlock=("$hutch" run --isolation landlock --)
names=(hutch bwrap unshare)
if [ "${LANDLOCK:-1}" != 0 ]; then
        if "${cmd_landlock[@]}" /bin/true >/dev/null 2>"$tmp/landlock.err"; then
                names+=(landlock)
        else
                echo "bench/startup.sh: no landlock row: $(tail -n 1 "$tmp/landlock.err")" >&2
        fi
fi
static=${HUTCH_STATIC-$(dirname "$hutch")/hutch-static}
if [ -n "$static" ] && [ -x "$static" ]; then
        names+=(static)
        mkdir -p "$tmp/state-static"
else
        static=
fi
base=${HUTCH_BASE:-}
if [ -n "$base" ]; then
        names+=(base)
        mkdir -p "$tmp/state-base"
fi

# NAME [JOB...]: that command with JOB (default /bin/true) as its job
run_named() {
        local n=$1
        shift
        [ $# -gt 0 ] || set -- /bin/true
        case $n in
        hutch) "${cmd_hutch[@]}" "$@" ;;
        bwrap) "${cmd_bwrap[@]}" "$@" ;;
        unshare) "${cmd_unshare[@]}" "$@" ;;
        landlock) "${cmd_landlock[@]}" "$@" ;;
        static) HUTCH_STATE_DIR=$tmp/state-static "$static" run -- "$@" ;;
        base) HUTCH_STATE_DIR=$tmp/state-base "$base" run -- "$@" ;;
        esac
}
# one split run: "NAME START STAMP END", seconds since the epoch; the
# stamp goes to a file, not through $(), which would fork a subshell
# inside the timed span
stamped() {
        local t0 t1 stamp
        t0=$EPOCHREALTIME
        run_named "$1" date +%s.%N >"$tmp/stamp"
        t1=$EPOCHREALTIME
        read -r stamp <"$tmp/stamp" || stamp=
        echo "$1 $t0 $stamp $t1"
}

# NAME: LOAD copies of that command at once, each timed on its own
timed_loaded() {
        local j
        for ((j = 0; j < load; j++)); do bench_timed "$1" & done
        wait
}

bench_check_runs "(for hutch: see hutch doctor)"
bench_warm_up 5

# shuffled, not rotating: two copies of one binary measured 0.97 with
# the order rotating (see bench_shuffle)
bench_pass "$rounds" shuffle bench_timed >"$tmp/quiet"
[ "$load" -gt 0 ] && bench_pass "$rounds" shuffle timed_loaded >"$tmp/loaded"

phases=${PHASES:-1}
if [ "$phases" != 0 ]; then
        for n in "${names[@]}"; do stamped "$n" >/dev/null; done
        bench_pass "$rounds" shuffle stamped >"$tmp/phases"
fi

report() {
        local file=$1 title=$2 h b u
        echo "$title"
        bench_table "$file"
        bench_target ratio "$file" hutch bwrap '<=' 1.0
        h=$(bench_stats hutch "$file") b=$(bench_stats bwrap "$file") u=$(bench_stats unshare "$file")
        awk -v h="$h" -v b="$b" -v u="$u" 'BEGIN {
                split(h, H, " "); split(b, B, " "); split(u, U, " ")
                printf "           %.2f of p99s; hutch is %.2f ms above the unshare floor (median)\n", H[3] / B[3], H[1] - U[1]
        }'
        if [[ " ${names[*]} " == *" landlock "* ]]; then
                awk -v l="$(bench_stats landlock "$file")" -v h="$h" -v b="$b" 'BEGIN {
                        split(l, L, " "); split(h, H, " "); split(b, B, " ")
                        printf "           landlock tier: %.2f of bwrap, %.2f of the namespace tier (medians)\n", L[1] / B[1], L[1] / H[1]
                }'
        fi
        [ -z "$static" ] || bench_versus "" "$file" static bwrap hutch-static/bwrap
        [ -z "$base" ] || bench_versus "" "$file" hutch base
}

echo "rounds:   $rounds of each command, order shuffled; $(bench_host)${HUTCH_BENCH_FIFO:+; under SCHED_FIFO}"
report "$tmp/quiet" "one at a time:"
[ "$load" -gt 0 ] && report "$tmp/loaded" "$load at a time (each copy timed on its own):"
if [ "$phases" != 0 ]; then
        echo "where the time goes (the job is date +%s.%N; medians):"
        printf '  %-8s %12s %12s\n' "" "to the job" "after it"
        # the two halves as "NAME MICROSECONDS", the form bench_stats reads
        awk 'NF == 4 { printf "%s %.0f\n", $1, ($3 - $2) * 1e6 }' "$tmp/phases" >"$tmp/to-job"
        awk 'NF == 4 { printf "%s %.0f\n", $1, ($4 - $3) * 1e6 }' "$tmp/phases" >"$tmp/after-job"
        for n in "${names[@]}"; do
                read -r to _ < <(bench_stats "$n" "$tmp/to-job")
                read -r after _ < <(bench_stats "$n" "$tmp/after-job")
                printf '  %-8s %9.2f ms %9.2f ms\n' "$n" "$to" "$after"
        done
        awk -v h="$(bench_stats hutch "$tmp/to-job") $(bench_stats hutch "$tmp/after-job")" \
            -v b="$(bench_stats bwrap "$tmp/to-job") $(bench_stats bwrap "$tmp/after-job")" 'BEGIN {
                split(h, H, " "); split(b, B, " ")
                if (B[1] > 0 && B[4] > 0)
                        printf "  hutch - bwrap: %+.2f ms to the job, %+.2f ms after it\n", H[1] - B[1], H[4] - B[4]
        }'
fi
# every hutch run above was recorded, none lost (both tiers' runs)
want=$((5 + rounds + rounds * load + 1))
[ "$phases" != 0 ] && want=$((want + 1 + rounds))
[[ " ${names[*]} " == *" landlock "* ]] && want=$((want * 2 + 1))
got=$("$hutch" ls --json --limit 100000 2>/dev/null | grep -c '"status":"success"' || true)
[ "$got" -eq "$want" ] || echo "warning: $got successful runs recorded, $want expected" >&2
