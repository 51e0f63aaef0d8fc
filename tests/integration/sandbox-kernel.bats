#!/usr/bin/env bats
# Persistent interpreters in a live sandbox: `hutch exec NAME --kernel
# python|node`. State lives across calls (variables, imports, open
# files); a final expression's value comes back; a call's timeout
# interrupts that call and the state survives; a kernel that dies is
# started afresh and the next call says the state was lost; whatever a
# kernel writes on its request channel cannot hang or crash the
# supervisor: a kernel that breaks the framing is killed.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() { common_setup; }

teardown() { stop_sandboxes; }

# py NAME CODE [exec options...]: one Python kernel call, in `run`
py() {
        local name=$1 code=$2
        shift 2
        run --separate-stderr "$HUTCH" exec "$name" "$@" --kernel python -c "$code"
}

# The supervisor still serves: an exec into the sandbox answers.
serves() {
        run "$HUTCH" exec "$1" -- echo up
        [ "$status" -eq 0 ]
        [ "$output" = "up" ]
}

# Python code that writes $1 (a Python bytes literal) to every socket it
# holds: the driver's request channel among them.
write_to_channel() {
        printf '%s\n' "import os" \
                "for fd in range(3, 256):" \
                "    try:" \
                "        if os.readlink(f'/proc/self/fd/{fd}').startswith('socket:'): os.write(fd, $1)" \
                "    except OSError: pass"
}

# The kernel of sandbox $1 was started afresh: marker is gone, and the
# call says the earlier state was lost.
kernel_restarted() {
        py "$1" 'marker'
        [ "$status" -eq 1 ] && [[ "$stderr" == *"NameError"* ]] && [[ "$stderr" == *"state of earlier calls was lost"* ]]
}

@test "python: variables, imports and open files persist across calls; a final expression's value comes back" {
        start_sandbox k1
        py k1 'import json
x = 41
f = open("/tmp/kept", "w")
x + 1'
        [ "$status" -eq 0 ]
        [ "$output" = "42" ]
        py k1 'x += 1; print("x is", x); f.write("one line\n"); f.flush(); json.dumps({"x": x})'
        [ "$status" -eq 0 ]
        [ "$output" = $'x is 42\n\'{"x": 42}\'' ]
        py k1 'f.close(); open("/tmp/kept").read()'
        [ "$status" -eq 0 ]
        [ "$output" = "'one line\\n'" ]
        # no value for a statement or for None, as in the REPL
        py k1 'y = 1'
        [ "$status" -eq 0 ]
        [ "$output" = "" ]
        py k1 'None'
        [ "$output" = "" ]
        # each call is a complete record, labelled with its sandbox and kernel
        run "$HUTCH" exec k1 --json --kernel python -c 'print("out"); x * 2'
        [ "$status" -eq 0 ]
        [ "$(jq -r .status <<<"$output")" = "success" ]
        [ "$(jq -r .stdout <<<"$output")" = $'out\n84' ]
        [ "$(jq -r .lang <<<"$output")" = "python" ]
        [ "$(jq -r .code <<<"$output")" = 'print("out"); x * 2' ]
        [ "$(jq -r .labels.kernel <<<"$output")" = "python" ]
        [ "$(jq -r .labels.sandbox <<<"$output")" = "k1" ]
        run "$HUTCH" ls --sandbox k1 --json
        [ "$(jq -s 'length' <<<"$output")" -eq 6 ]
}

