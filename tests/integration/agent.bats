#!/usr/bin/env bats
# The agent interface (hutch-json(7)): --request documents, the JSON
# error object, idempotency keys, labels, ps, kill, wait, stats,
# secrets and cp of an artifact dir; every JSON output is validated
# against the published schemas (share/schema/) with python3-jsonschema.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
        CHECK="$TESTS_DIR/integration/check-schema.py"
}

teardown() {
        # a test that failed half way must not leave runs behind
        for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
        host_dirs_cleanup
}

# Print the Python expression $1 of each JSON line `o` on stdin.
json() {
        python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    v = eval(sys.argv[1])
    print("null" if v is None else (str(v).lower() if isinstance(v, bool) else v))
' "$1"
}

schema() {
        python3 "$CHECK" "$@"
}

# Succeeds when the command fails. Unlike `! cmd`, which bash's errexit
# ignores, a failure of `not` fails the test.
not() {
        ! "$@"
}

# Wait up to 10 s for a running run labelled $1; print its id.
running_id() {
        local i id
        for ((i = 0; i < 100; i++)); do
                id=$("$HUTCH" ps --label "$1" --json | json "o['id']" | head -1)
                [ -n "$id" ] && { echo "$id"; return 0; }
                sleep 0.1
        done
        return 1
}

@test "request: a document runs like the command line, the answer is a hutch.result/1 object" {
        run --separate-stderr "$HUTCH" run --request - <<'EOF2'
{"schema": "hutch.request/1", "argv": ["sh", "-c", "echo $GREETING; exit 3"],
 "env": {"GREETING": "hello"}, "labels": {"team": "infra"},
 "limits": {"timeout_ms": 7000, "memory_mb": 300, "pids": 50, "disk_mb": 64}}
EOF2
        [ "$status" -eq 3 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = hello ]
        [ "$(echo "$output" | json "o['status']")" = failed ]
        [ "$(echo "$output" | json "o['limits']['timeout_ms']")" = 7000 ]
        [ "$(echo "$output" | json "o['limits']['memory_bytes']")" = $((300 << 20)) ]
        [ "$(echo "$output" | json "o['limits']['pids']")" = 50 ]
        [ "$(echo "$output" | json "o['labels']['team']")" = infra ]
}

@test "request: language and code, read from a file" {
        printf '{"language": "sh", "code": "echo $((6*7))"}' > "$BATS_TEST_TMPDIR/req.json"
        run --separate-stderr "$HUTCH" run --request "$BATS_TEST_TMPDIR/req.json"
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = 42 ]
}

@test "request: every document the reader accepts is valid against hutch.request/1" {
        # each document goes through hutch's reader (and runs); one the
        # reader takes must be one the schema allows
        while read -r doc; do
                run --separate-stderr env A=a-secret B="$BATS_TEST_TMPDIR" "$HUTCH" run -q --json --request - <<< "$doc"
                [ "$status" -eq 0 ] || { echo "hutch refused $doc: $stderr" >&2; false; }
                [ "$(echo "$output" | json "o['status']")" = success ]
                echo "$doc" | schema hutch.request/1
        done <<'EOF2'
{"argv":["true"]}
{"schema":"hutch.request/1","argv":["true"]}
{"language":"python","code":"print(1)","limits":{"cpu_cores":0.5}}
{"argv":["true"],"secrets":["A"],"session":"s-1","idempotency_key":"k"}
{"argv":["true"],"secrets":{"S":{"env":"A"},"T":{"value":"v"}}}
{"argv":["sh","-c","cat f d/g >/dev/null"],"files":{"f":"x","d/g":{"content":"AAEC","encoding":"base64"}}}
{"argv":["cat"],"stdin":{"content":"aGk=","encoding":"base64"},"env":{"MODE":"test"}}
{"argv":["cat"],"stdin":"hi","labels":{"agent":"planner","task":"42"},"network":"none"}
{"argv":["true"],"limits":{"timeout_ms":10000,"memory_mb":256,"cpu_cores":1,"disk_mb":100,"pids":64,"cpu_time_ms":5000}}
EOF2
}

@test "request: unknown fields, wrong types and unknown versions are refused with a JSON pointer, exit 2" {
        marker="$(unique)"
        while IFS='|' read -r doc pointer; do
                run --separate-stderr "$HUTCH" run --request - <<< "$doc"
                [ "$status" -eq 2 ]
                echo "$output" | schema hutch.error/1
                [ "$(echo "$output" | json "o['pointer']")" = "$pointer" ]
                [ "$(echo "$output" | json "o['exit_code']")" = 2 ]
                [ "$(echo "$output" | json "o['code']")" = bad_request ]
                [ "$(echo "$output" | json "o['retryable']")" = false ]
                [[ "$stderr" == "hutch: run: request: $pointer"* ]]
                # and nothing was refused silently against the schema
                not schema hutch.request/1 <<< "$doc" 2>/dev/null
        done <<EOF2
{"argv":["echo","$marker"],"timeout":5}|/timeout
{"argv":["echo","$marker"],"limits":{"timeout_ms":"5s"}}|/limits/timeout_ms
{"argv":["echo","$marker"],"limits":{"walltime_ms":5}}|/limits/walltime_ms
{"argv":["echo",7]}|/argv/1
{"argv":["echo","$marker"],"env":{"A":1}}|/env/A
{"schema":"hutch.request/9","argv":["echo","$marker"]}|/schema
EOF2
        # none of them ran or was recorded
        run "$HUTCH" ls --json
        [[ "$output" != *"$marker"* ]]
}

