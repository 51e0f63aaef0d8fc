#!/usr/bin/env bats
# hutch run --session NAME: a persistent workspace that keeps a run's
# changes only when the run succeeds, one run at a time; hutch session ls|rm
# and the idle TTL enforced by hutch gc.

bats_require_minimum_version 1.5.0
load lib

setup() {
        common_setup
        TREE="$HUTCH_STATE_DIR/sessions/s/tree"
}

teardown() {
        # a test that failed half way must not leave runs behind
        for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
        host_dirs_cleanup
}

@test "a successful run's changes persist into the next run of the session" {
        run "$HUTCH" run -q --session s -- sh -c 'echo one > a; mkdir d; echo x > d/x'
        [ "$status" -eq 0 ]
        run "$HUTCH" run -q --session s -- sh -c 'cat a d/x; echo two >> a; rm d/x'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'one\nx')" ]
        run "$HUTCH" run -q --session s -- sh -c 'cat a; ls d'
        [ "$output" = "$(printf 'one\ntwo')" ]
        [ "$(cat "$TREE/a")" = "$(printf 'one\ntwo')" ]
        run "$HUTCH" show "$(last_run_id)"
        [[ "$output" == *"session:     s"* ]]
}

@test "a failed run leaves the session exactly as it was" {
        "$HUTCH" run -q --session s -- sh -c 'echo keep > a; mkdir d; echo x > d/x'
        before=$(tree_digest "$TREE")
        run "$HUTCH" run -q --session s -- sh -c 'echo junk > a; rm -r d; echo n > new; exit 3'
        [ "$status" -eq 3 ]
        [ "$(tree_digest "$TREE")" = "$before" ]
        # but its change set is recorded
        run "$HUTCH" diff --stat "$(last_run_id)"
        [[ "$output" == *"modified"*"a"* ]]
}

@test "a timed-out run leaves the session as it was" {
        "$HUTCH" run -q --session s -- sh -c 'echo keep > a'
        before=$(tree_digest "$TREE")
        run "$HUTCH" run -q --session s --timeout 1s --grace 0 -- sh -c 'echo junk > a; echo n > new; sleep 30'
        [ "$status" -eq 124 ]
        [ "$(tree_digest "$TREE")" = "$before" ]
}

@test "kill -9 of the supervisor leaves the session as it was, and unlocked" {
        "$HUTCH" run -q --session s -- sh -c 'echo keep > a'
        before=$(tree_digest "$TREE")
        "$HUTCH" run -q --session s -- sh -c 'echo junk > a; echo n > new; echo written; sleep 60' \
                > "$BATS_TEST_TMPDIR/out" &
        pid=$!
        for _ in $(seq 50); do
                [ "$("$HUTCH" session ls --json | jq -r .in_use)" = true ] && break
                sleep 0.1
        done
        [ "$("$HUTCH" session ls --json | jq -r .in_use)" = true ]
        # the job has changed the tree it sees before hutch dies
        wait_for_file "$BATS_TEST_TMPDIR/out"
        kill -9 "$pid"
        wait "$pid" || true
        [ "$(tree_digest "$TREE")" = "$before" ]
        run "$HUTCH" run -q --session s --session-wait 10s -- cat a
        [ "$status" -eq 0 ]
        [ "$output" = keep ]
}

@test "a second concurrent run of a session fails at once, or waits with --session-wait" {
        "$HUTCH" run -q --session s -- sh -c 'echo 0 > n'
        # the first run holds the session until the test opens its gate:
        # on a loaded machine a fixed sleep could end before the checks
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run -q --session s --timeout 60s --rw "$d" -- \
                sh -c "while [ ! -e $d/go ]; do sleep 0.05; done; echo \$(( \$(cat n) + 1 )) > n" &
        pid=$!
        for _ in $(seq 100); do
                [ "$("$HUTCH" session ls --json | jq -r .in_use)" = true ] && break
                sleep 0.1
        done
        run "$HUTCH" run -q --session s -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"session s is in use by another run"*"--session-wait"* ]]
        "$HUTCH" run -q --session s --session-wait 60s -- sh -c 'echo $(( $(cat n) + 1 )) > n; cat n' \
                >"$d/waited" 2>&1 &
        waiter=$!
        # it has the session's lock open, and is still there: it waits
        # for the session rather than failing
        wait_until has_open "$waiter" /s/lock
        kill -0 "$waiter"
        touch "$d/go"
        wait "$waiter"
        [ "$(cat "$d/waited")" = 2 ]
        wait "$pid"
        [ "$(cat "$TREE/n")" = 2 ]
}

@test "many concurrent waiting runs of one session never lose an update" {
        "$HUTCH" run -q --session s -- sh -c 'echo 0 > n'
        for i in 1 2 3 4 5 6; do
                "$HUTCH" run -q --session s --session-wait 60s -- sh -c 'v=$(cat n); echo $((v + 1)) > n' &
        done
        wait
        [ "$(cat "$TREE/n")" = 6 ]
}