@test "python: an exception is the call's error (exit 1, traceback on stderr); the state stays" {
        start_sandbox k2
        py k2 'n = 5'
        py k2 'n = 6; 1 / 0'
        [ "$status" -eq 1 ]
        [[ "$stderr" == *"ZeroDivisionError: division by zero"* ]]
        [[ "$stderr" == *'File "<kernel>", line 1'* ]]
        [[ "$stderr" != *"python.py"* ]]
        py k2 'n'
        [ "$status" -eq 0 ]
        [ "$output" = "6" ]
        py k2 'import sys; len(sys.stdin.read())'
        [ "$output" = "0" ]
        # the code comes from a file or stdin too
        echo 'n * 7' >"$BATS_TEST_TMPDIR/code.py"
        run "$HUTCH" exec k2 --kernel python --file "$BATS_TEST_TMPDIR/code.py"
        [ "$output" = "42" ]
        run "$HUTCH" exec k2 --kernel python --file - <<<'n + 1'
        [ "$output" = "7" ]
        # the exception's name is the code's to choose: its escapes reach
        # no JSON view (hutch-show(1): text fields are sanitised)
        run --separate-stderr "$HUTCH" exec k2 --json --kernel python \
                -c 'raise type("E\x1b]2;T\x07\x1b[31mRED", (Exception,), {})()'
        [ "$status" -eq 1 ]
        echo "$output" | jq -e '.message == "raised ERED"'
        id=$(echo "$output" | jq -r .id)
        "$HUTCH" show "$id" --json | jq -e '.message == "raised ERED"'
        run "$HUTCH" ls --sandbox k2 --json
        [[ "$output" != *$'\e'* ]]
}

@test "python: a call's timeout raises KeyboardInterrupt in it and the kernel's state survives" {
        start_sandbox k3
        py k3 'import time; count = 0'
        py k3 'while True:
    count += 1
    time.sleep(0.01)' --timeout 1s
        [ "$status" -eq 124 ]
        [[ "$stderr" == *"KeyboardInterrupt"* ]]
        [[ "$stderr" == *"the kernel and its state live on"* ]]
        py k3 'count > 10'
        [ "$status" -eq 0 ]
        [ "$output" = "True" ]
        [[ "$stderr" != *"lost"* ]]
        run "$HUTCH" ls --sandbox k3 --json
        [ "$(jq -rs '.[] | select(.exit_code == 124) | .status' <<<"$output")" = "timeout" ]
}

started() { "$HUTCH" exec "$1" -- test -e /tmp/started; }

# The hutch.error/1 of a busy refusal, in $output: retryable, 75.
busy_error() {
        [ "$(jq -r '[.schema, .error, .code, .retryable, .exit_code] | join(" ")' <<<"$output")" = \
                "hutch.error/1 busy sandbox_busy true 75" ]
}

@test "every job slot taken: a kernel call that must start its kernel is busy (75), recorded nowhere, as an exec is" {
        start_sandbox k10s
        local n clients=()
        for n in $(seq 16); do
                "$HUTCH" exec k10s -- sh -c "touch /tmp/slot$n; exec sleep 3027" >/dev/null 2>&1 &
                clients+=($!)
        done
        WAIT_TENTHS=100 wait_until eval '[ "$("$HUTCH" ls --sandbox k10s --json | jq -s "map(select(.status == \"running\")) | length")" -ge 16 ]'
        local runs
        runs=$("$HUTCH" ls --json | jq -s length)
        py k10s '1 + 1'
        [ "$status" -eq 75 ]
        [[ "$stderr" == *"every job slot of the sandbox is taken"*"; try again"* ]]
        # with --json (the client writes the row before asking), the
        # same: an error object, retryable, and no run
        py k10s '1 + 1' --json
        [ "$status" -eq 75 ]
        busy_error
        run "$HUTCH" exec k10s -- true
        [ "$status" -eq 75 ]
        run --separate-stderr "$HUTCH" exec k10s --json -- true
        [ "$status" -eq 75 ]
        busy_error
        # none of the four refusals is a run
        [ "$("$HUTCH" ls --json | jq -s length)" -eq "$runs" ]
        [ -z "$("$HUTCH" ls --json --label kernel=python)" ]
        kill "${clients[@]}"
        wait "${clients[@]}" || true
        # the slots are free again: the kernel starts
        WAIT_TENTHS=50 wait_until eval 'py k10s "1 + 1"; [ "$output" = 2 ]'
}

