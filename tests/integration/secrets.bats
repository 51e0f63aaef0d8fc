#!/usr/bin/env bats
# Secrets (--secret) kept out of everything hutch records and prints:
# under a terminal, in the output passed through, in hutch's own
# messages, in the argv and labels of the record, in hutch mcp's record
# of a call's env, and where two values overlap.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
}

teardown() {
        host_dirs_cleanup
}

# Print the Python expression $1 of the JSON document on stdin (`o`).
json() {
        python3 -c '
import json, sys
o = json.load(sys.stdin)
v = eval(sys.argv[1])
print("null" if v is None else v)
' "$1"
}

# The id of the newest run.
last_id() {
        "$HUTCH" ls --json | head -1 | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["id"])'
}

@test "secrets: a multi-line value is redacted under --tty, where the pty writes each newline as CR LF" {
        command -v script >/dev/null || skip "script(1) not installed"
        tag="ML$RANDOM$RANDOM"
        printf -- '-----BEGIN KEY-----\n%sAAAA\n%sBBBB\n-----END KEY-----\n' "$tag" "$tag" > "$BATS_TEST_TMPDIR/pem"
        run script -qec "'$HUTCH' run --tty --secret KEY=@'$BATS_TEST_TMPDIR/pem' -- sh -c 'printf \"%s\\n\" \"\$KEY\"'" /dev/null
        [ "$status" -eq 0 ]
        id=$(last_id)
        stdout=$("$HUTCH" show --json "$id" | json "repr(o['stdout'])")
        [[ "$stdout" == *"[secret KEY]"* ]]
        [[ "$stdout" != *"$tag"* ]]
        # the database, its WAL and the blobs
        run ! grep -rqaF "$tag" "$HUTCH_STATE_DIR"
}

@test "secrets: the output passed through to our stdout and stderr is redacted (a CI log)" {
        value="pass$RANDOM$RANDOM-end"
        # whole lines, a value split over two writes a second apart, and
        # a tail at the end that only starts the value
        run --separate-stderr env TOK="$value" "$HUTCH" run --secret TOK -- sh -c '
                echo "token is $TOK"; echo "err $TOK" >&2
                printf %s "${TOK%%-end}"; sleep 1; printf "%s\n" "-end after"
                printf "last %s" "${TOK%%-end}"'
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        [[ "$stderr" != *"$value"* ]]
        [ "$output" = "token is [secret TOK]
[secret TOK] after
last ${value%%-end}" ]
        [ "$stderr" = "err [secret TOK]" ]
}

@test "secrets: output that cannot start a value is passed through at once, not held back" {
        value="live$RANDOM$RANDOM"
        env TOK="$value" "$HUTCH" run --secret TOK -- sh -c 'echo "first line"; sleep 3; echo "$TOK"' \
                > "$BATS_TEST_TMPDIR/out" &
        pid=$!
        wait_for_file "$BATS_TEST_TMPDIR/out" 25
        [ "$(cat "$BATS_TEST_TMPDIR/out")" = "first line" ]
        wait "$pid"
        [ "$(cat "$BATS_TEST_TMPDIR/out")" = "first line
[secret TOK]" ]
}

@test "secrets: under --tty the terminal gets the redacted output too" {
        command -v script >/dev/null || skip "script(1) not installed"
        tag="TT$RANDOM$RANDOM"
        printf '%sAAAA\n%sBBBB\n' "$tag" "$tag" > "$BATS_TEST_TMPDIR/key"
        run script -qec "'$HUTCH' run --tty --secret KEY=@'$BATS_TEST_TMPDIR/key' -- sh -c 'printf \"%s\\n\" \"\$KEY\"'" /dev/null
        [ "$status" -eq 0 ]
        [[ "$output" == *"[secret KEY]"* ]]
        [[ "$output" != *"$tag"* ]]
}

@test "secrets: hutch's own messages that quote the job's argv do not print the value" {
        value="msg$RANDOM$RANDOM"
        run -127 --separate-stderr env TOK="$value" "$HUTCH" run --secret TOK -- "/nonexist/$value"
        [[ "$stderr" == *"command not found: /nonexist/[secret TOK]"* ]]
        [[ "$stderr" != *"$value"* ]]
}
