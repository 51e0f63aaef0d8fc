#!/usr/bin/env bats
# Artifacts: files a job leaves in /workspace/output are stored and
# recorded; symlinks are never followed; caps hold; hutch cp gets them back.

bats_require_minimum_version 1.5.0
load lib

setup() { common_setup; }
teardown() { host_dirs_cleanup; }

files_json() {
        "$HUTCH" show --json "$(last_run_id)" | jq -c '[.files[] | select(.kind == "output")]'
}

@test "artifacts are collected without --workdir, with size, sha256 and mime" {
        run "$HUTCH" run -q -- sh -c 'mkdir -p output/sub && echo "{\"a\": 1}" > output/r.json && printf "\211PNG\r\n\032\n" > output/sub/i.png'
        [ "$status" -eq 0 ]
        f=$(files_json)
        [ "$(echo "$f" | jq -r '.[] | select(.path == "r.json") | .mime')" = application/json ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "sub/i.png") | .mime')" = image/png ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "r.json") | .size')" -eq 9 ]
        run "$HUTCH" cp "$(last_run_id):r.json" -
        [ "$output" = '{"a": 1}' ]
}

@test "artifacts are collected with --workdir too, and are not workspace changes" {
        W="$(host_dir)/w"
        make_tree "$W"
        run "$HUTCH" run -q --workdir "$W" -- sh -c 'mkdir -p output && echo r > output/r.txt'
        [ "$status" -eq 0 ]
        [ "$(files_json | jq length)" -eq 1 ]
        run "$HUTCH" diff --json "$(last_run_id)"
        [ "$(echo "$output" | jq '.changes | length')" -eq 0 ]
        [ ! -e "$W/output" ]
}

@test "symlinks in output are recorded, never followed" {
        run "$HUTCH" run -q -- sh -c 'mkdir -p output/d && ln -s /etc/passwd output/x && ln -s ../../.. output/up && ln -s ../../../../../etc/shadow output/d/s && echo ok > output/real'
        [ "$status" -eq 0 ]
        f=$(files_json)
        [ "$(echo "$f" | jq -r '.[] | select(.path == "x") | .skip')" = symlink ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "x") | .link_target')" = /etc/passwd ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "x") | .sha256')" = null ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "up") | .skip')" = symlink ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "d/s") | .skip')" = symlink ]
        [ "$(echo "$f" | jq '[.[] | select(.sha256 != null)] | length')" -eq 1 ]
        run "$HUTCH" cp "$(last_run_id):x" "$BATS_TEST_TMPDIR/out"
        [ "$status" -eq 1 ]
        [ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "10,000 files in output: the default cap (1000) holds and the rest is recorded as skipped" {
        run "$HUTCH" run -q -- sh -c 'mkdir -p output && cd output && i=0; while [ $i -lt 10000 ]; do echo $i > f$i; i=$((i+1)); done'
        [ "$status" -eq 0 ]
        f=$(files_json)
        [ "$(echo "$f" | jq '[.[] | select(.skip == null)] | length')" -eq 1000 ]
        [ "$(echo "$f" | jq '[.[] | select(.skip == "max_files")] | length')" -eq 9000 ]
        # a lower cap from the command line
        run "$HUTCH" run -q --artifacts-max-files 10 -- sh -c 'mkdir -p output && cd output && for i in $(seq 20); do : > f$i; done'
        [ "$(files_json | jq '[.[] | select(.skip == null)] | length')" -eq 10 ]
}

@test "hutch gc deletes the blobs of deleted runs, and only those" {
        "$HUTCH" run -q -- sh -c 'mkdir -p output && echo old > output/old.txt'
        sleep 1.2
        "$HUTCH" run -q -- sh -c 'mkdir -p output && echo new > output/new.txt'
        id=$(last_run_id)
        [ "$(find "$HUTCH_STATE_DIR/blobs" -type f ! -name .lock | wc -l)" -eq 2 ]
        run "$HUTCH" gc --older-than 1s
        [ "$status" -eq 0 ]
        [[ "$output" == *"deleted 1 unreferenced blob"* ]]
        [ "$(find "$HUTCH_STATE_DIR/blobs" -type f ! -name .lock | wc -l)" -eq 1 ]
        run "$HUTCH" cp "$id:new.txt" -
        [ "$output" = new ]
}

@test "a 100 MB artifact comes back byte-identical through hutch cp" {
        run "$HUTCH" run -q --disk 256M -- sh -c 'mkdir -p output && head -c 100000000 /dev/urandom > output/big.bin && sha256sum output/big.bin'
        [ "$status" -eq 0 ]
        want=${output%% *}
        run "$HUTCH" cp "$(last_run_id):output/big.bin" "$BATS_TEST_TMPDIR/"
        [ "$status" -eq 0 ]
        [ "$(sha256sum < "$BATS_TEST_TMPDIR/big.bin" | cut -d' ' -f1)" = "$want" ]
        [ "$(stat -c %s "$BATS_TEST_TMPDIR/big.bin")" -eq 100000000 ]
}

@test "artifacts over max_bytes are skipped with the reason" {
        run "$HUTCH" run -q --artifacts-max-bytes 1K -- sh -c 'mkdir -p output && head -c 600 /dev/zero > output/a && head -c 600 /dev/zero > output/b'
        f=$(files_json)
        [ "$(echo "$f" | jq -r '.[] | select(.path == "b") | .skip')" = max_bytes ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "a") | .skip')" = null ]
}

@test "/workspace/output exists when the job starts; left empty it is no change and no artifact" {
        run -0 "$HUTCH" run -q -- sh -c 'test -d output && test -w output && echo report > output/r.txt'
        [ "$(files_json | jq length)" -eq 1 ]
        W=$(host_dir)
        run -0 "$HUTCH" run --json --workdir "$W" -- true
        [ "$(echo "$output" | jq '.files | length')" -eq 0 ]
        [ ! -e "$W/output" ]
}
