#!/usr/bin/env bash
# bench/output.sh - what carrying a run's output costs.
#
# Runs a job that writes BYTES (default 1 GiB) to stdout, with stdout sent
# to /dev/null, ROUNDS times each way, the order rotating from round to
# round so that a noisy host hurts all three alike:
#   bare:  sh -c "$JOB" > /dev/null
#   pipe:  sh -c "$JOB" | cat > /dev/null     (the peer)
#   hutch: hutch run -- sh -c "$JOB" > /dev/null
# Through hutch every byte crosses a pipe to the supervisor, is counted
# (bytes, lines), kept as head + tail, and written on to /dev/null. "pipe"
# is the floor of any capture: the job's own writes into a pipe cost more
# than its writes to /dev/null, whoever reads the other end. Prints the
# median, mean and p99 of each, hutch/pipe of the medians (target
# <= 1.10) and hutch/bare.
#
# Then one run of a job writing RSS_BYTES (default 2 GiB) through hutch,
# sampling the supervisor's peak RSS (VmHWM) while it runs (target < 8 MiB).
#
# Usage: bench/output.sh [ROUNDS]   HUTCH=path/to/hutch BYTES=N RSS_BYTES=N JOB='...'
# Needs a `hutch run` that works on this host (user namespaces).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# whole milliseconds; the ratios to three places
bench_format 6 7 0 3

rounds=${1:-5}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
bytes=${BYTES:-1073741824}
rss_bytes=${RSS_BYTES:-2147483648}
job=${JOB:-"head -c $bytes /dev/zero | tr '\\0' x"}
bench_need_epochrealtime

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-output.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export HUTCH_STATE_DIR=$tmp/state

"$hutch" run -- true >/dev/null || { echo "bench/output.sh: hutch run does not work here" >&2; exit 1; }

run_named() {
        case $1 in
        bare) sh -c "$job" >/dev/null ;;
        pipe) sh -c "$job" | cat >/dev/null ;;
        hutch) "$hutch" run -- sh -c "$job" >/dev/null ;;
        esac
}
names=(bare pipe hutch)
bench_pass "$rounds" rotate bench_timed >"$tmp/times"

echo "job:      $job"
echo "rounds:   $rounds of each, order rotating; $(bench_host)"
bench_table "$tmp/times"
bench_target ratio "$tmp/times" hutch pipe '<=' 1.10
awk -v h="$(bench_stats hutch "$tmp/times")" -v b="$(bench_stats bare "$tmp/times")" 'BEGIN {
        split(h, H, " "); split(b, B, " ")
        printf "         %.3f hutch/bare\n", H[1] / B[1]
}'
# the last run was recorded with exact counts
"$hutch" ls --limit 1 --json | grep -q "\"stdout_bytes\":$bytes," ||
        echo "warning: the last run did not record stdout_bytes=$bytes" >&2

# peak RSS of the supervisor while a job writes rss_bytes
"$hutch" run -- sh -c "head -c $rss_bytes /dev/zero | tr '\\0' x" >/dev/null &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
        kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
        sleep 0.05
done
wait "$pid"
awk -v kb="$peak" -v b="$rss_bytes" 'BEGIN {
        printf "peak RSS of hutch while its job wrote %.1f GiB: %.1f MiB (target < 8)%s\n", b / 1073741824, kb / 1024, kb < 8192 ? "" : "  OVER TARGET"
}'