@test "one call at a time per kernel; an exec's timeout leaves the kernel alone; stop ends a running call" {
        start_sandbox k11
        py k11 'count = 1'
        "$HUTCH" exec k11 --kernel python -c 'open("/tmp/started", "w").close()
import time
while not __import__("os").path.exists("/tmp/go"): time.sleep(0.01)
count += 1' >"$BATS_TEST_TMPDIR/first" 2>&1 &
        local first=$!
        wait_until started k11
        py k11 'count'
        [ "$status" -eq 75 ]
        [[ "$stderr" == *"running another call"* ]]
        py k11 'count' --json
        [ "$status" -eq 75 ]
        busy_error
        # the refused calls are recorded nowhere: one kernel run so far
        # besides the one running
        [ "$("$HUTCH" ls --json --label kernel=python | jq -s length)" -eq 2 ]
        # the other language's kernel is free meanwhile
        if command -v node >/dev/null; then
                run "$HUTCH" exec k11 --kernel node -c '1 + 1'
                [ "$output" = "2" ]
        fi
        run "$HUTCH" exec k11 --timeout 1s -- sleep 30
        [ "$status" -eq 124 ]
        run "$HUTCH" exec k11 -- touch /tmp/go
        wait "$first"
        py k11 'count'
        [ "$status" -eq 0 ]
        [ "$output" = "2" ]
        [ -z "$stderr" ]
        # a call running when the sandbox stops ends cancelled (143)
        run "$HUTCH" exec k11 -- rm /tmp/started
        "$HUTCH" exec k11 --kernel python -c 'open("/tmp/started", "w").close(); import time; time.sleep(60)' \
                >"$BATS_TEST_TMPDIR/last" 2>&1 &
        local last=$!
        wait_until started k11
        run "$HUTCH" sandbox stop k11
        [ "$status" -eq 0 ]
        local st=0
        wait "$last" || st=$?
        [ "$st" -eq 143 ]
        grep -q "the sandbox stopped while the call ran" "$BATS_TEST_TMPDIR/last"
}

@test "python: a call whose hutch exec is killed is interrupted and recorded cancelled by the supervisor" {
        start_sandbox k2b
        py k2b 'x = 41'
        "$HUTCH" exec k2b --kernel python -c 'print("in", flush=True); import time; time.sleep(3021)' \
                >"$BATS_TEST_TMPDIR/out" 2>&1 &
        client=$!
        wait_for_file "$BATS_TEST_TMPDIR/out" 100
        kill -KILL "$client"
        wait "$client" || true
        id=$("$HUTCH" ls --sandbox k2b --json | head -n 1 | jq -r .id)
        # not left running for gc to call orphaned
        WAIT_TENTHS=50 wait_until eval '"$HUTCH" show "$id" --json | jq -e ".status == \"cancelled\"" >/dev/null'
        "$HUTCH" show "$id" --json | jq -e '.exit_code == 143 and
                (.message | startswith("its caller went away; the call was interrupted; the kernel and its state live on"))'
        py k2b 'x + 1'
        [ "$output" = "42" ]
}

@test "python: a kernel that does not stop at its interrupt is killed; the next call says its state was lost" {
        start_sandbox k4
        py k4 'marker = 1'
        py k4 'import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)
while True: pass' --timeout 1s
        [ "$status" -eq 124 ]
        [[ "$stderr" == *"did not stop at its interrupt"* ]]
        kernel_restarted k4
        serves k4
}

@test "python: the interrupt is repeated through the grace: code that swallows the first one is still interrupted, its state kept" {
        start_sandbox k15
        py k15 'marker = 7'
        # the first interrupt is caught and the code sleeps on; one lost
        # the same way (the driver not yet running the code) would leave
        # the call to run on to its kill, the kernel's state with it
        py k15 'import time
try:
    time.sleep(30)
except KeyboardInterrupt:
    pass
time.sleep(30)' --timeout 1s
        echo "status $status: $stderr"
        [ "$status" -eq 124 ]
        [[ "$stderr" == *KeyboardInterrupt* ]]
        [[ "$stderr" != *"did not stop at its interrupt"* ]]
        py k15 'marker * 6'
        [ "$status" -eq 0 ]
        [ "$output" = 42 ]
        [[ "$stderr" != *"state"*"lost"* ]]
}

