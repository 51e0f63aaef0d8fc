# 40-hutch-workspace.sh - overlay workspaces on a real (older) kernel.
# Debian 12's 6.1 tmpfs has no user.* xattrs (they came in 6.6), so an
# overlay upper dir on tmpfs cannot record an opaque directory there:
# hutch doctor must say so, and hutch run --workdir must refuse (exit 125,
# naming the reason) instead of recording a wrong change set.
. /tests/lib.sh

export HUTCH_STATE_DIR=/tmp/hutch-state-ws-$(id -u)
mkdir -p "$HUTCH_STATE_DIR"
ver=$(uname -r)
major=${ver%%.*}
minor=${ver#*.}
minor=${minor%%[!0-9]*}
old=no
if [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 6 ]; }; then
        old=yes
fi

out=$("$HUTCH" doctor 2>&1)
t_diag "$(echo "$out" | grep 'user xattrs on tmpfs')"
if [ $old = yes ]; then
        check "hutch doctor: no user xattrs on tmpfs on $ver, reported MISSING" \
                sh -c 'echo "$1" | grep -q "^MISSING user xattrs on tmpfs"' sh "$out"
else
        check "hutch doctor: user xattrs on tmpfs on $ver, reported OK" \
                sh -c 'echo "$1" | grep -q "^OK      user xattrs on tmpfs"' sh "$out"
fi

if ! hutch_ready; then
        hutch_skip_all "hutch: --workdir refused with the reason on kernels without tmpfs user xattrs"
        t_done
fi
d=$(mktemp -d)
echo x >"$d/f"
out=$("$HUTCH" run --workdir "$d" -- sh -c 'rm f; echo y > g' 2>&1)
rc=$?
if [ $old = yes ]; then
        check "hutch: --workdir on $ver exits 125 (got $rc)" [ $rc -eq 125 ]
        t_diag "$out"
        check "hutch: --workdir on $ver names user xattrs and hutch doctor" sh -c 'echo "$1" | grep -q "user xattrs on tmpfs (Linux 6.6+; see hutch doctor)"' sh "$out"
else
        check "hutch: --workdir on $ver works (got $rc)" [ $rc -eq 0 ]
fi
check "hutch: the host workdir is unchanged" sh -c '[ -f "$1/f" ] && [ ! -e "$1/g" ]' sh "$d"
t_done
