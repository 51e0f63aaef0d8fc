#!/usr/bin/env bats
# A run hutch reported must survive a power loss, with its final status.
#
# The power loss is reproduced by keeping only what was synced:
# tests/syncshadow.so (LD_PRELOAD) copies each file of the state dir as
# its fsync/fdatasync made it durable; the copies are the state dir a
# power loss right after the last run would leave (files never synced
# are gone, files synced once are as they were then; a whole file that
# sync_file_range wrote to the device is durable at the next fsync or
# fdatasync of a regular file on that filesystem: the device's flush).

bats_require_minimum_version 1.5.0
load lib

setup() {
        common_setup
        DYN=${TOP_BUILDDIR:-}/tests/hutch-dynamic
        SHIM=${TOP_BUILDDIR:-}/tests/syncshadow.so
        [ -x "$DYN" ] && [ -f "$SHIM" ] || skip "tests/hutch-dynamic and tests/syncshadow.so are not built (make check builds them)"
        # the shim matches resolved paths
        ST=$(realpath -m "$BATS_TEST_TMPDIR/state")
        SHADOW="$BATS_TEST_TMPDIR/shadow"
        mkdir -p "$SHADOW"
}

# Run hutch under the shim, with the watched state dir.
shadowed() {
        HUTCH_STATE_DIR="$ST" SYNCSHADOW_WATCH="$ST" SYNCSHADOW_DIR="$SHADOW" LD_PRELOAD="$SHIM" "$DYN" "$@"
}