@test "request: not JSON at all is an error object for the whole document" {
        run --separate-stderr "$HUTCH" run --request - <<< '{"argv": ['
        [ "$status" -eq 2 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['pointer']")" = "" ]
        [ "$(echo "$output" | json "o['code']")" = bad_request ]
        [[ "$stderr" == *"not valid JSON"* ]]
}

@test "idempotency: a finished run with the key is answered from the store and does not run again" {
        d=$(host_dir)
        chmod 777 "$d"
        for i in 1 2 3; do
                run --separate-stderr "$HUTCH" run --id build-42 --json --rw "$d" -- \
                        sh -c "echo ran >> $d/count; echo out; exit 5"
                [ "$status" -eq 5 ]
                echo "$output" | schema hutch.result/1
                ids+=("$(echo "$output" | json "o['id']")")
                [ "$(echo "$output" | json "o['idempotency_key']")" = build-42 ]
                [ "$(echo "$output" | json "o['error_code']")" = failed ]
                [ "$(echo "$output" | json "o['retryable']")" = false ]
        done
        [ "$(wc -l < "$d/count")" -eq 1 ]
        [ "${ids[0]}" = "${ids[1]}" ] && [ "${ids[1]}" = "${ids[2]}" ]
        [ "$("$HUTCH" ls --json | wc -l)" -eq 1 ]
        # without --json the stored output is replayed
        run "$HUTCH" run --id build-42 --rw "$d" -- sh -c "echo ran >> $d/count; echo out; exit 5"
        [ "$status" -eq 5 ]
        [ "$output" = out ]
        # the request's key is the same key
        req=$(python3 -c 'import json, sys; print(json.dumps({"argv": ["sh", "-c", sys.argv[1]], "idempotency_key": "build-42"}))' \
                "echo ran >> $d/count; echo out; exit 5")
        run --separate-stderr "$HUTCH" run --request - <<< "$req"
        [ "$status" -eq 5 ]
        [ "$(echo "$output" | json "o['id']")" = "${ids[0]}" ]
}

@test "idempotency: a key reused for another request is refused (exit 2, hutch.error/1 conflict)" {
        run -0 "$HUTCH" run -q --id k1 -- echo one
        run --separate-stderr "$HUTCH" run --id k1 --json -- echo two
        [ "$status" -eq 2 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['error']")" = conflict ]
        [[ "$stderr" == *"already has this key"* ]]
        run --separate-stderr "$HUTCH" run --request - <<< '{"argv":["echo","three"],"idempotency_key":"k1"}'
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | json "o['pointer']")" = /idempotency_key ]
        # a --lang run's key names its language and code
        run -0 "$HUTCH" run -q --id k2 --lang sh -c 'echo a'
        run -2 "$HUTCH" run -q --id k2 --lang sh -c 'echo b'
        run -0 "$HUTCH" run -q --id k2 --lang sh -c 'echo a'
        [ "$output" = a ]
        [ "$("$HUTCH" ls --json | wc -l)" -eq 2 ]
        # the stored command is the command: an escape in it is kept
        # there (the JSON view shows it cleaned), so the same request
        # with the same key is the same run
        esc=$(printf '\033[1mhi')
        run -0 "$HUTCH" run -q --id k3 -- printf '%s' "$esc"
        run -0 "$HUTCH" run -q --id k3 -- printf '%s' "$esc"
        [ "$("$HUTCH" ls --json | wc -l)" -eq 3 ]
        "$HUTCH" ls --json | head -n 1 | jq -e '.argv == ["printf", "%s", "hi"]'
}

@test "idempotency: a running run with the key is busy (exit 75), or waited for with --id-wait" {
        # the first run ends only when the test opens its gate, so a
        # loaded machine cannot let it finish before the checks
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run --id slow --label t=idwait --timeout 60s --rw "$d" -- \
                sh -c "while [ ! -e $d/go ]; do sleep 0.05; done; echo done; exit 4" &
        first=$!
        running_id t=idwait
        job="while [ ! -e $d/go ]; do sleep 0.05; done; echo done; exit 4"
        run --separate-stderr "$HUTCH" run --id slow --json --rw "$d" -- sh -c "$job"
        [ "$status" -eq 75 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['error']")" = busy ]
        [ "$(echo "$output" | json "o['code']")" = idempotency_in_flight ]
        [ "$(echo "$output" | json "o['retryable']")" = true ]
        "$HUTCH" run -v --id slow --id-wait --json --rw "$d" -- sh -c "$job" >"$d/waited" 2>"$d/waited.err" &
        waiter=$!
        # it says it waits for the run, and is still there, rather than
        # answering busy
        wait_until grep -q "with key slow is running: waiting for it" "$d/waited.err"
        kill -0 "$waiter"
        touch "$d/go"
        rc=0
        wait "$waiter" || rc=$?
        [ "$rc" -eq 4 ]
        [ "$(json "o['stdout']" <"$d/waited")" = done ]
        rc=0
        wait "$first" || rc=$?
        [ "$rc" -eq 4 ]
}

