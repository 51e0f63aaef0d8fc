#!/usr/bin/env bats
# hutch exec's input and output: --stdin and --stdin-file feed the job's
# stdin through a pipe (no caller fd enters the sandbox), --events is
# hutch run's event stream; the supervisor never waits for a client
# that says nothing; an exec whose hutch exec is killed or cancelled is
# recorded cancelled, its job's group killed; an end the supervisor
# cannot write, hutch exec writes itself.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() { common_setup; }

teardown() { stop_sandboxes; }

# The id of the newest exec into sandbox $1.
last_exec() { "$HUTCH" ls --sandbox "$1" --json | head -n 1 | jq -r .id; }

status_of() { "$HUTCH" show "$1" --json | jq -r .status; }

@test "--stdin relays the caller's stdin to the job's, and its end" {
        start_sandbox x1
        head -c 3000000 /dev/urandom > "$BATS_TEST_TMPDIR/data"
        want=$(sha256sum < "$BATS_TEST_TMPDIR/data" | cut -d' ' -f1)
        run "$HUTCH" exec x1 --stdin -- sh -c 'sha256sum | cut -d" " -f1' < "$BATS_TEST_TMPDIR/data"
        [ "$status" -eq 0 ]
        [ "$output" = "$want" ]
        # the job reads EOF when the caller's stdin ends
        run "$HUTCH" exec x1 --stdin -- sh -c 'cat; echo end' <<< "line"
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'line\nend')" ]
        # a job that reads none of it, or stops reading, ends as usual
        run bash -c 'yes | "$HUTCH" exec x1 --stdin -- true'
        [ "$status" -eq 0 ]
        run bash -c 'yes | "$HUTCH" exec x1 --stdin -- head -c 4'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'y\ny')" ]
        # input that comes later, as from a slow producer
        run bash -c '(sleep 0.3; echo late) | "$HUTCH" exec x1 --stdin -- cat'
        [ "$status" -eq 0 ]
        [ "$output" = late ]
}

@test "without --stdin the job's stdin is empty, whatever the caller's is" {
        start_sandbox x2
        run "$HUTCH" exec x2 -- sh -c 'wc -c' <<< "not for the job"
        [ "$status" -eq 0 ]
        [ "$output" = 0 ]
}

@test "--stdin-file's bytes are the job's stdin, through a pipe" {
        start_sandbox x3
        printf 'one\ntwo\nthree\n' > "$BATS_TEST_TMPDIR/in"
        run "$HUTCH" exec x3 --stdin-file "$BATS_TEST_TMPDIR/in" -- wc -l
        [ "$status" -eq 0 ]
        [ "$output" = 3 ]
        # the job holds a pipe, never the caller's file or stdin
        run "$HUTCH" exec x3 --stdin-file "$BATS_TEST_TMPDIR/in" -- readlink /proc/self/fd/0
        [ "$status" -eq 0 ]
        [[ "$output" == pipe:* ]]
        run "$HUTCH" exec x3 --stdin -- readlink /proc/self/fd/0 < "$BATS_TEST_TMPDIR/in"
        [ "$status" -eq 0 ]
        [[ "$output" == pipe:* ]]
        # the record of such an exec is complete as any other
        "$HUTCH" show "$(last_exec x3)" --json | jq -e '.status == "success" and .stdout == "pipe:" + (.stdout | ltrimstr("pipe:"))'
}

@test "bad stdin options are refused with a message, and nothing runs" {
        start_sandbox x4
        run "$HUTCH" exec x4 --stdin-file "$BATS_TEST_TMPDIR/no-such-file" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"--stdin-file $BATS_TEST_TMPDIR/no-such-file: No such file or directory"* ]]
        [ "$("$HUTCH" ls --sandbox x4 --json | wc -l)" -eq 0 ]
        # a directory opens, but is no input: refused, not an empty stdin
        run "$HUTCH" exec x4 --stdin-file "$BATS_TEST_TMPDIR" -- wc -c
        [ "$status" -eq 125 ]
        [[ "$output" == *"--stdin-file $BATS_TEST_TMPDIR: Is a directory"* ]]
        [ "$("$HUTCH" ls --sandbox x4 --json | wc -l)" -eq 0 ]
        run "$HUTCH" exec x4 --stdin --stdin-file /dev/null -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"exclude each other"* ]]
        # -i is hutch run's --input (a host path in the workspace), not stdin
        run "$HUTCH" exec x4 -i "$BATS_TEST_TMPDIR/in" -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"--stdin-file"* ]]
        run "$HUTCH" exec x4 --events --json -- true
        [ "$status" -eq 2 ]
        [ "$("$HUTCH" ls --sandbox x4 --json | wc -l)" -eq 0 ]
}

