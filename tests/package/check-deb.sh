#!/bin/sh
# check-deb.sh - build hutch's Debian package, check it with lintian, install
# it into a freshly bootstrapped Debian 12 root, run real jobs from the
# installed package (as root and as an unprivileged user), then purge it.
#
# Usage (as root, from anywhere in a checkout):
#   tests/package/check-deb.sh [PACKAGE.changes]
# With a .changes file, that build is checked instead of building one.
#
# Environment:
#   CHECK_DEB_WORK     scratch directory (default: a new one under /tmp;
#                      removed at the end unless CHECK_DEB_KEEP=1)
#   CHECK_DEB_CACHE    directory for the bootstrapped root's tarball, reused
#                      on the next run (default: none, bootstrap every time)
#   CHECK_DEB_MIRROR   Debian mirror (default: the first source of the suite
#                      in this machine's /etc/apt/sources.list*)
#   CHECK_DEB_SUITE    suite to bootstrap (default bookworm)
#   DEB_BUILD_OPTIONS  passed to dpkg-buildpackage (nocheck skips its unit tests)
#
# Needs: dpkg-dev, debhelper, the Build-Depends of debian/control, lintian,
# debootstrap, unshare and mount (util-linux), and the mirror. Takes a few
# minutes (the bootstrap most of it). Speaks TAP; not part of `make check`.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
suite=${CHECK_DEB_SUITE:-bookworm}
# the mirror this machine's apt uses for the suite (.list or deb822 .sources)
apt_mirror() {
        {
                cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                        awk -v s="$suite" '$1 == "deb" { for (i = 2; i < NF; i++) if ($(i + 1) == s) { print $i; exit } }'
                cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
                        awk -v s="$suite" '/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) print u } /^$/ { u = "" }'
        } | head -n1
}
mirror=${CHECK_DEB_MIRROR:-$(apt_mirror)}
[ -n "$mirror" ] || { echo "1..0 # SKIP no $suite source in /etc/apt/sources.list*: set CHECK_DEB_MIRROR"; exit 0; }
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; echo "1..$n"; exit 1; }
note() { sed 's/^/# /'; }

if [ "$(id -u)" -ne 0 ]; then
        echo "1..0 # SKIP needs root (debootstrap, chroot)"
        exit 0
fi
for tool in dpkg-buildpackage lintian debootstrap unshare; do
        command -v "$tool" >/dev/null || { echo "1..0 # SKIP $tool is not installed"; exit 0; }
done

