#!/bin/sh
# bench/argv.sh - what long argument lists cost.
#
# Times `hutch run -- /bin/true ARGS` against `/bin/true ARGS` itself, with
# N arguments (default 100000), and `hutch run -- /bin/true` without them,
# so the cost of the arguments to hutch is (run with args - run without)
# less what the execs cost (true with args - true without, twice: the run
# execs hutch and then the job), best of R rounds each; then times
# `hutch ls --limit 5` with that run among the rows listed, against a store
# of short runs only, and N/5 `-e` variables against /bin/true given as
# many words. Prints the figures and the ratios; a quadratic path shows as
# seconds here.
#
# Usage: bench/argv.sh [N] [ROUNDS]     HUTCH=path/to/hutch (default src/hutch)
set -eu

N=${1:-100000}
ROUNDS=${2:-5}
HUTCH=${HUTCH:-$(dirname "$0")/../src/hutch}

HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-argv.XXXXXX")
export HUTCH_STATE_DIR
trap 'rm -rf "$HUTCH_STATE_DIR"' EXIT INT TERM
ARGS=$(seq 1 "$N")

# best wall time in ms of ROUNDS runs of "$@"
best_ms() {
        i=0
        while [ $i -lt "$ROUNDS" ]; do
                s=$(date +%s%N)
                "$@" >/dev/null 2>&1 || true
                e=$(date +%s%N)
                echo $(( (e - s) / 1000 ))
                i=$((i + 1))
        done | sort -n | head -n 1 | awk '{ printf "%.1f", $1 / 1000 }'
}

# shellcheck disable=SC2086 # the arguments are meant to be split
true_args=$(best_ms /bin/true $ARGS)
true_none=$(best_ms /bin/true)
# shellcheck disable=SC2086
run_args=$(best_ms "$HUTCH" run -- /bin/true $ARGS)
run_none=$(best_ms "$HUTCH" run -- /bin/true)
ls_long=$(best_ms "$HUTCH" ls --limit 5)
# N/5 environment variables: -e for hutch; the peer gets as many
# NAME=VALUE words as arguments (env(1) itself is quadratic in them)
E=$((N / 5))
EOPTS=$(i=1; while [ $i -le $E ]; do printf -- '-e V%d=x ' $i; i=$((i + 1)); done)
EVARS=$(i=1; while [ $i -le $E ]; do printf 'V%d=x ' $i; i=$((i + 1)); done)
# shellcheck disable=SC2086
env_run=$(best_ms "$HUTCH" run $EOPTS -- /bin/true)
# shellcheck disable=SC2086
env_peer=$(best_ms /bin/true $EVARS)
rm -rf "$HUTCH_STATE_DIR"
mkdir -p "$HUTCH_STATE_DIR"
i=0
while [ $i -lt 5 ]; do "$HUTCH" run -- /bin/true >/dev/null; i=$((i + 1)); done
ls_short=$(best_ms "$HUTCH" ls --limit 5)

echo "arguments: $N, best of $ROUNDS"
echo "/bin/true:           ${true_none} ms, with the arguments ${true_args} ms"
echo "hutch run -- true:   ${run_none} ms, with the arguments ${run_args} ms"
# the arguments cross two execs in a hutch run (the shell's of hutch, and
# the job's) and one for true: what is left is hutch's own work on them
awk -v ra="$run_args" -v rn="$run_none" -v ta="$true_args" -v tn="$true_none" 'BEGIN {
        exec_cost = ta - tn
        printf "added by the arguments: hutch run %.1f ms, true %.1f ms (ratio %.1f)\n",
               ra - rn, exec_cost, (exec_cost > 0 ? (ra - rn) / exec_cost : 0)
        printf "hutch'"'"'s own work on them (beyond two execs): %.1f ms\n", (ra - rn) - 2 * exec_cost }'
awk -v r="$env_run" -v rn="$run_none" -v p="$env_peer" -v tn="$true_none" -v e="$E" 'BEGIN {
        printf "%d variables: hutch run -e ... %.1f ms (+%.1f), true with as many words %.1f ms (+%.1f)\n",
               e, r, r - rn, p, p - tn }'
awk -v l="$ls_long" -v s="$ls_short" 'BEGIN {
        printf "hutch ls --limit 5: %.1f ms with the long run listed, %.1f ms without (ratio %.2f)\n",
               l, s, (s > 0 ? l / s : 0) }'
