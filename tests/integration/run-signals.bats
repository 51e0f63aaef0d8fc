#!/usr/bin/env bats
# hutch run: init, reaping, signals, timeouts, and the sandbox's lifetime.

bats_require_minimum_version 1.5.0
load lib

setup() { common_setup; }

@test "--timeout 1s on sleep 100 exits 124 within 4s" {
        start=$(date +%s%N)
        run "$HUTCH" run --timeout 1s -- sleep 100
        end=$(date +%s%N)
        [ "$status" -eq 124 ]
        [[ "$output" == *"timed out after 1s"* ]]
        [ $(( (end - start) / 1000000 )) -lt 4000 ]
}

@test "a job that ignores SIGTERM is killed after the grace period" {
        start=$(date +%s%N)
        run "$HUTCH" run --timeout 300ms --grace 500ms -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
        end=$(date +%s%N)
        [ "$status" -eq 124 ]
        [ $(( (end - start) / 1000000 )) -lt 3000 ]
}

@test "on timeout the job gets SIGTERM first" {
        run "$HUTCH" run --timeout 500ms -- sh -c 'trap "echo got-term; exit 0" TERM; sleep 10 & wait'
        [ "$status" -eq 124 ]
        [[ "$output" == *got-term* ]]
}

# The record of the newest run: status exit_code signal job_exit_code.
last_end() {
        "$HUTCH" ls --json --limit 1 | jq -r '[.status, .exit_code, .signal, .job_exit_code] | map(tostring) | join(" ")'
}

@test "a job that traps SIGTERM and exits 7 when stopped: status and hutch's code say why, job_exit_code the job's 7" {
        local trap7='trap "exit 7" TERM; echo ready; sleep 30 & wait'
        # at its deadline
        run --separate-stderr "$HUTCH" run --json --timeout 500ms -- sh -c "$trap7"
        [ "$status" -eq 124 ]
        [ "$(jq -r '[.status, .exit_code, .signal, .job_exit_code] | map(tostring) | join(" ")' <<<"$output")" = \
                "timeout 124 null 7" ]
        # cancelled: SIGTERM to hutch, and hutch kill
        local out="$BATS_TEST_TMPDIR/out" pid st id
        "$HUTCH" run -- sh -c "$trap7" > "$out" &
        pid=$!
        wait_for_file "$out"
        kill -TERM "$pid"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 143 ]
        [ "$(last_end)" = "cancelled 143 null 7" ]
        : > "$out"
        "$HUTCH" run -- sh -c "$trap7" > "$out" &
        pid=$!
        wait_for_file "$out"
        id=$("$HUTCH" ls --json --status running | jq -r .id)
        run "$HUTCH" kill "$id"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 143 ]
        [ "$(last_end)" = "cancelled 143 null 7" ]
        run "$HUTCH" show "$id"
        [[ "$output" == *"143 (the job exited 7)"* ]]
        # killed, not exited: no code of its own
        run "$HUTCH" run --timeout 300ms --grace 300ms -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
        [ "$status" -eq 124 ]
        [[ "$(last_end)" == "timeout 124 "*" null" ]]
        # a job that ends by itself: its code is hutch's
        run "$HUTCH" run -- sh -c 'exit 3'
        [ "$status" -eq 3 ]
        [ "$(last_end)" = "failed 3 null 3" ]
}

@test "zombies are reaped: a job leaving 100 zombies exits cleanly" {
        run "$HUTCH" run --timeout 20s -- sh -c 'for i in $(seq 100); do sh -c "exit 0" & done; sleep 0.5; ps -eo stat= 2>/dev/null | grep -c Z || true; exec true'
        [ "$status" -eq 0 ]
        run "$HUTCH" run --timeout 20s -- sh -c '(for i in $(seq 100); do sh -c "exit 0" & done; exec sleep 1) & sleep 2; ls -d /proc/[0-9]* | wc -l'
        [ "$status" -eq 0 ]
        # init + sh + ls: every orphaned zombie was reaped by init
        [ "$output" -le 4 ]
}

@test "a daemonised grandchild is gone on the host when hutch returns" {
        m=$(unique)
        run "$HUTCH" run -- sh -c "(setsid bash -c 'exec -a $m sleep 1000' </dev/null >/dev/null 2>&1 &) ; sleep 0.3; exit 0"
        [ "$status" -eq 0 ]
        ! host_has_process "$m"
}

