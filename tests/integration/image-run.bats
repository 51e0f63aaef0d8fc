#!/usr/bin/env bats
# hutch run --image: the image's layers as overlay lowers under the run's
# scratch upper, its config honoured (Env under the profile's, WorkingDir,
# Entrypoint/Cmd without a command, the sandbox's own user), the manifest
# pinned in the stored profile, rerun refused once the image is gone.

bats_require_minimum_version 1.5.0
load lib
load image-lib

setup() {
        busybox_image_setup
        "$HUTCH" image import "oci:$W/oci:1.0" bb > /dev/null
}

@test "without a command, --image runs the image's entrypoint, in its WorkingDir, with its Env" {
        run "$HUTCH" run --image bb
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'hello from the image\nhello from layer two\n/srv')" ]
        # the shipped default profile names [sandbox] workdir: no choice;
        # the command line's is
        run env HUTCH_PROFILE_PATH="$BATS_TEST_DIRNAME/../../profiles" "$HUTCH" run --image bb -- pwd
        [ "$output" = /srv ]
        run "$HUTCH" run --image bb --workdir-inside /elsewhere -- pwd
        [ "$output" = /elsewhere ]
}

@test "a command runs in the image: whiteouts and opaque dirs applied, writable, discarded" {
        run "$HUTCH" run --image bb -- sh -c 'ls /etc; ls /opq; [ -e /usr/bin/python3 ] || echo no-host; id -u; echo x > /bin/new && cat /bin/new'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'kept.txt\npasswd\nnew.txt\nno-host\n1000\nx')" ]
        run "$HUTCH" run --image bb -- sh -c '[ -e /bin/new ] || echo gone'
        [ "$output" = gone ]
}

@test "the profile's and the command line's env win over the image's" {
        run "$HUTCH" run --image bb -e GREETING=mine -- sh -c 'echo "$GREETING $PATH"'
        [ "$status" -eq 0 ]
        [ "$output" = "mine /bin" ]
}

@test "profile show --image shows the pinned image and its env, as a run stores it" {
        run "$HUTCH" profile show --canonical --image bb
        [ "$status" -eq 0 ]
        [[ "$output" == *"root = image:bb:latest@$MANIFEST"* ]]
        [[ "$output" == *"GREETING = hello from the image"* ]]
        show=$("$HUTCH" profile show --sha256 --image bb)
        "$HUTCH" run --json --image bb -- true > "$W/r.json"
        [ "$(jq -r .profile_sha256 "$W/r.json")" = "$show" ]
}

@test "root = image:NAME in a profile, even one outside the trusted dirs" {
        printf '[filesystem]\nroot = image:bb\n' > "$W/img.ini"
        run "$HUTCH" run -p "$W/img.ini" -- cat /hello.txt
        [ "$status" -eq 0 ]
        [ "$output" = "hello from layer two" ]
        printf '[filesystem]\nroot = image:Bad Name\n' > "$W/bad.ini"
        run "$HUTCH" run --trust-profile -p "$W/bad.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"image:NAME[:TAG]"* ]]
}

@test "an unknown image is a setup error naming it" {
        run "$HUTCH" run --image nothere -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"no image nothere"* ]]
}

@test "--lang with an image resolves the interpreter inside it" {
        run "$HUTCH" run --image bb --lang sh -c 'echo "$GREETING"; readlink -f /bin/sh'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'hello from the image\n/bin/busybox')" ]
        # the host's python3 does not count: the image has none
        run -127 "$HUTCH" run --image bb --lang python -c 'print(1)'
}

@test "rerun runs the same manifest, and refuses once the image is gone" {
        run "$HUTCH" run --json --image bb -- cat /hello.txt
        [ "$status" -eq 0 ]
        id=$(jq -r .id <<<"$output")
        run "$HUTCH" rerun "$id"
        [ "$status" -eq 0 ]
        [ "$output" = "hello from layer two" ]
        # a new bb:latest does not change what the old run reruns
        mkdir -p "$W/l9" && echo nine > "$W/l9/hello.txt"
        tar -C "$W/l9" -cf - . | gzip -n > "$W/l9.tar.gz"
        image_config "$W/c9.json" '["PATH=/bin"]' null "" "$W/l1.tar.gz" "$W/l9.tar.gz"
        oci_layout "$W/oci" 9 "$W/c9.json" "$W/l1.tar.gz" "$W/l9.tar.gz" > /dev/null
        "$HUTCH" image import "oci:$W/oci:9" bb > /dev/null
        run "$HUTCH" run --image bb -- cat /hello.txt
        [ "$output" = nine ]
        "$HUTCH" image import "oci:$W/oci:1.0" old > /dev/null
        run "$HUTCH" rerun "$id"
        [ "$status" -eq 0 ]
        [ "$output" = "hello from layer two" ]
        "$HUTCH" image rm old
        run "$HUTCH" rerun "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"rerun: run $id ran image:bb:latest@$MANIFEST, which is gone: no image"* ]]
}

