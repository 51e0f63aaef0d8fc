#!/bin/sh
# bench/output.sh - what recording a run's output costs.
#
# Runs a job that writes BYTES (default 1 GiB) to stdout, with stdout sent
# to /dev/null, ROUNDS times each way, interleaved so that a noisy host
# hurts all three alike:
#   bare:  sh -c "$JOB" > /dev/null
#   pipe:  sh -c "$JOB" | cat > /dev/null
#   hutch:   hutch run -- sh -c "$JOB" > /dev/null
# and prints the medians and two ratios: hutch/bare (target: <= 1.3) and
# hutch/pipe. Through hutch every byte crosses a pipe to the supervisor, is
# counted (bytes, lines) and kept as head + tail, and is written on to
# /dev/null. "pipe" is the floor of any capture: the job's own writes
# into a pipe cost more than its writes to /dev/null (on a 2-core host
# with cgroup v1 memory accounting, `tr` spends 0.6 s on 1 GiB into
# /dev/null and 1.0 s into a pipe), whoever reads the other end.
#
# Usage: bench/output.sh [ROUNDS]    HUTCH=path/to/hutch  BYTES=N  JOB='...'
# Needs a `hutch run` that works on this host (user namespaces).
set -eu

ROUNDS=${1:-5}
HUTCH=${HUTCH:-$(dirname "$0")/../src/hutch}
BYTES=${BYTES:-1073741824}
JOB=${JOB:-"head -c $BYTES /dev/zero | tr '\\\\0' x"}

HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-output.XXXXXX")
export HUTCH_STATE_DIR
trap 'rm -rf "$HUTCH_STATE_DIR"' EXIT INT TERM

ms_of() {
        s=$(date +%s%N)
        "$@" >/dev/null
        e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
}
median() {
        sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

"$HUTCH" run -- true >/dev/null || { echo "bench/output.sh: hutch run does not work here" >&2; exit 1; }

times=$(mktemp "${TMPDIR:-/tmp}/hutch-bench-times.XXXXXX")
trap 'rm -rf "$HUTCH_STATE_DIR" "$times"' EXIT INT TERM
i=0
while [ $i -lt "$ROUNDS" ]; do
        echo "bare $(ms_of sh -c "$JOB")"
        echo "pipe $(ms_of sh -c "$JOB | cat")"
        echo "hutch $(ms_of "$HUTCH" run -- sh -c "$JOB")"
        i=$((i + 1))
done >"$times"
bare=$(awk '$1 == "bare" { print $2 }' "$times" | median)
piped=$(awk '$1 == "pipe" { print $2 }' "$times" | median)
boxed=$(awk '$1 == "hutch" { print $2 }' "$times" | median)

echo "job:        $JOB"
echo "bare:       median $bare ms"
echo "pipe:       median $piped ms  (the job into a pipe read by cat)"
echo "hutch run:    median $boxed ms"
awk -v a="$boxed" -v b="$bare" 'BEGIN { r = b > 0 ? a / b : 0; printf "ratio:      %.2f hutch/bare (target <= 1.30)%s\n", r, r <= 1.3 ? "" : "  OVER TARGET" }'
awk -v a="$boxed" -v b="$piped" 'BEGIN { r = b > 0 ? a / b : 0; printf "            %.2f hutch/pipe\n", r }'
# the run was recorded with exact counts
"$HUTCH" ls --limit 1 --json | grep -q "\"stdout_bytes\":$BYTES," ||
        echo "warning: the last run did not record stdout_bytes=$BYTES" >&2
