#!/usr/bin/env bats
# hutch image import with hostile images: every one is refused as a
# whole (naming the entry) or neutralised, nothing is written outside the
# image store (a canary directory beside it stays as it was), and a
# refused layer leaves nothing in the store.

bats_require_minimum_version 1.5.0
load lib
load image-lib

setup() {
        common_setup
        command -v jq >/dev/null || skip "needs jq"
        W="$BATS_TEST_TMPDIR/w"
        CANARY="$BATS_TEST_TMPDIR/canary"
        mkdir -p "$W" "$CANARY"
        echo original > "$CANARY/file"
        STORE="$HUTCH_STATE_DIR/images"
        # the traversal targets: from the unpack dir
        # (<state>/images/tmp/layer-X/rootfs) up to the test's tmpdir
        UP="../../../../../canary"
}

# the canary dir's listing with sizes, modes and content digests
canary_state() {
        find "$CANARY" -printf '%P %y %m %s\n' | sort
        find "$CANARY" -type f -exec sha256sum {} + | sort
}

# build an image of one hostile layer and import it
import_hostile() {
        local kind=$1
        shift
        hostile_layer "$kind" "$W/$kind.tar.gz" "$@"
        image_config "$W/$kind.json" '[]' null "" "$W/$kind.tar.gz"
        oci_layout "$W/$kind" t "$W/$kind.json" "$W/$kind.tar.gz" > /dev/null
        before=$(canary_state)
        run "$HUTCH" image import "oci:$W/$kind:t" "$kind"
}

# the layer was refused whole: nothing in layers/ or tmp/, no ref, canary intact
refused() {
        [ "$status" -eq 1 ]
        [ -z "$(ls "$STORE/layers")" ]
        [ -z "$(ls "$STORE/tmp")" ]
        run "$HUTCH" image ls
        [ -z "$output" ]
        [ "$(canary_state)" = "$before" ]
}

@test "a name with .. is refused" {
        import_hostile traversal "$UP/planted"
        [[ "$output" == *"layer entry '$UP/planted': an absolute name, \"..\""* ]]
        refused
        [ ! -e "$CANARY/planted" ]
}

@test "an absolute name is refused" {
        import_hostile absolute "$CANARY/planted"
        [[ "$output" == *"layer entry '$CANARY/planted': an absolute name"* ]]
        refused
        [ ! -e "$CANARY/planted" ]
}

@test "a symlink out of the layer, then a file through it, is refused" {
        import_hostile symlink-then-file "$CANARY"
        [[ "$output" == *"layer entry 'link/planted': a symlink on the way"* ]]
        refused
        [ ! -e "$CANARY/planted" ]
        # a relative symlink climbing out is the same
        import_hostile symlink-then-file "$UP"
        [[ "$output" == *"layer entry 'link/planted': a symlink on the way"* ]]
        refused
}

@test "a hardlink to /etc/shadow or out of the layer is refused" {
        import_hostile hardlink-out /etc/shadow
        [[ "$output" == *"layer entry 'shadow': a hardlink to a name outside the layer"* ]]
        refused
        import_hostile hardlink-out "$UP/file"
        [[ "$output" == *"a hardlink to a name outside the layer"* ]]
        refused
        # a name the layer lacks is no better
        import_hostile hardlink-out etc/shadow
        [[ "$output" == *"a hardlink to a name this layer does not have"* ]]
        refused
}

