#!/usr/bin/env bats
# A real distribution as an image: a Debian 12 minbase root (plus
# python3-minimal), bootstrapped from the Debian mirror the host's apt
# uses, once, and cached as an OCI layout for later runs of the suite
# (tests/image-cache/, or $HUTCH_IMAGE_CACHE). Skips, saying why, when
# there is no cache and debootstrap, root or the mirror is missing.

bats_require_minimum_version 1.5.0
load lib
load image-lib

CACHE=${HUTCH_IMAGE_CACHE:-$BATS_TEST_DIRNAME/../image-cache}

# the first deb URI of the host's apt sources (deb822 or one-line)
debian_mirror() {
        local m
        m=$(sed -n 's/^URIs:[[:space:]]*\(http[^ ]*debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
        [ -n "$m" ] || m=$(sed -n 's/^deb[[:space:]]\+\(http[^ ]*debian\)[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)
        echo "${m:-http://deb.debian.org/debian}"
}

# Build $CACHE/deb12 (an OCI layout tagged 12) unless it is there;
# prints why not on failure.
build_debian_layout() {
        [ -f "$CACHE/deb12/index.json" ] && return 0
        command -v debootstrap >/dev/null || { echo "debootstrap is not installed"; return 1; }
        [ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root (or a cached image in $CACHE)"; return 1; }
        local mirror work
        mirror=$(debian_mirror)
        timeout 10 python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/dists/bookworm/Release", timeout=8)' "$mirror" \
                >/dev/null 2>&1 || { echo "the Debian mirror $mirror is not reachable"; return 1; }
        mkdir -p "$CACHE"
        work=$(mktemp -d "$CACHE/build.XXXXXX")
        if ! debootstrap --variant=minbase --include=python3-minimal bookworm "$work/rootfs" "$mirror" \
                > "$work/debootstrap.log" 2>&1; then
                echo "debootstrap failed: $(tail -3 "$work/debootstrap.log")"
                rm -rf "$work"
                return 1
        fi
        rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*_Packages
        tar --numeric-owner --xattrs -C "$work/rootfs" -cf - . | gzip -n -1 > "$work/layer.tar.gz"
        image_config "$work/config.json" '["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]' \
                null "" "$work/layer.tar.gz"
        oci_layout "$work/deb12" 12 "$work/config.json" "$work/layer.tar.gz" > /dev/null
        rm -rf "$work/rootfs"
        mv "$work/deb12" "$CACHE/deb12"
        rm -rf "$work"
}

setup_file() {
        # one bootstrap for every test and every run of the suite; a
        # cached layout is only read (the cache may be read-only then)
        if [ ! -f "$CACHE/deb12/index.json" ]; then
                if mkdir -p "$CACHE" 2>/dev/null && exec 9> "$CACHE/.lock"; then
                        flock 9
                        why=$(build_debian_layout) || echo "$why" > "$BATS_FILE_TMPDIR/skip"
                        flock -u 9
                else
                        echo "no cached image and $CACHE is not writable" > "$BATS_FILE_TMPDIR/skip"
                fi
        fi
        export HUTCH_STATE_DIR="$BATS_FILE_TMPDIR/state"
        [ -f "$BATS_FILE_TMPDIR/skip" ] || "$HUTCH" image import "oci:$CACHE/deb12:12" deb12 > /dev/null
}

setup() {
        [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cat "$BATS_FILE_TMPDIR/skip")"
        export HUTCH_STATE_DIR="$BATS_FILE_TMPDIR/state"
}

@test "hutch run --image deb12 -- cat /etc/debian_version prints 12.x" {
        run "$HUTCH" run --image deb12 -- cat /etc/debian_version
        [ "$status" -eq 0 ]
        [[ "$output" =~ ^12\.[0-9]+$ ]]
}

@test "coreutils in the image are Debian 12's, and behave as in a run on the host's root" {
        run "$HUTCH" run --image deb12 -- sh -c 'ls --version | head -1; id -un'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "ls (GNU coreutils) 9.1" ]
        [ "${lines[1]}" = sandbox ]
        script='cd /tmp && mkdir -p a/b && touch a/b/c && printf x > a/f && ls -R a && stat -c "%s %F" a/f a/b &&
                printf "b\na\nc\n" | sort -r && printf "é" | wc -c && seq 3 | tac && date -u -d @86400 +%F &&
                echo "a,b,c" | cut -d, -f2 && expr 6 \* 7 && id -u'
        run "$HUTCH" run --image deb12 -- sh -c "$script"
        [ "$status" -eq 0 ]
        in_image=$output
        run "$HUTCH" run -- sh -c "$script"
        [ "$status" -eq 0 ]
        [ "$in_image" = "$output" ]
}

@test "--lang python with an image runs the image's python3" {
        run "$HUTCH" run --image deb12 --lang python -c 'import sys; print(sys.version_info[:2]); print(sys.executable)'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "(3, 11)" ]
        [ "${lines[1]}" = /usr/bin/python3 ]
}

@test "the image's files are the store's layer, shared, and the run leaves them unchanged" {
        layer=$("$HUTCH" image inspect --json deb12 | jq -r '.layers[0] | ltrimstr("sha256:")')
        before=$(stat -c %Y "$HUTCH_STATE_DIR/images/layers/$layer/rootfs/etc")
        run "$HUTCH" run --image deb12 -- sh -c 'echo changed > /etc/motd && rm /bin/ls && cat /etc/motd'
        [ "$status" -eq 0 ]
        [ "$output" = changed ]
        [ -e "$HUTCH_STATE_DIR/images/layers/$layer/rootfs/bin/ls" ] || [ -e "$HUTCH_STATE_DIR/images/layers/$layer/rootfs/usr/bin/ls" ]
        [ "$(stat -c %Y "$HUTCH_STATE_DIR/images/layers/$layer/rootfs/etc")" = "$before" ]
}