@test "idempotency: runs started at once with one key: one runs, the others answer with its result or are busy" {
        d=$(host_dir)
        # with --id-wait every one answers with the one run's result
        for i in 1 2 3 4 5; do
                "$HUTCH" run --id same --id-wait --json -- sh -c 'sleep 0.5; echo once; exit 3' > "$d/out$i" 2>/dev/null &
        done
        for i in 1 2 3 4 5; do
                rc=0
                wait -n || rc=$?
                [ "$rc" -eq 3 ]
        done
        [ "$("$HUTCH" ls --json | wc -l)" -eq 1 ]
        [ "$(cat "$d"/out* | json "o['id']" | sort -u | wc -l)" -eq 1 ]
        [ "$(cat "$d"/out* | json "o['stdout'].strip()" | sort -u)" = once ]
        # without: one that finds the run going is busy (75), one that
        # raced it to the store waits for it; none runs a second time
        for i in 1 2 3 4 5; do
                "$HUTCH" run --id other --json -- sh -c 'sleep 0.5; exit 3' > /dev/null 2>&1 &
        done
        for i in 1 2 3 4 5; do
                rc=0
                wait -n || rc=$?
                [ "$rc" -eq 3 ] || [ "$rc" -eq 75 ]
        done
        [ "$("$HUTCH" ls --json | wc -l)" -eq 2 ]
}

@test "idempotency: 40 concurrent runs with distinct keys are all recorded" {
        for i in $(seq 1 40); do
                "$HUTCH" run -q --id "key-$i" -- sh -c "exit $((i % 7))" &
        done
        wait
        [ "$("$HUTCH" ls --json | wc -l)" -eq 40 ]
        [ "$("$HUTCH" ls --json | json "o['idempotency_key']" | sort -u | wc -l)" -eq 40 ]
        "$HUTCH" ls --json | schema hutch.result/1
        for i in 3 17 40; do
                run "$HUTCH" run -q --id "key-$i" -- sh -c "exit $((i % 7))"
                [ "$status" -eq $((i % 7)) ]
        done
        [ "$("$HUTCH" ls --json | wc -l)" -eq 40 ]
}

@test "labels: stored with the run; ls filters by label, session and status" {
        "$HUTCH" run -q --label team=a --label kind=ci -- true
        "$HUTCH" run -q --label team=b -- false || true
        "$HUTCH" run -q --session lab-s --label team=a -- true
        [ "$("$HUTCH" ls --label team=a --json | wc -l)" -eq 2 ]
        [ "$("$HUTCH" ls --label team=b --json | json "o['status']")" = failed ]
        [ "$("$HUTCH" ls --label team=a --json | json "o['labels']['team']" | sort -u)" = a ]
        [ "$("$HUTCH" ls --session lab-s --json | json "o['session']")" = lab-s ]
        [ "$("$HUTCH" ls --status failed --json | wc -l)" -eq 1 ]
        [ -z "$("$HUTCH" ls --label team=nobody --json)" ]
        run "$HUTCH" run --label novalue -- true
        [ "$status" -eq 2 ]
}

@test "ps lists a running run with its pid, labels and live figures; kill cancels it with no survivors" {
        marker="$(unique)"
        "$HUTCH" run --label t=ps --timeout 60s -- sh -c "sleep 100; : $marker" &
        id=$(running_id t=ps)
        run "$HUTCH" ps
        [ "$status" -eq 0 ]
        [[ "$output" == *"$id"*"t=ps"* ]]
        "$HUTCH" ps --json | schema hutch.result/1
        [ "$("$HUTCH" ps --json | json "o['status']")" = running ]
        [ "$("$HUTCH" ps --json | json "o['live']['processes'] >= 2")" = true ]
        host_has_process "$marker"

        run "$HUTCH" kill "$id"
        [ "$status" -eq 0 ]
        [ "$output" = "$id cancelled" ]
        run wait %1
        [ "$status" -eq 143 ]
        not host_has_process "$marker"
        [ "$("$HUTCH" show --json "$id" | json "o['status']")" = cancelled ]
        [ -z "$("$HUTCH" ps --json)" ]
        run "$HUTCH" kill "$id"
        [ "$status" -eq 1 ]
}

