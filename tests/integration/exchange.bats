#!/usr/bin/env bats
# exchange.bats - hutch export and hutch import between two stores on
# this host: the round trip, idempotency, conflicts, all-or-nothing,
# hostile lines with their exit codes, ls --node and show of imported
# runs. (A real multi-node gather under Slurm is slurm.bats.)

load lib

setup() {
        common_setup
        A="$BATS_TEST_TMPDIR/a"
        B="$BATS_TEST_TMPDIR/b"
        NODE=$(uname -n)
}

in_a() { HUTCH_STATE_DIR="$A" "$HUTCH" "$@"; }
in_b() { HUTCH_STATE_DIR="$B" "$HUTCH" "$@"; }

json() {
        python3 -c 'import json, sys; o = json.loads(sys.stdin.readline()); print(eval(sys.argv[1]))' "$1"
}

@test "export then import twice: every run once, the second import changes nothing" {
        in_a run -q --label task=1 -- sh -c 'echo out; printf "\033[31mred\n" >&2; exit 3' || true
        in_a run -q --label task=2 -- true
        in_a export --with-output >"$BATS_TEST_TMPDIR/a.jsonl"
        [ "$(wc -l <"$BATS_TEST_TMPDIR/a.jsonl")" -eq 2 ]
        python3 "$TESTS_DIR/integration/check-schema.py" hutch.result/1 "$BATS_TEST_TMPDIR/a.jsonl"

        run in_b import "$BATS_TEST_TMPDIR/a.jsonl"
        [ "$status" -eq 0 ]
        [ "$output" = "imported 2 runs from $BATS_TEST_TMPDIR/a.jsonl (0 already here)" ]
        run in_b import - <"$BATS_TEST_TMPDIR/a.jsonl"
        [ "$status" -eq 0 ]
        [ "$output" = "imported 0 runs from stdin (2 already here)" ]
        # a store's own runs come back as already there
        run in_a import "$BATS_TEST_TMPDIR/a.jsonl"
        [ "$status" -eq 0 ]
        [[ "$output" == *"(2 already here)" ]]

        # b's export of them says the same as a's (but imported)
        in_b export --with-output | sed 's/"imported":true/"imported":false/' >"$BATS_TEST_TMPDIR/b.jsonl"
        cmp "$BATS_TEST_TMPDIR/a.jsonl" "$BATS_TEST_TMPDIR/b.jsonl"

        run in_b ls --json --label task=1
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json 'o["node"], o["imported"], o["exit_code"]')" = "('$NODE', True, 3)" ]
        local id
        id=$(echo "$output" | json 'o["id"]')
        run in_b show "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *"node:        $NODE (imported "* ]]
        [[ "$output" == *"red"* ]]
        [[ "$output" != *$'\033'* ]]
        run in_b logs "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *out* ]]
}

@test "a conflicting record is refused with its id, and nothing of the file is imported" {
        in_a run -q -- true
        in_a run -q -- echo second
        in_a export >"$BATS_TEST_TMPDIR/a.jsonl"
        head -n 1 "$BATS_TEST_TMPDIR/a.jsonl" | in_b import - >/dev/null
        local id
        id=$(head -n 1 "$BATS_TEST_TMPDIR/a.jsonl" | json 'o["id"]')
        # line 1: a new run; line 2: the stored one with another exit code
        { sed -n 2p "$BATS_TEST_TMPDIR/a.jsonl"
          head -n 1 "$BATS_TEST_TMPDIR/a.jsonl" | sed 's/"exit_code":0/"exit_code":9/'; } >"$BATS_TEST_TMPDIR/bad.jsonl"
        run in_b import "$BATS_TEST_TMPDIR/bad.jsonl"
        [ "$status" -eq 1 ]
        [ "$output" = "hutch: import: $BATS_TEST_TMPDIR/bad.jsonl:2: run $id: conflicts with the stored run of that id (/exit_code differs); nothing imported" ]
        run in_b ls --json
        [ "$(echo "$output" | grep -c schema)" -eq 1 ]
}

