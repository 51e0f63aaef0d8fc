#!/bin/sh
# check-fuzz-profile.sh - `make check` driver for the profile fuzz target
# (TAP). Without clang's libFuzzer the target is a replay binary that runs
# the seed corpus once and prints TAP itself. With it, the libFuzzer
# binary replays the corpus, then fuzzes for 10 seconds from a scratch copy
# (the committed corpus is never written to); a crashing input is kept as
# tests/fuzz/fuzz-profile-crash-* in the build dir.
set -u
bin=./tests/fuzz/fuzz-profile-lf
corpus="${TESTS_DIR:?}/fuzz/corpus"

if [ "${HUTCH_FUZZING:-no}" != yes ]; then
        exec ./tests/fuzz/fuzz-profile "$corpus"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$corpus"/* "$work/corpus/"

echo 1..2
if "$bin" -runs=0 "$corpus" >"$work/replay.out" 2>&1; then
        echo "ok 1 - seed corpus replays cleanly"
else
        echo "not ok 1 - seed corpus replays cleanly"
        tail -40 "$work/replay.out" | sed 's/^/# /'
fi
if "$bin" -max_total_time=10 -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix=./tests/fuzz/fuzz-profile-crash- "$work/corpus" >"$work/run.out" 2>&1; then
        echo "ok 2 - 10 seconds of fuzzing found nothing"
else
        echo "not ok 2 - fuzzing found a crash (input kept as tests/fuzz/fuzz-profile-crash-*)"
        tail -40 "$work/run.out" | sed 's/^/# /'
fi