@test "kill --signal and --grace: the job gets the signal, SIGKILL ends a job that ignores it" {
        # the job says when its traps are set: a signal sent before
        # that, on a loaded machine, would end it by default instead
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run --label t=sig --timeout 60s --rw "$d" -- \
                sh -c "trap 'echo got INT' INT; trap '' TERM; echo set > $d/ready; while :; do sleep 0.1; done" &
        id=$(running_id t=sig)
        wait_for_file "$d/ready" 100
        run "$HUTCH" kill --signal INT --grace 500ms "$id"
        [ "$status" -eq 0 ]
        [ "$output" = "$id cancelled" ]
        run wait %1
        [ "$status" -eq 143 ]
        [[ "$("$HUTCH" show --json "$id" | json "o['message']")" == *"hutch kill (SIGINT)"* ]]
        [[ "$("$HUTCH" logs --stdout "$id")" == *"got INT"* ]]
        run "$HUTCH" kill --signal NOPE "$id"
        [ "$status" -eq 2 ]
}

@test "wait: blocks until another process's run ends, then exits with its code" {
        "$HUTCH" run --label t=wait -- sh -c 'sleep 1; echo finished; exit 6' >/dev/null &
        id=$(running_id t=wait)
        run --separate-stderr "$HUTCH" wait --json "$id"
        [ "$status" -eq 6 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = finished ]
        run "$HUTCH" wait "$id"
        [ "$status" -eq 6 ]
        [ "$output" = finished ]
        wait
}

@test "wait --timeout gives up with 124 and leaves the run alone" {
        "$HUTCH" run --label t=waitto --timeout 30s -- sleep 30 &
        id=$(running_id t=waitto)
        run --separate-stderr "$HUTCH" wait --json --timeout 300ms "$id"
        [ "$status" -eq 124 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['code']")" = wait_timeout ]
        [ "$(echo "$output" | json "o['retryable']")" = true ]
        [ "$("$HUTCH" ps --json | json "o['id']")" = "$id" ]
        "$HUTCH" kill "$id"
        run wait %1
        [ "$status" -eq 143 ]
}

@test "stats: counts by status, percentiles and top commands, valid hutch.stats/1" {
        "$HUTCH" run -q --label s=1 -- true
        "$HUTCH" run -q --label s=1 -- true
        "$HUTCH" run -q --label s=1 -- sh -c 'exit 1' || true
        "$HUTCH" run -q --lang sh -c 'true'
        run "$HUTCH" stats --json
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.stats/1
        [ "$(echo "$output" | json "o['runs']")" = 4 ]
        [ "$(echo "$output" | json "o['by_status']['success']")" = 3 ]
        [ "$(echo "$output" | json "o['failure_rate']")" = 0.25 ]
        # sh twice (a command and the language), true twice: ties by name
        [ "$(echo "$output" | json "o['top_commands']")" = "[['sh', 2], ['true', 2]]" ]
        [ "$(echo "$output" | json "o['top_languages'][0][0]")" = sh ]
        [ "$("$HUTCH" stats --json --label s=1 | json "o['runs']")" = 3 ]
        [ "$("$HUTCH" stats --json --since 1h | json "o['runs']")" = 4 ]
        run "$HUTCH" stats
        [ "$status" -eq 0 ]
        [[ "$output" == "runs: 4, failure rate 25.0%"* ]]
}

