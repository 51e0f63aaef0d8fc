#!/bin/sh
# check-fuzz.sh NAME - `make check` driver for the fuzz target
# tests/fuzz/fuzz-NAME (TAP), seeded from tests/fuzz/corpus-NAME, as
# check-fuzz-profile.sh does for the profile parser: without clang's
# libFuzzer the replay binary runs the seed corpus once; with it, the
# libFuzzer binary replays the corpus, then fuzzes for 10 seconds from a
# scratch copy (the committed corpus is never written to); a crashing
# input is kept as tests/fuzz/fuzz-NAME-crash-* in the build dir.
set -u
name=${1:?usage: check-fuzz.sh NAME}
bin=./tests/fuzz/fuzz-$name-lf
corpus="${TESTS_DIR:?}/fuzz/corpus-$name"

if [ "${HUTCH_FUZZING:-no}" != yes ]; then
        exec "./tests/fuzz/fuzz-$name" "$corpus"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$corpus"/* "$work/corpus/"

echo 1..2
if "$bin" -runs=0 "$corpus" >"$work/replay.out" 2>&1; then
        echo "ok 1 - $name: seed corpus replays cleanly"
else
        echo "not ok 1 - $name: seed corpus replays cleanly"
        tail -40 "$work/replay.out" | sed 's/^/# /'
fi
if "$bin" -max_total_time=10 -max_len=32768 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="./tests/fuzz/fuzz-$name-crash-" "$work/corpus" >"$work/run.out" 2>&1; then
        echo "ok 2 - $name: 10 seconds of fuzzing found nothing"
else
        echo "not ok 2 - $name: fuzzing found a crash (input kept as tests/fuzz/fuzz-$name-crash-*)"
        tail -40 "$work/run.out" | sed 's/^/# /'
fi
