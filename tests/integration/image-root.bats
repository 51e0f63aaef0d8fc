#!/usr/bin/env bats
# root = DIR[:DIR...]: the job runs in an image, overlay(layers, scratch),
# writable everywhere and discarded; /proc, /dev, /tmp, /workspace as usual.
# The profile is written outside the trusted dirs, so it is vouched for
# with --trust-profile: image layers are host paths.

bats_require_minimum_version 1.5.0
load lib

setup() {
        common_setup
        [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' \
                || skip "needs busybox-static at /bin/busybox"
        base=$(host_dir)
        ROOTFS="$base/rootfs"
        mkdir -p "$ROOTFS/bin" "$ROOTFS/etc"
        cp /bin/busybox "$ROOTFS/bin/busybox"
        for a in $(/bin/busybox --list); do
                [ "$a" = busybox ] || ln -s busybox "$ROOTFS/bin/$a"
        done
        echo "from the image" > "$ROOTFS/etc/motd"
        make_tree "$ROOTFS"
        PROFILE="$base/image.ini"
        printf '[filesystem]\nroot = %s\n' "$ROOTFS" > "$PROFILE"
        chmod a+r "$PROFILE"
}

teardown() { host_dirs_cleanup; }

@test "a job runs in a busybox image root, with /proc, /dev, /tmp and /workspace" {
        run "$HUTCH" run --trust-profile -p "$PROFILE" -- sh -c 'cat /etc/motd; readlink /bin/sh; [ ! -e /usr/bin ] && echo no-host-usr; cat /proc/1/comm; [ -c /dev/null ] && echo dev; pwd; touch /tmp/t && echo tmp'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "from the image" ]
        [ "${lines[1]}" = busybox ]
        [ "${lines[2]}" = no-host-usr ]
        [ "${lines[3]}" = hutch-init ]
        [ "${lines[4]}" = dev ]
        [ "${lines[5]}" = /workspace ]
        [ "${lines[6]}" = tmp ]
}

@test "an image root is writable everywhere and the writes are discarded" {
        before=$(tree_digest "$ROOTFS")
        run "$HUTCH" run --trust-profile -p "$PROFILE" -- sh -c 'echo new > /bin/added && rm /bin/ls && echo changed > /etc/motd && cat /etc/motd /bin/added'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'changed\nnew')" ]
        [ "$(tree_digest "$ROOTFS")" = "$before" ]
        run "$HUTCH" run --trust-profile -p "$PROFILE" -- sh -c 'cat /etc/motd; [ -e /bin/added ] || echo gone; [ -e /bin/ls ] && echo back'
        [ "$output" = "$(printf 'from the image\ngone\nback')" ]
}

@test "layers stack, the first one on top" {
        top="$(host_dir)/top"
        mkdir -p "$top/etc"
        echo "from the top layer" > "$top/etc/motd"
        make_tree "$top"
        printf '[filesystem]\nroot = %s:%s\n' "$top" "$ROOTFS" > "$PROFILE"
        run "$HUTCH" run --trust-profile -p "$PROFILE" -- cat /etc/motd
        [ "$status" -eq 0 ]
        [ "$output" = "from the top layer" ]
}

@test "a missing layer is a setup error naming it" {
        printf '[filesystem]\nroot = %s/nope\n' "$ROOTFS" > "$PROFILE"
        run "$HUTCH" run --trust-profile -p "$PROFILE" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"root layer"*"nope"* ]]
}

@test "an image root works with --workdir" {
        W="$(host_dir)/w"
        mkdir -p "$W"
        echo data > "$W/f"
        make_tree "$W"
        run "$HUTCH" run -q --trust-profile -p "$PROFILE" --workdir "$W" -- sh -c 'cat f; echo more >> f'
        [ "$status" -eq 0 ]
        [ "$output" = data ]
        [ "$(cat "$W/f")" = data ]
        run "$HUTCH" diff --stat "$(last_run_id)"
        [[ "$output" == *"modified"*"f"* ]]
}
