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
rounds=${1:-200}
load=${LOAD:-2}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v bwrap >/dev/null || { echo "bench/startup.sh: bwrap not installed (apt-get install bubblewrap)" >&2; exit 77; }
command -v unshare >/dev/null || { echo "bench/startup.sh: unshare not installed (util-linux)" >&2; exit 77; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/startup.sh: needs bash 5 (\$EPOCHREALTIME)" >&2; exit 77; }

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

# one timed run: "NAME MICROSECONDS" on stdout
timed() {
        local t0 t1
        t0=$EPOCHREALTIME
        run_named "$1" >/dev/null
        t1=$EPOCHREALTIME
        echo "$1 $(( (${t1/./} - ${t0/./}) ))"
}

for n in "${names[@]}"; do
        run_named "$n" >/dev/null || { echo "bench/startup.sh: $n cannot run here (for hutch: see hutch doctor)" >&2; exit 1; }
done

# a few unrecorded rounds first: page cache, the compiled filter's cache
for ((i = 0; i < 5; i++)); do for n in "${names[@]}"; do run_named "$n" >/dev/null; done; done

# this round's order in $order: a fresh random permutation of names. A
# rotation keeps each command's predecessor fixed within a round, and
# the command after base (or static) then ran with hutch's pages just
# warmed by it: two copies of one binary measured 0.97 that way.
shuffle() {
        local i j t
        order=("${names[@]}")
        for ((i = ${#order[@]} - 1; i > 0; i--)); do
                j=$((RANDOM % (i + 1)))
                t=${order[i]} order[i]=${order[j]} order[j]=$t
        done
}

for ((i = 0; i < rounds; i++)); do
        shuffle
        for n in "${order[@]}"; do timed "$n"; done
done >"$tmp/quiet"

if [ "$load" -gt 0 ]; then
        for ((i = 0; i < rounds; i++)); do
                shuffle
                for n in "${order[@]}"; do
                        for ((j = 0; j < load; j++)); do timed "$n" & done
                        wait
                done
        done >"$tmp/loaded"
fi

phases=${PHASES:-1}
if [ "$phases" != 0 ]; then
        for n in "${names[@]}"; do stamped "$n" >/dev/null; done
        for ((i = 0; i < rounds; i++)); do
                shuffle
                for n in "${order[@]}"; do stamped "$n"; done
        done >"$tmp/phases"
fi

# NAME -> "median mean p99" in ms
stats() {
        awk -v n="$1" '$1 == n { print $2 }' "$2" | sort -n | awk '
                { v[NR] = $1; s += $1 }
                END {
                        if (NR == 0) { print "0 0 0"; exit }
                        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                        p = int(NR * 0.99 + 0.999); if (p > NR) p = NR; if (p < 1) p = 1
                        printf "%.2f %.2f %.2f\n", m / 1000, s / NR / 1000, v[p] / 1000
                }'
}

report() {
        local file=$1 title=$2 h b u
        echo "$title"
        printf '  %-8s %9s %9s %9s\n' "" median mean p99
        for n in "${names[@]}"; do
                read -r m a p < <(stats "$n" "$file")
                printf '  %-8s %6.2f ms %6.2f ms %6.2f ms\n' "$n" "$m" "$a" "$p"
        done
        h=$(stats hutch "$file") b=$(stats bwrap "$file") u=$(stats unshare "$file")
        awk -v h="$h" -v b="$b" -v u="$u" 'BEGIN {
                split(h, H, " "); split(b, B, " "); split(u, U, " ")
                r = H[1] / B[1]
                printf "  ratio    %.2f hutch/bwrap of the medians (target <= 1.0)%s\n", r, r <= 1.0 ? "" : "  OVER TARGET"
                printf "           %.2f of p99s; hutch is %.2f ms above the unshare floor (median)\n", H[3] / B[3], H[1] - U[1]
        }'
        if [[ " ${names[*]} " == *" landlock "* ]]; then
                awk -v l="$(stats landlock "$file")" -v h="$h" -v b="$b" 'BEGIN {
                        split(l, L, " "); split(h, H, " "); split(b, B, " ")
                        printf "           landlock tier: %.2f of bwrap, %.2f of the namespace tier (medians)\n", L[1] / B[1], L[1] / H[1]
                }'
        fi
        if [ -n "$static" ]; then
                awk -v s="$(stats static "$file")" -v b="$b" 'BEGIN {
                        split(s, S, " "); split(b, B, " ")
                        printf "           %.2f hutch-static/bwrap of the medians, %.2f of the p99s\n", S[1] / B[1], S[3] / B[3]
                }'
        fi
        if [ -n "$base" ]; then
                awk -v h="$(stats hutch "$file")" -v o="$(stats base "$file")" 'BEGIN {
                        split(h, H, " "); split(o, O, " ")
                        printf "           %.2f hutch/base of the medians, %.2f of the p99s\n", H[1] / O[1], H[3] / O[3]
                }'
        fi
}

echo "rounds:   $rounds of each command, order shuffled; $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg)${HUTCH_BENCH_FIFO:+; under SCHED_FIFO}"
report "$tmp/quiet" "one at a time:"
[ "$load" -gt 0 ] && report "$tmp/loaded" "$load at a time (each copy timed on its own):"
if [ "$phases" != 0 ]; then
        echo "where the time goes (the job is date +%s.%N; medians):"
        printf '  %-8s %12s %12s\n' "" "to the job" "after it"
        # the two halves as "NAME MICROSECONDS", the form stats() reads
        awk 'NF == 4 { printf "%s %.0f\n", $1, ($3 - $2) * 1e6 }' "$tmp/phases" >"$tmp/to-job"
        awk 'NF == 4 { printf "%s %.0f\n", $1, ($4 - $3) * 1e6 }' "$tmp/phases" >"$tmp/after-job"
        for n in "${names[@]}"; do
                read -r to _ < <(stats "$n" "$tmp/to-job")
                read -r after _ < <(stats "$n" "$tmp/after-job")
                printf '  %-8s %9.2f ms %9.2f ms\n' "$n" "$to" "$after"
        done
        awk -v h="$(stats hutch "$tmp/to-job") $(stats hutch "$tmp/after-job")" \
            -v b="$(stats bwrap "$tmp/to-job") $(stats bwrap "$tmp/after-job")" 'BEGIN {
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