@test "--events is hutch run's event stream: started, output, exit with the result" {
        start_sandbox x5
        run --separate-stderr "$HUTCH" exec x5 --events -- sh -c 'echo out; echo err >&2; exit 3'
        [ "$status" -eq 3 ]
        id=$(last_exec x5)
        echo "$output" | jq -e -s --arg id "$id" '
                all(.[]; .schema == "hutch.event/1")
                and ([.[].seq] == [range(1; length + 1)])
                and .[0].type == "started" and .[0].id == $id and .[0].labels.sandbox == "x5"
                and .[0].limits != null
                and ([.[] | select(.type == "output") | [.stream, .data]] == [["stdout", "out\n"], ["stderr", "err\n"]])
                and .[-1].type == "exit" and .[-1].result.id == $id and .[-1].result.status == "failed"
                and .[-1].result.exit_code == 3 and .[-1].result.stdout == "out\n"
                and ([.[] | select(.type == "exit")] | length) == 1'
        # the stream says what the record says
        [ "$(echo "$output" | tail -n 1 | jq -c '.result | {status, exit_code, stdout, stderr}')" = \
          "$("$HUTCH" show "$id" --json | jq -c '{status, exit_code, stdout, stderr}')" ]
        # binary output is base64, as in hutch run's
        run "$HUTCH" exec x5 --events -- printf '\377\376'
        [ "$status" -eq 0 ]
        echo "$output" | jq -e -s '[.[] | select(.type == "output")] | all(.base64) and .[0].data == "/w=="'
}

