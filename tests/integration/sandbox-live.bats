#!/usr/bin/env bats
# Live sandboxes: `hutch sandbox start|ls|stop` and `hutch exec`. State
# lives across execs (files, background processes); an exec's timeout
# ends that exec only; stop and the idle timeout leave nothing running
# on the host; every exec is a complete record; the control socket
# answers only its own user, from its own user namespace.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() { common_setup; }

teardown() { stop_sandboxes; }

@test "a file and a background process an exec leaves are there for the next exec" {
        start_sandbox s1
        run "$HUTCH" exec s1 -- sh -c 'echo kept > note; sleep 3011 >/dev/null 2>&1 & echo started'
        [ "$status" -eq 0 ]
        [ "$output" = "started" ]
        run "$HUTCH" exec s1 -- cat note
        [ "$status" -eq 0 ]
        [ "$output" = "kept" ]
        run "$HUTCH" exec s1 -- sh -c 'pgrep -x sleep >/dev/null && ps -o args= -p "$(pgrep -x sleep)"'
        [ "$status" -eq 0 ]
        [ "$output" = "sleep 3011" ]
        # a fresh `hutch run` shares none of it
        run "$HUTCH" run -q -- sh -c 'cat note'
        [ "$status" -ne 0 ]
}

@test "an exec's timeout kills its process group and leaves the sandbox and its state alive" {
        start_sandbox s2
        run "$HUTCH" exec s2 -- sh -c 'sleep 3012 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        run "$HUTCH" exec s2 --timeout 1s -- sh -c 'echo before; sleep 3013; echo never'
        [ "$status" -eq 124 ]
        [[ "$output" == before* ]]
        [[ "$output" != *never* ]]
        id=$("$HUTCH" ls --sandbox s2 --json | head -n 1 | jq -r .id)
        [ "$("$HUTCH" show "$id" --json | jq -r .status)" = timeout ]
        # the timed-out job's group is gone, the earlier background job is not
        run "$HUTCH" exec s2 -- sh -c 'ps -o args= -A | grep "^sleep" | sort'
        [ "$status" -eq 0 ]
        [ "$output" = "sleep 3012" ]
}

@test "an exec's job gets a run's job's privileges, and the sandbox's namespaces" {
        start_sandbox s12
        status_of='grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status'
        run "$HUTCH" exec s12 -- sh -c "$status_of"
        [ "$status" -eq 0 ]
        exec_status=$output
        run "$HUTCH" run -q -- sh -c "$status_of"
        [ "$status" -eq 0 ]
        [ "$exec_status" = "$output" ]
        [[ "$exec_status" == *"CapEff:	0000000000000000"* && "$exec_status" == *"NoNewPrivs:	1"* ]]
        [[ "$exec_status" == *"Seccomp:	2"* ]]
        ns='for n in mnt pid net user ipc uts; do readlink /proc/self/ns/$n; done'
        first=$("$HUTCH" exec s12 -- sh -c "$ns")
        second=$("$HUTCH" exec s12 -- sh -c "$ns")
        [ "$first" = "$second" ]
        host=$(sh -c "$ns")
        for n in $first; do
                [[ "$host" != *"$n"* ]]
        done
}

@test "execs into one sandbox run side by side" {
        start_sandbox s10
        # A waits for a file B makes once A has started: they overlap
        "$HUTCH" exec s10 --timeout 20s -- sh -c 'touch a-started; while [ ! -e go ]; do sleep 0.05; done; echo A' \
                > "$BATS_TEST_TMPDIR/a.out" &
        a=$!
        run "$HUTCH" exec s10 --timeout 20s -- sh -c 'while [ ! -e a-started ]; do sleep 0.05; done; touch go; echo B'
        [ "$status" -eq 0 ]
        [ "$output" = B ]
        wait "$a"
        [ "$(cat "$BATS_TEST_TMPDIR/a.out")" = A ]
}

