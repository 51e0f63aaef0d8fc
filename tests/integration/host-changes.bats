#!/usr/bin/env bats
# host-changes.bats - a host directory edited while a job runs on it: the
# job's change is marked as resting on an unknown version, diff says so,
# apply refuses it (exit 1, conflict "during_run") unless --overwrite.
# The host edits happen while the job provably runs: the job announces
# its copy-up on stdout and then waits on its stdin, which the test
# releases after editing.

bats_require_minimum_version 1.5.0
load lib

teardown() { host_dirs_cleanup; }

setup() {
        common_setup
        W="$(host_dir)/w"
        mkdir -p "$W"
        echo orig > "$W/f.txt"
        echo other > "$W/g.txt"
        echo gone > "$W/d.txt"
        make_tree "$W"
        T=$(host_dir)
        mkfifo "$T/in"
}

# during_run SCRIPT HOSTCMD: run SCRIPT in the workspace; once it printed
# "ready", run HOSTCMD on the host, then let the job finish.
during_run() {
        "$HUTCH" run -q --workdir "$W" -- sh -c "$1; echo ready; read x" < "$T/in" > "$T/out" &
        local pid=$! i
        exec 8> "$T/in"
        for i in $(seq 200); do
                grep -q ready "$T/out" 2>/dev/null && break
                sleep 0.05
        done
        grep -q ready "$T/out"
        eval "$2"
        echo go >&8
        exec 8>&-
        wait "$pid"
}

@test "a file the host edited during the run is a conflict, not an overwrite" {
        during_run 'echo agent > f.txt' 'echo human > "$W/f.txt"'
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r '.changes[] | select(.path == "f.txt") | .lower_changed')" = true ]
        run "$HUTCH" show --json "$id"
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "f.txt") | .lower_changed')" = true ]
        run "$HUTCH" diff "$id"
        [[ "$output" == *"host changed this path during the run"* ]]
        run "$HUTCH" diff --stat "$id"
        [[ "$output" == *"f.txt  (host changed it during the run)"* ]]
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"during_run f.txt"* ]]
        [[ "$output" == *"--overwrite"* ]]
        [ "$(cat "$W/f.txt")" = human ]
        # --force does not override it; --overwrite does, knowingly
        run "$HUTCH" apply --force "$id"
        [ "$status" -eq 1 ]
        [ "$(cat "$W/f.txt")" = human ]
        run "$HUTCH" apply --overwrite "$id"
        [ "$status" -eq 0 ]
        [ "$(cat "$W/f.txt")" = agent ]
}

@test "--overwrite still refuses a target that changed after the run" {
        during_run 'echo agent > f.txt' 'echo human > "$W/f.txt"'
        id=$(last_run_id)
        echo later > "$W/f.txt"
        run "$HUTCH" apply --overwrite "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"changed"*"f.txt"* ]]
        [ "$(cat "$W/f.txt")" = later ]
}

@test "a host edit to another file is no conflict" {
        during_run 'echo agent > f.txt' 'echo human > "$W/g.txt"'
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        [ "$(echo "$output" | jq -r '.changes[] | select(.path == "f.txt") | .lower_changed')" = false ]
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [ "$(cat "$W/f.txt")" = agent ]
        [ "$(cat "$W/g.txt")" = human ]
}

@test "a file the job deleted and the host edited during the run is a conflict" {
        during_run 'rm d.txt' 'echo edited > "$W/d.txt"'
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"during_run d.txt"* ]]
        [ "$(cat "$W/d.txt")" = edited ]
}

@test "a file the job changed and the host removed during the run is a conflict" {
        during_run 'echo agent >> f.txt' 'rm "$W/f.txt"'
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"during_run f.txt"* ]]
        [ ! -e "$W/f.txt" ]
}

@test "run --apply refuses what the host changed during the run" {
        "$HUTCH" run -q --workdir "$W" --apply -- sh -c 'echo agent > f.txt; echo ready; read x' \
                < "$T/in" > "$T/out" 2> "$T/err" &
        pid=$!
        exec 8> "$T/in"
        for i in $(seq 200); do grep -q ready "$T/out" 2>/dev/null && break; sleep 0.05; done
        echo human > "$W/f.txt"
        echo go >&8
        exec 8>&-
        rc=0
        wait "$pid" || rc=$?
        [ "$rc" -eq 1 ]
        grep -q "during_run f.txt" "$T/err"
        [ "$(cat "$W/f.txt")" = human ]
}

