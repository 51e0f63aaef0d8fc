#!/usr/bin/env bats
# run --events, --detach and logs --follow (hutch-json(7)): the event
# stream is ordered, complete and valid against hutch.event/1; a detached
# run outlives its caller and is waited for and followed from elsewhere.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
        CHECK="$TESTS_DIR/integration/check-schema.py"
}

teardown() {
        for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
        host_dirs_cleanup
}

not() {
        ! "$@"
}

# Check an event stream (file $1): valid, seq 1..N without gaps, started
# first, exactly one exit and it is last, output offsets contiguous per
# stream. Prints "STDOUT_BYTES STDERR_BYTES EXIT_STATUS".
check_stream() {
        python3 "$CHECK" hutch.event/1 "$1" || return 1
        python3 - "$1" <<'EOF2'
import base64, json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1)), "seq"
assert evs[0]["type"] == "started", evs[0]["type"]
assert [e["type"] for e in evs].count("exit") == 1 and evs[-1]["type"] == "exit", "exit"
assert evs[0]["id"] == evs[-1]["result"]["id"]
off = {"stdout": 0, "stderr": 0}
for e in evs:
    if e["type"] == "output":
        assert e["offset"] == off[e["stream"]], (e["offset"], off)
        data = base64.b64decode(e["data"]) if e["base64"] else e["data"].encode()
        off[e["stream"]] += len(data)
print(off["stdout"], off["stderr"], evs[-1]["result"]["status"])
EOF2
}

@test "events: started, output, exit, in order and valid" {
        run --separate-stderr "$HUTCH" run --events --label k=v -- sh -c 'echo hello; echo oops >&2; exit 3'
        [ "$status" -eq 3 ]
        echo "$output" > "$BATS_TEST_TMPDIR/ev"
        [ "$(check_stream "$BATS_TEST_TMPDIR/ev")" = "6 5 failed" ]
        [[ "${lines[0]}" == *'"type":"started"'*'"labels":{"k":"v"}'* ]]
        [[ "$output" == *'"stream":"stdout","offset":0,"data":"hello\n","base64":false'* ]]
        [[ "${lines[-1]}" == *'"type":"exit"'*'"exit_code":3'* ]]
}

@test "events: a job that floods output loses nothing, even with a slow reader" {
        "$HUTCH" run --events -- sh -c 'head -c 20000000 /dev/zero | tr "\0" x; echo end >&2' \
                | { sleep 1; cat; } > "$BATS_TEST_TMPDIR/ev"
        [ "$(check_stream "$BATS_TEST_TMPDIR/ev")" = "20000000 4 success" ]
        # the record keeps head and tail only, and the stream says when that began
        grep -q '"type":"truncated","stream":"stdout","offset":65536' "$BATS_TEST_TMPDIR/ev"
}

@test "events: a job killed at its deadline still returns what it printed, then one exit" {
        run --separate-stderr "$HUTCH" run --events --timeout 1s -- sh -c 'echo before; exec sleep 30'
        [ "$status" -eq 124 ]
        echo "$output" > "$BATS_TEST_TMPDIR/ev"
        [ "$(check_stream "$BATS_TEST_TMPDIR/ev")" = "7 0 timeout" ]
}

@test "events: binary output is base64, losslessly; text split across reads stays text" {
        run --separate-stderr "$HUTCH" run --events -- sh -c 'printf "\377\000\001"; printf "\303"; sleep 0.2; printf "\251\n"'
        [ "$status" -eq 0 ]
        echo "$output" > "$BATS_TEST_TMPDIR/ev"
        check_stream "$BATS_TEST_TMPDIR/ev"
        python3 - "$BATS_TEST_TMPDIR/ev" <<'EOF2'
import base64, json, sys
raw = b""
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "output":
        raw += base64.b64decode(e["data"]) if e["base64"] else e["data"].encode()
        if not e["base64"]:
            assert "\ufffd" not in e["data"]
assert raw == b"\xff\x00\x01\xc3\xa9\n", raw
assert any(json.loads(l).get("data") == "\u00e9\n" for l in open(sys.argv[1]))
EOF2
}

@test "events: a line printed inside reaches the reader while the job still runs" {
        # the job prints, then sleeps 20 s; the line must arrive long before
        python3 - "$HUTCH" <<'EOF2'
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "run", "--events", "--timeout", "25s", "--",
                      "sh", "-c", "sleep 0.5; echo ping; sleep 20"], stdout=subprocess.PIPE)