@test "each exec is a complete record, labelled with its sandbox" {
        start_sandbox s3
        run "$HUTCH" exec s3 -- sh -c 'echo out; echo err >&2; exit 3'
        [ "$status" -eq 3 ]
        id=$("$HUTCH" ls --sandbox s3 --json | head -n 1 | jq -r .id)
        run "$HUTCH" show "$id" --json
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.status == "failed" and .exit_code == 3 and .stdout == "out\n"
                and .stderr == "err\n" and .labels.sandbox == "s3" and .duration_ms != null
                and .finished_at != null and .argv == ["sh", "-c", "echo out; echo err >&2; exit 3"]
                and .profile_sha256 != null and .limits != null and .enforcement != null'
        run "$HUTCH" exec s3 --json -- echo hi
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.status == "success" and .stdout == "hi\n" and .labels.sandbox == "s3"'
        run -127 "$HUTCH" exec s3 -- no-such-command-here
        [ "$status" -eq 127 ]
        [ "$("$HUTCH" ls --sandbox s3 --json | wc -l)" -eq 3 ]
        # a reader that goes away takes nothing from the record
        "$HUTCH" exec s3 -- sh -c 'yes | head -c 1000000' | head -c 4 >/dev/null
        "$HUTCH" ls --sandbox s3 --json | head -n 1 | jq -e '.status == "success" and .stdout_bytes == 1000000'
}

@test "a job holds its own exec's stdio pipes and no other fd" {
        start_sandbox s9
        fds='for n in 0 1 2 3 4 5 6 7 8 9 10 11 12; do [ -e /proc/$$/fd/$n ] && echo "$n $(readlink /proc/$$/fd/$n | cut -d: -f1)"; done; true'
        run "$HUTCH" exec s9 -- sh -c "$fds"
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf '0 pipe\n1 pipe\n2 pipe')" ]
        # the next exec's pipes are new ones
        first=$("$HUTCH" exec s9 -- readlink /proc/self/fd/1)
        second=$("$HUTCH" exec s9 -- readlink /proc/self/fd/1)
        [[ "$first" == pipe:* && "$second" == pipe:* && "$first" != "$second" ]]
}

@test "sandbox stop ends every process of the sandbox on the host" {
        start_sandbox s4
        run "$HUTCH" exec s4 -- sh -c 'sleep 3014 >/dev/null 2>&1 & (sleep 3015 >/dev/null 2>&1 &) ; true'
        [ "$status" -eq 0 ]
        procs=$(sandbox_processes s4)
        [ "$(echo "$procs" | wc -l)" -ge 3 ]
        sandbox_id=$(state s4 id)
        run "$HUTCH" sandbox stop s4
        [ "$status" -eq 0 ]
        # stop returns once the supervisor is gone: nothing is left
        run any_alive $procs
        [ "$status" -ne 0 ]
        not_listed s4
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/s4.sock" ]
        run "$HUTCH" show "$sandbox_id" --json
        echo "$output" | jq -e '.status == "success" and (.message | test("stopped"))'
        run "$HUTCH" exec s4 -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"no running sandbox s4"* ]]
}

@test "hutch kill on the sandbox's run stops it, cancelled" {
        start_sandbox s11
        run "$HUTCH" exec s11 -- sh -c 'sleep 3017 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        procs=$(sandbox_processes s11)
        sandbox_id=$(state s11 id)
        run "$HUTCH" kill "$sandbox_id"
        [ "$status" -eq 0 ]
        wait_until not_listed s11
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
        WAIT_TENTHS=50 wait_until eval '[ "$("$HUTCH" show "$sandbox_id" --json | jq -r .status)" = cancelled ]'
}

# Run `hutch exec $1 ARGS...` (a job that prints "started", then waits),
# kill sandbox $1's supervisor under it, and check the run: cancelled,
# 143, how long it ran, its output, and a message with $2.
kill_under() {
        local name=$1 says=$2 client rc=0 id
        shift 2
        "$HUTCH" exec "$name" "$@" >"$BATS_TEST_TMPDIR/out" 2>&1 &
        client=$!
        wait_for_file "$BATS_TEST_TMPDIR/out" 100
        sleep 0.3
        kill -KILL "$(state "$name" supervisor_pid)"
        wait "$client" || rc=$?
        [ "$rc" -eq 143 ]
        id=$("$HUTCH" ls --sandbox "$name" --json | head -n 1 | jq -r .id)
        "$HUTCH" show "$id" --json | jq -e --arg says "$says" '.status == "cancelled" and .exit_code == 143 and
                .duration_ms >= 300 and (.message | contains($says + ": its supervisor went away")) and
                .stdout == "started\n"'
}