@test "python: a kernel killed mid-call is started afresh and the next call says its state was lost" {
        start_sandbox k5
        py k5 'marker = 1; import os; os.getpid()'
        [ "$status" -eq 0 ]
        py k5 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'
        [ "$status" -eq 137 ]
        [[ "$stderr" == *"killed by signal 9"* ]]
        run "$HUTCH" show --json "$(last_run_id)"
        [[ "$(jq -r .message <<<"$output")" == *"its state is lost"* ]]
        kernel_restarted k5
        # said once: the call after that has nothing to say
        py k5 'marker = 2'
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
        # killed from another exec, between calls
        run "$HUTCH" exec k5 -- sh -c 'kill -9 $(pgrep -x python3)'
        [ "$status" -eq 0 ]
        kernel_restarted k5
}

@test "hostile kernel output: oversized, malformed, or extra reply bytes kill the kernel, never the supervisor" {
        start_sandbox k6
        local payload
        for payload in "b'\\xff\\xff\\xff\\xff' + b'x' * 100000" "b'\\x00\\x00\\x00\\x07notjson'" \
                "b'\\x00\\x00\\x00\\x14{\"status\":\"sideways\"}'" "b'\\x00\\x00\\x00\\x02{}' + b'\\0' * 50"; do
                py k6 'marker = 1'
                py k6 "$(write_to_channel "$payload")
import time; time.sleep(5)" --timeout 20s
                [ "$status" -eq 137 ]
                [[ "$stderr" == *"it was killed and its state is lost"* ]]
                kernel_restarted k6
                serves k6
        done
}

@test "hostile kernel output: bytes between calls kill the kernel; a flood of output is only output" {
        start_sandbox k7
        py k7 "marker = 1
import threading, time
def late():
    time.sleep(0.3)
$(write_to_channel "b'\\x00\\x00\\x00\\x10'" | sed 's/^/    /')
threading.Thread(target=late).start()"
        [ "$status" -eq 0 ]
        # killed between calls: no call pays for it (never 137), one
        # after it finds the state gone; 75 while the kill is under way
        local i
        for ((i = 0; i < 50; i++)); do
                py k7 'marker'
                [ "$status" -eq 0 ] || [ "$status" -eq 1 ] || [ "$status" -eq 75 ]
                [ "$status" -eq 1 ] && break
                sleep 0.1
        done
        [[ "$stderr" == *"NameError"* ]]
        [[ "$stderr" == *"state of earlier calls was lost"* ]]
        serves k7
        run "$HUTCH" exec k7 --json --kernel python -c 'import sys; sys.stdout.write("x" * 20000000); len("done")'
        [ "$status" -eq 0 ]
        [ "$(jq -r .stdout_bytes <<<"$output")" -eq 20000002 ]
        py k7 'marker'
        [ "$status" -eq 1 ]
        py k7 'marker = 3; marker'
        [ "$output" = "3" ]
}

# utime + stime of process $1, in clock ticks (/proc/PID/stat)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

