#!/usr/bin/env bats
# hutch mcp's live sessions (hutch-mcp(1), "Live sessions"): a session's
# calls exec into one live sandbox started by its first call, so files
# and processes stay between calls; it stops at the idle timeout, when
# the server exits (committing by the session's policy) and when the
# server is killed (its keeper stops it); nothing is left on the host.
# The client is mcp-live.py (mcp-session.py's, every structuredContent
# checked against its outputSchema).

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
        LIVE="$TESTS_DIR/integration/mcp-live.py"
}

teardown() {
        local s
        for s in $("$HUTCH" sandbox ls --json 2>/dev/null | jq -r .name); do
                "$HUTCH" sandbox stop "$s" || true
        done
}

live() {
        python3 "$LIVE" "$@"
}

# scenario NAME [ARGS...]: mcp-live.py's scenario NAME runs and says ok
# (its output shown first, so a failure says why)
scenario() {
        run live "$@"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"ok $1"* ]]
}

@test "mcp live: run_command starts a background server that a later call talks to; list_processes, list_ports" {
        scenario server
}

@test "mcp live: --publish: a server in a session's sandbox answers on the host at the port list_ports names" {
        scenario publish -- --publish 8765
}

@test "mcp live: run_code keeps python and node variables between calls, across an error" {
        command -v node >/dev/null || skip "node not installed"
        scenario kernels --era modern
        scenario nokernels -- --no-kernels
}

@test "mcp live: a kernel call turned away busy is a retryable error (sandbox_busy), recorded nowhere" {
        scenario kernel_busy --era modern
}

@test "mcp live: the server runs kernel calls itself: a slow one holds no other session's call; each is a complete record" {
        scenario kernel_parallel --era modern
        # the server's exit does not wait for a looping kernel call's deadline
        scenario kernel_exit
}

@test "mcp live: kernel calls of four sessions at once, 25 rounds: each answer a stored run of its own; the store sound" {
        scenario kernel_threads --era modern
}

@test "mcp live: notifications/cancelled interrupts a kernel call as its deadline would; no answer, recorded cancelled, state kept" {
        scenario kernel_cancel --era modern
}

@test "mcp live: a file and a process stay between calls; imports, stdin, env, a compiled language, a timeout" {
        scenario state --era modern
}

@test "mcp live: a process an earlier call left watching /tmp can neither read nor replace a later run_code call's source" {
        command -v cc >/dev/null || skip "cc not installed"
        scenario watched
}

@test "mcp live: a call's stdin and env reach it and land nowhere in the store; files work" {
        scenario private --era modern
}

@test "mcp live: a NUL byte an exec or a kernel call writes shows as U+FFFD, the result whole; stdin with one is refused" {
        scenario nul
}

@test "mcp live: three calls on one session sent at once run in order, one at a time, in its sandbox" {
        # mcp-session.py's scenario, on a live server (the default) named so
        run -0 python3 "$TESTS_DIR/integration/mcp-session.py" session_queue -- --sessions live
        echo "$output"
        [[ "$output" == *"ok session_queue"* ]]
}

@test "mcp live: the server's exit stops the sandbox, commits its files, leaves no process" {
        scenario exit
}

@test "mcp live: commit never on the latest call throws the sandbox's files away at its stop; success keeps a success" {
        scenario never --era modern
}

@test "mcp live: SIGTERM to the server stops and commits the sandbox, then exits 0" {
        scenario term
}

@test "mcp live: SIGKILL of the server: its keeper stops the sandbox, no process is left" {
        scenario killed -- --idle-timeout 777s
}

@test "mcp live: the idle timeout stops the session's sandbox; its run has the change set and artifacts; the next call starts a new one" {
        scenario idle -- --idle-timeout 2s
}

@test "mcp live: a profile a live sandbox refuses (gvisor) runs the call fresh and says so" {
        printf '[sandbox]\nruntime = gvisor\n' > "$BATS_TEST_TMPDIR/gvisor.ini"
        scenario fallback -- --profile "$BATS_TEST_TMPDIR/gvisor.ini"
}

@test "mcp live: --max-sessions 2: a third session is refused (admission_full), nothing of it runs; the two still work" {
        scenario cap -- --max-sessions 2
        scenario cap_burst -- --max-sessions 2
        # a session stopped by its idle timeout no longer counts
        scenario cap_idle -- --max-sessions 1 --idle-timeout 2s
        run -2 "$HUTCH" mcp --max-sessions 0
        [[ "$output" == *"max-sessions"* ]]
        run -2 "$HUTCH" mcp --max-sessions 65
        run -2 "$HUTCH" mcp --max-sessions 2 --sessions fresh
        [[ "$output" == *"--max-sessions goes with live sessions"* ]]
        run -0 "$HUTCH" mcp --help
        [[ "$output" == *"--max-sessions N"* ]]
}

@test "mcp live: --sessions and --idle-timeout take only valid values; fresh sessions list no live tools" {
        run -2 "$HUTCH" mcp --sessions sometimes
        [[ "$output" == *"sessions"* ]]
        run -2 "$HUTCH" mcp --idle-timeout 0
        [[ "$output" == *"idle-timeout"* ]]
        run -2 "$HUTCH" mcp --publish 70000
        [[ "$output" == *"publish"* ]]
        run -2 "$HUTCH" mcp --publish 8000 --sessions fresh
        [[ "$output" == *"--publish goes with live sessions"* ]]
        run -2 "$HUTCH" mcp --kernels --sessions fresh
        [[ "$output" == *"--kernels goes with live sessions"* ]]
        run -0 python3 "$TESTS_DIR/integration/mcp-session.py" no_apply -- --sessions fresh
}
