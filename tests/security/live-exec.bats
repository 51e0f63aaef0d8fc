#!/usr/bin/env bats
# live-exec.bats - hostile cases of the suite, run as execs into one live
# sandbox (hutch sandbox start, then hutch exec): an exec must reach
# neither the supervisor nor init's channel to it, nor another exec's
# stdio, nor the host, and what it starts must not outlive the sandbox.
# Each case attacks from inside and then looks at the host, the other
# exec's record, or the supervisor.

load lib

# One sandbox for the whole file, as an agent's loop would use it.
setup_file() {
        export HUTCH_STATE_DIR="$BATS_FILE_TMPDIR/state"
        export BOX=hostile
        local rc=0 out
        out=$("$HUTCH" sandbox start "$BOX" --ro "$PROBE" 2>&1) || rc=$?
        if [ "$rc" -eq 125 ]; then
                export BOX_SKIP="hutch sandbox start cannot set up a sandbox here: $out"
                return 0
        fi
        [ "$rc" -eq 0 ] || { echo "sandbox start: $out" >&2; return 1; }
}

teardown_file() {
        "$HUTCH" sandbox stop "$BOX" >/dev/null 2>&1 || true
}

setup() {
        # set before any skip: teardown runs after a skipped setup too
        SECS=$(unique_secs)
        M=$(marker)
        VICTIM=
        [ -z "${BOX_SKIP:-}" ] || skip "$BOX_SKIP"
        under_landlock && skip "live sandboxes run in the namespace tier here"
        under_gvisor && skip "live sandboxes do not take runtime gvisor"
        true
}

teardown() {
        [ -n "${VICTIM:-}" ] && kill -9 "$VICTIM" 2>/dev/null
        [ -n "${SECS:-}" ] && kill_matching "$SECS"
        true
}

# box CMD...: hutch exec into the file's sandbox, via bats' run
box() {
        run "$HUTCH" exec "$BOX" "$@"
}

supervisor_pid() { jq -r .supervisor_pid "$HUTCH_STATE_DIR/sandboxes/$BOX.json"; }
init_pid() { jq -r .init_pid "$HUTCH_STATE_DIR/sandboxes/$BOX.json"; }

wait_until() {
        local i
        for ((i = 0; i < 50; i++)); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        "$@"
}

# The kernel offers Landlock (each exec's job gets a domain of its own).
landlock_present() {
        python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(444, None, 0, 1) >= 1 else 1)' 2>/dev/null
}

assert_box_alive() {
        kill -0 "$(supervisor_pid)" || { echo "the supervisor is gone" >&2; return 1; }
        local out
        out=$("$HUTCH" exec "$BOX" -- echo alive) || { echo "exec after the attack: $out" >&2; return 1; }
        [ "$out" = alive ]
}

@test "live-exec: an exec cannot open another exec's stdio through /proc/PID/fd" {
        landlock_present || skip "this kernel has no Landlock: execs of one sandbox share a uid and a pid namespace"
        # exec A: a shell whose stdin we feed late and whose output is
        # recorded; its command line says A$SECS (B's never does)
        mkfifo "$BATS_TEST_TMPDIR/feed"
        "$HUTCH" exec "$BOX" --stdin -- sh -c "cat; : A$SECS" < "$BATS_TEST_TMPDIR/feed" \
                > "$BATS_TEST_TMPDIR/a.out" 2>&1 &
        local a=$!
        exec 7> "$BATS_TEST_TMPDIR/feed"
        wait_until "$HUTCH" exec "$BOX" -- pgrep -f "A$SECS"
        # exec B: write into A's stdout and stderr, read A's stdin
        box -- sh -c 'for p in $(pgrep -f "A"'"$SECS"'); do
                        for fd in 1 2; do echo "injected'"$M"'" > /proc/$p/fd/$fd && echo "WROTE $p/$fd"; done
                        timeout 2 head -c 64 /proc/$p/fd/0 && echo "READ $p/0"
                        ls -l /proc/$p/fd/ | grep -q pipe && echo "SAW $p"
                done 2>/dev/null; echo B-done'
        local b_out=$output
        echo "secret$M" >&7
        exec 7>&-
        wait "$a"
        [[ "$b_out" == B-done ]] || { echo "exec B reached A's stdio: $b_out" >&2; false; }
        [ "$(cat "$BATS_TEST_TMPDIR/a.out")" = "secret$M" ] || { echo "A's output: $(cat "$BATS_TEST_TMPDIR/a.out")" >&2; false; }
        local id
        id=$("$HUTCH" ls --sandbox "$BOX" --json | jq -r --arg s "A$SECS" 'select(.argv[0] == "sh" and (.argv[2] | contains($s))) | .id')
        "$HUTCH" show "$id" --json | jq -e --arg m "secret$M" '.stdout == $m + "\n" and .stderr == ""'
}

@test "live-exec: what an earlier exec left running cannot write into a later exec's output" {
        landlock_present || skip "this kernel has no Landlock: execs of one sandbox share a uid and a pid namespace"
        # a spy, left in the background, writes into every pipe it can open
        box -- sh -c '(while :; do for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do
                echo "spy'"$M"'" 2>/dev/null > "$f"; done; sleep 0.05; done) >/dev/null 2>&1 &
                echo started'
        [ "$status" -eq 0 ]
        box -- sh -c 'sleep 1; echo mine'
        local later=$output
        kill_matching "spy$M"
        [ "$later" = mine ] || { echo "the later exec's output: $later" >&2; false; }
        "$HUTCH" show "$("$HUTCH" ls --sandbox "$BOX" --json | head -n 1 | jq -r .id)" --json |
                jq -e '.argv[2] == "sleep 1; echo mine" and .stdout == "mine\n"'
}