started = json.loads(p.stdout.readline())
assert started["type"] == "started"
line = json.loads(p.stdout.readline())
got = time.time()
assert line["type"] == "output" and line["data"] == "ping\n", line
# the event was stamped when it was read; its arrival is within 100 ms
sent = time.mktime(time.strptime(line["time"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone \
       + int(line["time"][20:23]) / 1000
print("latency ms", round((got - sent) * 1000))
assert p.poll() is None, "the job should still be running"
p.kill()
EOF2
}

@test "events: a secret's value is redacted, even split across two reads" {
        value="tok-$(unique)"
        run --separate-stderr env TOK="$value" "$HUTCH" run --events --secret TOK -- \
                sh -c 'v=$TOK; printf "%s" "${v%??????}"; sleep 0.3; printf "%s\n" "${v#"${v%??????}"}"'
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        [[ "$output" == *'"data":"[secret TOK]\n"'* ]]
}

@test "events: a value whose start is also its end is never split over two events" {
        # "uXu" ends with a tail that could start it again: the held tail
        # used to cut the full match, and it left whole, in two events
        u="b$(unique)"
        value="${u}X${u}"
        run --separate-stderr env TOK="$value" "$HUTCH" run --events --secret TOK -- \
                sh -c 'printf %s "$TOK"; sleep 0.2; printf "%s\n" "tail"'
        [ "$status" -eq 0 ]
        joined=$(printf '%s\n' "$output" | python3 -c '
import json, sys
print("".join(e.get("data", "") for e in map(json.loads, sys.stdin) if e["type"] == "output"))')
        [[ "$joined" != *"$value"* ]]
        [[ "$joined" != *"$u"* ]]
        [ "$joined" = "[secret TOK]tail" ]
}

@test "events: a run that cannot start still ends with one exit event" {
        run --separate-stderr "$HUTCH" run --events --workdir /nonexistent/dir -- true
        [ "$status" -ne 0 ]
        [ "${#lines[@]}" -eq 1 ]
        echo "$output" | python3 "$CHECK" hutch.event/1
        [[ "$output" == *'"type":"exit"'*'"status":"setup_error"'* ]]
}

@test "events: an idempotent answer is one exit event" {
        "$HUTCH" run -q --id ev-key -- sh -c 'echo once'
        run --separate-stderr "$HUTCH" run --events --id ev-key -- sh -c 'echo once'
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 1 ]
        echo "$output" | python3 "$CHECK" hutch.event/1
        [[ "$output" == *'"stdout":"once\n"'* ]]
}

@test "detach: the caller gets the id at once; the run survives it, is waited for and followed elsewhere" {
        d=$(host_dir)
        chmod 777 "$d"
        # the caller is a shell of its own that exits at once
        id=$(sh -c '"$1" run --detach --rw "$2" -- sh -c "sleep 3; echo one; echo two >&2; touch $2/done; exit 9"' \
                sh "$HUTCH" "$d")
        [[ "$id" =~ ^[0-9A-Z]{26}$ ]]
        [ "$("$HUTCH" ps --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')" = "$id" ]
        # not in our session: a hangup of ours is not its
        pid=$("$HUTCH" ps --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["pid"])')
        [ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ]
        [ "$(ps -o tty= -p "$pid" | tr -d ' ')" = "?" ]

        run --separate-stderr "$HUTCH" logs --follow "$id"
        [ "$status" -eq 9 ]
        [ "$output" = one ]
        [ "$stderr" = two ]
        run "$HUTCH" wait "$id"
        [ "$status" -eq 9 ]
        [ -e "$d/done" ]
        # the spool went with the run; following it now reads the record
        [ -z "$(ls "$HUTCH_STATE_DIR/spool")" ]
        run --separate-stderr "$HUTCH" logs --follow --events "$id"
        [ "$status" -eq 9 ]
        echo "$output" | python3 "$CHECK" hutch.event/1
}

@test "detach: follow from an offset, as events; kill cancels a detached run" {
        id=$("$HUTCH" run --detach -- sh -c 'echo 0123456789; sleep 0.5; echo abc; exec sleep 60')
        # the first line is in the spool before the follower starts after it
        wait_until grep -q '"data":"0123456789\\n"' "$HUTCH_STATE_DIR/spool/$id.events"
        "$HUTCH" logs --follow --events --since-offset 11 "$id" > "$BATS_TEST_TMPDIR/ev" &
        # kill once the follower has seen the second line, however slow
        # the machine
        for ((i = 0; i < 400; i++)); do
                grep -q '"data":"abc\\n"' "$BATS_TEST_TMPDIR/ev" && break
                sleep 0.05
        done
        run "$HUTCH" kill "$id"
        [ "$status" -eq 0 ]
        wait %1 || true
        python3 "$CHECK" hutch.event/1 "$BATS_TEST_TMPDIR/ev"
        not grep -q '"type":"output","stream":"stdout","offset":0,' "$BATS_TEST_TMPDIR/ev"
        grep -q '"data":"abc\\n"' "$BATS_TEST_TMPDIR/ev"
        grep -q '"status":"cancelled"' "$BATS_TEST_TMPDIR/ev"
}

@test "detach: a detached run whose supervisor is killed is orphaned for gc, and follow stops" {
        id=$("$HUTCH" run --detach -- sleep 60)
        pid=$("$HUTCH" ps --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["pid"])')
        kill -9 "$pid"
        run "$HUTCH" logs --follow "$id"
        [ "$status" -eq 125 ]
        run "$HUTCH" gc
        [ "$("$HUTCH" show --json "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = orphaned ]
}

@test "detach, events: refused with -t; follow refuses a run that was not detached" {
        run "$HUTCH" run --detach -t -- true
        [ "$status" -eq 2 ]
        run "$HUTCH" run --events --json -- true
        [ "$status" -eq 2 ]
        "$HUTCH" run --label t=nd --timeout 30s -- sleep 20 &
        id=""
        for i in $(seq 100); do
                id=$("$HUTCH" ps --label t=nd --json | python3 -c 'import json,sys; [print(json.loads(l)["id"]) for l in sys.stdin]' | head -1)
                [ -z "$id" ] || break
                sleep 0.1
        done
        [ -n "$id" ]
        run --separate-stderr "$HUTCH" logs --follow "$id"
        [ "$status" -eq 1 ]
        [[ "$stderr" == *"not started with --detach"* ]]
        "$HUTCH" kill "$id"
        wait
}

@test "events: a file holding a secret is not kept, and a warning event says so" {
        value="w-$(unique)"
        run --separate-stderr env TOK="$value" "$HUTCH" run --events --secret TOK -- \
                sh -c 'mkdir -p output; echo "$TOK" > output/t.txt'
        [ "$status" -eq 0 ]
        echo "$output" | python3 "$CHECK" hutch.event/1
        [[ "$output" == *'"type":"warning","message":"t.txt: not stored: it contains the value of secret TOK"'* ]]
        [[ "${lines[-1]}" == *'"type":"exit"'* ]]
        [[ "$output" != *"$value"* ]]
}
