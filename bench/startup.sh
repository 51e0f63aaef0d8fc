#!/usr/bin/env bash
# Start-up cost of hutch against bubblewrap, measured in the same run.
#
# Runs `hutch run -- /bin/true` and a comparable bwrap invocation
# alternately (so both see the same machine state), N times each, and
# prints each median in milliseconds and the ratio hutch/bwrap. Target:
# ratio <= 1.0 with every hutch feature switched on.
#
#   bench/startup.sh [N]          (default N=200; HUTCH=path/to/hutch)
set -euo pipefail
n=${1:-200}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v bwrap >/dev/null || { echo "bwrap not installed (apt-get install bubblewrap)" >&2; exit 77; }
export HUTCH_STATE_DIR=${HUTCH_STATE_DIR:-$(mktemp -d)}

bwrap_cmd=(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp /bin/true)
hutch_cmd=("$hutch" run -- /bin/true)

"${hutch_cmd[@]}" || { echo "hutch cannot run here (see hutch doctor)" >&2; exit 1; }
"${bwrap_cmd[@]}" || { echo "bwrap cannot run here" >&2; exit 1; }

now_ns() { date +%s%N; }
hutch_times=() bwrap_times=()
for ((i = 0; i < n; i++)); do
        t0=$(now_ns); "${hutch_cmd[@]}"; t1=$(now_ns)
        "${bwrap_cmd[@]}"; t2=$(now_ns)
        hutch_times+=($((t1 - t0)))
        bwrap_times+=($((t2 - t1)))
done

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms=$(median "${hutch_times[@]}")
mb=$(median "${bwrap_times[@]}")
awk -v s="$ms" -v b="$mb" -v n="$n" 'BEGIN {
        printf "runs:   %d each, alternating\n", n
        printf "hutch:    median %.2f ms\n", s / 1e6
        printf "bwrap:  median %.2f ms\n", b / 1e6
        printf "ratio:  %.2f (hutch/bwrap; target <= 1.0)\n", s / b
}'