@test "a kernel writing between calls costs the supervisor no CPU: it blocks on its full pipe; the next call drops what was pending" {
        start_sandbox k12
        local sup before after hz idle flood
        sup=$(state k12 supervisor_pid)
        hz=$(getconf CLK_TCK)
        # what the supervisor spends in 2 s with a quiet kernel (its 50 ms
        # tick walks the sandbox's processes): the same host, the same load
        py k12 'marker = 0'
        [ "$status" -eq 0 ]
        before=$(cpu_ticks "$sup")
        sleep 2
        after=$(cpu_ticks "$sup")
        idle=$(( (after - before) * 1000 / hz ))
        # a thread that writes as fast as it can for 2.5 s, past its call
        py k12 'import os, threading, time
def flood():
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        os.write(1, b"f" * 4095 + b"\n")
threading.Thread(target=flood, daemon=True).start()
marker = 7'
        [ "$status" -eq 0 ]
        before=$(cpu_ticks "$sup")
        sleep 2
        after=$(cpu_ticks "$sup")
        # Between calls the supervisor must not read the flood. Its own
        # work in 2 s (the limits' 50 ms tick, a call's end) is 0-30 ms
        # on a quiet host, more on a busy one: measured above as $idle;
        # reading and dropping the flood, as it did, took it about 1 s
        # here (half a core), and no less than a few hundred ms on a
        # busy host. Twice the quiet figure plus 150 ms is well clear of
        # both.
        flood=$(( (after - before) * 1000 / hz ))
        echo "supervisor CPU in 2 s: ${idle} ms quiet, ${flood} ms while the kernel flooded"
        [ "$flood" -lt $(( 2 * idle + 150 )) ]
        sleep 1
        # the next call works; what the kernel wrote before it is dropped
        # and said so, not passed off as the call's output (a write the
        # full pipe held blocked may still land: one line at most)
        py k12 'marker'
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" = 7 ]
        [ "${#output}" -le 4098 ]
        [[ "$stderr" =~ "exec: "[0-9]+" bytes the python kernel wrote between calls were dropped" ]]
        # the flood's last write, blocked on the full pipe until the call
        # above drained it, may land after that call's reply on a loaded
        # host: then this call drops it and says so, and says nothing else
        py k12 'marker + 1'
        [ "$output" = 8 ]
        [[ -z "$stderr" || ( "${#stderr_lines[@]}" -eq 1 &&
           "$stderr" =~ "exec: "[0-9]+" bytes the python kernel wrote between calls were dropped" ) ]]
}

@test "a call whose code leaves writers flooding its output still ends, however slowly its own output is read" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox k14
        # four writers that outlive the call keep its stdout pipe from
        # ever being empty while the caller's reader is slow: the call
        # takes what was there at its end, not until the pipe is empty
        cat > "$BATS_TEST_TMPDIR/flood.py" <<'PY'
import subprocess, time, fcntl
try:
    fcntl.fcntl(1, 1031, 1 << 20)
except OSError:
    pass
writers = [subprocess.Popen(["cat", "/dev/zero"]) for _ in range(4)]
time.sleep(0.3)
41
PY
        local t0 t1 rc
        t0=$(date +%s)
        rc=$(timeout 60 "$HUTCH" exec k14 --kernel python --file "$BATS_TEST_TMPDIR/flood.py" |
                python3 -c 'import sys, time
while sys.stdin.buffer.read1(16384):
    time.sleep(0.002)' >/dev/null; echo "${PIPESTATUS[0]}")
        t1=$(date +%s)
        echo "exec --kernel: $rc after $((t1 - t0)) s"
        [ "$rc" -eq 0 ]
        [ $((t1 - t0)) -lt 30 ]
        # the next call stops the writers; the kernel and its state live
        py k14 'for w in writers: w.kill()
len(writers)'
        [ "$status" -eq 0 ]
        [[ "$output" == *4 ]]
        serves k14
}

@test "node: state across calls, the final value, an interrupted call keeps the context" {
        command -v node >/dev/null || skip "node is not installed"
        start_sandbox k8
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'let a = 41; var b = [1, 2]; const fs = require("fs"); a + 1'
        [ "$status" -eq 0 ]
        [ "$output" = "42" ]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'a += 1; console.log("a is", a); ({ a, n: b.length, fs: typeof fs.readFileSync })'
        [ "$status" -eq 0 ]
        [ "$output" = $'a is 42\n{ a: 42, n: 2, fs: \'function\' }' ]
        run --separate-stderr "$HUTCH" exec k8 --timeout 1s --kernel node -c 'for (;;) { a++; }'
        [ "$status" -eq 124 ]
        [[ "$stderr" == *"Interrupted"* ]]
        run --separate-stderr "$HUTCH" exec k8 --timeout 1s --kernel node -c 'new Promise((r) => setTimeout(r, 60000))'
        [ "$status" -eq 124 ]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'a > 42'
        [ "$status" -eq 0 ]
        [ "$output" = "true" ]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'await_me = Promise.resolve(7)'
        [ "$output" = "7" ]
        # the code's stdin is empty, not the kernel's request channel
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'new Promise((r) => { let n = 0; process.stdin.on("data", (d) => { n += d.length; }); process.stdin.on("end", () => r(n)); })'
        [ "$status" -eq 0 ]
        [ "$output" = "0" ]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'throw new TypeError("boom")'
        [ "$status" -eq 1 ]
        [[ "$stderr" == *"TypeError: boom"* ]]
        [[ "$stderr" != *"node:internal"* ]]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'process.kill(process.pid, "SIGKILL")'
        [ "$status" -eq 137 ]
        run --separate-stderr "$HUTCH" exec k8 --kernel node -c 'typeof a'
        [ "$status" -eq 0 ]
        [ "$output" = "'undefined'" ]
        [[ "$stderr" == *"state of earlier calls was lost"* ]]
}

