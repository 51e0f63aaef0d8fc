# image-lib.bash - build OCI images in the tests themselves, with no
# network: layers with tar and gzip (or python3's tarfile for the hostile
# ones, whose names tar would not write), blobs named by sha256sum,
# manifest, config and index written with jq.

# oci_blob DIR FILE: copy FILE to DIR/blobs/sha256/<hex>; prints
# "sha256:<hex> <size>".
oci_blob() {
        local hex size
        hex=$(sha256sum "$2" | cut -d' ' -f1)
        size=$(stat -c %s "$2")
        mkdir -p "$1/blobs/sha256"
        cp "$2" "$1/blobs/sha256/$hex"
        echo "sha256:$hex $size"
}

# diff_id FILE: the digest of a layer's uncompressed tar
diff_id() {
        case $1 in
        *.gz) echo "sha256:$(gzip -dc "$1" | sha256sum | cut -d' ' -f1)" ;;
        *.zst) echo "sha256:$(zstd -dc "$1" | sha256sum | cut -d' ' -f1)" ;;
        *) echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)" ;;
        esac
}

# image_config OUT ENV_JSON ENTRYPOINT_JSON WORKDIR LAYER...: a config
# blob for the layers (diff_ids computed), Env/Entrypoint/WorkingDir as
# given (JSON values; null leaves them out).
image_config() {
        local out=$1 env=$2 entry=$3 wd=$4 ids='[]' l
        shift 4
        for l in "$@"; do
                ids=$(jq -c --arg d "$(diff_id "$l")" '. + [$d]' <<<"$ids")
        done
        jq -n --argjson env "$env" --argjson entry "$entry" --arg wd "$wd" --argjson ids "$ids" \
                '{architecture: "amd64", os: "linux", created: "2026-01-01T00:00:00Z",
                  config: ({Env: $env, Entrypoint: $entry} + (if $wd == "" then {} else {WorkingDir: $wd} end)),
                  rootfs: {type: "layers", diff_ids: $ids}}' > "$out"
}

# oci_layout DIR TAG CONFIG LAYER...: an OCI image layout holding one
# image tagged TAG. Prints the manifest digest.
oci_layout() {
        local dir=$1 tag=$2 config=$3 layers='[]' l d s mt cd cs md ms
        shift 3
        mkdir -p "$dir"
        for l in "$@"; do
                read -r d s < <(oci_blob "$dir" "$l")
                case $l in
                *.gz) mt=application/vnd.oci.image.layer.v1.tar+gzip ;;
                *.zst) mt=application/vnd.oci.image.layer.v1.tar+zstd ;;
                *) mt=application/vnd.oci.image.layer.v1.tar ;;
                esac
                layers=$(jq -c --arg d "$d" --argjson s "$s" --arg mt "$mt" \
                        '. + [{mediaType: $mt, digest: $d, size: $s}]' <<<"$layers")
        done
        read -r cd cs < <(oci_blob "$dir" "$config")
        jq -n --arg cd "$cd" --argjson cs "$cs" --argjson layers "$layers" \
                '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
                  config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
                  layers: $layers}' > "$dir/manifest.json.tmp"
        read -r md ms < <(oci_blob "$dir" "$dir/manifest.json.tmp")
        rm "$dir/manifest.json.tmp"
        # a layout holds many tags: the new one replaces only its own
        [ -f "$dir/index.json" ] || echo '{"schemaVersion": 2, "manifests": []}' > "$dir/index.json"
        jq --arg md "$md" --argjson ms "$ms" --arg tag "$tag" \
                '.mediaType = "application/vnd.oci.image.index.v1+json"
                 | .manifests = [.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] != $tag)]
                   + [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
                       annotations: {"org.opencontainers.image.ref.name": $tag}}]' \
                "$dir/index.json" > "$dir/index.json.tmp"
        mv "$dir/index.json.tmp" "$dir/index.json"
        echo '{"imageLayoutVersion": "1.0.0"}' > "$dir/oci-layout"
        echo "$md"
}

# docker_archive OUT NAME:TAG CONFIG LAYER.tar...: what docker save writes
# (manifest.json, the config as <hex>.json, each layer as N/layer.tar).
docker_archive() {
        local out=$1 tag=$2 config=$3 work layers='[]' i=0 l hex
        shift 3
        work=$(mktemp -d)
        for l in "$@"; do
                mkdir "$work/$i"
                case $l in
                *.gz) gzip -dc "$l" > "$work/$i/layer.tar" ;;
                *) cp "$l" "$work/$i/layer.tar" ;;
                esac
                layers=$(jq -c --arg p "$i/layer.tar" '. + [$p]' <<<"$layers")
                i=$((i + 1))
        done
        hex=$(sha256sum "$config" | cut -d' ' -f1)
        cp "$config" "$work/$hex.json"
        jq -n --arg c "$hex.json" --arg t "$tag" --argjson l "$layers" \
                '[{Config: $c, RepoTags: [$t], Layers: $l}]' > "$work/manifest.json"
        tar -C "$work" -cf "$out" .
        rm -rf "$work"
}

