#!/bin/sh
# bench/stdin.sh - what relaying stdin into a run costs.
#
# The job's stdin is a pipe the supervisor fills from hutch's own stdin
# (no caller descriptor enters the sandbox). This feeds BYTES (default
# 1 GiB) to a job that reads all of it, ROUNDS times each way,
# interleaved so that a noisy host hurts both alike:
#   pipe:  head -c BYTES /dev/zero | cat | JOB
#   hutch: head -c BYTES /dev/zero | hutch run -- JOB
# "pipe" is the peer: `cat | job` is what a relay through one more
# process costs at least. Prints the medians and the ratio hutch/pipe.
#
# Usage: bench/stdin.sh [ROUNDS]    HUTCH=path/to/hutch  BYTES=N  JOB='...'
# Needs a `hutch run` that works on this host (user namespaces).
set -eu

ROUNDS=${1:-5}
HUTCH=${HUTCH:-$(dirname "$0")/../src/hutch}
BYTES=${BYTES:-1073741824}
JOB=${JOB:-"wc -c"}

HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-stdin.XXXXXX")
export HUTCH_STATE_DIR
times=$(mktemp "${TMPDIR:-/tmp}/hutch-bench-times.XXXXXX")
trap 'rm -rf "$HUTCH_STATE_DIR" "$times"' EXIT INT TERM

ms_of() {
        s=$(date +%s%N)
        sh -c "$1" >/dev/null
        e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
}
median() {
        sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

"$HUTCH" run -- true >/dev/null || { echo "bench/stdin.sh: hutch run does not work here" >&2; exit 1; }
got=$(head -c 1000 /dev/zero | "$HUTCH" run -- $JOB)
[ "$got" = 1000 ] || [ "$JOB" != "wc -c" ] || { echo "bench/stdin.sh: relay lost bytes: $got" >&2; exit 1; }

i=0
while [ $i -lt "$ROUNDS" ]; do
        echo "pipe $(ms_of "head -c $BYTES /dev/zero | cat | $JOB")"
        echo "hutch $(ms_of "head -c $BYTES /dev/zero | '$HUTCH' run --timeout none -- $JOB")"
        i=$((i + 1))
done >"$times"
piped=$(awk '$1 == "pipe" { print $2 }' "$times" | median)
boxed=$(awk '$1 == "hutch" { print $2 }' "$times" | median)

echo "job:        $JOB, reading $BYTES bytes of stdin"
echo "pipe:       median $piped ms  (head | cat | job)"
echo "hutch run:  median $boxed ms  (head | hutch run -- job)"
awk -v a="$boxed" -v b="$piped" 'BEGIN { r = b > 0 ? a / b : 0; printf "ratio:      %.2f hutch/pipe\n", r }'
