#!/bin/sh
# bench/kernel.sh - what a call into a persistent interpreter costs
# (hutch exec NAME --kernel python|node), against the floor of any CLI
# call (spawning /bin/true) and a fresh `hutch run --lang python`.
#
# One live sandbox, one warm kernel per language; hyperfine runs all
# the commands in one go, so a noisy host hurts them alike, and the
# ratios to /bin/true are printed from its medians. The issue's targets:
# a kernel call at most 1.5x /bin/true, a fresh --lang call about 10x.
#
# Usage: bench/kernel.sh [RUNS]    HUTCH=path/to/hutch
# Needs hyperfine, jq, python3 (and node, for its line) and a
# `hutch sandbox start` that works on this host.
set -eu

RUNS=${1:-200}
HUTCH=${HUTCH:-$(cd "$(dirname "$0")/.." && pwd)/src/hutch}
export HUTCH_DATADIR="${HUTCH_DATADIR:-$(cd "$(dirname "$0")/.." && pwd)/share}"
export HUTCH_PROFILE_PATH="${HUTCH_PROFILE_PATH:-$(cd "$(dirname "$0")/.." && pwd)/profiles}"
HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-kernel.XXXXXX")
export HUTCH_STATE_DIR
out=$(mktemp "${TMPDIR:-/tmp}/hutch-bench-kernel.XXXXXX")
trap '"$HUTCH" sandbox stop bench >/dev/null 2>&1 || true; rm -rf "$HUTCH_STATE_DIR" "$out"' EXIT INT TERM

"$HUTCH" sandbox start bench --timeout none >/dev/null
"$HUTCH" exec bench --kernel python -c 'x = 0' >/dev/null
node=
if command -v node >/dev/null 2>&1 && "$HUTCH" exec bench --kernel node -c 'var x = 0' >/dev/null 2>&1; then
        node="$HUTCH exec bench --kernel node -c x+=1"
fi

hyperfine -N -w 10 -r "$RUNS" --export-json "$out" \
        -n true /bin/true \
        -n kernel-python "$HUTCH exec bench --kernel python -c x+=1" \
        ${node:+-n kernel-node "$node"} \
        -n exec-true "$HUTCH exec bench -- true" \
        -n lang-python "$HUTCH run -q --lang python -c x=1" >/dev/null

jq -r '(.results[] | select(.command == "true") | .median) as $t
       | .results[] | "\(.command | .[0:14] | . + " " * (14 - length)) median \(.median * 1000 * 100 | round / 100) ms  \(.median / $t * 100 | round / 100)x /bin/true"' "$out"
