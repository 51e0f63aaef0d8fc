#!/usr/bin/env bats
# hutch run --workdir: an overlay workspace whose changes are recorded
# (hutch diff, hutch show), applied on request (hutch apply, --apply), and
# never written to the host directory by the run itself; --input.

bats_require_minimum_version 1.5.0
load lib

teardown() { host_dirs_cleanup; }

setup() {
        common_setup
        W="$(host_dir)/w"
        mkdir -p "$W/sub" "$W/keep"
        echo hello > "$W/a.txt"
        printf 'one\ntwo\nthree\n' > "$W/sub/b.txt"
        echo gone > "$W/del.txt"
        echo moving > "$W/old.txt"
        echo same > "$W/keep/k.txt"
        make_tree "$W"
}

# edit, create, delete, rename
EDITS='echo world >> a.txt && sed -i s/two/TWO/ sub/b.txt && echo new > n.txt && mkdir -p d/e && echo deep > d/e/f && rm del.txt && mv old.txt renamed.txt'

@test "the host workdir is unchanged after a job that edits, creates, deletes and renames" {
        before=$(tree_digest "$W")
        run "$HUTCH" run --workdir "$W" -- sh -c "$EDITS && cat a.txt renamed.txt && ls"
        [ "$status" -eq 0 ]
        [[ "$output" == *"hello"*"world"*"moving"* ]]
        [[ "$output" == *"n.txt"* ]]
        [ "$(tree_digest "$W")" = "$before" ]
}

@test "hutch diff lists exactly what the job changed" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c "$EDITS"
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        [ "$status" -eq 0 ]
        got=$(echo "$output" | jq -r '.changes[] | "\(.kind) \(.path)"' | sort)
        want=$(printf '%s\n' "added d" "added d/e" "added d/e/f" "added n.txt" "added renamed.txt" \
                "deleted del.txt" "deleted old.txt" "modified a.txt" "modified sub/b.txt" | sort)
        [ "$got" = "$want" ]
        run "$HUTCH" diff --stat "$id"
        [[ "$output" == *"5 added, 2 modified, 2 deleted"* ]]
        run "$HUTCH" diff "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *"-two"*"+TWO"* ]]
        [[ "$output" == *"+world"* ]]
        [[ "$output" == *"-gone"* ]]
}

@test "hutch show lists the files, human and --json" {
        "$HUTCH" run -q --workdir "$W" -- sh -c 'echo x > n.txt; mkdir -p output; echo r > output/r.txt'
        id=$(last_run_id)
        run "$HUTCH" show "$id"
        [[ "$output" == *"added"*"n.txt"* ]]
        [[ "$output" == *"output"*"r.txt"*"text/plain"* ]]
        run "$HUTCH" show --json "$id"
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "n.txt") | .kind')" = added ]
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "r.txt") | .sha256')" = \
          "$(echo r | sha256sum | cut -d' ' -f1)" ]
}

@test "hutch apply reproduces the job's changes exactly" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c "$EDITS"
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        # what the job saw at the end, from a second overlay run
        expected="$BATS_TEST_TMPDIR/expected"
        cp -a "$W" "$expected"
        (cd "$expected" && sh -c "$EDITS")
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [ "$(tree_digest "$W")" = "$(tree_digest "$expected")" ]
        # twice is harmless
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [ "$(tree_digest "$W")" = "$(tree_digest "$expected")" ]
}

@test "hutch apply refuses on conflict, lists it, and changes nothing" {
        "$HUTCH" run -q --workdir "$W" -- sh -c "$EDITS"
        id=$(last_run_id)
        echo "user edit" >> "$W/a.txt"
        before=$(tree_digest "$W")
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"changed"*"a.txt"* ]]
        [ "$(tree_digest "$W")" = "$before" ]
        # --to another copy of the original works
        other="$BATS_TEST_TMPDIR/other"
        cp -a "$W" "$other"
        echo hello > "$other/a.txt"
        run "$HUTCH" apply --to "$other" "$id"
        [ "$status" -eq 0 ]
        [ -f "$other/renamed.txt" ] && [ ! -e "$other/old.txt" ]
}

@test "run --apply applies only when the job succeeds" {
        run "$HUTCH" run -q --workdir "$W" --apply -- sh -c 'echo x > fail.txt; exit 3'
        [ "$status" -eq 3 ]
        [ ! -e "$W/fail.txt" ]
        run "$HUTCH" run -q --workdir "$W" --apply -- sh -c 'echo ok > ok.txt; rm del.txt'
        [ "$status" -eq 0 ]
        [ "$(cat "$W/ok.txt")" = ok ]
        [ ! -e "$W/del.txt" ]
}

@test "a workdir under /tmp is the host's, not the sandbox's /tmp" {
        t=$(mktemp -d /tmp/hutch-ws-test.XXXXXX)
        echo tmpfile > "$t/x"
        make_tree "$t"
        chmod 755 "$t"
        run "$HUTCH" run --workdir "$t" -- cat x
        rm -rf "$t"
        [ "$status" -eq 0 ]
        [ "$output" = tmpfile ]
}

@test "--workdir that does not exist is a usage error" {
        run "$HUTCH" run --workdir "$BATS_TEST_TMPDIR/nope" -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"--workdir"*"No such file"* ]]
}

@test "--workdir-inside moves the working directory, the workspace stays" {
        run "$HUTCH" run --workdir-inside /tmp -- pwd
        [ "$status" -eq 0 ]
        [ "$output" = /tmp ]
}

