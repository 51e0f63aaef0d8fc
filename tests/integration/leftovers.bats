#!/usr/bin/env bats
# What killed processes leave behind: a killed `hutch apply` leaves
# .hutch-apply-* temporaries in the target (the next apply to it that
# succeeds removes them, one that does not names them); a run killed
# while collecting leaves blobs/.tmp-* temporaries (gc removes those
# whose writer is gone).

bats_require_minimum_version 1.5.0
load lib

teardown() { host_dirs_cleanup; }

setup() { common_setup; }

count_temps() {
        find "$1" -maxdepth 1 -name '.hutch-apply-*' | wc -l
}

# Wait (up to 10 s) until $1 holds at least $2 apply temporaries.
wait_for_temps() {
        local i
        for ((i = 0; i < 100; i++)); do
                [ "$(count_temps "$1")" -ge "$2" ] && return 0
                sleep 0.1
        done
        return 1
}

@test "a killed hutch apply's temporaries are named, then removed by the next apply that succeeds" {
        w="$(host_dir)/w"
        mkdir -p "$w"
        echo one > "$w/a.txt"
        echo x > "$w/c.txt"
        make_tree "$w"
        run "$HUTCH" run -q --workdir "$w" -- sh -c 'echo A > a.txt; echo B > b.txt; echo C > c.txt'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        # Make the kill land mid-apply, deterministically: c.txt's new
        # content comes from its blob, which we swap for a FIFO, so the
        # apply blocks opening it after staging a.txt and b.txt (paths are
        # staged in order), with their temporaries in the directory.
        sha=$(printf 'C\n' | sha256sum | cut -d' ' -f1)
        blob="$HUTCH_STATE_DIR/blobs/${sha:0:2}/${sha:2}"
        [ -f "$blob" ]
        mv "$blob" "$BATS_TEST_TMPDIR/blob"
        mkfifo -m 0600 "$blob"
        "$HUTCH" apply "$id" 3>&- &
        pid=$!
        wait_for_temps "$w" 2
        kill -9 "$pid"
        wait "$pid" || true
        rm "$blob"
        mv "$BATS_TEST_TMPDIR/blob" "$blob"
        [ "$(count_temps "$w")" -eq 2 ]
        [ "$(cat "$w/a.txt")" = one ]          # killed before anything was installed

        # an apply that does not succeed names them
        echo mine > "$w/a.txt"
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"holds 2 leftovers of an interrupted hutch apply"* ]]
        [ "$(echo "$output" | grep -c '  leftover   \.hutch-apply-')" -eq 2 ]
        [ "$(count_temps "$w")" -eq 2 ]

        # one planted under the same pattern is not provably ours: kept
        echo planted > "$w/.hutch-apply-planted"
        echo one > "$w/a.txt"
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 2 leftovers of an interrupted apply"* ]]
        [ "$(cat "$w/a.txt")" = A ] && [ "$(cat "$w/b.txt")" = B ] && [ "$(cat "$w/c.txt")" = C ]
        [ "$(count_temps "$w")" -eq 1 ]
        [ -f "$w/.hutch-apply-planted" ]
        # nothing left to remember about this directory
        [ -z "$(find "$HUTCH_STATE_DIR/apply" -type f 2>/dev/null)" ]
}

@test "gc removes blob temporaries whose writer is gone, and keeps a live writer's" {
        run "$HUTCH" run -q -- true
        [ "$status" -eq 0 ]
        blobs="$HUTCH_STATE_DIR/blobs"
        mkdir -p "$blobs"
        # a writer that is gone: a pid we started and reaped
        sh -c 'exit 0' &
        dead=$!
        wait "$dead"
        mystart=$(cut -d' ' -f22 < "/proc/$$/stat")
        echo half > "$blobs/.tmp-$dead-$mystart-0123456789abcdef"
        # the pid is alive but now another process (start time differs)
        echo half > "$blobs/.tmp-$$-$((mystart + 1))-0123456789abcdef"
        # alive, same start time: a writer still at it
        echo half > "$blobs/.tmp-$$-$mystart-fedcba9876543210"
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [ ! -e "$blobs/.tmp-$dead-$mystart-0123456789abcdef" ]
        [ ! -e "$blobs/.tmp-$$-$((mystart + 1))-0123456789abcdef" ]
        [ -e "$blobs/.tmp-$$-$mystart-fedcba9876543210" ]
}
