#!/bin/bash
# bench/image.sh - is the first run of an image as cheap as the later ones?
#
# Imports an image (default: the two-layer busybox image the tests build,
# or SOURCE, e.g. oci:tests/image-cache/deb12:12 once image-debian.bats
# has cached it) into a fresh store, then times `hutch run --image IMG --
# true` right after the import (the first run) and ROUNDS runs after it,
# and `hutch run -- true` on the host root for scale; the first run is
# measured after each of FIRSTS fresh imports (default 5), for a median. Importing unpacks
# every layer, so a first run has nothing left to do that a later one
# skips: the ratio first/median should be about 1. Prints the figures.
#
# Usage: bench/image.sh [SOURCE] [ROUNDS]   HUTCH=path/to/hutch (default src/hutch)
set -eu

SOURCE=${1:-}
ROUNDS=${2:-20}
FIRSTS=${FIRSTS:-5}
here=$(cd "$(dirname "$0")" && pwd)
HUTCH=${HUTCH:-$here/../src/hutch}
export HUTCH_DATADIR=${HUTCH_DATADIR:-$here/../share}

work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-image.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
export HUTCH_STATE_DIR="$work/state"

if [ -z "$SOURCE" ]; then
        # shellcheck source=tests/integration/image-lib.bash
        . "$here/../tests/integration/image-lib.bash"
        busybox_image "$work/img" 1 > /dev/null
        SOURCE="oci:$work/img/oci:1"
fi

ms_of() {
        local s e
        s=$(date +%s%N)
        "$@" > /dev/null 2>&1
        e=$(date +%s%N)
        echo $(( (e - s) / 1000 ))
}

# the run store and the seccomp filter cache exist before the import, so
# the first image run pays for nothing but the image
ms_of "$HUTCH" run -- true > /dev/null
# each first run after a fresh import (rm drops the layers, so every
# import unpacks them again): FIRSTS of them, for a median
for _ in $(seq "$FIRSTS"); do
        "$HUTCH" image rm bench > /dev/null 2>&1 || true
        ms_of "$HUTCH" image import "$SOURCE" bench >> "$work/import"
        ms_of "$HUTCH" run --image bench -- true >> "$work/first"
done
"$HUTCH" image ls | tail -n +2
for _ in $(seq "$ROUNDS"); do ms_of "$HUTCH" run --image bench -- true; done | sort -n > "$work/later"
for _ in $(seq "$ROUNDS"); do ms_of "$HUTCH" run -- true; done | sort -n > "$work/host"
median() { sed -n "$(( ($(wc -l < "$1") + 1) / 2 ))p" "$1"; }
sort -n -o "$work/import" "$work/import"
sort -n -o "$work/first" "$work/first"
import_us=$(median "$work/import")
first_us=$(median "$work/first")
later_us=$(median "$work/later")
host_us=$(median "$work/host")
awk -v fi="$FIRSTS" -v i="$import_us" -v f="$first_us" -v l="$later_us" -v h="$host_us" -v n="$ROUNDS" 'BEGIN {
        printf "import (unpacks every layer)     %8.1f ms (median of %d)\n", i / 1000, fi
        printf "first run after an import        %8.1f ms (median of %d)\n", f / 1000, fi
        printf "later runs (median of %d)        %8.1f ms\n", n, l / 1000
        printf "host root runs (median of %d)    %8.1f ms\n", n, h / 1000
        printf "first / later                    %8.2f\n", f / l
}'