# A configured build tree names its own absolute path (in makefiles, in
# scripts): shown at that same path it works inside as outside.
@test "--workdir-inside at the tree's host path: absolute paths into it work" {
        printf '#!/bin/sh\ncat %s/a.txt\n' "$W" > "$W/abs.sh"
        run "$HUTCH" run -q --workdir "$W" --workdir-inside "$W" -- sh -c 'sh ./abs.sh && pwd'
        [ "$status" -eq 0 ]
        [ "$output" = "hello"$'\n'"$W" ]
}

@test "--workdir-inside refuses / and paths that would hide /proc, /dev or a system dir" {
        for bad in / // /proc /dev/shm; do
                run "$HUTCH" run -q --workdir-inside "$bad" -- true
                [ "$status" -eq 2 ]
                [ "$output" = "hutch: run: --workdir-inside: expected an absolute path other than /, outside /proc and /dev, got \"$bad\"" ]
        done
        run "$HUTCH" run -q --workdir-inside /usr -- true
        [ "$status" -eq 125 ]
        [ "$output" = "hutch: --workdir-inside: /usr would hide the system dir /usr" ]
        # inside a system dir is fine where the host has the directory
        [ -d /usr/local ] || skip "no /usr/local on this host"
        run "$HUTCH" run -q --workdir "$W" --workdir-inside /usr/local -- sh -c 'pwd; cat a.txt'
        [ "$status" -eq 0 ]
        [ "$output" = /usr/local$'\n'hello ]
}

# The workspace is one filesystem to the job: the host's files, new files
# and directories report one st_dev, so tools that stop at filesystem
# boundaries keep everything (tar --one-file-system used to drop files).
@test "workspace files, new files and dirs share one st_dev; tar --one-file-system keeps them" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c '
                echo new > sub/new.txt
                stat -c %d . sub sub/b.txt sub/new.txt a.txt | sort -u | wc -l
                tar --one-file-system -cf /tmp/t.tar sub && tar -tf /tmp/t.tar | sort'
        [ "$status" -eq 0 ]
        [ "$output" = "1"$'\n'"sub/"$'\n'"sub/b.txt"$'\n'"sub/new.txt" ]
}

@test "--input shows a host file read-only under input/, not as a change" {
        in=$(host_dir)
        echo data > "$in/in.csv"
        chmod a+r "$in/in.csv"
        run "$HUTCH" run -q --workdir "$W" -i "$in/in.csv" -i "$W/sub:s" -- \
                sh -c 'cat input/in.csv input/s/b.txt; echo x > input/in.csv && echo WROTE'
        [[ "$output" == *"data"*"one"* ]]
        [[ "$output" != *"WROTE"* ]]
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        [ "$(echo "$output" | jq '.changes | length')" -eq 0 ]
        [ "$(cat "$in/in.csv")" = data ]
}

@test "hutch diff, apply and cp explain unknown runs and paths" {
        run "$HUTCH" diff ZZZZZZZZ
        [ "$status" -eq 1 ]
        "$HUTCH" run -q -- true
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"no --workdir"* ]]
        run "$HUTCH" cp "$id:nothing" "$BATS_TEST_TMPDIR/x"
        [ "$status" -eq 1 ]
        [[ "$output" == *"recorded no file"* ]]
}

@test "hutch diff output is a patch that turns the old files into the new ones" {
        command -v patch >/dev/null || skip "patch(1) not installed"
        seq 1 300 > "$W/nums"
        printf 'a\nb\nc\n' > "$W/noeol"
        make_tree "$W"
        orig="$BATS_TEST_TMPDIR/orig"
        cp -a "$W" "$orig"
        # scattered edits, insertions, deletions, a lost final newline
        job='sed -i -e "5d" -e "17s/.*/seventeen/" -e "100,110d" -e "200a\\
new line" -e "\$a\\
tail" nums && printf "a\nB\nc" > noeol && echo world >> a.txt'
        run "$HUTCH" run -q --workdir "$W" -- sh -c "$job && sha256sum nums noeol a.txt"
        [ "$status" -eq 0 ]
        want="$output"
        run "$HUTCH" diff "$(last_run_id)"
        [ "$status" -eq 0 ]
        echo "$output" > "$BATS_TEST_TMPDIR/p.diff"
        (cd "$orig" && patch -s -p1 < "$BATS_TEST_TMPDIR/p.diff")
        [ "$(cd "$orig" && sha256sum nums noeol a.txt)" = "$want" ]
}

# Root's sandbox user is host uid 65534; a checkout root owns is shown to
# it through an idmapped mount, so the job can change it like a user's
# own files. The host tree stays root's and unchanged until hutch apply.
@test "as root, a workdir root owns is the job's to change, and stays root's on the host" {
        [ "$(id -u)" -eq 0 ] || skip "needs root (the idmapped workdir is root's case)"
        R="$(host_dir)/rootowned"
        mkdir -p "$R/sub"
        echo hello > "$R/a.txt"
        echo deep > "$R/sub/b.txt"
        chmod 0755 "$R" "$R/sub"
        chmod 0644 "$R/a.txt" "$R/sub/b.txt"
        before=$(tree_digest "$R")
        run "$HUTCH" run --workdir "$R" -- sh -c 'stat -c "%u %U" a.txt && echo more >> a.txt && mv sub/b.txt sub/c.txt && mkdir n && echo x > n/y'
        [ "$status" -eq 0 ]
        [[ "$output" == "1000 sandbox"* ]]
        [ "$(tree_digest "$R")" = "$before" ]
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [ "$(cat "$R/a.txt")" = "$(printf 'hello\nmore')" ]
        [ -f "$R/sub/c.txt" ] && [ ! -e "$R/sub/b.txt" ] && [ -f "$R/n/y" ]
        [ "$(stat -c %u:%g "$R/a.txt" "$R/n/y" "$R/n" | sort -u)" = "0:0" ]
}
