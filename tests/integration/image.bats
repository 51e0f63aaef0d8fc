#!/usr/bin/env bats
# hutch image: OCI images built here (no network), imported from an OCI
# layout, an OCI archive and a docker-archive; layers unpacked once and
# shared; whiteouts and opaque dirs as overlayfs reads them; ls, inspect,
# rm, gc, doctor.

bats_require_minimum_version 1.5.0
load lib
load image-lib

setup() {
        busybox_image_setup
        STORE="$HUTCH_STATE_DIR/images"
}

# the merged view of an image's layers, as the sandbox's overlay makes it
overlay_of() {
        local lowers
        lowers=$("$HUTCH" image inspect --json "$1" | jq -r '.layers[] | ltrimstr("sha256:")' |
                while read -r d; do printf '%s:' "$STORE/layers/$d/rootfs"; done)
        mkdir -p "$W/merged"
        unshare -Urm sh -c "mount -t overlay hutch-test -o lowerdir=${lowers%:},userxattr '$W/merged' && $2"
}

@test "import from an OCI layout: ls, inspect show the image's config" {
        run "$HUTCH" image import "oci:$W/oci:1.0" bb
        [ "$status" -eq 0 ]
        [[ "$output" == "imported bb:latest ${MANIFEST:0:19}: 2 layers (2 unpacked now, 0 shared)"* ]]
        run "$HUTCH" image ls
        [ "$status" -eq 0 ]
        [[ "${lines[1]}" == "bb:latest"*"${MANIFEST:0:19}"*" 2" ]]
        run "$HUTCH" image inspect --json bb
        [ "$status" -eq 0 ]
        [ "$(jq -r .manifest <<<"$output")" = "$MANIFEST" ]
        [ "$(jq -r '.env[1]' <<<"$output")" = "GREETING=hello from the image" ]
        [ "$(jq -r '.entrypoint[0]' <<<"$output")" = /bin/sh ]
        [ "$(jq -r .working_dir <<<"$output")" = /srv ]
        [ "$(jq -r '.layers | length' <<<"$output")" -eq 2 ]
        # the store is the caller's alone
        [ "$(stat -c %a "$STORE")" = 700 ]
}

@test "an image's whiteout and opaque dir hide the lower layer's files under overlayfs" {
        "$HUTCH" image import "oci:$W/oci:1.0" bb
        unshare -Urm true 2>/dev/null || skip "unshare -Urm: no user namespaces here"
        run overlay_of bb "cd '$W/merged' && ls etc && ls opq && cat hello.txt && readlink bin/sh && bin/busybox echo runs"
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'kept.txt\npasswd\nnew.txt\nhello from layer two\nbusybox\nruns')" ]
}

@test "layers are unpacked once and shared; the tag picks the image" {
        "$HUTCH" image import "oci:$W/oci:1.0" bb
        # a second image with the same bottom layer and a new top one
        mkdir -p "$W/l3/etc" && echo three > "$W/l3/etc/three"
        tar --numeric-owner -C "$W/l3" -cf - . | gzip -n > "$W/l3.tar.gz"
        image_config "$W/c2.json" '["PATH=/bin"]' null "" "$W/l1.tar.gz" "$W/l3.tar.gz"
        oci_layout "$W/oci" 2.0 "$W/c2.json" "$W/l1.tar.gz" "$W/l3.tar.gz" > /dev/null
        run "$HUTCH" image import "oci:$W/oci:2.0" bb:two
        [ "$status" -eq 0 ]
        [[ "$output" == *"2 layers (1 unpacked now, 1 shared)"* ]]
        [ "$(ls "$STORE/layers" | wc -l)" -eq 3 ]
        run "$HUTCH" image import "oci:$W/oci:9.9" nine
        [ "$status" -eq 1 ]
        [[ "$output" == *"no image tagged '9.9' in the layout"* ]]
}

@test "import from a docker-archive and an OCI archive" {
        docker_archive "$W/saved.tar" busybox:test "$W/config.json" "$W/l1.tar.gz" "$W/l2.tar.gz"
        run "$HUTCH" image import "docker-archive:$W/saved.tar"
        [ "$status" -eq 0 ]
        [[ "$output" == "imported busybox:test sha256:"*"2 layers (2 unpacked now"* ]]
        run "$HUTCH" image inspect --json busybox:test
        [ "$(jq -r '.env[1]' <<<"$output")" = "GREETING=hello from the image" ]
        unshare -Urm true 2>/dev/null || skip "unshare -Urm: no user namespaces here"
        run overlay_of busybox:test "cd '$W/merged' && ls etc && ls opq"
        [ "$output" = "$(printf 'kept.txt\npasswd\nnew.txt')" ]

        tar -C "$W/oci" -cf "$W/oci.tar" .
        run "$HUTCH" image import "oci-archive:$W/oci.tar:1.0" arch
        [ "$status" -eq 0 ]
        [[ "$output" == "imported arch:latest ${MANIFEST:0:19}: 2 layers (2 unpacked now"* ]]
}