@test "a kernel is the sandbox's job: no capabilities, no_new_privs, seccomp; stop leaves none of it" {
        start_sandbox k9
        py k9 'print(open("/proc/self/status").read())'
        [ "$status" -eq 0 ]
        local kernel_status=$output
        run "$HUTCH" exec k9 -- cat /proc/self/status
        local grep_caps='^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):'
        [ "$(grep -E "$grep_caps" <<<"$kernel_status")" = "$(grep -E "$grep_caps" <<<"$output")" ]
        grep -qx $'NoNewPrivs:\t1' <<<"$kernel_status"
        grep -qx $'CapEff:\t0000000000000000' <<<"$kernel_status"
        # the kernel holds its stdio and its request channel, nothing else
        py k9 'import os
fds = {}
for f in os.listdir("/proc/self/fd"):
    try: fds[f] = os.readlink("/proc/self/fd/" + f).split(":")[0]
    except OSError: pass
fds'
        [ "$status" -eq 0 ]
        [ "$output" = "{'0': '/dev/null', '1': 'pipe', '2': 'pipe', '3': 'socket'}" ]
        local init procs
        init=$(jq -r .init_pid "$HUTCH_STATE_DIR/sandboxes/k9.json")
        procs=$(descendants "$init")
        local p comms=
        for p in $procs; do comms+=" $(cat "/proc/${p%%:*}/comm")"; done
        [[ "$comms" == *" python3"* ]]
        run "$HUTCH" sandbox stop k9
        [ "$status" -eq 0 ]
        run any_alive $procs
        [ "$status" -ne 0 ]
}

@test "exec --kernel: usage errors" {
        run "$HUTCH" exec nosuch --kernel python -c '1'
        [ "$status" -eq 125 ]
        [[ "$output" == *"no running sandbox nosuch"* ]]
        start_sandbox k10
        run "$HUTCH" exec k10 --kernel ruby -c '1'
        [ "$status" -eq 2 ]
        [[ "$output" == *"kernel"* ]]
        run "$HUTCH" exec k10 -c '1'
        [ "$status" -eq 2 ]
        [[ "$output" == *"need --kernel"* ]]
        run "$HUTCH" exec k10 --kernel python
        [ "$status" -eq 2 ]
        run "$HUTCH" exec k10 --kernel python -c 1 -- true
        [ "$status" -eq 2 ]
        run "$HUTCH" exec k10 --kernel python --file /nonexistent
        [ "$status" -eq 2 ]
        [[ "$output" == *"/nonexistent"* ]]
        run "$HUTCH" exec k10 --kernel python -c "$(head -c 70000 /dev/zero | tr '\0' 'x')"
        [ "$status" -eq 2 ]
}

@test "a kernel request of another wire version is refused before its code runs" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox k16
        py k16 'ran = 0'
        # struct live_kreq as this build lays it out, version 0 (another
        # hutch's client), then code that would say it ran
        run python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
req = struct.pack("=cxHxxxxQiII4x", b"K", 0, 0, 0, 0, 0)
s.send(req + b"ran = 1")
print(s.recv(65536).decode("latin-1"))' "$HUTCH_STATE_DIR/sandboxes/k16.sock"
        [ "$status" -eq 0 ]
        [[ "$output" == *"another version of hutch"* ]]
        py k16 'ran'
        [ "$output" = 0 ]
}