@test "a supervisor killed with SIGKILL takes its sandbox with it" {
        start_sandbox s13
        run "$HUTCH" exec s13 -- sh -c 'sleep 3018 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        procs=$(sandbox_processes s13)
        kill -KILL "$(state s13 supervisor_pid)"
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
        # ls drops what it left; the name is free again
        not_listed s13
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/s13.sock" ]
        start_sandbox s13
        # an exec running then: the sandbox ended under it, which its
        # record says as a stop does (143, cancelled, how long it ran)
        kill_under s13 "ended while the exec ran" -- sh -c 'echo started; exec sleep 3019'
        # and a kernel call the same
        command -v python3 >/dev/null || return 0
        start_sandbox s13
        kill_under s13 "ended while the call ran" --kernel python \
                -c 'print("started", flush=True); import time; time.sleep(3019)'
}

@test "the idle timeout stops the sandbox by itself, never under a running exec" {
        start_sandbox s5 --idle-timeout 2s
        run "$HUTCH" exec s5 -- sh -c 'sleep 3016 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        # an exec longer than the idle timeout: the sandbox waits for it
        run "$HUTCH" exec s5 -- sleep 3
        [ "$status" -eq 0 ]
        listed s5
        procs=$(sandbox_processes s5)
        sandbox_id=$(state s5 id)
        WAIT_TENTHS=100 wait_until not_listed s5
        WAIT_TENTHS=50 wait_until eval '! any_alive $procs'
        WAIT_TENTHS=50 wait_until eval '[ "$("$HUTCH" show "$sandbox_id" --json | jq -r .message)" = "sandbox s5 stopped after its idle timeout" ]'
}

@test "the control socket is private and answers no other user namespace" {
        start_sandbox s6
        [ "$(stat -c %a "$HUTCH_STATE_DIR/sandboxes")" = 700 ]
        [ "$(stat -c %a "$HUTCH_STATE_DIR/sandboxes/s6.sock")" = 600 ]
        command -v unshare >/dev/null || skip "no unshare(1)"
        unshare -U --map-root-user true 2>/dev/null || skip "user namespaces are not available here"
        # a ping from a child user namespace (where every job is) gets no answer
        cd "$HUTCH_STATE_DIR/sandboxes"
        ping='import socket,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.connect("s6.sock")
s.send(b"P"+bytes(15)); d=s.recv(256); sys.exit(0 if d[:1]==b"p" else 3)'
        run python3 -c "$ping"
        [ "$status" -eq 0 ]
        run unshare -U --map-user="$(id -u)" --map-group="$(id -g)" python3 -c "$ping"
        [ "$status" -ne 0 ]
        listed s6
}

@test "bad names, unknown sandboxes and duplicates are refused with a message" {
        run "$HUTCH" exec no-such-box -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"no running sandbox no-such-box"* ]]
        run "$HUTCH" exec ../x -- true
        [ "$status" -eq 2 ]
        run "$HUTCH" sandbox start 'bad/name'
        [ "$status" -eq 2 ]
        run "$HUTCH" sandbox start s7 --idle-timeout soon
        [ "$status" -eq 2 ]
        # a run option start does not know is named as start's, and
        # start's help is its own, not hutch run's
        run "$HUTCH" sandbox start s7 --bogus
        [ "$status" -eq 2 ]
        [ "$output" = "hutch: sandbox start: unknown option '--bogus' (see hutch sandbox start --help)" ]
        run "$HUTCH" sandbox start s7 --help
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "Usage: hutch sandbox start "* ]]
        run "$HUTCH" sandbox ls --json
        [ -z "$output" ]
        start_sandbox s7
        run "$HUTCH" sandbox start s7
        [ "$status" -eq 125 ]
        [[ "$output" == *"s7 is running already"* ]]
        run "$HUTCH" sandbox start s8 -- true
        [ "$status" -eq 2 ]
}