@test "zstd layers are read by libarchive itself" {
        command -v zstd >/dev/null || skip "needs zstd to write the layer"
        gzip -dc "$W/l1.tar.gz" | zstd -q -o "$W/l1.tar.zst"
        image_config "$W/cz.json" '["PATH=/bin"]' null "" "$W/l1.tar.zst"
        oci_layout "$W/z" z "$W/cz.json" "$W/l1.tar.zst" > /dev/null
        run "$HUTCH" image import "oci:$W/z:z" zimg
        [ "$status" -eq 0 ]
        [ -x "$STORE/layers/$(sha256sum "$W/l1.tar.zst" | cut -c1-64)/rootfs/bin/busybox" ]
}

@test "rm removes the image and the layers only it used; gc and doctor see the store" {
        "$HUTCH" image import "oci:$W/oci:1.0" bb
        "$HUTCH" image import "oci:$W/oci:1.0" bb:again
        run "$HUTCH" image rm bb
        [ "$status" -eq 0 ]
        [ "$(ls "$STORE/layers" | wc -l)" -eq 2 ]       # bb:again still uses them
        run "$HUTCH" doctor
        [[ "$output" == *"image store (hutch image): $STORE: 1 image, "* ]]
        "$HUTCH" image rm bb:again
        [ "$(ls "$STORE/layers" | wc -l)" -eq 0 ]
        [ "$(ls "$STORE/blobs/sha256" | wc -l)" -eq 0 ]
        run "$HUTCH" image rm bb
        [ "$status" -eq 1 ]
        [[ "$output" == *"no image bb"* ]]
        # leftovers of a killed import go with gc
        mkdir -p "$STORE/tmp/layer-0123456789abcdef/rootfs"
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 0 image layers and 0 blobs no image uses"* ]]
        [ -z "$(ls "$STORE/tmp")" ]
}

@test "bad sources and names are refused with one line" {
        run "$HUTCH" image import "docker://busybox"
        [ "$status" -eq 2 ]
        [[ "$output" == *"hutch pulls nothing: skopeo copy"* ]]
        run "$HUTCH" image import "oci:$W/nowhere"
        [ "$status" -eq 1 ]
        [[ "$output" == *"no such file or directory"* ]]
        run "$HUTCH" image import "oci:$W/oci:1.0" 'Bad Name'
        [ "$status" -eq 2 ]
        [[ "$output" == *"'Bad Name' is not an image name"* ]]
        run "$HUTCH" image inspect nothing
        [ "$status" -eq 1 ]
        run "$HUTCH" image frob
        [ "$status" -eq 2 ]
}

@test "a name imported again points at the new image; gc removes what only the old one used" {
        "$HUTCH" image import "oci:$W/oci:1.0" bb > /dev/null
        mkdir -p "$W/l3/etc" && echo three > "$W/l3/etc/three"
        tar -C "$W/l3" -cf - . | gzip -n > "$W/l3.tar.gz"
        image_config "$W/c3.json" '["PATH=/bin"]' null "" "$W/l1.tar.gz" "$W/l3.tar.gz"
        new=$(oci_layout "$W/oci" 3.0 "$W/c3.json" "$W/l1.tar.gz" "$W/l3.tar.gz")
        run "$HUTCH" image import --json "oci:$W/oci:3.0" bb
        [ "$status" -eq 0 ]
        [ "$(jq -r .manifest <<<"$output")" = "$new" ]
        [ "$(jq -r .layers_unpacked <<<"$output")" -eq 1 ]
        [ "$("$HUTCH" image inspect --json bb | jq -r .manifest)" = "$new" ]
        # the old top layer, config and manifest are no image's now
        run "$HUTCH" gc --dry-run
        [[ "$output" == *"would remove 1 image layer and 3 blobs no image uses"* ]]
        [ "$(ls "$STORE/layers" | wc -l)" -eq 3 ]
        run "$HUTCH" gc
        [[ "$output" == *"removed 1 image layer and 3 blobs no image uses"* ]]
        [ "$(ls "$STORE/layers" | wc -l)" -eq 2 ]
        run "$HUTCH" image inspect bb
        [ "$status" -eq 0 ]
}
