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