# busybox_layers DIR: DIR/l1.tar.gz (busybox, its applets, etc/gone.txt,
# etc/kept.txt, opq/old.txt) and DIR/l2.tar.gz (a whiteout of
# etc/gone.txt, opq made opaque with opq/new.txt, hello.txt).
busybox_layers() {
        local d=$1 a
        mkdir -p "$d/l1/bin" "$d/l1/etc" "$d/l1/opq" "$d/l1/srv" "$d/l2/etc" "$d/l2/opq"
        cp /bin/busybox "$d/l1/bin/busybox"
        for a in $(/bin/busybox --list); do
                [ "$a" = busybox ] || ln -s busybox "$d/l1/bin/$a"
        done
        echo gone > "$d/l1/etc/gone.txt"
        echo kept > "$d/l1/etc/kept.txt"
        echo old > "$d/l1/opq/old.txt"
        echo 'root:x:0:0:root:/root:/bin/sh' > "$d/l1/etc/passwd"
        : > "$d/l2/etc/.wh.gone.txt"
        : > "$d/l2/opq/.wh..wh..opq"
        echo new > "$d/l2/opq/new.txt"
        echo "hello from layer two" > "$d/l2/hello.txt"
        tar --numeric-owner --owner=0 --group=0 -C "$d/l1" -cf - . | gzip -n > "$d/l1.tar.gz"
        tar --numeric-owner --owner=0 --group=0 -C "$d/l2" -cf - . | gzip -n > "$d/l2.tar.gz"
}

# busybox_image DIR TAG: an OCI layout in DIR/oci of the two busybox
# layers, with an Env, an Entrypoint and a WorkingDir; the config and
# layers stay in DIR for other formats. Prints the manifest digest.
busybox_image() {
        local d=$1
        busybox_layers "$d"
        # shellcheck disable=SC2016 # $GREETING is the image's, expanded inside
        image_config "$d/config.json" '["PATH=/bin", "GREETING=hello from the image"]' \
                '["/bin/sh", "-c", "echo \"$GREETING\"; cat /hello.txt; pwd"]' /srv \
                "$d/l1.tar.gz" "$d/l2.tar.gz"
        oci_layout "$d/oci" "$2" "$d/config.json" "$d/l1.tar.gz" "$d/l2.tar.gz"
}

# hostile_layer KIND OUT.tar.gz [ARG]: one layer that breaks a rule.
hostile_layer() {
        python3 - "$@" <<'EOF'
import io, sys, tarfile
kind, out = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
t = tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT)
def add(name, data=b"", **kw):
    i = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(i, k, v)
    if i.type == tarfile.REGTYPE:
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
add("ok.txt", b"fine\n")
if kind == "traversal":
    add(arg, b"escaped\n")
elif kind == "absolute":
    add(arg, b"escaped\n")
elif kind == "symlink-then-file":
    add("link", type=tarfile.SYMTYPE, linkname=arg)
    add("link/planted", b"escaped\n")
elif kind == "hardlink-out":
    add("shadow", type=tarfile.LNKTYPE, linkname=arg)
elif kind == "device":
    add("dev/evil", type=tarfile.CHRTYPE, devmajor=1, devminor=3, mode=0o666)
    add("dev/fifo", type=tarfile.FIFOTYPE, mode=0o666)
elif kind == "setuid":
    add("bin/su", b"#!/bin/sh\n", mode=0o4755)
    add("bin/sg", b"#!/bin/sh\n", mode=0o2755)
elif kind == "bomb":
    # arg MiB of zeros: gzip makes it a few KiB
    i = tarfile.TarInfo("bomb")
    i.size = int(arg) << 20
    class Zeros(io.RawIOBase):
        def readable(self):
            return True
        def readinto(self, b):
            b[:] = bytes(len(b))
            return len(b)
    t.addfile(i, io.BufferedReader(Zeros()))
elif kind == "sparse-frags":
    # a PAX (GNU 1.0) sparse file written by hand: arg one-byte fragments
    # 8 KiB apart, so the archive holds arg bytes of data for a file
    # that takes arg blocks on disk (tar would store whole blocks)
    n = int(arg)
    smap = ("%d\n" % n + "".join("%d\n1\n" % (j * 8192) for j in range(n))).encode()
    smap += bytes(-len(smap) % 512)
    payload = smap + b"x" * n
    i = tarfile.TarInfo("GNUSparseFile.0/frag")
    i.size = len(payload)
    i.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "frag",
                     "GNU.sparse.realsize": str(n * 8192)}
    t.addfile(i, io.BytesIO(payload))
elif kind == "xattrs":
    add("x", b"x\n", pax_headers={"SCHILY.xattr.user.kept": "yes",
                                  "SCHILY.xattr.user.overlay.redirect": "/etc",
                                  "SCHILY.xattr.security.capability": "x",
                                  "SCHILY.xattr.trusted.overlay.opaque": "y"})
else:
    sys.exit("unknown kind " + kind)
t.close()
EOF
}

# busybox_image_setup: common_setup, then the busybox image of
# busybox_image() as version 1.0 in $W ($MANIFEST its digest); skips
# without a static busybox or jq. For setup().
busybox_image_setup() {
        common_setup
        [ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' \
                || skip "needs busybox-static at /bin/busybox"
        command -v jq >/dev/null || skip "needs jq"
        W="$BATS_TEST_TMPDIR/w"
        mkdir -p "$W"
        MANIFEST=$(busybox_image "$W" 1.0)
}