@test "a running job's image keeps its layers: rm and gc leave them until the run ends" {
        "$HUTCH" run --image bb -- sleep 60 > /dev/null 2>&1 &
        for _ in $(seq 100); do
                id=$("$HUTCH" ps --json | jq -r .id | head -1)
                [ -n "$id" ] && break
                sleep 0.1
        done
        [ -n "$id" ]
        run "$HUTCH" image rm bb
        [ "$status" -eq 0 ]
        [ "$output" = "removed bb; its layers stay until hutch gc: a run is using the image store" ]
        run "$HUTCH" gc
        [[ "$output" == *"removed no image layers: a run is using the image store"* ]]
        [ "$(ls "$HUTCH_STATE_DIR/images/layers" | wc -l)" -eq 2 ]
        "$HUTCH" kill "$id"
        wait
        run "$HUTCH" gc
        [[ "$output" == *"removed 2 image layers and 4 blobs no image uses"* ]]
        [ -z "$(ls "$HUTCH_STATE_DIR/images/layers")" ]
}

@test "a manifest digest runs only an imported image: not one whose import was refused, not one no name points at" {
        run "$HUTCH" run --image "$MANIFEST" -- cat /hello.txt
        [ "$status" -eq 0 ]
        [ "$output" = "hello from layer two" ]
        run "$HUTCH" run --image "bb@$MANIFEST" -- cat /hello.txt
        [ "$output" = "hello from layer two" ]
        # the same layers (unpacked already), another config: refused for
        # max_image_size only after its manifest was in the store
        image_config "$W/c2.json" '["PATH=/bin", "WHICH=refused"]' null "" "$W/l1.tar.gz" "$W/l2.tar.gz"
        m2=$(oci_layout "$W/oci" 2 "$W/c2.json" "$W/l1.tar.gz" "$W/l2.tar.gz" | cut -d: -f2)
        printf '[image]\nmax_image_size = 1M\n' > "$W/small.ini"
        run "$HUTCH" image import -p "$W/small.ini" "oci:$W/oci:2" refused
        [ "$status" -eq 1 ]
        [[ "$output" == *"more than max_image_size (1M)"* ]]
        for ref in "sha256:$m2" "refused@sha256:$m2" "bb@sha256:$m2"; do
                run "$HUTCH" run --image "$ref" -- sh -c 'echo "$WHICH"'
                [ "$status" -eq 125 ]
                [[ "$output" == *"no image $ref"* ]]
                [[ "$output" != *refused$'\n'* ]]
        done
        # imported, then its name pointed at another image: no longer one
        "$HUTCH" image import "oci:$W/oci:2" two > /dev/null
        run "$HUTCH" run --image "sha256:$m2" -- sh -c 'echo "$WHICH"'
        [ "$status" -eq 0 ]
        [ "$output" = refused ]
        "$HUTCH" image import "oci:$W/oci:1.0" two > /dev/null
        [ -e "$HUTCH_STATE_DIR/images/blobs/sha256/$m2" ]
        run "$HUTCH" run --image "sha256:$m2" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"no image sha256:$m2"* ]]
}

@test "an image of more layers than a run can stack is refused at import; as many as it can runs" {
        # 127 small layers over busybox's: 128, the most
        local layers=("$W/l1.tar.gz") i
        for i in $(seq 2 129); do
                mkdir -p "$W/many/$i"
                echo "$i" > "$W/many/$i/f$i"
                tar --numeric-owner --owner=0 --group=0 -C "$W/many/$i" -cf "$W/many/$i.tar" .
                layers+=("$W/many/$i.tar")
        done
        image_config "$W/c128.json" '["PATH=/bin"]' null "" "${layers[@]:0:128}"
        oci_layout "$W/oci" 128 "$W/c128.json" "${layers[@]:0:128}" > /dev/null
        run "$HUTCH" image import "oci:$W/oci:128" many
        [ "$status" -eq 0 ]
        [[ "$output" == *"128 layers"* ]]
        run "$HUTCH" run --image many -- sh -c 'cat /f2 /f128'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf '2\n128')" ]
        image_config "$W/c129.json" '["PATH=/bin"]' null "" "${layers[@]}"
        oci_layout "$W/oci" 129 "$W/c129.json" "${layers[@]}" > /dev/null
        run "$HUTCH" image import "oci:$W/oci:129" toomany
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"the image has 129 layers, more than the 128 a run can stack"* ]]
        run "$HUTCH" image ls
        [[ "$output" != *toomany* ]]
        # nothing of it stays: the layer only it names is not unpacked
        [ ! -e "$HUTCH_STATE_DIR/images/layers/$(sha256sum "$W/many/129.tar" | cut -c1-64)" ]
}
