#!/usr/bin/env bats
# History: every `hutch run` leaves a row that ls, show, logs and gc read.
# Needs `hutch run` to record runs (src/cli/run.c calling store.h); until
# then these tests fail by design.

bats_require_minimum_version 1.5.0

setup() {
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
}

# Read JSON lines on stdin and print the Python expression $1 of each
# object `o` ("o['status']", "len(o)", ...), one result per line.
json() {
        python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    v = eval(sys.argv[1])
    print("null" if v is None else (str(v).lower() if isinstance(v, bool) else v))
' "$1"
}

# The id of the newest run.
newest_id() {
        "$HUTCH" ls --limit 1 --json | json "o['id']"
}

@test "a run is recorded and ls lists it" {
        run "$HUTCH" run -- sh -c 'echo hello'
        [ "$status" -eq 0 ]
        [ "$output" = hello ]

        run "$HUTCH" ls
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 2 ]
        [[ "${lines[0]}" == ID*STARTED*DURATION*STATUS*EXIT*COMMAND ]]
        [[ "${lines[1]}" == *success*" 0  sh -c 'echo hello'" ]]

        run "$HUTCH" ls --json
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [ "$(echo "$output" | json "o['schema']")" = hutch.result/1 ]
        [ "$(echo "$output" | json "o['status']")" = success ]
        [ "$(echo "$output" | json "o['exit_code']")" = 0 ]
        [ "$(echo "$output" | json "o['argv']")" = "['sh', '-c', 'echo hello']" ]
        [ "$(echo "$output" | json "o['stdout_bytes']")" = 6 ]
        [ "$(echo "$output" | json "o['stdout_lines']")" = 1 ]
        [ "$(echo "$output" | json "'stdout' in o")" = false ]
        [ "$(echo "$output" | json "len(o['id'])")" = 26 ]
        [ "$(echo "$output" | json "o['finished_at'] >= o['started_at']")" = true ]
}

@test "each way a run ends is recorded with its status and exit code" {
        run "$HUTCH" run -- sh -c 'exit 3'
        [ "$status" -eq 3 ]
        run "$HUTCH" run -- sh -c 'kill -KILL $$'
        [ "$status" -eq 137 ]
        run "$HUTCH" run --timeout 1s -- sleep 30
        [ "$status" -eq 124 ]
        run -127 "$HUTCH" run -- pyhton3-does-not-exist
        [ "$status" -eq 127 ]
        run "$HUTCH" run -- /etc     # a directory: found, not executable
        [ "$status" -eq 126 ]
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]

        # newest first
        run "$HUTCH" ls --json
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 6 ]
        [ "$(echo "$output" | json "o['status']" | tr '\n' ' ')" = \
          "success not_executable not_found timeout signaled failed " ]
        [ "$(echo "$output" | json "o['exit_code']" | tr '\n' ' ')" = \
          "0 126 127 124 137 3 " ]
        [ "$(echo "$output" | json "o['signal']" | sed -n 5p)" = 9 ]
        [ "$(echo "$output" | json "o['duration_ms'] >= 1000" | sed -n 4p)" = true ]
}

@test "ls filters by status, age and count" {
        "$HUTCH" run -- sh -c 'exit 1' || true
        "$HUTCH" run -- true
        "$HUTCH" run -- sh -c 'exit 2' || true

        run "$HUTCH" ls --status failed --json
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 2 ]
        [ "$(echo "$output" | json "o['exit_code']" | tr '\n' ' ')" = "2 1 " ]

        run "$HUTCH" ls --limit 1 --json
        [ "${#lines[@]}" -eq 1 ]
        [ "$(echo "$output" | json "o['exit_code']")" = 2 ]

        run "$HUTCH" ls --since 1h --json
        [ "${#lines[@]}" -eq 3 ]
        sleep 1
        run "$HUTCH" ls --since 500ms --json
        [ "$status" -eq 0 ]
        [ -z "$output" ]

        run "$HUTCH" ls --status running
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 1 ]        # the header only
}

@test "show gives everything about a run, as text or one JSON object" {
        "$HUTCH" run -- sh -c 'echo out; echo err >&2; exit 4' || true
        id=$(newest_id)

        run "$HUTCH" show "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *"id:          $id"* ]]
        [[ "$output" == *"status:      failed"* ]]
        [[ "$output" == *"exit code:   4"* ]]
        [[ "$output" == *"command:     sh -c 'echo out; echo err >&2; exit 4'"* ]]
        [[ "$output" == *"stdout:      4 bytes, 1 line"* ]]
        [[ "$output" == *"--- stdout ---"*out*"--- stderr ---"*err* ]]

        run "$HUTCH" show --json "$id"
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [ "$(echo "$output" | json "sorted(o)")" = "$(python3 -c 'print(sorted(["schema", "id", "status", "exit_code", "signal", "job_exit_code", "message", "error_code", "retryable", "argv", "cwd", "started_at", "finished_at", "duration_ms", "cpu_user_ms", "cpu_sys_ms", "cpu_ms", "peak_memory_mb", "stdout", "stderr", "stdout_bytes", "stderr_bytes", "stdout_lines", "stderr_lines", "stdout_truncated", "stderr_truncated", "output_lost", "limits", "enforcement", "profile", "profile_sha256", "rerun_of", "session", "lang", "code", "files", "files_error", "files_unlisted", "committed", "connections", "idempotency_key", "labels", "node", "imported"]))')" ]
        [ "$(echo "$output" | json "o['stdout']")" = out ]
        [ "$(echo "$output" | json "o['stderr']")" = err ]
        [ "$(echo "$output" | json "o['started_at'].endswith('Z')")" = true ]
        [ "$(echo "$output" | json "o['cwd']")" = "$PWD" ]
}