@test "secrets: the job gets the value; it appears nowhere in the store, output shows [secret NAME]" {
        value="s3cr3t-$(unique)"
        printf '%s\n' "file-$value" > "$BATS_TEST_TMPDIR/tok"
        run --separate-stderr env API_KEY="$value" "$HUTCH" run --json --secret API_KEY \
                --secret FILE_TOKEN=@"$BATS_TEST_TMPDIR/tok" -- \
                sh -c 'echo "key=$API_KEY"; echo "file=$FILE_TOKEN" >&2; mkdir -p output; echo "$API_KEY" > output/leak.txt'
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = "key=[secret API_KEY]" ]
        [ "$(echo "$output" | json "o['stderr']")" = "file=[secret FILE_TOKEN]" ]
        [[ "$output" != *"$value"* ]]
        id=$(echo "$output" | json "o['id']")
        # an artifact holding the value is not kept, and says why
        [[ "$(echo "$output" | json "o['files'][0]['skip']")" == *"secret API_KEY"* ]]
        [[ "$("$HUTCH" show "$id")" != *"$value"* ]]
        [[ "$("$HUTCH" logs "$id" 2>&1)" != *"$value"* ]]
        [[ "$("$HUTCH" profile show default)" != *"$value"* ]]
        # the database, its WAL and the blobs: not one byte sequence of it
        not grep -rqaF "$value" "$HUTCH_STATE_DIR"
        # -e is stored in plain text: that is why --secret exists
        "$HUTCH" run -q -e PLAIN="$value" -- true
        grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "secrets: a value across the 64 KiB head/tail cut is redacted whole, not kept in part" {
        value="cut-$(unique)-end"
        # the value starts 10 bytes before the head's end; far more
        # follows, so the stream is cut there
        run --separate-stderr env TOK="$value" "$HUTCH" run --json --secret TOK -- \
                sh -c 'head -c 65526 /dev/zero | tr "\0" a; printf %s "$TOK"; head -c 200000 /dev/zero | tr "\0" b'
        [ "$status" -eq 0 ]
        id=$(echo "$output" | json "o['id']")
        [[ "$("$HUTCH" logs "$id" 2>&1)" != *"${value:0:10}"* ]]
        # the marker stands where the value started (and is itself cut)
        [[ "$("$HUTCH" logs "$id" 2>&1)" == *"aaaa[secret TO"* ]]
        # the count is still of the job's bytes
        [ "$(echo "$output" | json "o['stdout_bytes']")" = $((65526 + ${#value} + 200000)) ]
        not grep -rqaF "${value:0:10}" "$HUTCH_STATE_DIR"
        not grep -rqaF "${value:10}" "$HUTCH_STATE_DIR"
}

@test "secrets: a value in a path, a symlink's target or the old version of a changed file is stored nowhere" {
        value="pth$(unique)"
        work="$BATS_TEST_TMPDIR/work"
        mkdir -p "$work"
        # the user's file holds the value; the job changes it
        printf 'old %s\n' "$value" > "$work/keep.txt"
        run --separate-stderr env TOK="$value" "$HUTCH" run --json --workdir "$work" --secret TOK -- \
                sh -c 'echo new > keep.txt; echo hi > "f-$TOK"; ln -s "/x/$TOK" link
                       mkdir -p output; echo z > "output/o-$TOK"; ln -s "$TOK" output/l'
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        id=$(echo "$output" | json "o['id']")
        files=$("$HUTCH" show --json "$id" | json "sorted((f['kind'], f['path'], f.get('link_target'), f.get('skip')) for f in o['files'])")
        [[ "$files" == *"('added', 'f-[secret TOK]', None, 'secret')"* ]]
        [[ "$files" == *"('added', 'link', '/x/[secret TOK]', 'secret')"* ]]
        [[ "$files" == *"('output', 'o-[secret TOK]', None, 'secret')"* ]]
        [[ "$files" == *"('output', 'l', '[secret TOK]', 'secret')"* ]]
        [[ "$files" == *"('modified', 'keep.txt', None, None)"* ]]
        [[ "$("$HUTCH" diff "$id")" == *"content not kept (it held a secret's value"* ]]
        # the database, its WAL and the blobs (the old keep.txt among them)
        not grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "secrets: a file holding a value that the job only renamed, linked or chmod'ed keeps no hash of it" {
        value="mv$(unique)"
        work="$BATS_TEST_TMPDIR/work"
        mkdir -p "$work"
        printf '%s' "$value" > "$work/token"
        printf '%s' "$value" > "$work/token2"
        run --separate-stderr env TOK="$value" "$HUTCH" run --json --workdir "$work" --secret TOK -- \
                sh -c 'ln token token_hl; chmod 600 token; mv token2 moved'
        [ "$status" -eq 0 ]
        id=$(echo "$output" | json "o['id']")
        local hash
        hash=$(printf '%s' "$value" | sha256sum | cut -d' ' -f1)
        run "$HUTCH" show --json "$id"
        [ "$status" -eq 0 ]
        # the hash of a file that is the value is the hash of the value
        # (old_sha256, the user's own version's, stays: apply needs it)
        [ "$(echo "$output" | json "[f['path'] for f in o['files'] if f.get('sha256') == '$hash']")" = "[]" ]
        files=$(echo "$output" | json "sorted((f['kind'], f['path'], f.get('skip')) for f in o['files'] if f['kind'] != 'deleted')")
        [[ "$files" == *"('added', 'token_hl', 'secret')"* ]]
        [[ "$files" == *"('added', 'moved', 'secret')"* ]]
        [[ "$files" == *"('modified', 'token', 'secret')"* ]]
        # and apply says it will not apply a partial change set, instead
        # of failing on a blob that is gone
        run --separate-stderr "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$stderr" != *"No such file"* ]]
        not grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "secrets: an unset variable and an inline value are usage errors" {
        run env -u NOPE_SECRET "$HUTCH" run --secret NOPE_SECRET -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"--secret NOPE_SECRET: not set in the environment"* ]]
        run "$HUTCH" run --secret A=plainvalue -- true
        [ "$status" -eq 2 ]
        [ -z "$("$HUTCH" ls --json)" ]
}

@test "request secrets: inline values reach the job and are redacted" {
        value="inl-$(unique)"
        run --separate-stderr "$HUTCH" run --request - <<EOF2
{"argv": ["sh", "-c", "echo \$TOKEN"], "secrets": {"TOKEN": {"value": "$value"}}}
EOF2
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json "o['stdout']")" = "[secret TOKEN]" ]
        not grep -rqaF "$value" "$HUTCH_STATE_DIR"
}

@test "--json sanitises escapes and invalid UTF-8; the store keeps the raw bytes" {
        run --separate-stderr "$HUTCH" run --json -- printf '\033[31mred\033[0m \377\376 ok\n'
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = "red �� ok" ]
        id=$(echo "$output" | json "o['id']")
        [ "$("$HUTCH" logs --stdout "$id" | od -An -tx1 | tr -d ' \n')" = 1b5b33316d7265641b5b306d20fffe206f6b0a ]
}