work=${CHECK_DEB_WORK:-$(mktemp -d /tmp/hutch-check-deb.XXXXXX)}
mkdir -p "$work"
cleanup() { [ "${CHECK_DEB_KEEP:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# 1. build, in a clone of the checkout's HEAD so the build leaves nothing
# in the checkout
if [ $# -ge 1 ]; then
        changes=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
        git clone -q "$top" "$work/src/hutch"
        if ! (cd "$work/src/hutch" && dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1; then
                tail -n 40 "$work/build.log" | note
                fail "dpkg-buildpackage -us -uc -b"
        fi
        changes=$(ls "$work"/src/hutch_*.changes)
        ok "dpkg-buildpackage -us -uc -b built $(basename "$changes")"
fi
deb=$(dirname "$changes")/$(sed -n 's/^ [0-9a-f]\{32\} [0-9]* [^ ]* [^ ]* \(hutch_[^ ]*\.deb\)$/\1/p' "$changes" | head -n1)
[ -f "$deb" ] || fail "the .changes names a hutch .deb ($deb)"

# 2. lintian: no errors (warnings are listed)
lintian "$changes" > "$work/lintian.txt" 2>&1 || true
grep -v 'running with root privileges' "$work/lintian.txt" | note
if grep -q '^E:' "$work/lintian.txt"; then
        fail "lintian reports errors"
fi
ok "lintian: no errors ($(grep -c '^W:' "$work/lintian.txt" || true) warnings)"

# 3. a fresh Debian root
root="$work/root"
tarball=
if [ -n "${CHECK_DEB_CACHE:-}" ]; then
        mkdir -p "$CHECK_DEB_CACHE"
        tarball="$CHECK_DEB_CACHE/$suite-minbase.tgz"
fi
if [ -n "$tarball" ] && [ ! -f "$tarball" ]; then
        debootstrap --variant=minbase --make-tarball="$tarball.tmp" "$suite" "$work/tarball-root" "$mirror" \
                > "$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log" | note; fail "debootstrap --make-tarball"; }
        mv "$tarball.tmp" "$tarball"
fi
if [ -n "$tarball" ]; then
        set -- --unpack-tarball="$tarball"
else
        set --
fi
debootstrap --variant=minbase "$@" "$suite" "$root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log" | note; fail "debootstrap $suite"; }
ok "debootstrap --variant=minbase $suite"

# 4. install the package, as apt would, in that root; then run jobs. All
# of it in a mount namespace of its own, whose root the new root becomes
# with pivot_root: the kernel refuses a new user namespace to a chrooted
# process, and the root's /proc, /dev and /sys vanish with the namespace.
cp "$deb" "$root/tmp/hutch.deb"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cat > "$root/tmp/smoke.sh" <<'SMOKE'
set -eu
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
step() { echo "== $*"; }
step install
apt-get update -qq
apt-get install -y -qq /tmp/hutch.deb > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 10; }
step files
test -x /usr/bin/hutch || exit 11
test -f /etc/apparmor.d/hutch || exit 12
grep -qx 'profile hutch /usr/bin/{hutch,hutch-static} flags=(unconfined) {' /etc/apparmor.d/hutch || exit 13
test -f /usr/share/bash-completion/completions/hutch || exit 14
test -f /usr/share/zsh/vendor-completions/_hutch || exit 15
test -f /usr/share/hutch/schema/hutch.result-1.json || exit 16
test -f /usr/share/hutch/profiles/default.ini || exit 17
test -f /usr/share/man/man1/hutch-doctor.1.gz || exit 18
# no AppArmor 4 here: the profile is kept from AppArmor's boot-time load
test ! -e /etc/apparmor.d/abi/4.0 && { test -L /etc/apparmor.d/disable/hutch || exit 19; }
step "hutch doctor (root)"
hutch doctor || true
step "hutch run (root)"
out=$(hutch run -- sh -c 'echo hello from the package; id -u')
echo "$out"
[ "$(echo "$out" | head -n1)" = "hello from the package" ] || exit 20
hutch ls | head -n 3
step "hutch run (unprivileged user)"
useradd -m smoke
out=$(runuser -u smoke -- hutch run --json -- sh -c 'echo x > /etc/passwd' || true)
echo "$out" | head -c 400; echo
grep -q smoke /etc/passwd || exit 21
runuser -u smoke -- hutch run -- sh -c 'echo unprivileged ok' | grep -qx 'unprivileged ok' || exit 22
step "AppArmor 4 arrives (abi/4.0): configuring again lifts the disable link"
mkdir -p /etc/apparmor.d/abi && : > /etc/apparmor.d/abi/4.0
/var/lib/dpkg/info/hutch.postinst configure
test ! -e /etc/apparmor.d/disable/hutch || exit 23
test -f /etc/apparmor.d/local/hutch || exit 24
step purge
apt-get purge -y -qq hutch > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 30; }
test ! -e /usr/bin/hutch || exit 31
test ! -e /etc/apparmor.d/hutch || exit 32
test ! -e /etc/apparmor.d/disable/hutch || exit 33
test ! -e /etc/apparmor.d/local/hutch || exit 34
echo "== done"
SMOKE
# shellcheck disable=SC2016 # expanded by the inner shell
if unshare --mount --propagation private sh -c '
        root=$1
        mount --bind "$root" "$root"
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        mount -t tmpfs tmpfs "$root/run"
        cd "$root"
        mkdir -p .old-root
        pivot_root . .old-root
        exec /usr/sbin/chroot . /bin/sh -c "umount -l /.old-root && rmdir /.old-root && exec /bin/sh /tmp/smoke.sh"
        ' sh "$root" > "$work/smoke.log" 2>&1; then
        note < "$work/smoke.log"
        ok "installed into a fresh $suite root: hutch run works as root and as a user, purge removes it"
else
        rc=$?
        note < "$work/smoke.log"
        fail "the installed package's smoke run (exit $rc: see tests/package/check-deb.sh)"
fi
echo "1..$n"