@test "a client that connects and says nothing holds up no other exec" {
        start_sandbox x6
        command -v python3 >/dev/null || skip "no python3"
        t0=$EPOCHREALTIME
        ( st=0
          "$HUTCH" exec x6 --timeout 1s -- sh -c 'touch started; sleep 3022' >/dev/null 2>&1 || st=$?
          echo "$st $EPOCHREALTIME" > "$BATS_TEST_TMPDIR/timed" ) &
        wait_until "$HUTCH" exec x6 -- test -e started
        # five connections that never send their request, held for 20 s
        cd "$HUTCH_STATE_DIR/sandboxes"
        python3 -c 'import socket, sys, time
ss = []
for i in range(5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect("x6.sock"); ss.append(s)
open(sys.argv[1], "w").write("connected\n")
time.sleep(20)' "$BATS_TEST_TMPDIR/silent" &
        silent=$!
        wait_for_file "$BATS_TEST_TMPDIR/silent"
        # another exec is served meanwhile, at once (waiting 2 s for each
        # silent client before it would take 10 s)
        t2=$EPOCHREALTIME
        run "$HUTCH" exec x6 -- echo served
        t3=$EPOCHREALTIME
        [ "$status" -eq 0 ]
        [ "$output" = served ]
        echo "served in $(( (${t3/./} - ${t2/./}) / 1000 )) ms"
        [ $(( (${t3/./} - ${t2/./}) / 1000 )) -lt 3000 ]
        # and the first exec's deadline fired on time
        wait_for_file "$BATS_TEST_TMPDIR/timed" 100
        read -r st t1 < "$BATS_TEST_TMPDIR/timed"
        [ "$st" -eq 124 ]
        echo "timed out after $(( (${t1/./} - ${t0/./}) / 1000 )) ms"
        [ $(( (${t1/./} - ${t0/./}) / 1000 )) -lt 3500 ]
        kill "$silent"
        # a silent connection is dropped after its 2 s to speak
        run python3 -c 'import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect("x6.sock"); s.settimeout(10)
print(len(s.recv(64)))'
        [ "$status" -eq 0 ]
        [ "$output" = 0 ]
}

@test "hutch kill of an exec's run cancels it: its group is killed, its output recorded" {
        start_sandbox x7
        "$HUTCH" exec x7 -- sh -c 'echo before; sleep 3023; echo never' > "$BATS_TEST_TMPDIR/out" 2>&1 &
        client=$!
        wait_until eval '[ "$("$HUTCH" ls --sandbox x7 --json | jq -r "select(.status == \"running\") | .id")" != "" ]'
        id=$("$HUTCH" ls --sandbox x7 --json | jq -r 'select(.status == "running") | .id')
        wait_for_file "$BATS_TEST_TMPDIR/out"
        run "$HUTCH" kill "$id"
        [ "$status" -eq 0 ]
        [ "$output" = "$id cancelled" ]
        run wait "$client"
        [ "$status" -eq 143 ]
        # its group was killed (SIGKILL): the job exited with no code of its own
        "$HUTCH" show "$id" --json | jq -e '.status == "cancelled" and .exit_code == 143 and .stdout == "before\n"
                and .job_exit_code == null'
        run "$HUTCH" exec x7 -- sh -c 'ps -o args= -A | grep "^sleep" || true'
        [ "$status" -eq 0 ]
        [ "$output" = "" ]
}

@test "an exec's record carries the job's own exit code; none when the sandbox stopped under it" {
        start_sandbox x9
        # recorded by the supervisor, and (--json) by hutch exec
        run "$HUTCH" exec x9 -- sh -c 'exit 4'
        [ "$status" -eq 4 ]
        "$HUTCH" show "$(last_exec x9)" --json | jq -e '.status == "failed" and .exit_code == 4 and .job_exit_code == 4'
        run --separate-stderr "$HUTCH" exec x9 --json -- sh -c 'exit 5'
        [ "$status" -eq 5 ]
        jq -e '.exit_code == 5 and .job_exit_code == 5' <<<"$output"
        "$HUTCH" exec x9 -- sh -c 'trap "exit 7" TERM; echo ready; sleep 3026 & wait' > "$BATS_TEST_TMPDIR/out" 2>&1 &
        client=$!
        wait_for_file "$BATS_TEST_TMPDIR/out"
        id=$(last_exec x9)
        run "$HUTCH" sandbox stop x9
        [ "$status" -eq 0 ]
        local st=0
        wait "$client" || st=$?
        echo "hutch exec: $st"
        [ "$st" -eq 143 ]
        # the job's end was never heard: not a made-up 0
        "$HUTCH" show "$id" --json | jq -e '.status == "cancelled" and .exit_code == 143 and .job_exit_code == null'
}

@test "an exec whose hutch exec is killed is recorded cancelled, not left running" {
        start_sandbox x8
        "$HUTCH" exec x8 -- sh -c 'sleep 3024 >/dev/null 2>&1 & echo $! > bg.pid; sleep 3025' &
        client=$!
        wait_until "$HUTCH" exec x8 -- test -s bg.pid
        id=$("$HUTCH" ls --sandbox x8 --json | jq -r 'select(.argv[2] | test("3025")) | .id')
        [ "$(status_of "$id")" = running ]
        kill -KILL "$client"
        wait_until eval '[ "$(status_of "$id")" = cancelled ]'
        "$HUTCH" show "$id" --json | jq -e '.exit_code == 143 and (.message | test("went away"))
                and .finished_at != null and .duration_ms != null'
        # the job's group is gone; what it put in the background of its
        # own group went with it, and the sandbox runs on
        run "$HUTCH" exec x8 -- sh -c 'ps -o args= -A | grep "^sleep" || true'
        [ "$status" -eq 0 ]
        [ "$output" = "" ]
        listed x8
}

@test "a store another process holds delays the supervisor by at most a second, then says busy" {
        command -v python3 >/dev/null || skip "no python3"
        start_sandbox x9
        # a long exec whose deadline must fire while the store is held
        ( st=0
          "$HUTCH" exec x9 --timeout 2s -- sh -c 'touch started; sleep 3026' >/dev/null 2>&1 || st=$?
          echo "$st $EPOCHREALTIME" > "$BATS_TEST_TMPDIR/timed" ) &
        wait_until "$HUTCH" exec x9 -- test -e started
        # another writer holds the store's write lock for 4 s
        python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").write("locked\n")
time.sleep(4)
c.execute("COMMIT")' "$HUTCH_STATE_DIR/hutch.db" "$BATS_TEST_TMPDIR/locked" &
        holder=$!
        wait_for_file "$BATS_TEST_TMPDIR/locked"
        t1=$EPOCHREALTIME
        run "$HUTCH" exec x9 -- echo never
        t2=$EPOCHREALTIME
        [ "$status" -eq 75 ]
        [[ "$output" == *"the run store is busy"* ]]
        [[ "$output" != *never* ]]
        echo "refused after $(( (${t2/./} - ${t1/./}) / 1000 )) ms"
        [ $(( (${t2/./} - ${t1/./}) / 1000 )) -lt 3000 ]
        # a JSON caller is told which retryable refusal it is
        run --separate-stderr "$HUTCH" exec x9 --json -- echo never
        [ "$status" -eq 75 ]
        [ "$(echo "$output" | jq -r '[.code, .retryable] | join(" ")')" = "store_busy true" ]
        wait "$holder"
        # the other exec still ended at its deadline
        wait_for_file "$BATS_TEST_TMPDIR/timed" 100
        read -r st t3 < "$BATS_TEST_TMPDIR/timed"
        [ "$st" -eq 124 ]
        # nothing of the refused exec is recorded
        run "$HUTCH" ls --sandbox x9 --json
        [[ "$output" != *never* ]]
}

@test "an end the supervisor cannot write (too much output, a busy store) hutch exec records itself, complete" {
        command -v python3 >/dev/null || skip "no python3"
        start_sandbox x10
        # more output than the supervisor takes with the end (60 KiB)
        run "$HUTCH" exec x10 -- sh -c 'head -c 200000 /dev/zero | tr "\0" x; echo; echo tail'
        [ "$status" -eq 0 ]
        run "$HUTCH" show --json "$(last_exec x10)"
        [ "$(jq -r .status <<<"$output")" = success ]
        [ "$(jq -r .stdout_bytes <<<"$output")" -eq 200006 ]
        [[ "$(jq -r .stdout <<<"$output")" == *tail* ]]
        # the job ends while another writer holds the store for 4 s: the
        # supervisor gives up on the end after 1 s, hutch exec writes it
        ( st=0
          "$HUTCH" exec x10 -- sh -c 'touch started; sleep 2; echo done; exit 3' > "$BATS_TEST_TMPDIR/out" 2>&1 || st=$?
          echo "$st" > "$BATS_TEST_TMPDIR/st" ) &
        wait_until "$HUTCH" exec x10 -- test -e started
        python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").write("locked\n")
time.sleep(4)
c.execute("COMMIT")' "$HUTCH_STATE_DIR/hutch.db" "$BATS_TEST_TMPDIR/locked" &
        holder=$!
        wait_for_file "$BATS_TEST_TMPDIR/locked"
        wait "$holder"
        wait_for_file "$BATS_TEST_TMPDIR/st" 100
        cat "$BATS_TEST_TMPDIR/out"
        [ "$(cat "$BATS_TEST_TMPDIR/st")" -eq 3 ]
        id=$("$HUTCH" ls --sandbox x10 --json | jq -r 'select(.argv[2] == "touch started; sleep 2; echo done; exit 3") | .id')
        run "$HUTCH" show --json "$id"
        [ "$(jq -r .status <<<"$output")" = failed ]
        [ "$(jq -r .exit_code <<<"$output")" -eq 3 ]
        [ "$(jq -r .stdout <<<"$output")" = done ]
}

@test "an exec moves and links files across directories as a run does (its own Landlock domain allows it)" {
        start_sandbox mv1
        # rename(2) and link(2) into another directory: what git, pip and
        # a compiler's temp files do; EXDEV from a domain that denied it
        run -0 "$HUTCH" exec mv1 -- python3 -c '
import os
os.makedirs("/tmp/m/d", exist_ok=True)
open("/tmp/m/f", "w").close()
os.rename("/tmp/m/f", "/tmp/m/d/f")
os.link("/tmp/m/d/f", "/tmp/m/g")
os.mkdir("/tmp/m/x")
os.rename("/tmp/m/x", "/tmp/m/d/x")
print("moved")'
        [ "$output" = moved ]
        run -0 "$HUTCH" exec mv1 -- sh -c 'cd /workspace && git init -q r && cd r && echo a > a && git add a &&
                git -c user.email=t@t -c user.name=t commit -qm m && git log --oneline | wc -l'
        [ "$output" = 1 ]
}