@test "a run is found by a unique prefix; unknown or ambiguous ones exit 1" {
        "$HUTCH" run -- true
        "$HUTCH" run -- true
        id=$(newest_id)

        run "$HUTCH" show "${id:0:20}"
        [ "$status" -eq 0 ]
        [[ "$output" == *"id:          $id"* ]]
        # prefixes are case-insensitive
        run "$HUTCH" show --json "$(echo "${id:0:20}" | tr A-Z a-z)"
        [ "$status" -eq 0 ]

        run "$HUTCH" show ZZZZZZ
        [ "$status" -eq 1 ]
        [ "$output" = "hutch: show: no run matches 'ZZZZZZ'" ]
        run "$HUTCH" logs ZZZZZZ
        [ "$status" -eq 1 ]
        [ "$output" = "hutch: logs: no run matches 'ZZZZZZ'" ]

        # both runs started within the same ~12 days: the first 4 characters
        # (top bits of the timestamp) are shared
        run "$HUTCH" show "${id:0:4}"
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "hutch: show: '${id:0:4}' is ambiguous"* ]]
        [[ "$output" == *"$id"* ]]
}

@test "logs gives back the stored bytes exactly" {
        "$HUTCH" run -- sh -c 'printf "a\000b\377\033[31mred\n"; printf "E\n" >&2' >/dev/null 2>&1
        id=$(newest_id)

        "$HUTCH" logs --stdout "$id" > "$BATS_TEST_TMPDIR/out"
        printf 'a\000b\377\033[31mred\n' > "$BATS_TEST_TMPDIR/want"
        cmp "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/want"

        run "$HUTCH" logs --stderr "$id"
        [ "$output" = E ]
        # by default stdout goes to stdout and stderr to stderr
        "$HUTCH" logs "$id" > "$BATS_TEST_TMPDIR/o" 2> "$BATS_TEST_TMPDIR/e"
        cmp "$BATS_TEST_TMPDIR/o" "$BATS_TEST_TMPDIR/want"
        [ "$(cat "$BATS_TEST_TMPDIR/e")" = E ]

        # the JSON view is sanitised: no escape sequence, U+FFFD for \377
        [ "$("$HUTCH" show --json "$id" | json "o['stdout'] == 'a\\x00b\\ufffdred\\n'")" = true ]
}

@test "5 MB of output is kept as head and tail with exact counts" {
        # 100000 lines of 50 bytes
        "$HUTCH" run -- sh -c 'yes 0123456789012345678901234567890123456789012345678 | head -n 100000' >/dev/null
        id=$(newest_id)

        o=$("$HUTCH" show --json "$id")
        [ "$(echo "$o" | json "o['stdout_bytes']")" = 5000000 ]
        [ "$(echo "$o" | json "o['stdout_lines']")" = 100000 ]
        [ "$(echo "$o" | json "o['stdout_truncated']")" = true ]
        [ "$(echo "$o" | json "o['stderr_truncated']")" = false ]

        # 64 KiB head + marker line + 64 KiB tail: 4868928 bytes left out,
        # holding 100000 - 1310 (head) - 1311 (tail) newlines
        "$HUTCH" logs --stdout "$id" > "$BATS_TEST_TMPDIR/kept"
        marker=$(printf '[\342\200\246 4868928 bytes, 97379 lines omitted \342\200\246]')
        grep -qxF "$marker" "$BATS_TEST_TMPDIR/kept"
        marker_bytes=$(printf '%s' "$marker" | wc -c)
        [ "$(wc -c < "$BATS_TEST_TMPDIR/kept")" -eq $((65536 + 1 + marker_bytes + 1 + 65536)) ]
        [ "$(head -c 50 "$BATS_TEST_TMPDIR/kept")" = "0123456789012345678901234567890123456789012345678" ]
        [ "$(tail -n 1 "$BATS_TEST_TMPDIR/kept")" = "0123456789012345678901234567890123456789012345678" ]
}

