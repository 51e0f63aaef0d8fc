#!/usr/bin/env bash
# bench/durability.sh - what making a run's final record durable costs.
#
# `hutch run` syncs its final update (and the change set it records) to
# disk before it returns, so a run it reported survives a power loss.
# This measures that cost against a build without it (HUTCH_BASE), in the
# same rounds: each round runs `hutch run -- true` with either build, in
# an order that alternates from round to round, each build with its own
# state dir on the filesystem of TMPDIR (a tmpfs makes every sync free:
# put TMPDIR on the disk the state dir will live on). Times come from
# bash's $EPOCHREALTIME.
#
# Prints, for each build, the median and mean milliseconds per run and
# runs per second; then new/base of the medians, and the fsync and
# fdatasync calls (each ends with a device cache flush on ext4 and XFS)
# and sync_file_range calls (a write, no flush) per run of each build
# (strace, when installed).
#
#   HUTCH_BASE=path/to/old/hutch bench/durability.sh [ROUNDS]   (default 200;
#       HUTCH=path/to/hutch; WORKDIR=1 runs with --workdir on a small tree,
#       so the change set is recorded too)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
rounds=${1:-200}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
base=${HUTCH_BASE:?set HUTCH_BASE to a hutch built without the change, to compare with}
bench_need_epochrealtime

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-durability.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -m 0700 "$tmp/new" "$tmp/base"
args=(-- true)
if [ "${WORKDIR:-0}" = 1 ]; then
        mkdir -p "$tmp/w"
        echo x > "$tmp/w/a"
        chmod -R a+rwX "$tmp/w"
        args=(--workdir "$tmp/w" -- sh -c 'echo $RANDOM > b')
fi

run_named() {
        case $1 in
        new) HUTCH_STATE_DIR=$tmp/new "$hutch" run -q "${args[@]}" ;;
        base) HUTCH_STATE_DIR=$tmp/base "$base" run -q "${args[@]}" ;;
        esac
}
# the order alternates: base first in even rounds, new in odd ones
names=(base new)

# warm up both (page cache, the first store's creation)
bench_warm_up 3
bench_pass "$rounds" rotate bench_timed >"$tmp/times"

read -r nm nmean _ < <(bench_stats new "$tmp/times")
read -r bm bmean _ < <(bench_stats base "$tmp/times")
printf '%-6s median %7.2f ms  mean %7.2f ms  %6.1f runs/s\n' new "$nm" "$nmean" "$(awk -v m="$nmean" 'BEGIN { print 1000 / m }')"
printf '%-6s median %7.2f ms  mean %7.2f ms  %6.1f runs/s\n' base "$bm" "$bmean" "$(awk -v m="$bmean" 'BEGIN { print 1000 / m }')"
awk -v n="$nm" -v b="$bm" 'BEGIN { printf "new/base (medians): %.3f (%+.2f ms per run)\n", n / b, n - b }'
if command -v strace > /dev/null; then
        for bin in "$hutch" "$base"; do
                st=$tmp/new
                [ "$bin" = "$hutch" ] || st=$tmp/base
                total=0 ranges=0
                for _ in $(seq 1 21); do
                        HUTCH_STATE_DIR=$st strace -f -e trace=fsync,fdatasync,sync_file_range -o "$tmp/strace" \
                                "$bin" run -q "${args[@]}" > /dev/null 2>&1 || true
                        n=$(grep -v resumed "$tmp/strace" | grep -cE '(^|[^_])f(data)?sync\(' || true)
                        r=$(grep -v resumed "$tmp/strace" | grep -c 'sync_file_range(' || true)
                        total=$((total + n)) ranges=$((ranges + r))
                done
                # 21 runs: three of the store's checkpoints, one every 7th run
                printf '%-6s per run (21 runs): %s fsync/fdatasync (each a device flush), %s sync_file_range (none)\n' \
                        "$([ "$bin" = "$hutch" ] && echo new || echo base)" \
                        "$(awk -v t="$total" 'BEGIN { printf "%.2f", t / 21 }')" \
                        "$(awk -v t="$ranges" 'BEGIN { printf "%.2f", t / 21 }')"
        done
fi
