#!/bin/sh
# Run the integration suite again as an unprivileged user.
#
# hutch is rootless: what works for root must work for an ordinary user,
# and root has shortcuts (it may write any uid map) an ordinary user does
# not. When the suite runs as root, this script creates (once) a user
# with no privileges, copies the built binaries and the tests somewhere
# that user can read, and runs every .bats file as that user. It speaks
# TAP, like bats itself.
set -eu

if [ "$(id -u)" -ne 0 ]; then
        echo "1..0 # SKIP already running unprivileged: the suite itself is the unprivileged run"
        exit 0
fi
: "${HUTCH:?}" "${TESTS_DIR:?}" "${BATS:?}"

user=hutch-unpriv
if ! id "$user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" \
                || { echo "1..0 # SKIP cannot create user $user"; exit 0; }
fi
command -v runuser >/dev/null || { echo "1..0 # SKIP runuser(1) not installed"; exit 0; }

work=$(mktemp -d /tmp/hutch-unpriv.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/tests" "$work/tmp" "$work/home"
cp "$HUTCH" "$work/bin/hutch"
[ -n "${PROBE:-}" ] && [ -x "$PROBE" ] && cp "$PROBE" "$work/bin/probe"
# the test helpers that simulate other hosts (landlock.bats)
for helper in refuse-userns userns-limit-zero; do
        [ -x "${TOP_BUILDDIR:-}/tests/$helper" ] && cp "$TOP_BUILDDIR/tests/$helper" "$work/bin/"
done
cp -R "$TESTS_DIR/integration" "$work/tests/"
[ -d "$TESTS_DIR/security" ] && cp -R "$TESTS_DIR/security" "$work/tests/"
for d in "${HUTCH_DATADIR:-}" "${HUTCH_PROFILE_PATH:-}"; do
        [ -n "$d" ] && [ -d "$d" ] && cp -R "$d" "$work/$(basename "$d")"
done
chown -R "$user" "$work/tmp" "$work/home"
chmod -R a+rX "$work"

files=$(cd "$work/tests" && ls integration/*.bats security/*.bats 2>/dev/null | sed "s|^|$work/tests/|")
cd "$work"
# not exec: the EXIT trap removes $work (a copy of hutch and the suite)
runuser -u "$user" -- env -i \
        PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
        HOME="$work/home" TMPDIR="$work/tmp" LANG=C.UTF-8 \
        HUTCH="$work/bin/hutch" PROBE="$work/bin/probe" TEST_BINDIR="$work/bin" \
        HUTCH_DATADIR="$work/share" HUTCH_PROFILE_PATH="$work/profiles" \
        TESTS_DIR="$work/tests" HUTCH_STATE_DIR="$work/tmp/state" \
        "$BATS" --tap $files