@test "SIGINT and SIGTERM reach the job" {
        out="$BATS_TEST_TMPDIR/out"
        "$HUTCH" run -- sh -c 'trap "echo got-int; exit 7" INT; echo ready; while :; do sleep 0.05; done' > "$out" &
        pid=$!
        wait_for_file "$out"
        kill -INT "$pid"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 7 ]
        grep -q got-int "$out"

        : > "$out"
        "$HUTCH" run -- sh -c 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.05; done' > "$out" &
        pid=$!
        wait_for_file "$out"
        kill -TERM "$pid"
        st=0; wait "$pid" || st=$?
        # SIGTERM to hutch cancels the run after letting the job clean up
        [ "$st" -eq 143 ]
        grep -q got-term "$out"
}

@test "other forwarded signals reach the job: HUP, USR1, USR2, QUIT" {
        for sig in HUP USR1 USR2 QUIT; do
                out="$BATS_TEST_TMPDIR/out-$sig"
                "$HUTCH" run -- sh -c "trap 'echo got-$sig; exit 5' $sig; echo ready; while :; do sleep 0.05; done" > "$out" &
                pid=$!
                wait_for_file "$out"
                kill -"$sig" "$pid"
                st=0; wait "$pid" || st=$?
                [ "$st" -eq 5 ]
                grep -q "got-$sig" "$out"
        done
}

@test "a second SIGINT cancels the run and kills the tree (130)" {
        out="$BATS_TEST_TMPDIR/out"
        "$HUTCH" run -- sh -c 'trap "echo got-int" INT; echo ready; while :; do sleep 0.05; done' > "$out" 2>&1 &
        pid=$!
        wait_for_file "$out"
        kill -INT "$pid"
        # the first reached the job, which goes on; only then the second
        # (two at once would be one pending signal)
        wait_until grep -q got-int "$out"
        kill -INT "$pid"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 130 ]
}

@test "hutch killed with SIGKILL leaves no sandbox processes behind" {
        m=$(unique)
        out="$BATS_TEST_TMPDIR/out"
        "$HUTCH" run -- bash -c "echo ready; exec -a $m sleep 1000" > "$out" &
        pid=$!
        wait_for_file "$out"
        host_has_process "$m"
        # every process hutch started (the sandbox's init, the job, any
        # helper), taken while hutch lives: after the kill none may stay
        tree=$(descendants "$pid")
        [ -n "$tree" ]
        kill -KILL "$pid"
        for i in $(seq 50); do
                any_alive $tree || break
                sleep 0.1
        done
        run any_alive $tree
        [ "$status" -eq 1 ] || { echo "still alive: $output" >&2; false; }
        run host_has_process "$m"
        [ "$status" -eq 1 ]
}

@test "kill -9 -1 inside kills only the sandbox" {
        m=$(unique)
        bash -c "exec -a $m sleep 30" &
        outside=$!
        run "$HUTCH" run -- sh -c 'sleep 100 & kill -9 -1; echo survived'
        host_has_process "$m"
        kill "$outside"
}

@test "a stderr nobody reads does not hold hutch after the deadline: its closing line is bounded too" {
        # stderr is a pipe, filled, whose reader never reads: the job's
        # output was never the problem, hutch's own "timed out after 2s"
        # written blocking was, and held hutch until someone read
        run python3 - "$HUTCH" <<'EOF2'
import fcntl, os, subprocess, sys, time
r, w = os.pipe()
fl = fcntl.fcntl(w, fcntl.F_GETFL)
fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    while True:
        os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, fl)
t = time.monotonic()
p = subprocess.Popen([sys.argv[1], "run", "--timeout", "2s", "--grace", "2s", "--", "sleep", "60"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=w)
os.close(w)
try:
    rc = p.wait(timeout=2 + 2 + 4)    # the deadline, the grace, and room for a slow host
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    print("still running after %.1f s" % (time.monotonic() - t))
    sys.exit(1)
print("exit", rc, "after %.1f s" % (time.monotonic() - t))
EOF2
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == "exit 124 after"* ]]
        [[ "$("$HUTCH" ls --json | head -n 1)" == *'"status":"timeout"'* ]]
}

@test "a job ignores no signal, whatever hutch's caller ignored (libc's own 32 and 33 too)" {
        # execve keeps an ignored signal: the caller's SIG_IGN must stop
        # at hutch, for a run and for an exec into a sandbox started so
        run "$PROBE" ignoring "$HUTCH" run -- grep SigIgn /proc/self/status
        [ "$status" -eq 0 ]
        [ "$output" = "SigIgn:	0000000000000000" ]
        run "$PROBE" ignoring "$HUTCH" sandbox start sigign
        [ "$status" -eq 0 ]
        run "$PROBE" ignoring "$HUTCH" exec sigign -- grep SigIgn /proc/self/status
        "$HUTCH" sandbox stop sigign
        [ "$status" -eq 0 ]
        [ "$output" = "SigIgn:	0000000000000000" ]
}
