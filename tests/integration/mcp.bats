#!/usr/bin/env bats
# hutch mcp (hutch-mcp(1)): scripted client sessions of both protocol
# eras over pipes (mcp-session.py): handshake, tools/list, calls that
# succeed, fail, time out and are cancelled, malformed lines, unknown
# tools, end of input with runs in flight, the operator's ceilings, the
# queue, long output and the history tools. Every structuredContent is
# validated against the outputSchema the server published.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
        SESSION="$TESTS_DIR/integration/mcp-session.py"
}

# Wait (up to 20 s) for file $1 to have a line matching $2.
wait_for_file_line() {
        local i
        for ((i = 0; i < 200; i++)); do
                grep -q -- "$2" "$1" 2>/dev/null && return 0
                sleep 0.1
        done
        return 1
}

session() {
        python3 "$SESSION" "$@"
}

@test "mcp: --help; a bad option or value is a usage error" {
        run -0 "$HUTCH" mcp --help
        [[ "$output" == *"--max-concurrent"* ]]
        run -2 "$HUTCH" mcp --max-timeout 0
        [[ "$output" == *"max-timeout"* ]]
        run -2 "$HUTCH" mcp --max-concurrent 1000
        run -2 "$HUTCH" mcp --net everywhere
        run -2 "$HUTCH" mcp --allow example.com
        [[ "$output" == *"--net allow"* ]]
        run -2 "$HUTCH" mcp stray
}

@test "mcp: a 2025-11-25 session: initialize, list, success, failure, timeout, cancel, bad lines, EOF in flight" {
        run -0 session session --era legacy
        echo "$output"
        [[ "$output" == *"ok session (era legacy)"* ]]
}

@test "mcp: a 2026-07-28 session: server/discover, _meta versions, resultType, and the same calls" {
        run -0 session session --era modern
        echo "$output"
        [[ "$output" == *"ok session (era modern)"* ]]
}

@test "mcp: versions: initialize negotiates a legacy one; an unknown _meta version gets -32022 with ours" {
        run -0 session versions --era legacy
        echo "$output"
        run -0 session versions --era modern
        echo "$output"
}

@test "mcp: --max-timeout and --max-memory are ceilings a call can only lower" {
        run -0 session ceilings -- --max-timeout 2s --max-memory 64M
        echo "$output"
}

@test "mcp: a profile's lower memory and timeout stay under higher flags" {
        run -0 session profile_ceilings -- --profile strict --max-memory 1G
        echo "$output"
}

@test "mcp: a language's profile stays under the ceilings (--max-memory, the default profile's)" {
        run -0 session lang_ceilings -- --max-memory 768M
        echo "$output"
        # the record names the profile used and the limits it got
        "$HUTCH" ls --json > "$BATS_TEST_TMPDIR/runs"
        run -0 python3 - "$BATS_TEST_TMPDIR/runs" <<'EOF2'
import json, sys
text = open(sys.argv[1]).read()
runs = json.loads(text) if text.lstrip().startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
got = sorted((r["argv"][0], r["profile"], r["limits"]["memory_bytes"]) for r in runs)
print(got)
assert got == [("node", "node", 768 << 20), ("python3", "python", 768 << 20), ("true", "default", 512 << 20)], got
EOF2
}

@test "mcp: a run-id prefix is resolved among the server's runs only" {
        run -0 session prefixes
        echo "$output"
}

@test "mcp: a call with 160,000 argv items is refused at once, naming /argv" {
        run -0 session big_argv -- --max-timeout 2s
        echo "$output"
}

@test "mcp: a profile that does not load stops the server with 125" {
        run -125 "$HUTCH" mcp --profile no-such-profile </dev/null
        [[ "$output" == *'no-such-profile'* ]]
}

@test "mcp: --max-concurrent 1 queues the second call; both get progress notifications" {
        run -0 session queue -- --max-concurrent 1
        echo "$output"
}

@test "mcp: three calls on one session sent at once run in order; progress at 5 s; the waiting ones say why" {
        run -0 session session_queue
        echo "$output"
}

@test "mcp: a session call's edit survives a failing run (commit always by default); commit never (--sessions fresh)" {
        # per call commits are the fresh sessions' (live ones: mcp-live.bats)
        run -0 session commit --era modern -- --sessions fresh
        echo "$output"
}