@test "cp ID:output/ DIR copies every artifact with its relative path" {
        run --separate-stderr "$HUTCH" run --json -- sh -c \
                'mkdir -p output/sub; echo a > output/a.txt; echo b > output/sub/b.txt; ln -s /etc/passwd output/link'
        [ "$status" -eq 0 ]
        id=$(echo "$output" | json "o['id']")
        run "$HUTCH" cp "$id:output/" "$BATS_TEST_TMPDIR/out"
        [ "$(cat "$BATS_TEST_TMPDIR/out/a.txt")" = a ]
        [ "$(cat "$BATS_TEST_TMPDIR/out/sub/b.txt")" = b ]
        [ ! -e "$BATS_TEST_TMPDIR/out/link" ]
        run "$HUTCH" cp "$id:output/sub/" "$BATS_TEST_TMPDIR/sub"
        [ "$status" -eq 0 ]
        [ "$(ls "$BATS_TEST_TMPDIR/sub")" = b.txt ]
        run "$HUTCH" cp "$id:output/none/" "$BATS_TEST_TMPDIR/none"
        [ "$status" -eq 1 ]
}

@test "the Python tool wrapper (share/examples/hutch_tool.py) yields output live and returns the result" {
        export HUTCH_TOOL_DIR="${HUTCH_DATADIR:-$TESTS_DIR/../share}/examples"
        run --separate-stderr python3 - <<'EOF2'
import os, sys, time
sys.path.insert(0, os.environ["HUTCH_TOOL_DIR"])
from hutch_tool import run, run_code, HutchError
hutch = os.environ["HUTCH"]

# "live" means the first line arrives while the job still runs: the job
# writes its second chunk 2 s after the first, so the two arrive apart
# unless the first was held back (a late first line under load still
# leaves a wide margin; the wall clock of the whole run is not used)
seen, arrived = [], {}
for kind, value in run({"argv": ["sh", "-c", "echo first; sleep 2; printf '\\377'; echo err >&2; exit 4"],
                        "labels": {"via": "py"}}, hutch=hutch):
    if kind == "stdout":
        arrived.setdefault(value if isinstance(value, str) else "bytes", time.monotonic())
    seen.append((kind, value))
    if kind == "result":
        result = value
kinds = [k for k, _ in seen]
assert kinds[0] == "started" and kinds[-1] == "result", kinds
assert ("stdout", "first\n") in seen and ("stdout", b"\xff") in seen and ("stderr", "err\n") in seen, seen
assert arrived["bytes"] - arrived["first\n"] >= 1.0, ("the first line was held back until the job's end", arrived)
assert result["status"] == "failed" and result["exit_code"] == 4 and result["labels"] == {"via": "py"}

out = [v for k, v in run_code("sh", "echo $((6*7))", timeout_ms=5000, hutch=hutch) if k == "stdout"]
assert out == ["42\n"], out

try:
    list(run({"argv": ["true"], "limits": {"timeout": 1}}, hutch=hutch))
    raise AssertionError("no error")
except HutchError as e:
    assert e.error["pointer"] == "/limits/timeout", e.error
print("ok")
EOF2
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}

@test "the Python tool wrapper: files, stdin and session; stopping early cancels; its death ends the run" {
        export HUTCH_TOOL_DIR="${HUTCH_DATADIR:-$TESTS_DIR/../share}/examples"
        marker=$(unique)
        export MARKER=$marker
        run --separate-stderr python3 - <<'EOF2'
import os, sys, json, subprocess, time
sys.path.insert(0, os.environ["HUTCH_TOOL_DIR"])
from hutch_tool import run, run_code
hutch, marker = os.environ["HUTCH"], os.environ["MARKER"]

out = [v for k, v in run_code("sh", "cat in.txt data.bin; cat", files={"in.txt": "file\n", "data.bin": b"\x01\n"},
                              stdin=b"piped\n", hutch=hutch) if k == "stdout"]
assert "".join(x if isinstance(x, str) else x.decode() for x in out) == "file\n\x01\npiped\n", out
res = [v for k, v in run_code("sh", "echo kept > k; exit 1", session="py", commit="always", hutch=hutch) if k == "result"]
assert res[0]["committed"] is True, res
ev = list(run_code("sh", "cat k", session="py", hutch=hutch))
out = [v for k, v in ev if k == "stdout"]
# all of both runs when it fails: what the first committed, what the second saw
assert out == ["kept\n"], (res, ev)

# stop iterating after the start: the run is cancelled and recorded so
gen = run({"argv": ["sh", "-c", "sleep 300; : " + marker + "-a"]}, hutch=hutch)
kind, rid = next(gen)
assert kind == "started"
gen.close()
show = json.loads(subprocess.run([hutch, "show", "--json", rid], stdout=subprocess.PIPE, check=True).stdout)
assert show["status"] == "cancelled", show["status"]
print("ok")
EOF2
        echo "$stderr"
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
        ! host_has_process "$marker-a" || false
        # the wrapper's process dies: hutch gets SIGTERM and ends the run
        python3 - > "$BATS_TEST_TMPDIR/started" <<'EOF2' &
import os, sys
sys.path.insert(0, os.environ["HUTCH_TOOL_DIR"])
from hutch_tool import run
for kind, value in run({"argv": ["sh", "-c", "sleep 300; : " + os.environ["MARKER"] + "-b"]}, hutch=os.environ["HUTCH"]):
    if kind == "started":
        print(value, flush=True)
EOF2
        py=$!
        wait_for_file "$BATS_TEST_TMPDIR/started" 200
        kill -9 "$py"
        id=$(cat "$BATS_TEST_TMPDIR/started")
        for _ in $(seq 200); do
                [ "$("$HUTCH" show --json "$id" | json "o['status']")" != running ] && break
                sleep 0.1
        done
        [ "$("$HUTCH" show --json "$id" | json "o['status']")" = cancelled ]
        ! host_has_process "$marker-b" || false
}

