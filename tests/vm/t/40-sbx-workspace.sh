# 40-sbx-workspace.sh - overlay workspaces on a real (older) kernel.
# Debian 12's 6.1 tmpfs has no user.* xattrs (they came in 6.6), so an
# overlay upper dir on tmpfs cannot record an opaque directory there:
# sbx doctor must say so, and sbx run --workdir must refuse (exit 125,
# naming the reason) instead of recording a wrong change set.
. /tests/lib.sh

export SBX_STATE_DIR=/tmp/sbx-state-ws-$(id -u)
mkdir -p "$SBX_STATE_DIR"
ver=$(uname -r)
major=${ver%%.*}
minor=${ver#*.}
minor=${minor%%[!0-9]*}
old=no
if [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 6 ]; }; then
        old=yes
fi

out=$("$SBX" doctor 2>&1)
t_diag "$(echo "$out" | grep 'user xattrs on tmpfs')"
if [ $old = yes ]; then
        check "sbx doctor: no user xattrs on tmpfs on $ver, reported MISSING" \
                sh -c 'echo "$1" | grep -q "^MISSING user xattrs on tmpfs"' sh "$out"
else
        check "sbx doctor: user xattrs on tmpfs on $ver, reported OK" \
                sh -c 'echo "$1" | grep -q "^OK      user xattrs on tmpfs"' sh "$out"
fi

if ! sbx_ready; then
        sbx_skip_all "sbx: --workdir refused with the reason on kernels without tmpfs user xattrs"
        t_done
fi
d=$(mktemp -d)
echo x >"$d/f"
out=$("$SBX" run --workdir "$d" -- sh -c 'rm f; echo y > g' 2>&1)
rc=$?
if [ $old = yes ]; then
        check "sbx: --workdir on $ver exits 125 (got $rc)" [ $rc -eq 125 ]
        t_diag "$out"
        check "sbx: --workdir on $ver names user xattrs and sbx doctor" sh -c 'echo "$1" | grep -q "user xattrs on tmpfs (Linux 6.6+; see sbx doctor)"' sh "$out"
else
        check "sbx: --workdir on $ver works (got $rc)" [ $rc -eq 0 ]
fi
check "sbx: the host workdir is unchanged" sh -c '[ -f "$1/f" ] && [ ! -e "$1/g" ]' sh "$d"
t_done