@test "a killed supervisor leaves a run that ls shows orphaned and gc marks" {
        "$HUTCH" run -- sleep 60 >/dev/null 2>&1 3>&- &
        sup=$!
        for ((i = 0; i < 100; i++)); do
                [ -n "$("$HUTCH" ls --status running --json 2>/dev/null)" ] && break
                sleep 0.1
        done
        id=$("$HUTCH" ls --status running --json | json "o['id']")
        [ -n "$id" ]
        kill -9 "$sup"
        wait "$sup" || true

        run "$HUTCH" ls --json
        [ "$(echo "$output" | json "o['status']")" = orphaned ]
        run "$HUTCH" ls --status orphaned
        [ "${#lines[@]}" -eq 2 ]
        [[ "${lines[1]}" == *orphaned*"sleep 60" ]]
        run "$HUTCH" ls --status running
        [ "${#lines[@]}" -eq 1 ]

        run "$HUTCH" gc --dry-run
        [ "$status" -eq 0 ]
        [[ "$output" == *"would mark orphaned $id"* ]]

        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"marked orphaned $id"* ]]
        o=$("$HUTCH" show --json "$id")
        [ "$(echo "$o" | json "o['status']")" = orphaned ]
        [ "$(echo "$o" | json "o['finished_at']")" = null ]

        # once is enough
        run "$HUTCH" gc
        [[ "$output" != *"marked orphaned"* ]]
}

@test "gc deletes runs older than the retention, and --dry-run only says so" {
        "$HUTCH" run -- true
        "$HUTCH" run -- true
        sleep 0.1

        run "$HUTCH" gc --dry-run --older-than 50ms
        [ "$status" -eq 0 ]
        [[ "$output" == *"would delete 2 runs older than 50ms"* ]]
        [ "$("$HUTCH" ls --json | wc -l)" -eq 2 ]

        run "$HUTCH" gc
        [[ "$output" == *"deleted 0 runs older than 30d"* ]]
        run "$HUTCH" gc --older-than 50ms
        [ "$status" -eq 0 ]
        [[ "$output" == *"deleted 2 runs older than 50ms"* ]]
        [ -z "$("$HUTCH" ls --json)" ]
}

@test "a corrupt store: run exits 125 without running the job; history verbs too" {
        mkdir -p "$HUTCH_STATE_DIR"
        head -c 8192 /dev/urandom > "$HUTCH_STATE_DIR/hutch.db"

        run "$HUTCH" run -- echo JOB-RAN
        [ "$status" -eq 125 ]
        [[ "$output" != *JOB-RAN* ]]
        [[ "$output" == *"$HUTCH_STATE_DIR/hutch.db"*"not a database"* ]]

        for verb in ls "show 0000" "logs 0000" gc; do
                run $HUTCH $verb
                [ "$status" -eq 125 ]
                [[ "$output" == "hutch: ${verb%% *}: run store: $HUTCH_STATE_DIR/hutch.db: file is not a database" ]]
        done
}

@test "a full disk or a read-only state dir: run exits 125 without running the job" {
        command -v unshare >/dev/null || skip "unshare(1) not installed"
        unshare -rm true 2>/dev/null || skip "cannot create a user namespace to test in"
        marker=$BATS_TEST_TMPDIR/ran
        chmod 777 "$BATS_TEST_TMPDIR"
        # a 64K tmpfs, filled up, as the state dir
        mkdir -p "$BATS_TEST_TMPDIR/full"
        run unshare -rm sh -c '
                mount -t tmpfs -o size=64k none "$1" && { head -c 1M /dev/zero > "$1/fill" 2>/dev/null; true; }
                HUTCH_STATE_DIR=$1/state "$0" run -- sh -c "echo > $2"' "$HUTCH" "$BATS_TEST_TMPDIR/full" "$marker"
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == "hutch: "*"$BATS_TEST_TMPDIR/full/state"* ]]
        [ ! -e "$marker" ]
        # a read-only state dir, even for root
        mkdir -p "$BATS_TEST_TMPDIR/ro/state"
        run unshare -rm sh -c '
                mount --bind -o ro "$1" "$1" 2>/dev/null || mount -o bind,remount,ro "$1" "$1"
                HUTCH_STATE_DIR=$1/state "$0" run -- sh -c "echo > $2"' "$HUTCH" "$BATS_TEST_TMPDIR/ro" "$marker"
        [ "$status" -eq 125 ]
        [[ "$output" == "hutch: "*"$BATS_TEST_TMPDIR/ro/state"* ]]
        [ ! -e "$marker" ]
}

@test "forty runs, eight at a time, are all recorded" {
        for ((i = 0; i < 40; i++)); do
                echo "$i"
        done | xargs -P 8 -I{} "$HUTCH" run -- sh -c 'echo {}' >/dev/null
        [ "$("$HUTCH" ls --json | wc -l)" -eq 40 ]
        [ "$("$HUTCH" ls --status success --json | wc -l)" -eq 40 ]
}

@test "history verbs explain themselves and reject bad arguments" {
        for verb in ls show logs gc; do
                run "$HUTCH" $verb --help
                [ "$status" -eq 0 ]
                [[ "$output" == "Usage: hutch $verb"* ]]
        done
        run "$HUTCH" ls --status exploded
        [ "$status" -eq 2 ]
        run "$HUTCH" ls --limit none
        [ "$status" -eq 2 ]
        run "$HUTCH" gc --older-than soon
        [ "$status" -eq 2 ]
        run "$HUTCH" show
        [ "$status" -eq 2 ]
        run "$HUTCH" logs --stdout --stderr 0000
        [ "$status" -eq 2 ]
}
