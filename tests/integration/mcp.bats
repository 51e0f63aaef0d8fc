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

@test "mcp: get_file pages a UTF-8 file as text whatever a page boundary splits; the pages are the file" {
        run -0 session files_utf8 --era modern
        echo "$output"
}

@test "mcp: get_file: a file with a NUL byte is binary on every page, the empty one at its end too" {
        run -0 session files_nul --era modern
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

# client_py [SERVER-ARGS...]: the python on stdin, with c a Client
# (mcp-session.py's, legacy era) of `hutch mcp SERVER-ARGS`, its
# handshake done; ok when the code ends, FAIL: and 1 on a check
client_py() {
        {
                cat <<PRELUDE
import importlib.util, json, subprocess, sys
spec = importlib.util.spec_from_file_location("ms", "$SESSION")
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)
check, text_of = ms.check, ms.text_of
c = ms.Client("legacy", sys.argv[1:], "mcp-nul-$$-$BATS_TEST_NUMBER")
c.handshake()
try:
PRELUDE
                sed 's/^/    /'
                printf '%s\n' 'except ms.Fail as e:' '    print("FAIL: %s" % e); c.proc.kill(); sys.exit(1)' \
                        'c.close()' 'print("ok")'
        } > "$BATS_TEST_TMPDIR/client.py"
        python3 "$BATS_TEST_TMPDIR/client.py" "$@"
}

@test "mcp: a NUL byte in a run's output shows as U+FFFD: the result keeps id, status and what follows; read_output pages all" {
        run client_py <<'PY'
F = "\ufffd"
r = c.run("run_command", {"argv": ["printf", "a\\000b\\n"]})
sc = r["structuredContent"]
check(not r["isError"] and sc["status"] == "success" and sc["id"] in text_of(r), "NUL on stdout: %r" % r)
check(sc["stdout"] == "a" + F + "b\n" and "[stdout]\na" + F + "b\n" in text_of(r), "stdout: %r" % text_of(r))
r = c.run("run_command", {"argv": ["sh", "-c", "printf 'e\\000f\\n' >&2; echo out"]})
sc = r["structuredContent"]
check(not r["isError"] and sc["stderr"] == "e" + F + "f\n" and sc["stdout"] == "out\n", "NUL on stderr: %r" % r)
# read_output: all of the stream, with the offsets of its text
r = c.run("run_command", {"argv": ["sh", "-c", "printf 'abc\\000def\\n'; echo tail"]})
rid, want = r["structuredContent"]["id"], "abc" + F + "def\ntail\n"
p = c.run("read_output", {"run_id": rid, "stream": "stdout"})["structuredContent"]
check(p["text"] == want and p["total"] == len(want.encode()) and p["eof"], "read_output: %r" % p)
p = c.run("read_output", {"run_id": rid, "stream": "stdout", "limit": 4})["structuredContent"]
check(p["text"] == "abc" and p["next_offset"] == 3 and not p["eof"], "a page ending in the U+FFFD: %r" % p)
p = c.run("read_output", {"run_id": rid, "stream": "stdout", "offset": 3})["structuredContent"]
check(p["text"] == F + "def\ntail\n" and p["eof"], "the page after it: %r" % p)
# a long one is cut; the marker's offset is one of read_output's
r = c.run("run_code", {"language": "python",
                       "code": "import sys\nsys.stdout.write(''.join('l%05d\\0\\n' % i for i in range(3000)))"})
sc, text = r["structuredContent"], text_of(r)
want = "".join("l%05d" % i + F + "\n" for i in range(3000)).encode()
check(not r["isError"] and "cut here" in text, "not cut: %r" % text[:300])
off = int(text.split('"offset": ')[1].split("}")[0])
got, nxt = b"", 0
while True:
    p = c.run("read_output", {"run_id": sc["id"], "stream": "stdout", "offset": nxt, "limit": 20000})["structuredContent"]
    check(p["total"] == len(want), "total %d, not %d" % (p["total"], len(want)))
    got += p["text"].encode()
    nxt = p["next_offset"]
    if p["eof"]:
        break
check(got == want, "the pages are not the stream")
check(text.split("\n[...")[0].encode().endswith(want[:off]), "the head shown is not bytes 0 to %d" % off)
PY
        echo "$output"
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" = ok ]
}