@test "request: stdin and files reach the job; the files are not counted as its changes" {
        printf 'from the host\n' > "$BATS_TEST_TMPDIR/host.txt"
        chmod 644 "$BATS_TEST_TMPDIR/host.txt"
        stage=$(host_dir)
        run --separate-stderr env TMPDIR="$stage" "$HUTCH" run --request - <<EOF2
{"argv": ["sh", "-c", "cat; cat src/a.txt; od -An -tx1 data.bin; cat h.txt; echo made > new.txt; rm src/a.txt"],
 "stdin": {"content": "aW5wdXQK", "encoding": "base64"},
 "files": {"src/a.txt": "text\n", "data.bin": {"content": "AP8=", "encoding": "base64"},
           "h.txt": {"host_path": "$BATS_TEST_TMPDIR/host.txt"}}}
EOF2
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['stdout']")" = "$(printf 'input\ntext\n 00 ff\nfrom the host')" ]
        [ "$(echo "$output" | json "sorted((f['path'], f['kind']) for f in o['files'])")" = \
          "[('new.txt', 'added'), ('src/a.txt', 'deleted')]" ]
        # nothing staged is left behind
        [ -z "$(ls -A "$stage")" ]
}

@test "request: staged files are private to the run (0700 directories, 0600 files) while it runs" {
        stage=$(host_dir)
        # the shared place: $XDG_RUNTIME_DIR is used only when it is the
        # caller's own and the sandbox maps the caller
        env -u XDG_RUNTIME_DIR TMPDIR="$stage" "$HUTCH" run --events --request - > "$BATS_TEST_TMPDIR/out" <<'EOF2' &
{"argv": ["sh", "-c", "cat sub/k.txt; echo ready; exec sleep 60"], "files": {"sub/k.txt": "key\n", "top.txt": "x"}}
EOF2
        pid=$!
        # wait for the job to have read its file, however slow the host
        for _ in $(seq 600); do
                grep -q ready "$BATS_TEST_TMPDIR/out" 2>/dev/null && break
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.05
        done
        grep -q ready "$BATS_TEST_TMPDIR/out"
        dir=$(echo "$stage"/hutch-request-*)
        [ -d "$dir" ]
        modes=$(stat -c '%a %n' "$dir" "$dir/sub" "$dir/sub/k.txt" "$dir/top.txt" | sed "s|$dir|D|")
        kill "$pid"
        wait "$pid" || true
        [ "$modes" = "$(printf '700 D\n700 D/sub\n600 D/sub/k.txt\n600 D/top.txt')" ]
        [ -z "$(ls -A "$stage")" ]
}

@test "request: argv, labels, env and secrets are bounded, named when over, and read in linear time" {
        # 160,000 empty argv items took 17 s of CPU before the run's clock
        # started: now refused at once, naming the field
        python3 -c 'import json; print(json.dumps({"argv": ["true"] + [""] * 159999}))' > "$BATS_TEST_TMPDIR/big"
        run --separate-stderr timeout 5 "$HUTCH" run --request "$BATS_TEST_TMPDIR/big"
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | json "o['pointer']")" = /argv ]
        [[ "$stderr" == *"/argv: more than 65536 items"* ]]
        # the most allowed runs, well inside the bound
        python3 -c 'import json; print(json.dumps({"argv": ["sh", "-c", "echo $#", "x"] + [""] * 65532}))' > "$BATS_TEST_TMPDIR/max"
        run --separate-stderr timeout 5 "$HUTCH" run --request "$BATS_TEST_TMPDIR/max"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | json "o['stdout']")" = 65532 ]
        for field in labels env secrets; do
                python3 -c 'import json, sys