@test "device nodes and FIFOs are skipped and counted" {
        import_hostile device
        [ "$status" -eq 0 ]
        [[ "$output" == *"left out: 2 device nodes, FIFOs or sockets"* ]]
        layer=$(ls -d "$STORE"/layers/*/rootfs)
        [ -f "$layer/ok.txt" ]
        [ ! -e "$layer/dev/evil" ] && [ ! -e "$layer/dev/fifo" ]
        [ "$(jq .specials_skipped "$(dirname "$layer")/layer.json")" -eq 2 ]
        [ "$(canary_state)" = "$before" ]
}

@test "set-user-id and set-group-id bits are dropped, the owner is the sandbox user" {
        import_hostile setuid
        [ "$status" -eq 0 ]
        [[ "$output" == *"2 set-id bits"* ]]
        layer=$(ls -d "$STORE"/layers/*/rootfs)
        [ "$(stat -c %a "$layer/bin/su")" = 755 ]
        [ "$(stat -c %a "$layer/bin/sg")" = 755 ]
        # real root's sandbox user is host uid 65534: the files are its
        owner=$(id -u)
        [ "$owner" -ne 0 ] || owner=65534
        [ "$(stat -c %u "$layer/bin/su")" = "$owner" ]
}

@test "xattrs other than user.* (and user.overlay.*) are dropped" {
        import_hostile xattrs
        [ "$status" -eq 0 ]
        layer=$(ls -d "$STORE"/layers/*/rootfs)
        run getfattr -d -m - --absolute-names "$layer/x"
        [[ "$output" == *'user.kept="yes"'* ]]
        [[ "$output" != *overlay* ]]
        [[ "$output" != *security* ]]
}

@test "a tar bomb past max_layer_size is refused" {
        printf '[image]\nmax_layer_size = 8M\n' > "$W/small.ini"
        hostile_layer bomb "$W/bomb.tar.gz" 64
        [ "$(stat -c %s "$W/bomb.tar.gz")" -lt 1048576 ]
        image_config "$W/bomb.json" '[]' null "" "$W/bomb.tar.gz"
        oci_layout "$W/bomb" t "$W/bomb.json" "$W/bomb.tar.gz" > /dev/null
        before=$(canary_state)
        run "$HUTCH" image import -p "$W/small.ini" "oci:$W/bomb:t" bomb
        [[ "$output" == *"layer entry 'bomb': the layer unpacks to more than max_layer_size (8M)"* ]]
        refused
        # max_image_size bounds the layers together
        printf '[image]\nmax_image_size = 1M\n' > "$W/img.ini"
        busybox_layers "$W/bb"
        image_config "$W/bb.json" '[]' null "" "$W/bb/l1.tar.gz"
        oci_layout "$W/bbo" t "$W/bb.json" "$W/bb/l1.tar.gz" > /dev/null
        run "$HUTCH" image import -p "$W/img.ini" "oci:$W/bbo:t" bb
        [ "$status" -eq 1 ]
        [[ "$output" == *"the image unpacks to more than max_image_size (1M)"* ]]
}

@test "a blob that does not match its digest is refused, and a missing one" {
        hostile_layer device "$W/l.tar.gz"
        image_config "$W/c.json" '[]' null "" "$W/l.tar.gz"
        oci_layout "$W/bad" t "$W/c.json" "$W/l.tar.gz" > /dev/null
        layer=$(sha256sum "$W/l.tar.gz" | cut -c1-64)
        chmod u+w "$W/bad/blobs/sha256/$layer"
        echo tampered >> "$W/bad/blobs/sha256/$layer"
        run "$HUTCH" image import "oci:$W/bad:t" bad
        [ "$status" -eq 1 ]
        [[ "$output" == *"blob sha256:$layer does not match its digest"* ]]
        [ ! -e "$STORE/blobs/sha256/$layer" ]
        [ -z "$(ls "$STORE/layers")" ]
        rm "$W/bad/blobs/sha256/$layer"
        run "$HUTCH" image import "oci:$W/bad:t" bad
        [ "$status" -eq 1 ]
        [[ "$output" == *"the image names blob sha256:$layer, which the layout does not have"* ]]
        # in an archive: a member named by a digest it does not have
        oci_layout "$W/bad2" t "$W/c.json" "$W/l.tar.gz" > /dev/null
        echo tampered >> "$W/bad2/blobs/sha256/$layer"
        tar -C "$W/bad2" -cf "$W/bad2.tar" .
        run "$HUTCH" image import "oci-archive:$W/bad2.tar" bad
        [ "$status" -eq 1 ]
        [[ "$output" == *"blob sha256:$layer does not match its digest"* ]]
        run "$HUTCH" image ls
        [ -z "$output" ]
}

@test "a FIFO for index.json or a blob is refused at once, and holds no lock" {
        hostile_layer device "$W/l.tar.gz"
        image_config "$W/c.json" '[]' null "" "$W/l.tar.gz"
        oci_layout "$W/fifo" t "$W/c.json" "$W/l.tar.gz" > /dev/null
        layer=$(sha256sum "$W/l.tar.gz" | cut -c1-64)
        # a blob first: a reader that waits on it for good would hold
        # the store's lock against every other import and run
        rm -f "$W/fifo/blobs/sha256/$layer"
        mkfifo "$W/fifo/blobs/sha256/$layer"
        run timeout 20 "$HUTCH" image import "oci:$W/fifo:t" f
        [ "$status" -eq 1 ]
        [[ "$output" == *"blob sha256:$layer of the layout is not a regular file"* ]]
        mv "$W/fifo/index.json" "$W/index.json"
        mkfifo "$W/fifo/index.json"
        run timeout 20 "$HUTCH" image import "oci:$W/fifo:t" f
        [ "$status" -eq 1 ]
        [[ "$output" == *"/index.json: not a regular file"* ]]
        run timeout 20 "$HUTCH" image ls
        [ "$status" -eq 0 ]
        [ -z "$output" ]
}

# sparse_file PATH SIZE: a file of SIZE bytes that is all hole; skips
# when the test's file system does not keep holes
sparse_file() {
        truncate -s "$2" "$1"
        [ "$(stat -c %b "$1")" -lt 64 ] || skip "the test dir keeps no holes"
}

@test "an archive's members are written only when the image uses them, and charged to max_image_size as written" {
        printf '[image]\nmax_image_size = 8M\n' > "$W/img.ini"
        hostile_layer device "$W/l.tar.gz"
        image_config "$W/c.json" '[]' null "" "$W/l.tar.gz"
        oci_layout "$W/o" t "$W/c.json" "$W/l.tar.gz" > /dev/null
        # a member no image names: 200M as a blob, a few bytes in the archive
        sparse_file "$W/o/junk" 200M
        printf x | dd of="$W/o/junk" bs=1 seek=$((200 << 20)) conv=notrunc status=none
        tar --sparse -C "$W/o" -cf "$W/o.tar" .
        [ "$(stat -c %s "$W/o.tar")" -lt 1048576 ]
        run "$HUTCH" image import -p "$W/img.ini" "oci-archive:$W/o.tar:t" junk
        [ "$status" -eq 0 ]
        [ "$(du -sb "$STORE" | cut -f1)" -lt 4194304 ]
        [ -z "$(ls "$STORE/tmp")" ]
        "$HUTCH" image rm junk:latest
        # a layer the image names that unpacks (as a blob) past the
        # budget: refused as it is written, one line naming bound and
        # member, and nothing of the import left for gc
        mkdir -p "$W/z/blobs/sha256"
        zeros=$(head -c 64M /dev/zero | sha256sum | cut -c1-64)
        sparse_file "$W/z/blobs/sha256/$zeros" 64M
        jq -n --arg c "$(sha256sum "$W/c.json" | cut -c1-64)" --argjson cs "$(stat -c %s "$W/c.json")" --arg z "$zeros" \
                '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
                  config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: ("sha256:" + $c), size: $cs},
                  layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: ("sha256:" + $z), size: 67108864}]}' \
                > "$W/m.json"
        oci_blob "$W/z" "$W/c.json" > /dev/null
        read -r md ms < <(oci_blob "$W/z" "$W/m.json")
        jq -n --arg md "$md" --argjson ms "$ms" '{schemaVersion: 2, manifests: [{mediaType:
                "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms}]}' > "$W/z/index.json"
        tar --sparse -C "$W/z" -cf "$W/z.tar" .
        [ "$(stat -c %s "$W/z.tar")" -lt 1048576 ]
        run "$HUTCH" image import -p "$W/img.ini" "oci-archive:$W/z.tar" zeros
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"archive member blobs/sha256/$zeros: the import writes more than max_image_size (8M) into the store"* ]]
        [ -z "$(ls "$STORE/blobs/sha256")" ]
        [ -z "$(ls "$STORE/tmp")" ]
        [ -z "$(ls "$STORE/layers")" ]
        # the same from a layout directory
        run "$HUTCH" image import -p "$W/img.ini" "oci:$W/z" zeros
        [ "$status" -eq 1 ]
        [[ "$output" == *"blob sha256:$zeros: the import writes more than max_image_size (8M) into the store"* ]]
        [ -z "$(ls "$STORE/blobs/sha256")" ]
        run "$HUTCH" image ls
        [ -z "$output" ]
}

@test "a sparse file of tiny fragments is charged the blocks it takes, not its bytes" {
        # 4096 bytes of data, one every 8 KiB: 4096 blocks (16M) on disk
        hostile_layer sparse-frags "$W/sp.tar.gz" 4096
        image_config "$W/sp.json" '[]' null "" "$W/sp.tar.gz"
        oci_layout "$W/spo" t "$W/sp.json" "$W/sp.tar.gz" > /dev/null
        printf '[image]\nmax_layer_size = 4M\n' > "$W/small.ini"
        before=$(canary_state)
        run "$HUTCH" image import -p "$W/small.ini" "oci:$W/spo:t" sp
        [[ "$output" == *"layer entry 'frag': the layer unpacks to more than max_layer_size (4M)"* ]]
        refused
        # within a bound that holds it, the charge is what the unpacked
        # file takes on disk (but the file system's extent records: < 1%)
        printf '[image]\nmax_layer_size = 64M\n' > "$W/big.ini"
        run "$HUTCH" image import -p "$W/big.ini" "oci:$W/spo:t" sp
        [ "$status" -eq 0 ]
        layer=$(sha256sum "$W/sp.tar.gz" | cut -c1-64)
        frag="$STORE/layers/$layer/rootfs/frag"
        [ "$(stat -c %s "$frag")" -eq 33554432 ]
        [ "$(head -c 8193 "$frag" | tail -c 1)" = x ]
        disk=$(( $(stat -c %b "$frag") * 512 ))
        [ "$disk" -lt 33554432 ] || skip "the store keeps no holes"
        charged=$(jq .bytes "$STORE/layers/$layer/layer.json")
        [ $((charged * 101 / 100)) -ge "$disk" ]
        [ "$charged" -ge 16777216 ]
}

@test "an Env entry a run could not set is refused at import, naming the entry" {
        hostile_layer device "$W/l.tar.gz"
        i=0
        for bad in '"A=one\ntwo"' '"NOEQUALS"' '"=x"' '"1X=y"' '"A=x ;y"' '"A=\u0001"'; do
                image_config "$W/e$i.json" "[\"PATH=/bin\", $bad]" null "" "$W/l.tar.gz"
                oci_layout "$W/e$i" t "$W/e$i.json" "$W/l.tar.gz" > /dev/null
                run "$HUTCH" image import "oci:$W/e$i:t" env$i
                [ "$status" -eq 1 ]
                [ "${#lines[@]}" -eq 1 ]
                [[ "$output" == *"the config's Env[1]: "* ]]
                i=$((i + 1))
        done
        run "$HUTCH" image ls
        [ -z "$output" ]
        [ -z "$(ls "$STORE/layers")" ]
        # what a run takes is taken: '=' and ';' inside a value
        image_config "$W/ok.json" '["PATH=/bin", "A=x=y;z", "_B="]' null "" "$W/l.tar.gz"
        oci_layout "$W/ok" t "$W/ok.json" "$W/l.tar.gz" > /dev/null
        run "$HUTCH" image import "oci:$W/ok:t" ok
        [ "$status" -eq 0 ]
}
