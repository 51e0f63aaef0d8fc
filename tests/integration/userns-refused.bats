#!/usr/bin/env bats
# Hosts that refuse user namespaces: hutch doctor and the run's setup
# error name the cause and the fix. The container's refusal is made
# faithfully by tests/refuse-userns, which installs the seccomp rules
# Docker's default profile has for namespaces (clone3: ENOSYS;
# clone/unshare/setns with namespace flags: EPERM) and execs hutch.
# The unit test test-userns-diag covers the AppArmor cases, which
# need an AppArmor kernel to reproduce for real.

load lib

setup() {
        common_setup
        refuse="${TOP_BUILDDIR:-}/tests/refuse-userns"
        [ -x "$refuse" ] || skip "tests/refuse-userns is not built here (TOP_BUILDDIR unset: run through make check)"
        "$refuse" true || skip "cannot install a seccomp filter here"
}

@test "the refusal wrapper refuses user namespaces as a container does" {
        run "$refuse" unshare -U true
        [ "$status" -ne 0 ]
        [[ "$output" == *"Operation not permitted"* ]]
        # what it does not refuse still works: a plain fork and exec
        run "$refuse" sh -c 'echo ok'
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}

@test "doctor under a container's seccomp profile names the filter and the fix" {
        run "$refuse" "$HUTCH" doctor
        [ "$status" -eq 1 ]
        [[ "$output" == *"MISSING unprivileged user namespaces: a seccomp filter refuses them (clone and unshare answer EPERM; Seccomp: 2"* ]]
        [[ "$output" == *"fix: run hutch outside the container, or start the container with a seccomp profile that allows clone, clone3 and unshare with CLONE_NEWUSER"* ]]
        [[ "$output" != *"AppArmor"* ]]
        [[ "$output" == *"hutch run cannot work on this host"* ]]
}

@test "run under a container's seccomp profile fails with one line naming the filter" {
        run "$refuse" "$HUTCH" run -- true
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "hutch: setup: clone namespaces: user namespaces are refused: a seccomp filter refuses them (clone3 answers ENOSYS;"* ]]
        [[ "$output" == *"see 'hutch doctor'"* ]]
        # the record says the same
        run "$HUTCH" ls --json
        [[ "$output" == *"user namespaces are refused: a seccomp filter"* ]]
}

@test "doctor names user.max_user_namespaces = 0, with the fix" {
        command -v unshare >/dev/null || skip "unshare(1) not installed"
        unshare -U true 2>/dev/null || skip "cannot create a user namespace to test in"
        # user.max_user_namespaces is per user namespace: at 0 in a child
        # one, that one refuses nested user namespaces (ENOSPC)
        run unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"' sh "$HUTCH" doctor
        [ "$status" -eq 1 ]
        [[ "$output" == *"MISSING unprivileged user namespaces: the limit user.max_user_namespaces is 0"* ]]
        [[ "$output" == *"fix: sudo sysctl -w user.max_user_namespaces=15000"* ]]
}
