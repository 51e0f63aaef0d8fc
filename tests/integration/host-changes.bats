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