@test "a start whose setup fails leaves no socket and no sandbox to list; a refused duplicate leaves the running one" {
        run "$HUTCH" sandbox start s16 --ro /nonexistent-for-hutch
        [ "$status" -eq 125 ]
        [[ "$output" == *"/nonexistent-for-hutch"* ]]
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/s16.sock" ]
        run "$HUTCH" sandbox ls --json
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        start_sandbox s16
        run "$HUTCH" sandbox start s16
        [ "$status" -eq 125 ]
        run "$HUTCH" exec s16 -- echo still-here
        [ "$status" -eq 0 ]
        [ "$output" = still-here ]
}

@test "a supervisor whose loop fails (poll: RLIMIT_NOFILE lowered under it) stops its sandbox as a stop does" {
        command -v prlimit >/dev/null || skip "no prlimit(1)"
        start_sandbox s14 --session s14w --commit always
        run "$HUTCH" exec s14 -- sh -c 'echo kept > f; sleep 3020 >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        "$HUTCH" exec s14 -- sh -c 'touch /tmp/up; exec sleep 3021' >"$BATS_TEST_TMPDIR/exec.out" 2>&1 &
        local exec_pid=$!
        wait_until "$HUTCH" exec s14 -- test -e /tmp/up
        procs=$(sandbox_processes s14)
        local sup sandbox_id
        sup=$(state s14 supervisor_pid)
        sandbox_id=$(state s14 id)
        # poll() refuses more fds than RLIMIT_NOFILE (EINVAL), and the
        # supervisor polls more than 64: its next round fails
        prlimit --pid "$sup" --nofile=64:64
        run "$HUTCH" exec s14 -- true
        WAIT_TENTHS=100 wait_until eval '! kill -0 $sup 2>/dev/null'
        run any_alive $procs
        [ "$status" -ne 0 ]
        # its state file and socket are gone, as after a stop
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/s14.json" ]
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/s14.sock" ]
        not_listed s14
        # the running exec heard that the sandbox stopped, and is recorded so
        run wait "$exec_pid"
        [ "$status" -eq 143 ]
        grep -q "the sandbox stopped while the job ran" "$BATS_TEST_TMPDIR/exec.out"
        run "$HUTCH" ls --sandbox s14 --json
        [ "$(jq -rs 'map(select(.argv[-1] | test("sleep 3021"))) | .[0].status' <<<"$output")" = cancelled ]
        # the sandbox's run says its supervisor failed, and its
        # workspace was committed as --commit always says
        run "$HUTCH" show "$sandbox_id" --json
        [ "$(jq -r .status <<<"$output")" = setup_error ]
        [ "$(jq -r .message <<<"$output")" = "supervisor failed: Invalid argument" ]
        [ "$(cat "$HUTCH_STATE_DIR/sessions/s14w/tree/f")" = kept ]
}

@test "under a hard open-files limit too low for its supervisor, start is refused and leaves nothing" {
        # below 512 the supervisor's poll set and what it holds beside
        # would not fit: its setup, signalfd() or poll() failed then,
        # after the sandbox's run had begun; now start says so at once
        local n before
        before=$("$HUTCH" ls --json | wc -l)
        for n in 8 16 64 300 511; do
                run bash -c 'ulimit -n "$1" && exec "$HUTCH" sandbox start "s15-$1"' _ "$n"
                [ "$status" -eq 125 ]
                [[ "$output" == *"needs 512 open files, and the hard RLIMIT_NOFILE is $n (raise it: ulimit -Hn 512)"* ]]
                [ ! -e "$HUTCH_STATE_DIR/sandboxes/s15-$n.sock" ]
                [ ! -e "$HUTCH_STATE_DIR/sandboxes/s15-$n.json" ]
        done
        # refused before its run began: no row
        [ "$("$HUTCH" ls --json | wc -l)" -eq "$before" ]
}

@test "a low soft RLIMIT_NOFILE is raised for the supervisor, not for its execs" {
        # the supervisor polls some 190 fds: under a soft limit of 100 its
        # poll() failed and the sandbox stopped at once
        run bash -c "ulimit -Sn 100 && exec \"\$HUTCH\" sandbox start s17"
        [ "$status" -eq 0 ]
        wait_until listed s17
        run "$HUTCH" exec s17 -- sh -c 'echo up; ulimit -n'
        [ "$status" -eq 0 ]
        # the job's soft limit is its own (1024), not the caller's
        [ "$output" = "up
1024" ]
}
