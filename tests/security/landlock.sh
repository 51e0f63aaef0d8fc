#!/bin/sh
# landlock.sh - the hostile suite (tests/security/*.bats) again, with every
# job in the landlock tier (HUTCH_SECURITY_ISOLATION=landlock, lib.bash),
# as the caller. Each case the tier cannot hold is skipped with the reason
# (landlock_skip), in the words hutch-run(1) ISOLATION uses;
# every other case must pass as it does in the namespace tier.
set -eu

: "${HUTCH:?}" "${PROBE:?}" "${TESTS_DIR:?}" "${BATS:?}"

work=$(mktemp -d /tmp/hutch-landlock-sec.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! out=$(HUTCH_STATE_DIR="$work/probe" "$HUTCH" run -q --isolation landlock -- true 2>&1); then
        echo "1..0 # SKIP the landlock tier cannot run a job here: $(echo "$out" | tail -n 1)"
        exit 0
fi
files=$(cd "$TESTS_DIR" && ls security/*.bats)
# shellcheck disable=SC2046 # one argument per file, no spaces in them
exec env HUTCH_SECURITY_ISOLATION=landlock "$BATS" --tap $(for f in $files; do echo "$TESTS_DIR/$f"; done)