@test "hostile lines: one-line errors naming the line and field, exit 2, nothing imported" {
        in_a run -q -- true
        in_a export >"$BATS_TEST_TMPDIR/a.jsonl"
        local good
        good=$(cat "$BATS_TEST_TMPDIR/a.jsonl")
        check() {
                printf '%s\n%s\n' "$good" "$1" >"$BATS_TEST_TMPDIR/h.jsonl"
                run in_b import "$BATS_TEST_TMPDIR/h.jsonl"
                [ "$status" -eq 2 ]
                [ "${#lines[@]}" -eq 1 ]
                [[ "$output" == "hutch: import: $BATS_TEST_TMPDIR/h.jsonl:2: $2"*"; nothing imported" ]]
        }
        check 'not json' '(line): not JSON'
        check "$(echo "$good" | sed 's/"node":"[^"]*"/"node":"a\/b"/')" '/node: expected a host name'
        check "$(echo "$good" | sed 's/"status":"success"/"status":"running"/')" '/status: the run was still running'
        check "$(echo "$good" | sed 's/"argv":\[/"argv":[1,/')" '/argv/0: expected a string'
        check "$(echo "$good" | sed 's/"schema":"hutch.result\/1"/"schema":"hutch.result\/1","extra":1/')" '/extra: unknown field'
        check "$(echo "$good" | sed 's/"started_at":"[^"]*"/"started_at":"yesterday"/')" '/started_at: expected a time'
        # each below 2^53, no cpu_ms: the sum export would write is not,
        # and no import (this store's or another's) would take it back
        check "$(echo "$good" | python3 -c 'import json, sys
o = json.loads(sys.stdin.read()); o["cpu_user_ms"] = o["cpu_sys_ms"] = 2**52; del o["cpu_ms"]
print(json.dumps(o, separators=(",", ":")))')" '/cpu_sys_ms: cpu_user_ms + cpu_sys_ms is not below 2^53'
        # at the edge: the sum 2^53 - 1 is taken, exported and taken again
        echo "$good" | python3 -c 'import json, sys
o = json.loads(sys.stdin.read()); o["cpu_user_ms"] = 2**52; o["cpu_sys_ms"] = 2**52 - 1; del o["cpu_ms"]
print(json.dumps(o, separators=(",", ":")))' >"$BATS_TEST_TMPDIR/edge.jsonl"
        HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/c" "$HUTCH" import "$BATS_TEST_TMPDIR/edge.jsonl"
        HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/c" "$HUTCH" export >"$BATS_TEST_TMPDIR/edge2.jsonl"
        HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/d" "$HUTCH" import "$BATS_TEST_TMPDIR/edge2.jsonl"
        run in_b ls --json
        [ -z "$output" ]

        run in_b import "$BATS_TEST_TMPDIR/missing.jsonl"
        [ "$status" -eq 125 ]
        run in_b import
        [ "$status" -eq 2 ]
}

@test "ls --node and export --node pick a node's runs, imported or local" {
        in_a run -q -- true
        in_a export | sed "s/\"node\":\"$NODE\"/\"node\":\"far-away\"/" >"$BATS_TEST_TMPDIR/far.jsonl"
        in_b import "$BATS_TEST_TMPDIR/far.jsonl" >/dev/null
        in_b run -q -- true
        run in_b ls --node far-away --json
        [ "$(echo "$output" | grep -c schema)" -eq 1 ]
        [ "$(echo "$output" | json 'o["node"], o["imported"]')" = "('far-away', True)" ]
        run in_b ls --node "$NODE" --json
        [ "$(echo "$output" | grep -c schema)" -eq 1 ]
        [ "$(echo "$output" | json 'o["imported"]')" = "False" ]
        run in_b export --node far-away
        [ "$(echo "$output" | grep -c schema)" -eq 1 ]
        run in_b ls --node 'bad node'
        [ "$status" -eq 2 ]
        # gc leaves imported runs alone
        run in_b gc
        [ "$status" -eq 0 ]
        run in_b ls --node far-away --json
        [ "$(echo "$output" | json 'o["status"]')" = "success" ]
}
