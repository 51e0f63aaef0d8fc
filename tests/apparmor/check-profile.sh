#!/bin/sh
# check-profile.sh - the AppArmor profile `make install` installs
# (contrib/apparmor/hutch, made from hutch.in) says what it must, and
# apparmor_parser parses it (-Q: parse and compile only, nothing reaches
# the kernel; -K: no cache).
#
# The profile's abi 4.0 and its userns rule need AppArmor 4's parser:
# Debian 12's (3.0) knows neither, and the test skips the parse there
# with the reason. APPARMOR_PARSER names another parser command (with
# its arguments, e.g. --base DIR for its own abi/ and tunables/).
# Speaks TAP.

profile="${TOP_BUILDDIR:?}/contrib/apparmor/hutch"
bindir="${HUTCH_BINDIR:?}"
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

echo "1..3"
if [ -f "$profile" ] &&
   grep -qx 'abi <abi/4.0>,' "$profile" &&
   grep -qx 'include <tunables/global>' "$profile" &&
   grep -qxF "profile hutch $bindir/{hutch,hutch-static} flags=(unconfined) {" "$profile" &&
   grep -qx '  userns,' "$profile" &&
   grep -qx '  include if exists <local/hutch>' "$profile" &&
   ! grep -q '@[a-z]*@' "$profile"; then
        ok "the profile names $bindir/hutch and hutch-static, allows userns, includes local/hutch"
else
        not_ok "the profile's lines (see $profile)"
fi

parser=${APPARMOR_PARSER:-}
if [ -z "$parser" ]; then
        parser=$(command -v apparmor_parser || ls /sbin/apparmor_parser /usr/sbin/apparmor_parser 2>/dev/null | head -n1)
fi
if [ -z "$parser" ]; then
        skip "apparmor_parser parses the profile" "apparmor_parser is not installed (Debian package apparmor)"
        skip "apparmor_parser refuses a broken copy" "apparmor_parser is not installed"
        exit 0
fi
if [ -z "${APPARMOR_PARSER:-}" ] && [ ! -e /etc/apparmor.d/abi/4.0 ]; then
        version=$($parser --version 2>/dev/null | head -n1)
        skip "apparmor_parser parses the profile" "$version has no abi 4.0, which the userns rule needs (AppArmor 4 or later)"
        skip "apparmor_parser refuses a broken copy" "the same"
        exit 0
fi
if out=$($parser -Q -K "$profile" 2>&1); then
        ok "apparmor_parser -Q parses the profile"
else
        not_ok "apparmor_parser -Q parses the profile"
        printf '%s\n' "$out" | sed 's/^/# /'
fi
# the parser is really checking: a copy without the rule's comma fails
broken=$(mktemp)
sed 's/^  userns,$/  userns/' "$profile" > "$broken"
if $parser -Q -K "$broken" >/dev/null 2>&1; then
        not_ok "apparmor_parser refuses a broken copy"
else
        ok "apparmor_parser refuses a broken copy"
fi
rm -f "$broken"
exit $fail