# --snapshot: the lower dir is a copy taken at the start, so a host edit
# during the run is not what the job sees. The job waits (stdin) before
# it reads or writes anything, the host edits f.txt, then the job reads
# it and changes it and other files.
snapshot_run() {
        "$HUTCH" run -q --snapshot yes --workdir "$W" "$@" -- sh -c \
                'echo ready; read x; cat f.txt > seen.txt; echo agent >> f.txt; echo new > g.txt; echo add > n.txt' \
                < "$T/in" > "$T/out" &
        local pid=$! i
        exec 8> "$T/in"
        for i in $(seq 200); do grep -q ready "$T/out" 2>/dev/null && break; sleep 0.05; done
        grep -q ready "$T/out"
        echo human > "$W/f.txt"
        echo go >&8
        exec 8>&-
        wait "$pid"
}

@test "with --snapshot, diff shows the job's own change and apply refuses only what the host changed" {
        snapshot_run
        id=$(last_run_id)
        # the job read the version it started from, not the host's edit
        run "$HUTCH" diff --json "$id"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r '[.changes[] | select(.lower_changed)] | length')" = 0 ]
        run "$HUTCH" diff "$id"
        [[ "$output" != *"host changed this path"* ]]
        [[ "$output" == *$'\n orig\n+agent\n'* ]]
        [[ "$output" == *$'+++ b/seen.txt\n@@ -0,0 +1,1 @@\n+orig'* ]]
        [[ "$output" != *human* ]]
        # the copy is gone with the run
        [ -z "$(ls -A "$HUTCH_STATE_DIR/snapshots")" ]
        # all or nothing by default: f.txt conflicts (the host's version is
        # not the one the job changed), so nothing is written
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"changed    f.txt"* ]]
        [ "$(cat "$W/g.txt")" = other ]
        [ ! -e "$W/n.txt" ]
        # --skip-conflicts applies the rest and says what it left out
        run "$HUTCH" apply --skip-conflicts "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"changed    f.txt"* ]]
        [[ "$output" == *"1 change left out"* ]]
        [ "$(cat "$W/f.txt")" = human ]
        [ "$(cat "$W/g.txt")" = new ]
        [ "$(cat "$W/n.txt")" = add ]
        [ "$(cat "$W/seen.txt")" = orig ]
        # --overwrite is about unknown versions; here the version is known
        # and the host's edit would be lost: still a conflict
        run "$HUTCH" apply --overwrite "$id"
        [ "$status" -eq 1 ]
        [ "$(cat "$W/f.txt")" = human ]
}

@test "run --snapshot --apply is all or nothing: a host edit during the run stops it" {
        rc=0
        snapshot_run --apply 2> "$T/err" || rc=$?
        [ "$rc" -eq 1 ]
        grep -q "changed    f.txt" "$T/err"
        [ "$(cat "$W/f.txt")" = human ]
        [ "$(cat "$W/g.txt")" = other ]
}

