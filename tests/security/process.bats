#!/usr/bin/env bats
# process.bats - process escapes: the job tries to trace, signal and
# outlive things; the host side then checks that its own process (a
# `sleep` with a known pid) is alive and untraced, and that nothing the
# job started is still running once hutch has returned, or after hutch was
# killed with SIGKILL.

load lib

setup() {
        # before require_sandbox: teardown runs after a skipped setup too
        SECS=$(unique_secs)
        VICTIM=
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
}

teardown() {
        [ -n "$VICTIM" ] && kill -9 "$VICTIM" 2>/dev/null
        kill_matching "$SECS"
        true
}

# A host process the job will attack; its pid in $VICTIM.
start_victim() {
        sleep "$SECS" &
        VICTIM=$!
}

assert_victim_alive() {
        kill -0 "$VICTIM" || { echo "host process $VICTIM was killed" >&2; return 1; }
        local tracer
        tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$VICTIM/status")
        [ "$tracer" = 0 ] || { echo "host process $VICTIM is traced by $tracer" >&2; return 1; }
        grep -q '^State:.*[SR]' "/proc/$VICTIM/status" || {
                grep '^State:' "/proc/$VICTIM/status" >&2
                return 1
        }
}

@test "process: ptrace of init is refused" {
        sandboxed -- "$PROBE" ptrace 1
        [ "$status" -eq 0 ]
        assert_refused
}

@test "process: ptrace of a host process is refused and leaves it untraced" {
        start_victim
        sandboxed -- "$PROBE" ptrace "$VICTIM"
        [ "$status" -eq 0 ]
        assert_refused
        assert_victim_alive
}

@test "process: ptrace of another process in the sandbox is refused" {
        sandboxed -- sh -c "sleep 5 & $PROBE ptrace \$!; kill \$!"
        [ "$status" -eq 0 ]
        assert_refused
}

# --allow-ptrace lets the job trace its own processes, nothing more: init
# is not dumpable and the host's processes are outside the pid namespace.
@test "process: with --allow-ptrace yes, init and host processes still cannot be traced" {
        start_victim
        sandboxed --allow-ptrace yes -- "$PROBE" ptrace 1
        [ "$status" -eq 0 ]
        assert_refused
        sandboxed --allow-ptrace yes -- "$PROBE" ptrace "$VICTIM"
        [ "$status" -eq 0 ]
        assert_refused
        assert_victim_alive
}

@test "process: kill -9 of a host pid does not reach it" {
        start_victim
        sandboxed -- "$PROBE" kill 9 "$VICTIM"
        [ "$status" -eq 0 ]
        [ "$output" = "killed 0" ]
        assert_victim_alive
}

@test "process: guessing host pids (kill -9 over a range) reaches none of them" {
        start_victim
        local lo=$((VICTIM > 300 ? VICTIM - 300 : 2)) hi=$((VICTIM + 300))
        # unconfined, a sweep would kill the test runner: aim at the victim
        selftest && lo=$VICTIM hi=$VICTIM
        sandboxed -- "$PROBE" kill 9 "$lo" "$hi"
        [ "$status" -eq 0 ]
        assert_victim_alive
}

@test "process: kill -9 -1 inside kills nothing on the host" {
        skip_in_selftest "unconfined, kill -9 -1 would kill every process of this user"
        start_victim
        sandboxed -- sh -c 'kill -9 -1; sleep 0.2; echo survived'
        assert_victim_alive
        # the job's own shell is not spared by kill -1 from itself? It is:
        # POSIX kill(-1) skips the caller, so it must still print
        [[ "$output" == *survived* ]]
}

@test "process: a double-forked setsid daemon does not survive the run" {
        sandboxed -- "$PROBE" daemon "$SECS"
        [ "$status" -eq 0 ]
        wait_gone "$SECS"
}

@test "process: nohup, setsid and a SIGTERM/SIGHUP-ignoring process do not survive" {
        sandboxed --grace 1s -- sh -c "
                nohup sleep $SECS >/dev/null 2>&1 &
                setsid sleep $SECS &
                (trap '' TERM HUP INT; exec sleep $SECS) &
                sh -c 'trap \"\" TERM HUP; sleep $SECS & wait' &
                sleep 0.3; echo started"
        [ "$status" -eq 0 ]
        [[ "$output" == *started* ]]
        wait_gone "$SECS"
}

@test "process: a subreaper that cleared its parent-death signal does not survive" {
        sandboxed -- "$PROBE" pdeathsig "$SECS"
        [ "$status" -eq 0 ]
        wait_gone "$SECS"
}

@test "process: a job that outlives the wall-clock limit leaves nothing behind" {
        sandboxed --timeout 1s --grace 500ms -- sh -c "
                (trap '' TERM; exec sleep $SECS) & $PROBE daemon $SECS; trap '' TERM; sleep $SECS"
        [ "$status" -eq 124 ]
        wait_gone "$SECS"
}

# The host pids under $1, all generations.
descendants() {
        local p
        for p in $(pgrep -P "$1"); do
                echo "$p"
                descendants "$p"
        done
}

@test "process: hutch killed with SIGKILL mid-run leaves nothing running" {
        if under_gvisor; then
                # the job's processes live in gVisor's kernel, not on the
                # host; what runs on the host is runsc's (sentry, gofer,
                # stubs): all of hutch's descendants must die with it
                cmd=$(sandbox_cmd -- sh -c "$PROBE daemon $SECS; (trap '' TERM HUP; exec sleep $SECS) & exec sleep $SECS")
                bash -c "exec $cmd" >/dev/null 2>&1 &
                local hutch=$! tree="" i p
                for ((i = 0; i < 100; i++)); do
                        tree=$(descendants "$hutch")
                        [ -n "$tree" ] && ps -o args= -p "$(echo $tree | tr ' ' ,)" | grep -q '^runsc-sandbox' && break
                        sleep 0.1
                done
                ps -o args= -p "$(echo $tree | tr ' ' ,)" | grep -q '^runsc-sandbox' || { echo "no runsc sandbox under hutch" >&2; false; }
                sleep 1
                tree=$(descendants "$hutch")
                kill -9 "$hutch"
                wait "$hutch" || true
                for ((i = 0; i < 30; i++)); do
                        local left=""
                        for p in $tree; do
                                [ -d "/proc/$p" ] && [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" != Z ] && left="$left $p"
                        done
                        [ -z "$left" ] && return 0
                        sleep 0.1
                done
                echo "still running on the host:$left ($(ps -o args= -p "$(echo $left | tr ' ' ,)" | cut -c1-60 | xargs))" >&2
                false
        fi
        cmd=$(sandbox_cmd -- sh -c "$PROBE daemon $SECS; (trap '' TERM HUP; exec sleep $SECS) & exec sleep $SECS")
        bash -c "exec $cmd" >/dev/null 2>&1 &
        local hutch=$!
        # wait for the job's processes to show on the host
        for ((i = 0; i < 50; i++)); do
                [ "$(host_pids_matching "^sleep $SECS" | wc -l)" -ge 2 ] && break
                sleep 0.1
        done
        [ "$(host_pids_matching "^sleep $SECS" | wc -l)" -ge 2 ]
        kill -9 "$hutch"
        wait "$hutch" || true
        wait_gone "$SECS" 30
}
