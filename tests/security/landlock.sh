#!/bin/sh
# landlock.sh - the hostile suite (tests/security/*.bats) again, with every
# job in the landlock tier (HUTCH_SECURITY_ISOLATION=landlock, lib.bash):
# once as the caller and, when the caller is root, once more as an
# unprivileged user, whose job then has that user's own uid (as root the
# job has a uid of its own), as gvisor.sh does for the gVisor runtime. Each case
# the tier cannot hold is skipped with the reason (landlock_skip), in the
# words hutch-run(1) ISOLATION uses; every other case must pass as it
# does in the namespace tier.
#
# One TAP stream: each pass's results, renumbered, named with their pass
# ("[root]", "[unprivileged]"), the plan at the end. A pass whose bats
# dies early or fails without a failing case is a failure of its own.
set -eu

: "${HUTCH:?}" "${PROBE:?}" "${TESTS_DIR:?}" "${BATS:?}"

work=$(mktemp -d /tmp/hutch-landlock-sec.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! out=$(HUTCH_STATE_DIR="$work/probe" "$HUTCH" run -q --isolation landlock -- true 2>&1); then
        echo "1..0 # SKIP the landlock tier cannot run a job here: $(echo "$out" | tail -n 1)"
        exit 0
fi

# pass NAME COMMAND...: run one pass, its TAP into $work/NAME.tap, its
# exit status into $work/NAME.rc
pass() {
        name=$1
        shift
        rc=0
        "$@" >"$work/$name.tap" 2>"$work/$name.err" || rc=$?
        echo "$rc" >"$work/$name.rc"
}

files=$(cd "$TESTS_DIR" && ls security/*.bats)

# In this tier a root-run job has a host uid of its own on the host's own
# filesystem (run/landlock-uid.h):
# the probe must be where that uid can reach it, not in a checkout under
# root's 0700 home (as on a fresh machine and in CI).
mkdir -p "$work/rootbin"
cp "$PROBE" "$work/rootbin/probe"
chmod a+rx "$work" "$work/rootbin" "$work/rootbin/probe"
pass root env HUTCH_SECURITY_ISOLATION=landlock PROBE="$work/rootbin/probe" \
        "$BATS" --tap $(for f in $files; do echo "$TESTS_DIR/$f"; done)
passes=root

if [ "$(id -u)" -eq 0 ]; then
        user=hutch-unpriv
        if ! id "$user" >/dev/null 2>&1; then
                useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" ||
                        user=""
        fi
        if [ -n "$user" ] && command -v runuser >/dev/null; then
                # the binaries and tests where that user can read them
                u=$work/unpriv
                mkdir -p "$u/bin" "$u/tests" "$u/tmp" "$u/home"
                cp "$HUTCH" "$u/bin/hutch"
                cp "$PROBE" "$u/bin/probe"
                cp -R "$TESTS_DIR/security" "$u/tests/"
                for d in "${HUTCH_DATADIR:-}" "${HUTCH_PROFILE_PATH:-}"; do
                        [ -n "$d" ] && [ -d "$d" ] && cp -R "$d" "$u/$(basename "$d")"
                done
                chown -R "$user" "$u/tmp" "$u/home"
                chmod a+rx "$work"
                chmod -R a+rX "$u"
                # from a dir that user can enter: bats cds to where it
                # starts, and a checkout in root's 0700 home is not one
                cd "$u"
                pass unprivileged runuser -u "$user" -- env -i \
                        PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
                        HOME="$u/home" TMPDIR="$u/tmp" LANG=C.UTF-8 \
                        HUTCH="$u/bin/hutch" PROBE="$u/bin/probe" \
                        HUTCH_DATADIR="$u/share" HUTCH_PROFILE_PATH="$u/profiles" \
                        HUTCH_STATE_DIR="$u/tmp/state" HUTCH_SECURITY_ISOLATION=landlock \
                        "$BATS" --tap $(for f in $files; do echo "$u/tests/$f"; done)
                passes="root unprivileged"
        else
                echo "# no unprivileged pass: cannot create user hutch-unpriv or runuser(1) is missing"
        fi
fi

n=0
for p in $passes; do
        plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$work/$p.tap" | head -n 1)
        ran=$(grep -cE '^(not )?ok ' "$work/$p.tap" || true)
        failed=$(grep -c '^not ok ' "$work/$p.tap" || true)
        while IFS= read -r line; do
                case $line in
                "ok "* | "not ok "*)
                        n=$((n + 1))
                        echo "$line" | sed -E "s/^(not )?ok [0-9]+ /\\1ok $n [$p] /"
                        ;;
                1..*) ;;
                *) echo "$line" ;;
                esac
        done <"$work/$p.tap"
        rc=$(cat "$work/$p.rc")
        if [ -z "$plan" ] || [ "$ran" -ne "$plan" ] || { [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; }; then
                n=$((n + 1))
                echo "not ok $n [$p] the pass ended early (bats status $rc, ran $ran of ${plan:-?}): $(tail -n 3 "$work/$p.err" | tr '\n' ' ')"
        fi
done
echo "1..$n"