@test "mcp: two servers with different --scope see nothing of each other's runs, files or sessions" {
        # fresh sessions: an artifact is the call's own run's (a live
        # session's are recorded when its sandbox stops)
        run -0 session scopes -- --scope alpha --sessions fresh
        echo "$output"
        run -2 "$HUTCH" mcp --scope a-b
        [[ "$output" == *scope* ]]
}

@test "mcp: get_file pages a 3 MiB file with offset/limit; a PNG comes back as an image block" {
        run -0 session files_out --era modern
        echo "$output"
}

@test "mcp: --workdir DIR: runs see DIR, diff shows a run's change, apply (--allow-apply) writes it, refusing conflicts and protected paths" {
        export MCP_WORKDIR="$BATS_TEST_TMPDIR/repo"
        mkdir -p "$MCP_WORKDIR"
        echo first > "$MCP_WORKDIR/notes.txt"
        # the sandbox user (root's is unprivileged) must read DIR
        chmod -R a+rX "$BATS_TEST_TMPDIR"
        run -0 session workdir -- --workdir "$MCP_WORKDIR" --allow-apply
        echo "$output"
        run -2 "$HUTCH" mcp --allow-apply
        [[ "$output" == *--workdir* ]]
        run -2 "$HUTCH" mcp --workdir "$BATS_TEST_TMPDIR/nonexistent"
}

@test "mcp: without --allow-apply there is no apply tool" {
        run -0 session no_apply
        echo "$output"
}

@test "mcp: a timeout over the ceiling is said; list_runs shows language and first line; no host cwd" {
        run -0 session small -- --max-timeout 5s
        echo "$output"
}

@test "mcp: a session held outside the server is waited for, not an in-use failure" {
        run -0 session session_held
        echo "$output"
}

@test "mcp: a queued call starts within 0.5 s of a free slot" {
        run -0 session slot -- --max-concurrent 1
        echo "$output"
}

@test "mcp: the server's runs wait on the node's [admission] count instead of failing" {
        printf '[admission]\nmax_running = 1\n' > "$BATS_TEST_TMPDIR/one.ini"
        run -0 session node_queue -- --max-concurrent 2 --profile "$BATS_TEST_TMPDIR/one.ini"
        echo "$output"
}

@test "mcp: long output is cut head and tail with a marker; read_output pages all of it" {
        run -0 session output --era modern
        echo "$output"
}

@test "mcp: list_runs, read_output and get_file see this server's runs only; artifacts text and binary" {
        run -0 session history
        echo "$output"
}

@test "mcp: framing: blank, CRLF, response and over-long lines; nothing but JSON-RPC on stdout" {
        run -0 session framing
        echo "$output"
}

@test "mcp: a server killed with SIGKILL leaves its runs recorded cancelled, no process behind" {
        run -0 session killed
        echo "$output"
}

@test "mcp: SIGTERM to the server cancels the runs in flight and exits 0" {
        MCP_SIGNAL=15 run -0 session killed
        echo "$output"
}

@test "mcp: the runs' messages on the server's stderr carry their run id" {
        {
                printf '%s\n' \
                        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"log-test","version":"1"}}}' \
                        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["/nonexistent-hutch-prog"]}}}'
                wait_for_file_line "$BATS_TEST_TMPDIR/out" '"id":2'
        } | "$HUTCH" mcp > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err"
        id=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("id") == 2:
        print(m["result"]["structuredContent"]["id"])' "$BATS_TEST_TMPDIR/out")
        [ -n "$id" ]
        cat "$BATS_TEST_TMPDIR/err"
        grep -q "^hutch: \[$id\] command not found: /nonexistent-hutch-prog" "$BATS_TEST_TMPDIR/err"
}

@test "mcp: hutch ls --label finds a client's runs" {
        # input stays open until the answer is out: calls still queued at
        # end of input are dropped, never started
        {
                printf '%s\n' \
                        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"label-test","version":"1"}}}' \
                        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["true"]}}}'
                wait_for_file_line "$BATS_TEST_TMPDIR/out" '"id":2'
        } | "$HUTCH" mcp > "$BATS_TEST_TMPDIR/out"
        grep -q '"id":2,"result"' "$BATS_TEST_TMPDIR/out"
        run -0 "$HUTCH" ls --json --label mcp.client=label-test
        [ "${#lines[@]}" -eq 1 ]
        session_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["labels"]["mcp.session"])' "${lines[0]}")
        run -0 "$HUTCH" ls --json --label "mcp.session=$session_id"
        [ "${#lines[@]}" -eq 1 ]
}