@test "live-exec: an exec cannot trace or signal init, nor see its channel to the supervisor" {
        box -- "$PROBE" ptrace 1
        [ "$status" -eq 0 ]
        assert_refused
        box -- sh -c 'ls /proc/1/fd/ 2>&1; readlink /proc/1/fd/* 2>&1; kill -9 1 2>&1; true'
        [[ "$output" != *socket:* ]] || { echo "init's fds are visible: $output" >&2; false; }
        assert_box_alive
        # the control socket is not in the sandbox at all
        box -- sh -c "test -e '$HUTCH_STATE_DIR/sandboxes/$BOX.sock' && echo VISIBLE; ls /proc/*/fd/ -l 2>/dev/null | grep -c 'sock' ; true"
        [[ "$output" != *VISIBLE* ]]
}

@test "live-exec: an exec cannot kill or trace the supervisor or another host process" {
        sleep "$SECS" &
        VICTIM=$!
        local sup
        sup=$(supervisor_pid)
        box -- "$PROBE" kill 9 "$sup"
        [ "$status" -eq 0 ]
        [ "$output" = "killed 0" ]
        box -- "$PROBE" kill 9 "$VICTIM"
        [ "$status" -eq 0 ]
        [ "$output" = "killed 0" ]
        box -- "$PROBE" ptrace "$VICTIM"
        [ "$status" -eq 0 ]
        assert_refused
        kill -0 "$VICTIM"
        [ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$VICTIM/status")" = 0 ]
        assert_box_alive
}

@test "live-exec: kill -9 -1 in an exec ends that sandbox's processes only" {
        sleep "$SECS" &
        VICTIM=$!
        box -- sh -c 'kill -9 -1; sleep 0.2; echo survived'
        [[ "$output" == *survived* ]]
        kill -0 "$VICTIM"
        assert_box_alive
}

@test "live-exec: hutch exec's environment and stdin file stay out of the job" {
        local victim="$BATS_TEST_TMPDIR/notes.txt"
        echo "precious $M" > "$victim"
        chmod 666 "$victim"
        export GITHUB_TOKEN="gh$M"
        box --stdin -- sh -c 'exec 2>/dev/null; env; cat /proc/*/environ; echo X > /proc/self/fd/0; readlink /proc/self/fd/0; true' < "$victim"
        unset GITHUB_TOKEN
        [[ "$output" != *"gh$M"* ]] || { echo "the caller's environment reached the job: $output" >&2; false; }
        [[ "$output" == *"pipe:["* ]]
        [ "$(cat "$victim")" = "precious $M" ]
}

@test "live-exec: daemons an exec leaves do not outlive the sandbox's stop" {
        # a sandbox of its own: this case stops it
        run "$HUTCH" sandbox start "$BOX-stop" --ro "$PROBE"
        [ "$status" -eq 0 ]
        run "$HUTCH" exec "$BOX-stop" -- sh -c "$PROBE daemon $SECS >/dev/null; $PROBE pdeathsig $SECS >/dev/null;
                nohup sleep $SECS >/dev/null 2>&1 & setsid sleep $SECS & (trap '' TERM HUP; exec sleep $SECS) & echo started"
        [ "$status" -eq 0 ]
        [[ "$output" == *started* ]]
        [ -n "$(host_pids_matching "$SECS")" ]
        run "$HUTCH" sandbox stop "$BOX-stop"
        [ "$status" -eq 0 ]
        wait_gone "$SECS"
}

@test "live-exec: with the control socket mounted in, an exec can neither ask for a job nor stop the sandbox" {
        command -v python3 >/dev/null || skip "no python3"
        # a sandbox given its own control socket's dir (no profile does
        # this): hutch masks sockets in what it binds, or (as root, the
        # dir unreadable by the sandbox's user) refuses to build it
        run "$HUTCH" sandbox start "$BOX-sock" --ro "$HUTCH_STATE_DIR/sandboxes:/control"
        if [ "$status" -eq 125 ] && [[ "$output" == *"mask socket or fifo /control"* ]]; then
                return 0
        fi
        [ "$status" -eq 0 ]
        local before
        before=$("$HUTCH" ls --sandbox "$BOX-sock" --json | wc -l)
        # from inside: a ping, an exec request (as hutch exec builds one:
        # op, version 3, timeout, flags, then cwd and argv) and a stop
        run "$HUTCH" exec "$BOX-sock" -- python3 -c '
import socket, struct, sys
said = []
for msg in (b"P" + bytes(15),
            struct.pack("=cxHxxxxQI4x", b"X", 3, 0, 0) + b"/\0touch\0/tmp/escaped'"$M"'\0",
            b"S" + bytes(15)):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(3)
        s.connect("/control/'"$BOX-sock"'.sock")
        s.send(msg)
        d = s.recv(256)
        said.append(d[:1])
    except OSError as e:
        said.append(type(e).__name__.encode())
print(said)
sys.exit(3 if any(d in (b"p", b"F", b"E", b"B") for d in said) else 0)'
        echo "$output"
        [ "$status" -eq 0 ]
        # nothing ran, nothing was recorded, and the sandbox is up
        [ ! -e "/tmp/escaped$M" ]
        run "$HUTCH" exec "$BOX-sock" -- sh -c "test -e /tmp/escaped$M && echo ESCAPED; echo up"
        [ "$output" = up ]
        [ "$("$HUTCH" ls --sandbox "$BOX-sock" --json | wc -l)" -eq $((before + 2)) ]
        "$HUTCH" sandbox stop "$BOX-sock"
}