n = {"labels": 257, "env": 4097, "secrets": 257}[sys.argv[1]]
o = {"argv": ["true"], sys.argv[1]: {"K%d" % i: ("v" if sys.argv[1] != "secrets" else {"value": "v"}) for i in range(n)}}
print(json.dumps(o))' "$field" > "$BATS_TEST_TMPDIR/$field"
                run --separate-stderr timeout 5 "$HUTCH" run --request "$BATS_TEST_TMPDIR/$field"
                [ "$status" -eq 2 ]
                [ "$(echo "$output" | json "o['pointer']")" = "/$field" ]
        done
}

@test "request: files with a workdir, or a missing host file, are refused naming /files" {
        run --separate-stderr "$HUTCH" run --request - <<< '{"argv":["true"],"files":{"a":"x"},"workdir":"/tmp"}'
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | json "o['pointer']")" = /files ]
        run --separate-stderr "$HUTCH" run --request - <<< '{"argv":["true"],"files":{"a":{"host_path":"/nonexistent/x"}}}'
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | json "o['pointer']")" = /files/a ]
}

@test "--json: every way no run happens still answers with one hutch.error/1 object" {
        # a usage error, an unknown verb, an unknown run, an unusable store
        run --separate-stderr "$HUTCH" run --json --no-such-flag -- true
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | wc -l)" -eq 1 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['error']")" = usage ]
        [ "$(echo "$output" | json "o['code']")" = usage ]
        [ "$(echo "$output" | json "o['retryable']")" = false ]
        [[ "$(echo "$output" | json "o['message']")" == *"--no-such-flag"* ]]
        [ "$(echo "$output" | json "o['exit_code']")" = 2 ]

        run --separate-stderr "$HUTCH" frobnicate --json
        [ "$status" -eq 2 ]
        echo "$output" | schema hutch.error/1

        run --separate-stderr "$HUTCH" show --json 0000NOSUCHRUN
        [ "$status" -eq 1 ]
        echo "$output" | schema hutch.error/1
        [ "$(echo "$output" | json "o['code']")" = not_found ]
        [ "$(echo "$output" | json "o['retryable']")" = false ]
        [[ "$(echo "$output" | json "o['message']")" == *"0000NOSUCHRUN"* ]]

        local bad="$BATS_TEST_TMPDIR/badstore"
        mkdir -p "$bad"
        echo "not a database" > "$bad/hutch.db"
        for verb in "ls --json" "run --json -- true"; do
                run --separate-stderr env HUTCH_STATE_DIR="$bad" "$HUTCH" $verb
                [ "$status" -eq 125 ]
                [ "$(echo "$output" | wc -l)" -eq 1 ]
                echo "$output" | schema hutch.error/1
                [ "$(echo "$output" | json "o['error']")" = setup ]
                [ "$(echo "$output" | json "o['code']")" = store_unusable ]
                [ "$(echo "$output" | json "o['retryable']")" = false ]
        done

        # a run that happened answers with its result, never an error too
        run --separate-stderr "$HUTCH" run --json -- sh -c 'exit 4'
        [ "$status" -eq 4 ]
        [ "$(echo "$output" | wc -l)" -eq 1 ]
        echo "$output" | schema hutch.result/1
        [ "$(echo "$output" | json "o['error_code']")" = failed ]
        [ "$(echo "$output" | json "o['retryable']")" = false ]
        # a success has no error code; a refused sandbox is setup_refused
        run --separate-stderr "$HUTCH" run --json -- true
        [ "$(echo "$output" | json "o['error_code']")" = null ]
        run --separate-stderr "$HUTCH" run --json --timeout 1s -- sleep 5
        [ "$status" -eq 124 ]
        [ "$(echo "$output" | json "o['error_code']")" = timeout ]
        [ "$(echo "$output" | json "o['retryable']")" = false ]
        # the job's own "--json" is not hutch's
        run --separate-stderr "$HUTCH" run -- sh -c 'exit 5' --json
        [ "$status" -eq 5 ]
        [ -z "$output" ]
}

@test "--json folds very long lines with a marker; the store keeps the raw bytes" {
        run --separate-stderr "$HUTCH" run --json -- sh -c 'head -c 10000 /dev/zero | tr "\0" x; echo; echo short'
        [ "$status" -eq 0 ]
        echo "$output" | schema hutch.result/1
        local id lines
        id=$(echo "$output" | json "o['id']")
        lines=$(echo "$output" | json "o['stdout']")
        # 10000 bytes at 4096 a line: two folds, then the rest and "short"
        [ "$(printf '%s\n' "$lines" | wc -l)" -eq 4 ]
        [ "$(printf '%s\n' "$lines" | grep -c $'\xe2\x86\xa9$')" -eq 2 ]
        [ "$(printf '%s\n' "$lines" | head -1 | tr -d $'\xe2\x86\xa9' | wc -c)" -eq 4097 ]
        [ "$(printf '%s\n' "$lines" | tail -1)" = short ]
        # logs gives back exactly what the job wrote
        [ "$("$HUTCH" logs "$id" | head -1 | wc -c)" -eq 10001 ]
}