@test "--snapshot copies hostile names, modes, links, FIFOs and sparse files without following or expanding" {
        command -v python3 >/dev/null || skip "python3 not installed"
        nl=$'new\nline'
        bad=$'bad\xff'
        echo a > "$W/$nl"
        echo b > "$W/$bad"
        echo c > "$W/-rf"
        echo secret > "$W/closed"
        chmod 000 "$W/closed"
        mkdir "$W/ro" && echo d > "$W/ro/in.txt" && chmod 555 "$W/ro"
        echo e > "$W/suid" && chmod 4755 "$W/suid"
        ln -s /etc/passwd "$W/abs"
        ln -s ../../../escape "$W/rel"
        mkfifo "$W/fifo"
        python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$W/sock"
        truncate -s 1G "$W/sparse"
        [ "$(id -u)" -ne 0 ] || chown -h 65534:65534 "$W"/* "$W/ro/in.txt"
        chmod 4755 "$W/suid"    # chown cleared it
        run --separate-stderr "$HUTCH" run --disk 16M --snapshot yes --workdir "$W" -- sh -c '
                ls | wc -l
                cat ./"-rf" ro/in.txt
                stat -c %a ro
                stat -c "%a %s" suid sparse
                readlink abs; readlink rel
                [ -p fifo ] && echo fifo
                [ -e sock ] || echo no-sock
                du -k sparse | cut -f1
                cat closed 2>/dev/null || echo closed'
        [ "$status" -eq 0 ]
        # 15 entries, the socket left out, and the artifacts dir every run gets
        [ "${lines[0]}" = 15 ]
        [ "${lines[1]}" = c ]
        [ "${lines[2]}" = d ]
        [ "${lines[3]}" = 555 ]
        [ "${lines[4]}" = "755 2" ]      # set-uid is not carried into the copy
        [ "${lines[5]}" = "644 1073741824" ]
        [ "${lines[6]}" = /etc/passwd ]
        [ "${lines[7]}" = ../../../escape ]
        [ "${lines[8]}" = fifo ]
        [ "${lines[9]}" = no-sock ]
        [ "${lines[10]}" -lt 1024 ]      # the hole stayed a hole
        [ "${lines[11]}" = closed ]
        [[ "$stderr" == *"1 socket or device node"*"left out"* ]]
        [ -z "$(ls -A "$HUTCH_STATE_DIR/snapshots")" ]
        # the host's tree is as it was
        [ "$(stat -c %a "$W/suid")" = 4755 ]
        [ -S "$W/sock" ] && [ -p "$W/fifo" ]
}

@test "--snapshot is bounded by --disk: a tree that does not fit is a setup error, nothing runs" {
        head -c 20M /dev/zero > "$W/big"
        make_tree "$W"
        run "$HUTCH" run --disk 16M --snapshot yes --workdir "$W" -- touch ran
        [ "$status" -eq 125 ]
        [[ "$output" == *"--snapshot: cannot copy"*"at big: more than --disk"* ]]
        [ ! -e "$W/ran" ]
        [ -z "$(ls -A "$HUTCH_STATE_DIR/snapshots")" ]
        run "$HUTCH" run --disk 64M --snapshot yes --workdir "$W" -- true
        [ "$status" -eq 0 ]
}

@test "apply --skip-conflicts keeps a directory the job deleted and the host added to, and applies the rest" {
        mkdir "$W/D" && echo x > "$W/D/a"
        make_tree "$W"
        "$HUTCH" run -q --workdir "$W" -- sh -c 'rm -r D; echo agent > g.txt'
        id=$(last_run_id)
        echo host > "$W/D/new"
        run "$HUTCH" apply --skip-conflicts "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"not_empty  D/new"* ]]
        [ "$(cat "$W/D/new")" = host ]
        [ ! -e "$W/D/a" ]
        [ "$(cat "$W/g.txt")" = agent ]
}

@test "gc keeps a running run's snapshot and removes the one a killed supervisor left" {
        "$HUTCH" run -q --snapshot yes --workdir "$W" -- sleep 60 >/dev/null 2>&1 3>&- &
        local sup=$! i id
        for ((i = 0; i < 100; i++)); do
                id=$("$HUTCH" ls --status running --json 2>/dev/null | jq -r '.id' | head -n 1)
                [ -n "$id" ] && [ -d "$HUTCH_STATE_DIR/snapshots/$id" ] && break
                sleep 0.1
        done
        [ -d "$HUTCH_STATE_DIR/snapshots/$id" ]
        # a stranger's entry in the dir is not gc's to judge
        mkdir "$HUTCH_STATE_DIR/snapshots/not-a-run"
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [ -f "$HUTCH_STATE_DIR/snapshots/$id/f.txt" ]
        kill -9 "$sup"
        wait "$sup" || true
        run "$HUTCH" gc --dry-run
        [[ "$output" == *"would remove snapshot $HUTCH_STATE_DIR/snapshots/$id"* ]]
        [ -d "$HUTCH_STATE_DIR/snapshots/$id" ]
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 1 snapshot a killed run left"* ]]
        [ ! -e "$HUTCH_STATE_DIR/snapshots/$id" ]
        [ -d "$HUTCH_STATE_DIR/snapshots/not-a-run" ]
}

@test "gc finds the snapshots dir without writing past the store's path" {
        # glibc's checking allocator (part of libc6) aborts on a write past
        # a block; building "snapshots" over "hutch.db" wrote two bytes past
        local dbg
        dbg=$(ls /lib/*/libc_malloc_debug.so.0 /usr/lib/*/libc_malloc_debug.so.0 2>/dev/null | head -n 1)
        [ -n "$dbg" ] || skip "glibc's libc_malloc_debug.so.0 not found"
        "$HUTCH" run -- true
        mkdir -p "$HUTCH_STATE_DIR/snapshots"
        run env LD_PRELOAD="$dbg" GLIBC_TUNABLES=glibc.malloc.check=3 "$HUTCH" gc --dry-run
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        run env LD_PRELOAD="$dbg" GLIBC_TUNABLES=glibc.malloc.check=3 "$HUTCH" gc
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
}
