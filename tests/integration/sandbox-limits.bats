#!/usr/bin/env bats
# A live sandbox's limits hold for the sandbox as a whole, every exec and
# every background process together, and a sandbox that hits one says
# which: memory and cpu_time stop it (its run and the execs running then
# end as oom / cpu_timeout); pids and disk refuse the fork or the write
# and the execs that ran then say so. HUTCH_CGROUP=none pins the
# mechanisms without a cgroup (the watchdog, RLIMIT_NPROC, the scratch
# tmpfs); tests/vm/t/35-hutch-live-limits.sh covers the cgroup ones.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() {
        common_setup
        export HUTCH_CGROUP=none
}

teardown() { stop_sandboxes; }

# The newest exec of sandbox $1, as show --json prints it.
last_exec() { "$HUTCH" show "$("$HUTCH" ls --sandbox "$1" --json | head -n 1 | jq -r .id)" --json; }

# Whether the run $1's status is $2.
run_status_is() { [ "$("$HUTCH" show "$1" --json | jq -r .status)" = "$2" ]; }

@test "the report and sandbox ls say what holds each limit, for the whole sandbox" {
        start_sandbox l1 --memory 64M --pids 32
        "$HUTCH" sandbox ls --json | jq -e 'select(.name == "l1") |
                .limits == {"memory": "watchdog", "cpu_time": "none", "pids": "rlimit", "disk": "tmpfs size"}
                and .limits_hit == []'
        run "$HUTCH" show "$(state l1 id)" --json
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.enforcement.limits | .memory.mechanism == "watchdog" and .memory.partial == true
                and .memory.scope == "sandbox" and .pids.scope == "sandbox" and .disk.scope == "sandbox"
                and .cpu_time.scope == "sandbox" and .timeout.scope == "exec" and .nofile.scope == "process"'
        # an exec's record carries the sandbox's report
        run "$HUTCH" exec l1 --json -- true
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.enforcement.limits.memory.scope == "sandbox"'
}

@test "a background memory hog stops the sandbox: its run and the running exec say memory limit" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l2 --memory 64M
        # an exec that waits, to be running when the limit is hit
        "$HUTCH" exec l2 --timeout 60s -- sh -c 'touch waiting; sleep 3021; echo never' \
                > "$BATS_TEST_TMPDIR/waiter.out" 2>&1 &
        waiter=$!
        wait_until "$HUTCH" exec l2 -- test -e waiting
        procs=$(sandbox_processes l2)
        sandbox_id=$(state l2 id)
        # the hog starts once the exec that started it has ended
        run "$HUTCH" exec l2 -- sh -c '(while kill -0 $$ 2>/dev/null; do sleep 0.05; done
                exec python3 -c "import time; x = bytearray(400 << 20); time.sleep(3022)") >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        hog_exec=$("$HUTCH" ls --sandbox l2 --json | head -n 1 | jq -r .id)
        rc=0
        wait "$waiter" || rc=$?
        [ "$rc" -eq 137 ]
        [[ "$(cat "$BATS_TEST_TMPDIR/waiter.out")" == *"the sandbox stopped: memory limit 64M exceeded: the watchdog measured"* ]]
        # the waiting exec's record: oom, with the limit named
        waiter_id=$("$HUTCH" ls --sandbox l2 --json | jq -r 'select(.argv[0] == "sh" and (.argv[2] | test("sleep 3021"))) | .id')
        "$HUTCH" show "$waiter_id" --json | jq -e '.status == "oom" and .exit_code == 137
                and (.message | startswith("the sandbox stopped: memory limit 64M exceeded"))'
        # the exec that started the hog had ended well before
        run_status_is "$hog_exec" success
        # the sandbox's own run
        wait_until not_listed l2
        WAIT_TENTHS=50 wait_until run_status_is "$sandbox_id" oom
        "$HUTCH" show "$sandbox_id" --json | jq -e '.exit_code == 137 and
                (.message | test("^sandbox l2 stopped: memory limit 64M exceeded: the watchdog measured [0-9]+M in use"))'
        # nothing of it is left on the host
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
}

@test "an exec that is itself the hog ends as oom, and so does the sandbox" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l3 --memory 64M
        procs=$(sandbox_processes l3)
        sandbox_id=$(state l3 id)
        # it holds the memory, as a hog does: without a cgroup the limit
        # is the 50 ms watchdog's, which a process that fills 400M and
        # exits at once can outrun on a loaded host
        run "$HUTCH" exec l3 --timeout 60s -- python3 -c 'import time; x = bytearray(400 << 20); time.sleep(10); print("survived")'
        [ "$status" -eq 137 ]
        [[ "$output" != *survived* ]]
        last_exec l3 | jq -e '.status == "oom" and (.message | test("memory limit 64M"))'
        wait_until not_listed l3
        WAIT_TENTHS=50 wait_until run_status_is "$sandbox_id" oom
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
}

@test "memory under the limit, summed over execs, leaves the sandbox alone" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l4 --memory 200M
        run "$HUTCH" exec l4 -- sh -c 'python3 -c "import time; x = bytearray(50 << 20); time.sleep(3023)" >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        run "$HUTCH" exec l4 -- python3 -c 'x = bytearray(50 << 20); print("ok")'
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
        listed l4
}