@test "--commit always keeps a failed run's changes" {
        run "$HUTCH" run -q --session s --commit always -- sh -c 'echo partial > p; exit 1'
        [ "$status" -eq 1 ]
        [ "$(cat "$TREE/p")" = partial ]
}

# the JSON field $2 of the result $1
committed() {
        python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]).get("committed", "absent")))' "$1"
}

@test "--commit never keeps nothing; every result says whether it committed" {
        run -0 "$HUTCH" run --json --session s -- sh -c 'echo one > f'
        [ "$(committed "$output")" = true ]
        run -0 "$HUTCH" run --json --session s --commit never -- sh -c 'echo two > f'
        [ "$(committed "$output")" = false ]
        [ "$(cat "$TREE/f")" = one ]
        run -1 "$HUTCH" run --json --session s -- sh -c 'echo three > f; exit 1'
        [ "$(committed "$output")" = false ]
        [ "$(cat "$TREE/f")" = one ]
        run -1 "$HUTCH" run --json --session s --commit always -- sh -c 'echo four > f; exit 1'
        [ "$(committed "$output")" = true ]
        echo "$output" | python3 "$TESTS_DIR/integration/check-schema.py" hutch.result/1
        [ "$(cat "$TREE/f")" = four ]
        # a request's commit field; a run without a session says null
        run -3 sh -c "echo '{\"session\":\"s\",\"commit\":\"always\",\"argv\":[\"sh\",\"-c\",\"echo five > f; exit 3\"]}' | '$HUTCH' run --request -"
        [ "$(committed "$output")" = true ]
        [ "$(cat "$TREE/f")" = five ]
        run -0 "$HUTCH" run --json -- true
        [ "$(committed "$output")" = null ]
        # hutch session ls --json is hutch.session/1
        run -0 "$HUTCH" session ls --json
        echo "$output" | python3 "$TESTS_DIR/integration/check-schema.py" hutch.session/1
        run -2 sh -c "echo '{\"session\":\"s\",\"commit\":\"sometimes\",\"argv\":[\"true\"]}' | '$HUTCH' run --request -"
        [[ "$output" == *'"pointer":"/commit"'* ]]
}

@test "hutch session ls and rm; rm refuses a session in use" {
        "$HUTCH" run -q --session one -- sh -c 'echo 1 > f'
        "$HUTCH" run -q --session two -- true
        run "$HUTCH" session ls
        [ "$status" -eq 0 ]
        [[ "$output" == *one*idle* ]]
        [[ "$output" == *two*idle* ]]
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run -q --session two --timeout 60s --rw "$d" -- \
                sh -c "while [ ! -e $d/go ]; do sleep 0.05; done" &
        pid=$!
        for _ in $(seq 100); do
                "$HUTCH" session ls | grep -q 'two.*in use' && break
                sleep 0.1
        done
        run "$HUTCH" session rm two
        [ "$status" -eq 1 ]
        [[ "$output" == *"in use"* ]]
        touch "$d/go"
        wait "$pid"
        run "$HUTCH" session rm one two
        [ "$status" -eq 0 ]
        run "$HUTCH" session ls --json
        [ -z "$output" ]
        run "$HUTCH" session rm nope
        [ "$status" -eq 1 ]
}

@test "hutch gc removes sessions idle longer than session_ttl, keeps the others" {
        "$HUTCH" run -q --session old -- sh -c 'echo 1 > f'
        "$HUTCH" run -q --session fresh -- sh -c 'echo 1 > f'
        touch -d '2 days ago' "$HUTCH_STATE_DIR/sessions/old/lock"
        run "$HUTCH" gc --dry-run
        [[ "$output" == *"would remove 1 session"* ]]
        [ -d "$HUTCH_STATE_DIR/sessions/old" ]
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 1 session"* ]]
        [ ! -e "$HUTCH_STATE_DIR/sessions/old" ]
        [ -d "$HUTCH_STATE_DIR/sessions/fresh/tree" ]
}