@test "mcp: \\u0000 in a request: stdin and files content pass it; any other string is refused naming it, with the id" {
        run client_py <<'PY'
F = "\ufffd"
def refused(args, field, tool="run_command"):
    r = c.run(tool, args)
    check(r["isError"] and "structuredContent" not in r and ("%s: %s: holds a NUL byte" % (tool, field)) in text_of(r)
          and r["_meta"]["hutch/error"]["code"] == "bad_request", "%r: %r" % (args, r))
before = len(c.run("list_runs", {"limit": 100})["structuredContent"]["runs"])
# the tester's line, as sent
c.raw('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_command","arguments":{"argv":["cat"],"stdin":"a\\u0000b"}}}\n')
r = c.tool_result(7, "run_command")
check(not r["isError"] and r["structuredContent"]["stdout"] == "a" + F + "b", "stdin: %r" % r)
r = c.run("run_command", {"argv": ["cat", "f", "g"], "files": {"f": "x\u0000y\n", "g": {"content": "z\u0000"}}})
check(not r["isError"] and r["structuredContent"]["stdout"] == "x" + F + "y\nz" + F, "files: %r" % r)
after = len(c.run("list_runs", {"limit": 100})["structuredContent"]["runs"])
refused({"argv": ["a\u0000b"]}, "argv/0")
refused({"argv": ["echo", "x\u0000"]}, "argv/1")
refused({"argv": ["true"], "session": "s\u0000x"}, "session")
refused({"argv": ["true"], "env": {"A": "1\u0000"}}, "env/A")
refused({"argv": ["true"], "commit": "never\u0000"}, "commit")
refused({"argv": ["true"], "files": {"f": {"content": "eA==", "encoding": "base64\u0000"}}}, "files/f/encoding")
refused({"language": "python", "code": "print(1)\u0000"}, "code", "run_code")
refused({"language": "python\u0000", "code": "1"}, "language", "run_code")
refused({"run_id": "0\u0000", "stream": "stdout"}, "run_id", "read_output")
refused({"label": "a=b\u0000"}, "label", "list_runs")
check(len(c.run("list_runs", {"limit": 100})["structuredContent"]["runs"]) == after == before + 2,
      "a refused call ran (or stdin/files did not)")
# outside a tool's arguments: -32602 or -32600, the id kept, the place named
c.raw('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_command\\u0000x","arguments":{"argv":["true"]}}}\n')
m = c.wait(8)
check(m["error"]["code"] == -32602 and "params/name holds a NUL byte" in m["error"]["message"]
      and "JSON_ALLOW_NUL" not in m["error"]["message"], "tool name: %r" % m)
c.raw('{"jsonrpc":"2.0","id":"n","method":"ping\\u0000x"}\n')
m = c.wait("n")
check(m["error"]["code"] == -32600 and "method" in m["error"]["message"], "method: %r" % m)
c.raw('{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"\\u0000"}}\n')
m = c.wait(9)
check(m["error"]["code"] == -32602 and "params/cursor" in m["error"]["message"], "params/cursor: %r" % m)
PY
        echo "$output"
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" = ok ]
}

@test "mcp: a session name starting with '.' (\"..\", \".hidden\") is refused naming session; no sandbox starts" {
        run client_py <<'PY'
for name in ["..", ".hidden", "."]:
    r = c.run("run_command", {"argv": ["true"], "session": name})
    check(r["isError"] and "session: expected a name" in text_of(r) and "not starting with '.'" in text_of(r),
          "session %r: %r" % (name, r))
    r = c.run("list_processes", {"session": name})
    check(r["isError"] and "session: expected a name" in text_of(r), "list_processes %r: %r" % (name, r))
check(not c.run("list_runs", {})["structuredContent"]["runs"], "a run was made")
check(not [s for s in ms.hutch_json("sandbox", "ls", "--json") if "mcp-" in s.get("name", "")], "a sandbox started")
r = c.run("run_command", {"argv": ["true"], "session": "-a.b_c"})
check(not r["isError"], "a name the pattern allows: %r" % r)
PY
        echo "$output"
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" = ok ]
}