@test "the cpu_time budget is the sandbox's, summed over every exec: used up, it stops" {
        start_sandbox l5 --cpu-time 1s
        sandbox_id=$(state l5 id)
        procs=$(sandbox_processes l5)
        # four loops, none of which alone reaches RLIMIT_CPU's 1s first
        run "$HUTCH" exec l5 --timeout 60s -- sh -c 'for i in 1 2 3 4; do (while :; do :; done) & done; wait'
        [ "$status" -eq 124 ]
        last_exec l5 | jq -e '.status == "cpu_timeout" and
                (.message | startswith("the sandbox stopped: cpu time limit 1s exceeded: the watchdog counted"))'
        wait_until not_listed l5
        WAIT_TENTHS=50 wait_until run_status_is "$sandbox_id" cpu_timeout
        "$HUTCH" show "$sandbox_id" --json | jq -e '.exit_code == 124 and (.message | test("^sandbox l5 stopped: cpu time limit 1s"))'
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
}

@test "the cpu_time budget counts children nobody waits for (SIGCHLD ignored)" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l5b --cpu-time 2s
        # ten children of 0.4 s, one after another, reaped by the kernel
        run "$HUTCH" exec l5b --timeout 60s -- python3 -c "$(cat "$BATS_TEST_DIRNAME/cpu-burn.py")" unwaited 10 0.4
        echo "$output"
        [ "$status" -eq 124 ]
        [[ "$output" != *done* ]]
        last_exec l5b | jq -e '.status == "cpu_timeout"'
        wait_until not_listed l5b
}

@test "a fork bomb is bounded by the sandbox's pids limit, and the exec says so" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l6 --pids 32
        # a background process of an earlier exec counts against it too
        run "$HUTCH" exec l6 -- sh -c 'sleep 3024 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        run "$HUTCH" exec l6 --timeout 60s -- python3 -c '
import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(1); os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)
while True:
    try: os.wait()
    except ChildProcessError: break'
        [ "$status" -eq 0 ]
        read -r word n errno <<<"$output"
        [ "$word" = stopped ]
        # init, the sleep and python count too
        [ "$n" -le 29 ]
        [ "$errno" -eq 11 ]
        last_exec l6 | jq -e '.status == "success" and (.message | test("^the sandbox: pids limit 32 reached"))'
        "$HUTCH" sandbox ls --json | jq -e 'select(.name == "l6") | .limits_hit == ["pids"]'
        # the sandbox goes on; an exec that forks nothing much is not told
        run "$HUTCH" exec l6 -- sh -c 'echo fine'
        [ "$status" -eq 0 ]
        [ "$output" = fine ]
        last_exec l6 | jq -e '.message == null'
        sandbox_id=$(state l6 id)
        run "$HUTCH" sandbox stop l6
        [ "$status" -eq 0 ]
        "$HUTCH" show "$sandbox_id" --json | jq -e '.status == "success" and (.message | test("pids limit 32 reached"))'
}

@test "a full scratch is the disk limit: the exec that hit it says so" {
        start_sandbox l7 --disk 16M
        run "$HUTCH" exec l7 -- sh -c 'head -c 20M /dev/zero > big'
        [ "$status" -ne 0 ]
        [[ "$output" == *"No space left on device"* ]]
        last_exec l7 | jq -e '.status == "failed" and
                .message == "the sandbox: disk limit 16M reached: the sandbox'"'"'s scratch was full (writes failed with ENOSPC)"'
        "$HUTCH" sandbox ls --json | jq -e 'select(.name == "l7") | .limits_hit == ["disk"]'
        # room again: the next exec is not told
        run "$HUTCH" exec l7 -- rm big
        [ "$status" -eq 0 ]
        run "$HUTCH" exec l7 -- sh -c 'echo 1 > small; cat small'
        [ "$status" -eq 0 ]
        [ "$output" = 1 ]
        last_exec l7 | jq -e '.status == "success" and .message == null'
        # /tmp is on the same scratch
        run "$HUTCH" exec l7 -- sh -c 'head -c 20M /dev/zero > /tmp/big'
        [ "$status" -ne 0 ]
        last_exec l7 | jq -e '.message | test("disk limit 16M reached")'
        sandbox_id=$(state l7 id)
        run "$HUTCH" sandbox stop l7
        [ "$status" -eq 0 ]
        "$HUTCH" show "$sandbox_id" --json | jq -e '.message | test("disk limit 16M reached")'
}

@test "a kernel call that is the hog: the sandbox stops, and the call's record names the limit" {
        command -v python3 >/dev/null || skip "python3 not installed"
        start_sandbox l8 --memory 64M
        sandbox_id=$(state l8 id)
        run "$HUTCH" exec l8 --kernel python -c 'x = 1'
        [ "$status" -eq 0 ]
        run "$HUTCH" exec l8 --kernel python --timeout 60s -c 'y = bytearray(400 << 20)'
        [ "$status" -eq 143 ]
        last_exec l8 | jq -e '.status == "cancelled" and
                (.message | startswith("the sandbox stopped: memory limit 64M exceeded: the watchdog measured"))'
        wait_until not_listed l8
        WAIT_TENTHS=50 wait_until run_status_is "$sandbox_id" oom
}