@test "a session's ttl is its last run's profile key; gc honours it, never for a session in use" {
        "$HUTCH" run -q --session short --session-ttl 1h -- sh -c 'echo 1 > f'
        "$HUTCH" run -q --session long -- sh -c 'echo 1 > f'
        "$HUTCH" run -q --session legacy -- true
        # a session from before ttl files: the default profile's ttl (1d)
        rm "$HUTCH_STATE_DIR/sessions/legacy/ttl"
        for s in short long; do
                touch -d '2 hours ago' "$HUTCH_STATE_DIR/sessions/$s/lock"
        done
        touch -d '2 days ago' "$HUTCH_STATE_DIR/sessions/legacy/lock"
        run "$HUTCH" session ls --json
        [ "$status" -eq 0 ]
        python3 -c '
import json, sys
s = {o["name"]: o for o in map(json.loads, sys.stdin)}
assert s["short"]["ttl_ms"] == 3600000, s["short"]
assert s["long"]["ttl_ms"] == 86400000, s["long"]
assert s["legacy"]["ttl_ms"] == 86400000, s["legacy"]
assert s["short"]["idle_ms"] >= 7200000 - 60000, s["short"]
assert s["short"]["age_ms"] is None or s["short"]["age_ms"] >= 0
assert s["short"]["bytes"] == 2 and s["short"]["entries"] == 1
' <<< "$output"
        run "$HUTCH" session ls
        [[ "$output" == *"AGE"*"IDLE"*"TTL"*"SIZE"* ]]
        grep -q '^short .* 1h .*expired$' <<< "$output"
        grep -q '^long .*idle$' <<< "$output"
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 2 sessions unused for longer than their ttl"* ]]
        [ ! -e "$HUTCH_STATE_DIR/sessions/short" ]
        [ ! -e "$HUTCH_STATE_DIR/sessions/legacy" ]
        [ -d "$HUTCH_STATE_DIR/sessions/long/tree" ]

        # expired but in use: its run holds the lock, gc leaves it
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run -q --session busy --session-ttl 1h --timeout 60s --rw "$d" -- \
                sh -c "while [ ! -e $d/go ]; do sleep 0.05; done" &
        pid=$!
        for _ in $(seq 100); do
                "$HUTCH" session ls | grep -q 'busy.*in use' && break
                sleep 0.1
        done
        touch -d '2 hours ago' "$HUTCH_STATE_DIR/sessions/busy/lock"
        run "$HUTCH" gc
        [[ "$output" == *"removed 0 sessions"* ]]
        [ -d "$HUTCH_STATE_DIR/sessions/busy/tree" ]
        touch "$d/go"
        wait "$pid"
}

@test "bad session names and option combinations are usage errors" {
        run "$HUTCH" run --session ../x -- true
        [ "$status" -eq 2 ]
        run "$HUTCH" run --session s --workdir / -- true
        [ "$status" -eq 2 ]
        run "$HUTCH" run --session s --commit sometimes -- true
        [ "$status" -eq 2 ]
}

@test "a request's files with a session are put into it first and kept; a symlink in their place is refused" {
        run -1 "$HUTCH" run --request - <<< '{"session":"s","argv":["sh","-c","cat d/in.txt; exit 1"],"files":{"d/in.txt":"hello\n"}}'
        [ "$(echo "$output" | jq -r .stdout)" = hello ]
        [ "$(cat "$TREE/d/in.txt")" = hello ]
        [ "$(echo "$output" | jq -r '.labels["hutch.request.files"]')" = yes ]
        # a job's symlink does not lead the upload out of the session
        run -0 "$HUTCH" run -q --session s -- ln -s /etc/hutch-test-target evil
        run -125 "$HUTCH" run --request - <<< '{"session":"s","argv":["true"],"files":{"evil":"x"}}'
        [ ! -e /etc/hutch-test-target ]
        run -125 "$HUTCH" run --request - <<< '{"session":"s","argv":["true"],"files":{"evil/x":"x"}}'
        [ ! -e /etc/hutch-test-target ]
}

@test "a request's files that start a new session are the job's to change, as root too" {
        run -0 "$HUTCH" run --request - <<< '{"session":"fresh","argv":["sh","-c","echo more >> up.txt && echo more >> d/up.txt && cat up.txt d/up.txt"],"files":{"up.txt":"hello\n","d/up.txt":"hi\n"}}'
        [ "$(echo "$output" | jq -r .status)" = success ]
        [ "$(echo "$output" | jq -r .stdout)" = "$(printf 'hello\nmore\nhi\nmore')" ]
        [ "$(echo "$output" | jq -r .stderr)" = "" ]
        [ "$(cat "$HUTCH_STATE_DIR/sessions/fresh/tree/up.txt")" = "$(printf 'hello\nmore')" ]
}

@test "the profile key commit: a profile's always keeps a failed run's changes; --commit overrides it" {
        printf '[sandbox]\ncommit = always\n' > "$BATS_TEST_TMPDIR/keep.ini"
        run -1 "$HUTCH" run -q -p "$BATS_TEST_TMPDIR/keep.ini" --trust-profile --session s -- sh -c 'echo one > f; exit 1'
        [ "$(cat "$TREE/f")" = one ]
        run -1 "$HUTCH" run -q -p "$BATS_TEST_TMPDIR/keep.ini" --trust-profile --commit success --session s -- sh -c 'echo two > f; exit 1'
        [ "$(cat "$TREE/f")" = one ]
        run -0 "$HUTCH" profile show "$BATS_TEST_TMPDIR/keep.ini"
        [[ "$output" == *"commit = always"* ]]
}
