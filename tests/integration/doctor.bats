#!/usr/bin/env bats
# hutch doctor: a report per capability, and an exit code that means something.

load lib

# The limit tests set a namespace limit to 0 inside a user namespace of
# their own (unshare -Ur), where writing /proc/sys/user/* is allowed.
needs_nested_userns() {
        command -v unshare >/dev/null || skip "unshare(1) not installed"
        unshare -U true 2>/dev/null || skip "cannot create a user namespace to test in"
}

# hutch ARGS... in such a namespace, with user.max_KIND_namespaces at 0.
hutch_with_limit_zero() {
        local kind=$1
        shift
        unshare -Ur sh -c 'echo 0 > "/proc/sys/user/max_$1_namespaces" && shift && exec "$@"' sh "$kind" "$HUTCH" "$@"
}

@test "doctor reports each check and exits 0 when run works here" {
        run "$HUTCH" doctor
        [ "$status" -eq 0 ]
        [[ "$output" == *"unprivileged user namespaces"* ]]
        [[ "$output" == *"overlayfs in a user namespace"* ]]
        [[ "$output" == *"user xattrs on tmpfs (overlay workspaces)"* ]]
        [[ "$output" == *"seccomp"* ]]
        [[ "$output" == *"cgroup v2"* ]]
        [[ "$output" == *"OK      a real sandbox runs"* ]]
        [[ "$output" == *"hutch run works on this host."* ]]
}

@test "doctor exits 1 and explains when user namespaces are refused" {
        needs_nested_userns
        # a user namespace whose max_user_namespaces is 0 refuses nested ones
        run hutch_with_limit_zero user doctor
        [ "$status" -eq 1 ]
        [[ "$output" == *"MISSING unprivileged user namespaces"* ]]
        [[ "$output" == *"fix:"* ]]
        [[ "$output" == *"hutch run cannot work on this host"* ]]
}

@test "doctor names the network namespace limit when it is 0" {
        needs_nested_userns
        run hutch_with_limit_zero net doctor
        [ "$status" -eq 1 ]
        [[ "$output" == *"user.max_net_namespaces = 0"* ]]
        [[ "$output" == *"fix: sysctl -w user.max_net_namespaces="* ]]
}

@test "run names a namespace limit at 0, and as root a namespace that denies setgroups" {
        needs_nested_userns
        if [ "$(id -u)" -eq 0 ]; then
                # root's `unshare -Ur` maps root to itself: hutch treats it as
                # real root, whose groups must be shed, and that namespace
                # denies setgroups; the run says so and stops before clone
                run unshare -Ur "$HUTCH" run -- true
                [ "$status" -eq 125 ]
                [[ "$output" == *"drop supplementary groups: this user namespace denies setgroups"* ]]
                return
        fi
        run hutch_with_limit_zero net run -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"no network namespace may be created: the limit user.max_net_namespaces is 0"* ]]
        [[ "$output" != *"No space left on device"* ]]
        run hutch_with_limit_zero user run -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"clone namespaces: no user namespace may be created: the limit user.max_user_namespaces is 0"* ]]
}

@test "doctor, as root, says whether a root-owned --workdir can be idmapped here" {
        [ "$(id -u)" -eq 0 ] || skip "the idmapped workdir check is root's"
        run "$HUTCH" doctor
        [[ "$output" == *"idmapped --workdir (root): "* ]]
        run sh -c 'cd /tmp && "$0" doctor' "$HUTCH"
        [[ "$output" =~ (OK|WARN)\ +idmapped\ --workdir ]]
}

@test "doctor says how hutch was linked, as the binary is" {
        run "$HUTCH" doctor
        local line
        line=$(printf '%s\n' "$output" | sed -n 2p)
        glibc=$(getconf GNU_LIBC_VERSION | sed 's/^glibc //')
        if file -L "$HUTCH" | grep -q 'static-pie linked\|statically linked'; then
                [[ "$line" == "OK      build: static (hutch-static): glibc $glibc and the libraries inside"* ]]
        else
                [ "$line" = "OK      build: dynamic: the system's glibc $glibc and libraries, updated with the system" ]
        fi
}

@test "doctor in hutch-static says it is the static build, and why it asks systemd for no scope" {
        local static="$TOP_BUILDDIR/src/hutch-static"
        [ -x "$static" ] || skip "hutch-static is built only with ./configure --enable-static"
        file -L "$static" | grep -q 'static-pie linked\|statically linked'
        run "$static" doctor
        line=$(printf '%s\n' "$output" | sed -n 2p)
        [[ "$line" == "OK      build: static (hutch-static): "*"it does not ask systemd for a delegated scope" ]]
}

@test "doctor --help" {
        run "$HUTCH" doctor --help
        [ "$status" -eq 0 ]
        [[ "$output" == *"Usage: hutch doctor"* ]]
}
