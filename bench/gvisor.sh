#!/usr/bin/env bash
# The cost of the gvisor runtime against the native one, measured in the
# same run so both see the same machine state.
#
# Three jobs, each run alternately under --runtime native and --runtime
# gvisor, N times each; prints each median in milliseconds (wall time of
# the whole `hutch run`) and the ratio gvisor/native:
#   startup   /bin/true: what a run costs before the job does anything
#   cpu       a CPU-bound loop in the shell (no syscalls to speak of)
#   syscalls  many small reads and writes (dd bs=1 of 200 KB), the
#             case where gVisor's trapping of every syscall shows
#
#   bench/gvisor.sh [N]        (default N=20; HUTCH=path/to/hutch)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
n=${1:-20}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v runsc >/dev/null || { echo "runsc not installed (apt-get install runsc)" >&2; exit 77; }
export HUTCH_STATE_DIR=${HUTCH_STATE_DIR:-$(mktemp -d)}

declare -A job=(
        [startup]='/bin/true'
        [cpu]='i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
        [syscalls]='dd if=/dev/zero of=/dev/null bs=1 count=200000 2>/dev/null'
)

for rt in native gvisor; do
        "$hutch" run -q --runtime "$rt" -- /bin/true ||
                { echo "hutch --runtime $rt cannot run here (see hutch doctor)" >&2; exit 1; }
done

now_ns() { date +%s%N; }

echo "runs: $n each, alternating native and gvisor ($(runsc --version | head -n 1))"
for name in startup cpu syscalls; do
        nat=() gv=()
        for ((i = 0; i < n; i++)); do
                t0=$(now_ns); "$hutch" run -q --runtime native -- sh -c "${job[$name]}"; t1=$(now_ns)
                "$hutch" run -q --runtime gvisor -- sh -c "${job[$name]}"; t2=$(now_ns)
                nat+=($((t1 - t0)))
                gv+=($((t2 - t1)))
        done
        awk -v name="$name" -v a="$(bench_median "${nat[@]}")" -v b="$(bench_median "${gv[@]}")" 'BEGIN {
                printf "%-9s native %8.1f ms   gvisor %8.1f ms   ratio %6.2f\n", name, a / 1e6, b / 1e6, b / a
        }'
done
