#!/usr/bin/env bats
# The binary hutch installs is an ordinary one: no setuid, no file capabilities.

load lib

check_plain_binary() {
        local bin=$1
        [ -x "$bin" ]
        [ ! -u "$bin" ]
        [ ! -g "$bin" ]
        if command -v getcap >/dev/null; then
                [ -z "$(getcap "$bin")" ]
        fi
        # no security.capability xattr either, whatever getcap says
        if command -v getfattr >/dev/null; then
                ! getfattr -n security.capability "$bin" 2>/dev/null | grep -q capability
        fi
}

@test "the built binary has no setuid bit and no file capabilities" {
        check_plain_binary "$HUTCH"
}

@test "the installed binary has no setuid bit and no file capabilities" {
        [ -n "${TOP_BUILDDIR:-}" ] && [ -w "$TOP_BUILDDIR" ] || skip "build tree not writable from here"
        dest="$BATS_TEST_TMPDIR/dest"
        make -s -C "$TOP_BUILDDIR" install DESTDIR="$dest" >/dev/null
        bin=$(find "$dest" -type f -name hutch -path '*/bin/*')
        [ -n "$bin" ]
        check_plain_binary "$bin"
        [ -z "$(find "$dest" -perm /6000)" ]
        # every installed man page names the version the build was configured with
        version=$("$bin" --version | awk '{print $2; exit}')
        pages=$(find "$dest" -path '*/man/man*' -type f -name 'hutch*' | wc -l)
        [ "$pages" -ge 19 ]
        [ -z "$(grep -L "^\.TH .*\"hutch $version\"" $(find "$dest" -path '*/man/man*' -type f -name 'hutch*'))" ]
}
