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

@test "secrets: hutch mcp: a fresh call's env reaches the job, and its record keeps no value of it" {
        value="fresh$RANDOM$RANDOM"
        mkfifo "$BATS_TEST_TMPDIR/in"
        "$HUTCH" mcp < "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
        pid=$!
        exec 7> "$BATS_TEST_TMPDIR/in"
        printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
                '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["sh","-c","printf %s \"$FRESHK\" | sha256sum"],"env":{"FRESHK":"'"$value"'"}}}}' >&7
        for _ in $(seq 300); do
                grep -q '"id":2' "$BATS_TEST_TMPDIR/out" && break
                sleep 0.1
        done
        exec 7>&-
        wait "$pid"
        # the job got it (its hash, so that the output does not hold it)
        sum=$(printf %s "$value" | sha256sum | cut -d' ' -f1)
        grep '"id":2' "$BATS_TEST_TMPDIR/out" | grep -q "$sum"
        id=$(last_id)
        run "$HUTCH" show "$id"
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        # the database, its WAL and the blobs
        run ! grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "secrets: a value in the argv, a label, the --lang code or the working directory inside is recorded redacted" {
        value="argv$RANDOM$RANDOM"
        run --separate-stderr env TOK="$value" "$HUTCH" run --secret TOK --label "k=$value" --json -- echo "x$value"
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        [ "$(echo "$output" | json "o['argv'][1]")" = "x[secret TOK]" ]
        [ "$(echo "$output" | json "o['labels']['k']")" = "[secret TOK]" ]
        id=$(echo "$output" | json "o['id']")
        # the same request under the same key is still the same request
        key="key-$BATS_TEST_NUMBER-$RANDOM"
        run --separate-stderr env TOK="$value" "$HUTCH" run --id "$key" --secret TOK --json -- echo "x$value"
        [ "$status" -eq 0 ]
        first=$(echo "$output" | json "o['id']")
        run --separate-stderr env TOK="$value" "$HUTCH" run --id "$key" --secret TOK --json -- echo "x$value"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json "o['id']")" = "$first" ]
        run --separate-stderr env TOK="$value" "$HUTCH" run --secret TOK --lang python -c "print('$value'[:3])" --json
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json "o['code']")" = "print('[secret TOK]'[:3])" ]
        run --separate-stderr env TOK="$value" "$HUTCH" run --secret TOK --workdir-inside "/w/$value" -- pwd
        [ "$status" -eq 0 ]
        [[ "$("$HUTCH" show "$(last_id)")" == *"/w/[secret TOK]"* ]]
        [[ "$("$HUTCH" show "$id")" != *"$value"* ]]
        # the database, its WAL and the blobs
        run ! grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "secrets: sandbox start refuses --secret, and hutch-sandbox(1) says so instead of offering it" {
        run -2 env TOK=x "$HUTCH" sandbox start --secret TOK "sb-$RANDOM"
        [[ "$output" == *"--secret"*"not for a live sandbox"* ]]
        page="$TESTS_DIR/../man/hutch-sandbox.1"
        [ -f "$page" ] || skip "no man pages next to the tests"
        # the list of start's options names neither -o KEY=VALUE (no such
        # option) nor --secret as accepted
        run ! grep -q 'fB\\-o\\fR \\fIKEY' "$page"
        grep -q 'and \\fB\\-\\-secret\\fR (an exec' "$page"
}

@test "secrets: two values that overlap in the output are both redacted whole" {
        run --separate-stderr env A=abcdefgh12 B=gh12ZYXWVU "$HUTCH" run --secret A --secret B --json -- \
                sh -c 'printf "%s%s\n" "$A" "${B#gh12}"'
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json "o['stdout']")" = "[secret A][secret B]" ]
        run --separate-stderr env A=abcdefgh12 B=gh12ZYXWVU "$HUTCH" run --secret A --secret B -- \
                sh -c 'printf "%s%s\n" "$A" "${B#gh12}"'
        [ "$status" -eq 0 ]
        [ "$output" = "[secret A][secret B]" ]
        # the first whole in one write, the rest of the second a second
        # later: passed through, stored and streamed as events alike
        job='printf %s "$A"; sleep 1; printf "%s\n" "${B#gh12}"'
        run --separate-stderr env A=abcdefgh12 B=gh12ZYXWVU "$HUTCH" run --secret A --secret B -- sh -c "$job"
        [ "$status" -eq 0 ]
        [ "$output" = "[secret A][secret B]" ]
        [ "$("$HUTCH" show --json "$(last_id)" | json "o['stdout']")" = "[secret A][secret B]" ]
        run --separate-stderr env A=abcdefgh12 B=gh12ZYXWVU "$HUTCH" run --secret A --secret B --events -- sh -c "$job"
        [ "$status" -eq 0 ]
        [[ "$output" != *ZYXWVU* ]]
}
