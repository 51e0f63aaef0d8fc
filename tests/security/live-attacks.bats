#!/usr/bin/env bats
# live-attacks.bats - attacks on the live-sandbox surfaces from inside
# (a job, or what an earlier exec left running) and what they must not
# reach. Each case names the attack; the checks look at what the victim
# saw and what the attacker got.

load lib

setup() {
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        unset HUTCH_CGROUP
        under_landlock && skip "live sandboxes run in the namespace tier here"
        under_gvisor && skip "live sandboxes do not take runtime gvisor"
        true
}

teardown() {
        local s
        [ -n "${HUTCH_STATE_DIR:-}" ] || return 0
        for s in $("$HUTCH" sandbox ls --json 2>/dev/null | jq -r .name); do
                [ -n "$s" ] && "$HUTCH" sandbox stop "$s" >/dev/null 2>&1
        done
        true
}

@test "live-attacks: symlinks and FIFOs an earlier MCP call plants in /tmp get no later call's stdin or env, nor run its code" {
        run python3 "$BATS_TEST_DIRNAME/../integration/mcp-live.py" planted
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"ok planted"* ]]
}

@test "live-attacks: a newline in a process's command line or name adds no entry to MCP list_processes" {
        run python3 "$BATS_TEST_DIRNAME/../integration/mcp-live.py" forged_ps
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"ok forged_ps"* ]]
}

# The kernel offers Landlock (each job of a live sandbox gets a domain of its own).
landlock_present() {
        python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.syscall(444, None, 0, 1) >= 1 else 1)' 2>/dev/null
}

@test "live-attacks: an exec cannot reach a kernel's fds through /proc; the kernel's next call is its own" {
        landlock_present || skip "this kernel has no Landlock: execs of one sandbox share a uid and a pid namespace"
        local box=kattack m
        m=$(marker)
        run "$HUTCH" sandbox start "$box"
        [ "$status" -ne 125 ] || skip "hutch sandbox start cannot set up a sandbox here: $output"
        [ "$status" -eq 0 ]
        run "$HUTCH" exec "$box" --kernel python -c 'x = 20'
        [ "$status" -eq 0 ] || skip "no python kernel here: $output"
        # the kernel's fds (its request socket, which the driver keeps
        # at a high fd, and its output pipes), through /proc
        run "$HUTCH" exec "$box" -- sh -c 'for d in /proc/[0-9]*; do p=${d#/proc/}
                        [ "$p" = $$ ] || [ "$p" = 1 ] && continue
                        grep -q python /proc/$p/cmdline 2>/dev/null || continue
                        echo "kernel $p"
                        ls -l /proc/$p/fd/ 2>/dev/null | grep -q -e socket: -e pipe: && echo "SAW $p"
                        for fd in 0 1 2 3 4 5 6 7 8 9; do
                                timeout 1 sh -c "echo injected'"$m"' > /proc/$p/fd/$fd" 2>/dev/null && echo "WROTE $p/$fd"
                        done
                done; echo done'
        echo "$output"
        [[ "$output" == *kernel* ]]
        [[ "$output" != *WROTE* && "$output" != *SAW* ]]
        # the next call is the kernel's own: its state, its output only
        run "$HUTCH" exec "$box" --kernel python -c 'print("out"); x * 2'
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *out* && "$output" == *40* && "$output" != *injected* ]]
        "$HUTCH" sandbox stop "$box"
}
