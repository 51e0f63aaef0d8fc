#!/bin/sh
# bench/collect.sh - what recording a run's workspace changes costs.
#
# A job writes FILES files of SIZE MiB each into the workspace (/workspace,
# from `-w DIR`). hutch records every changed file with its sha256, and
# keeps the run's upper dir until it is applied or collected, so the cost
# beyond the job is mostly hashing. The peer does the same work the plain
# way: the same job under bubblewrap with DIR bound read-write (at
# /tmp/ws: the host has no /workspace to mount on), then
# `sha256sum` over what it wrote (the hashes a user would need to know what
# changed). Best of ROUNDS each, alternating; prints both and hutch/peer.
#
# Usage: bench/collect.sh [SIZE_MIB] [FILES] [ROUNDS]
#        (default 64 4 5; HUTCH=path/to/hutch, default src/hutch)
set -eu

SIZE=${1:-64}
FILES=${2:-4}
ROUNDS=${3:-5}
HUTCH=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v bwrap >/dev/null || { echo "bench/collect.sh: bwrap not installed (apt-get install bubblewrap)" >&2; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-collect.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export HUTCH_STATE_DIR="$tmp/state"
mkdir -p "$tmp/ws-hutch" "$tmp/ws-peer"

# the job: FILES files of SIZE MiB, not all zeros (a pattern, so no
# filesystem can keep them sparse)
# into the directory \$1
job="i=0; while [ \$i -lt $FILES ]; do yes hutch-bench-collect | head -c ${SIZE}M > \$1/f\$i; i=\$((i + 1)); done"

now_us() { echo $(($(date +%s%N) / 1000)); }

hutch_once() {
        rm -rf "$tmp/ws-hutch"/*
        s=$(now_us)
        "$HUTCH" run -w "$tmp/ws-hutch" -- sh -c "$job" sh /workspace >/dev/null
        e=$(now_us)
        echo $((e - s))
}

peer_once() {
        rm -rf "$tmp/ws-peer"/*
        s=$(now_us)
        bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
                --bind "$tmp/ws-peer" /tmp/ws sh -c "$job" sh /tmp/ws
        sha256sum "$tmp/ws-peer"/* >/dev/null
        e=$(now_us)
        echo $((e - s))
}

: >"$tmp/hutch.times"
: >"$tmp/peer.times"
i=0
while [ $i -lt "$ROUNDS" ]; do
        hutch_once >>"$tmp/hutch.times"
        peer_once >>"$tmp/peer.times"
        i=$((i + 1))
done
h=$(sort -n "$tmp/hutch.times" | head -n 1)
p=$(sort -n "$tmp/peer.times" | head -n 1)

echo "the job writes $FILES files of $SIZE MiB into the workspace; best of $ROUNDS"
awk -v h="$h" -v p="$p" 'BEGIN {
        printf "  hutch run -w DIR (records each file and its sha256)  %8.1f ms\n", h / 1000
        printf "  bwrap --bind DIR /tmp/ws, then sha256sum              %8.1f ms\n", p / 1000
        printf "  ratio %.2f hutch/peer\n", (p > 0 ? h / p : 0) }'