# The state dir as a power loss now would leave it, in $1.
after_power_loss() {
        local f rel
        mkdir -m 0700 -p "$1"
        for f in "$SHADOW"/*; do
                [ -f "$f" ] || continue
                rel=$(basename "$f" | tr '%' '/')
                mkdir -p "$(dirname "$1/$rel")"
                cp "$f" "$1/$rel"
        done
}

@test "every run whose hutch run returned survives a power loss, with its final status" {
        declare -A want
        for i in $(seq 1 12); do
                run shadowed run -q -- sh -c "exit $((i % 3))"
                [ "$status" -eq $((i % 3)) ]
                id=$(HUTCH_STATE_DIR="$ST" "$HUTCH" ls --json | head -n 1 | jq -r .id)
                want[$id]=$((i % 3))
        done
        lost="$BATS_TEST_TMPDIR/lost"
        after_power_loss "$lost"
        ls -la "$lost"
        run env HUTCH_STATE_DIR="$lost" "$HUTCH" ls --json --limit 1000
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -s length)" -eq 12 ]
        for id in "${!want[@]}"; do
                row=$(echo "$output" | jq -c "select(.id == \"$id\")")
                echo "$id: $row"
                [ -n "$row" ]
                [ "$(echo "$row" | jq -r .exit_code)" = "${want[$id]}" ]
                if [ "${want[$id]}" -eq 0 ]; then
                        [ "$(echo "$row" | jq -r .status)" = success ]
                else
                        [ "$(echo "$row" | jq -r .status)" = failed ]
                fi
        done
}

@test "the unclean-shutdown marker is synced before the record: after a power loss the next writer finds it set" {
        run shadowed run -q -- true
        [ "$status" -eq 0 ]
        # what the disk held while that hutch had the store open: its
        # marker said '1', synced before the final update was
        [ "$(cat "$SHADOW/hutch.db-open")" = 1 ]
        lost="$BATS_TEST_TMPDIR/lost"
        after_power_loss "$lost"
        # the next writer finds the marker set and checks the store first
        run env HUTCH_STATE_DIR="$lost" "$HUTCH" run -q -- true
        [ "$status" -eq 0 ]
        [ "$(cat "$lost/hutch.db-open")" = 0 ]
        [ "$(HUTCH_STATE_DIR="$lost" "$HUTCH" ls --json | jq -s length)" -eq 2 ]
}

@test "an existing marker's '1' is durable with the record when only the WAL's sync flushes the device" {
        run shadowed run -q -- true
        [ "$status" -eq 0 ]
        # the clean close's '0' reaches the disk, as the kernel's own
        # writeback would have it do: the next run's marker is an
        # overwrite in place, written to the device by sync_file_range
        # and made durable by the flush of the WAL's fdatasync
        printf 0 > "$SHADOW/hutch.db-open"
        run shadowed run -q -- true
        [ "$status" -eq 0 ]
        [ "$(cat "$SHADOW/hutch.db-open")" = 1 ]
        lost="$BATS_TEST_TMPDIR/lost"
        after_power_loss "$lost"
        run env HUTCH_STATE_DIR="$lost" "$HUTCH" run -q -- true
        [ "$status" -eq 0 ]
        [ "$(cat "$lost/hutch.db-open")" = 0 ]
        [ "$(HUTCH_STATE_DIR="$lost" "$HUTCH" ls --json | jq -s length)" -eq 3 ]
}

@test "a workspace change set is durable before --apply installs it" {
        w="$(host_dir)/w"
        mkdir -p "$w"
        echo one > "$w/a.txt"
        make_tree "$w"
        run shadowed run -q --workdir "$w" --apply -- sh -c 'echo two > a.txt; echo new > b.txt'
        [ "$status" -eq 0 ]
        [ "$(cat "$w/b.txt")" = new ]
        lost="$BATS_TEST_TMPDIR/lost"
        after_power_loss "$lost"
        id=$(HUTCH_STATE_DIR="$lost" "$HUTCH" ls --json | head -n 1 | jq -r .id)
        run env HUTCH_STATE_DIR="$lost" "$HUTCH" diff --json "$id"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r '.changes | map(.path) | join(",")')" = "a.txt,b.txt" ]
        host_dirs_cleanup
}

@test "every exec and kernel call whose hutch exec returned survives a power loss, with its end and output" {
        # the live sandbox's supervisor writes each one's end and syncs
        # it before hutch exec hears DONE: its syncs are the shim's too
        run shadowed sandbox start dur --idle-timeout 2m
        [ "$status" -eq 0 ]
        declare -A want out
        for i in $(seq 1 6); do
                run shadowed exec dur -- sh -c "echo out$i; exit $((i % 3))"
                [ "$status" -eq $((i % 3)) ]
                id=$(HUTCH_STATE_DIR="$ST" "$HUTCH" ls --sandbox dur --json | head -n 1 | jq -r .id)
                want[$id]=$((i % 3))
                out[$id]=out$i
        done
        if command -v python3 >/dev/null; then
                for i in 1 2; do
                        run shadowed exec dur --kernel python -c "print('k$i'); y = [1/0 for _ in range($((i - 1)))]"
                        [ "$status" -eq $((i - 1)) ]
                        id=$(HUTCH_STATE_DIR="$ST" "$HUTCH" ls --sandbox dur --json | head -n 1 | jq -r .id)
                        want[$id]=$((i - 1))
                        out[$id]=k$i
                done
        fi
        lost="$BATS_TEST_TMPDIR/lost"
        after_power_loss "$lost"
        HUTCH_STATE_DIR="$ST" "$HUTCH" sandbox stop dur
        run env HUTCH_STATE_DIR="$lost" "$HUTCH" ls --sandbox dur --json --limit 1000
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -s length)" -eq "${#want[@]}" ]
        for id in "${!want[@]}"; do
                run env HUTCH_STATE_DIR="$lost" "$HUTCH" show --json "$id"
                echo "$id: $output"
                [ "$status" -eq 0 ]
                [ "$(echo "$output" | jq -r .exit_code)" = "${want[$id]}" ]
                [ "$(echo "$output" | jq -r .status)" = "$([ "${want[$id]}" -eq 0 ] && echo success || echo failed)" ]
                [ "$(echo "$output" | jq -r .stdout)" = "${out[$id]}" ]
        done
}
