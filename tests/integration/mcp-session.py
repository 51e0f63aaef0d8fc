#!/usr/bin/python3
# mcp-session.py - a scripted MCP client for the hutch mcp tests: starts
# `$HUTCH mcp ARGS...`, talks JSON-RPC to it over pipes, one message per
# line, and checks what comes back. Every tools/call result that carries
# structuredContent is validated against the outputSchema tools/list
# published for that tool (python3-jsonschema).
#
#   mcp-session.py SCENARIO [--era legacy|modern] [-- SERVER-ARGS...]
#
# Exit 0 when the scenario holds; 1 with the reason on stderr.
import json
import os
import re
import select
import subprocess
import sys
import time

import jsonschema

HUTCH = os.environ["HUTCH"]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class Client:
    def __init__(self, era, server_args, name):
        self.era = era
        self.name = name
        self.server_args = list(server_args)
        self.proc = subprocess.Popen([HUTCH, "mcp", *server_args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        self.buf = b""
        self.next_id = 1
        self.pending = []       # messages read but not yet asked for
        self.schemas = {}

    def meta(self, extra=None):
        m = {}
        if self.era == "modern":
            m = {"io.modelcontextprotocol/protocolVersion": MODERN,
                 "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"},
                 "io.modelcontextprotocol/clientCapabilities": {}}
        m.update(extra or {})
        return m

    def raw(self, line):
        self.proc.stdin.write(line if isinstance(line, bytes) else line.encode())

    def send(self, msg):
        self.raw(json.dumps(msg) + "\n")

    def notify(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def request(self, method, params=None, meta=None, rid=None):
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        params = dict(params or {})
        md = self.meta(meta)
        if md:
            params["_meta"] = md
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def read_message(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            m = json.loads(line)
        except ValueError:
            raise Fail("server wrote a line that is not JSON: %r" % line[:200])
        if isinstance(m, dict) and m.get("method") == "notifications/progress":
            m["_seen"] = time.monotonic()    # when it arrived, for the timing checks
        return m

    def wait(self, rid, timeout=30):
        """The response to rid; notifications and other responses seen meanwhile are kept."""
        for i, m in enumerate(self.pending):
            if m.get("id") == rid and "method" not in m:
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            m = self.read_message(max(0, deadline - time.monotonic()))
            check(m is not None, "no response to request %r within %ss" % (rid, timeout))
            check(m.get("jsonrpc") == "2.0", "not JSON-RPC 2.0: %r" % m)
            if m.get("id") == rid and "method" not in m:
                return m
            self.pending.append(m)

    def call(self, rid_or_none, tool, args, meta=None, timeout=60):
        rid = self.request("tools/call", {"name": tool, "arguments": args}, meta=meta, rid=rid_or_none)
        return rid

    def result(self, rid, timeout=60):
        m = self.wait(rid, timeout)
        check("result" in m, "request %r: expected a result, got %r" % (rid, m))
        r = m["result"]
        if self.era == "modern":
            check(r.get("resultType") == "complete", "modern result without resultType complete: %r" % r)
            check(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "hutch", "no serverInfo in _meta")
        else:
            check("resultType" not in r, "legacy result with resultType: %r" % r)
        return r

    def tool_result(self, rid, tool, timeout=60):
        r = self.result(rid, timeout)
        check(isinstance(r.get("content"), list) and r["content"], "no content: %r" % r)
        check(isinstance(r.get("isError"), bool), "no isError: %r" % r)
        if "structuredContent" in r:
            schema = self.schemas[tool]
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            try:
                cls(schema, format_checker=cls.FORMAT_CHECKER).validate(r["structuredContent"])
            except jsonschema.ValidationError as e:
                raise Fail("%s: structuredContent does not match its outputSchema: %s" % (tool, e.message))
        else:
            check(r["isError"], "%s: a result without structuredContent must be an error" % tool)
            # every error says what kind, and whether trying again may help
            e = r.get("_meta", {}).get("hutch/error")
            check(isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("retryable"), bool),
                  "%s: an error without _meta hutch/error {code, retryable}: %r" % (tool, r))
        return r

    def run(self, tool, args, meta=None, timeout=60):
        return self.tool_result(self.call(None, tool, args, meta), tool, timeout)

    def handshake(self):
        if self.era == "legacy":
            rid = self.request("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                              "clientInfo": {"name": self.name, "version": "1"}})
            r = self.result(rid)
            check(r["protocolVersion"] == LEGACY, "initialize answered %r" % r["protocolVersion"])
            check("tools" in r["capabilities"], "no tools capability")
            check(r["serverInfo"]["name"] == "hutch", "serverInfo")
            self.notify("notifications/initialized")
            r = self.result(self.request("ping"))
            check(r == {}, "ping: %r" % r)
        else:
            r = self.result(self.request("server/discover"))
            check(MODERN in r["supportedVersions"] and LEGACY in r["supportedVersions"], "supportedVersions %r" % r)
            check("tools" in r["capabilities"], "no tools capability")
            check(isinstance(r["ttlMs"], int) and r["cacheScope"] in ("public", "private"), "no cache fields")
        r = self.result(self.request("tools/list"))
        names = [t["name"] for t in r["tools"]]
        live = "--sessions" not in self.server_args or "live" in self.server_args
        check(names[:6] == ["run_code", "run_command", "read_output", "list_runs", "get_file", "diff"] and
              [n for n in names[6:] if n != "apply"] == (["list_processes", "list_ports"] if live else []) and
              names[6:].count("apply") <= 1, "tools %r" % names)
        for t in r["tools"]:
            check(t["inputSchema"]["type"] == "object", "%s: inputSchema" % t["name"])
            check(t["outputSchema"]["type"] == "object", "%s: outputSchema" % t["name"])
            jsonschema.validators.validator_for(t["inputSchema"]).check_schema(t["inputSchema"])
            self.schemas[t["name"]] = t["outputSchema"]
        if self.era == "modern":
            check("ttlMs" in r and "cacheScope" in r, "tools/list without ttlMs/cacheScope")
        # the run tools publish hutch.result/1 itself
        base = os.environ.get("HUTCH_DATADIR") or os.path.join(os.path.dirname(__file__), "../../share")
        with open(os.path.join(base, "schema", "hutch.result-1.json")) as f:
            published = json.load(f)
        published.pop("$id")
        for t in ("run_code", "run_command"):
            check(self.schemas[t] == published, "%s: outputSchema is not share/schema/hutch.result-1.json" % t)
        return r

    def close(self, timeout=60):
        self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Fail("server did not exit within %ss of end of input" % timeout)
        rest = self.proc.stdout.read()
        return rc, rest


def hutch_json(*args):
    out = subprocess.run([HUTCH, *args], stdout=subprocess.PIPE, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def show(run_id):
    try:
        return hutch_json("show", "--json", run_id)[0]
    except subprocess.CalledProcessError:
        # what the store held then, to tell a run never written from one
        # written elsewhere or read too soon
        time.sleep(1)
        again = subprocess.run([HUTCH, "show", "--json", run_id], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT).stdout.decode(errors="replace")[:300]
        newest = subprocess.run([HUTCH, "ls", "--json", "--limit", "5"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        state = os.environ.get("HUTCH_STATE_DIR", "")
        files = sorted((f, os.stat(os.path.join(state, f)).st_size) for f in os.listdir(state)) if state else []
        sys.stderr.write("show %s failed; a second later: %s\nnewest runs:\n%s\nstate dir %s: %r\n"
                         % (run_id, again, "\n".join(l[:200] for l in newest.splitlines()), state, files))
        raise


def runs_of(client_name):
    return hutch_json("ls", "--json", "--label", "mcp.client=" + client_name)


def wait_status(run_id, statuses, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = show(run_id)["status"]
        if s in statuses:
            return s
        time.sleep(0.2)
    raise Fail("run %s still %s after %ss" % (run_id, s, timeout))


def alive(marker):
    return subprocess.run(["pgrep", "-f", "--", marker], stdout=subprocess.DEVNULL).returncode == 0


def text_of(r):
    return r["content"][0]["text"]


# --- scenarios -------------------------------------------------------------

def scenario_session(c):
    """Everything a session of one era goes through (issue: handshake, list,
    success, failure, timeout, cancel, malformed line, unknown tool, EOF)."""
    c.handshake()

    r = c.run("run_code", {"language": "python", "code": "import sys\nprint(6*7)\nprint('warn', file=sys.stderr)"})
    sc = r["structuredContent"]
    check(not r["isError"] and sc["status"] == "success" and sc["exit_code"] == 0, "success: %r" % text_of(r))
    check(text_of(r).startswith("exit_code=0 status=success "), "header: %r" % text_of(r))
    check("42" in text_of(r) and "warn" in text_of(r), "output missing: %r" % text_of(r))
    check(sc["labels"].get("mcp.client") == c.name and sc["labels"].get("mcp.session"), "labels %r" % sc["labels"])
    check(sc["limits"]["timeout_ms"] == 30000, "default timeout %r" % sc["limits"]["timeout_ms"])

    r = c.run("run_command", {"argv": ["sh", "-c", "echo oops >&2; exit 3"]})
    sc = r["structuredContent"]
    check(r["isError"] and sc["status"] == "failed" and sc["exit_code"] == 3, "failure: %r" % text_of(r))
    check(sc["error_code"] == "failed" and sc["retryable"] is False, "failure's code: %r" % sc)
    check(text_of(r).splitlines()[0].startswith("exit_code=3 status=failed "), "header: %r" % text_of(r))
    check("oops" in text_of(r), "stderr missing")

    r = c.run("run_command", {"argv": ["sleep", "30"], "timeout_s": 1})
    sc = r["structuredContent"]
    check(r["isError"] and sc["status"] == "timeout" and sc["limits"]["timeout_ms"] == 1000, "timeout: %r" % text_of(r))
    check(sc["error_code"] == "timeout" and sc["retryable"] is False, "timeout's code: %r" % sc)

    # a model's bad arguments are a tool error it can read, not a protocol error
    r = c.run("run_command", {"argv": "ls"})
    check(r["isError"] and "argv" in text_of(r), "bad argv: %r" % r)
    check(r["_meta"]["hutch/error"] == {"code": "bad_request", "retryable": False}, "bad argv's code: %r" % r)
    r = c.run("run_command", {"argv": ["cat", "x"], "files": {"x": {"host_path": "/etc/passwd"}}})
    check(r["isError"] and "host_path" in text_of(r), "host_path accepted: %r" % r)

    # cancel mid-run: the whole tree dies, the record says cancelled, no answer comes
    marker = "mcp-cancel-%d-%s" % (os.getpid(), c.era)
    rid = c.call("cancel-me", "run_command", {"argv": ["sh", "-c", "sleep 300 & sleep 300; : " + marker]})
    deadline = time.monotonic() + 20
    while not alive(marker):
        check(time.monotonic() < deadline, "the run never started")
        time.sleep(0.1)
    c.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    deadline = time.monotonic() + 20
    while True:
        mine = [x for x in runs_of(c.name) if marker in " ".join(x["argv"])]
        if mine and mine[0]["status"] != "running":
            break
        check(time.monotonic() < deadline, "cancelled run not recorded: %r" % mine)
        time.sleep(0.2)
    check(mine[0]["status"] == "cancelled", "cancelled run recorded as %s" % mine[0]["status"])
    check(not alive(marker), "a process of the cancelled run is still alive")

    # malformed lines, unknown tools and methods: JSON-RPC errors, and the session goes on
    c.raw("{this is not json\n")
    m = c.read_message(10)
    check(m and m["id"] is None and m["error"]["code"] == -32700, "parse error: %r" % m)
    c.raw('[1, 2]\n')
    m = c.read_message(10)
    check(m and m["id"] is None and m["error"]["code"] == -32600, "invalid request: %r" % m)
    m = c.wait(c.call(None, "no_such_tool", {}))
    check(m["error"]["code"] == -32602 and "no_such_tool" in m["error"]["message"], "unknown tool: %r" % m)
    m = c.wait(c.request("no/such/method"))
    check(m["error"]["code"] == -32601, "unknown method: %r" % m)
    time.sleep(1)
    c.result(c.request("tools/list"))
    check(not [x for x in c.pending if x.get("id") == rid], "an answer came for the cancelled request")

    # EOF with runs in flight: each is cancelled and recorded
    marker = "mcp-eof-%d-%s" % (os.getpid(), c.era)
    for i in range(2):
        c.call(None, "run_command", {"argv": ["sh", "-c", "sleep 300; : %s-%d" % (marker, i)]})
    deadline = time.monotonic() + 20
    while not (alive(marker + "-0") and alive(marker + "-1")):
        check(time.monotonic() < deadline, "the runs never started")
        time.sleep(0.1)
    rc, _ = c.close()
    check(rc == 0, "server exited %d at end of input" % rc)
    mine = [x for x in runs_of(c.name) if marker in " ".join(x["argv"])]
    check(len(mine) == 2 and all(x["status"] == "cancelled" for x in mine),
          "runs in flight at EOF: %r" % [(x["argv"], x["status"]) for x in mine])
    check(not alive(marker), "a process of a run in flight at EOF is still alive")


def scenario_versions(c):
    """Version handling of both eras."""
    if c.era == "modern":
        m = c.wait(c.request("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "1900-01-01"}))
        e = m.get("error", {})
        check(e.get("code") == -32022 and e["data"]["requested"] == "1900-01-01" and
              MODERN in e["data"]["supported"] and LEGACY in e["data"]["supported"], "unsupported version: %r" % m)
        m = c.wait(c.request("ping"))
        check(m.get("error", {}).get("code") == -32601, "ping is gone in 2026-07-28: %r" % m)
        # without any version and without initialize: refused, naming both ways in
        c.era = "none"
        m = c.wait(c.request("tools/list"))
        check(m.get("error", {}).get("code") == -32600 and MODERN in m["error"]["data"]["supported"], "no version: %r" % m)
    else:
        rid = c.request("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                       "clientInfo": {"name": c.name, "version": "1"}})
        r = c.result(rid)
        check(r["protocolVersion"] == LEGACY, "initialize with an unknown version answered %r" % r["protocolVersion"])
        r = c.result(c.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}}))
        check(r["protocolVersion"] == "2025-03-26", "initialize 2025-03-26 answered %r" % r["protocolVersion"])
    c.close()


def scenario_ceilings(c):
    """--max-timeout 2s: the default and a model's larger ask both stop at it."""
    c.handshake()
    r = c.run("run_command", {"argv": ["true"]})
    check(r["structuredContent"]["limits"]["timeout_ms"] == 2000, "default above the ceiling")
    r = c.run("run_command", {"argv": ["true"], "timeout_s": 100})
    check(r["structuredContent"]["limits"]["timeout_ms"] == 2000, "a model raised the ceiling")
    r = c.run("run_command", {"argv": ["true"], "timeout_s": 0.5})
    check(r["structuredContent"]["limits"]["timeout_ms"] == 500, "a model could not lower it")
    r = c.run("run_command", {"argv": ["true"]})
    check(r["structuredContent"]["limits"]["memory_bytes"] == 64 << 20, "--max-memory not applied")
    c.close()


def scenario_profile_ceilings(c):
    """profile strict (timeout 10s, memory 256M) under --max-memory 1G:
    the profile's lower limits stay; no flag raises them."""
    c.handshake()
    r = c.run("run_command", {"argv": ["true"]})
    lim = r["structuredContent"]["limits"]
    check(lim["memory_bytes"] == 256 << 20, "--max-memory raised the profile's memory: %r" % lim)
    check(lim["timeout_ms"] == 10000, "the profile's timeout is not the ceiling: %r" % lim)
    r = c.run("run_command", {"argv": ["true"], "timeout_s": 20})
    check(r["structuredContent"]["limits"]["timeout_ms"] == 10000, "a model raised the profile's timeout")
    c.close()


def scenario_lang_ceilings(c):
    """--max-memory 768M and no --profile: run_code in python and node
    runs under the language's profile (1G, 60s, named in the record) but
    every limit stays at most the ceiling: the default profile's and
    --max-memory's."""
    c.handshake()
    for lang, code in (("python", "print('hi')"), ("node", "console.log('hi')")):
        r = c.run("run_code", {"language": lang, "code": code})
        sc = r["structuredContent"]
        check(not r["isError"], "%s failed: %r" % (lang, sc))
        lim = sc["limits"]
        check(lim["memory_bytes"] == 768 << 20, "%s: memory over the ceiling: %r" % (lang, lim))
        check(lim["timeout_ms"] == 30000, "%s: timeout over the ceiling: %r" % (lang, lim))
        check(lim["pids"] <= 256 and lim["cpus"] <= 1 and lim["disk_bytes"] <= 1 << 30,
              "%s: a limit over the default profile's: %r" % (lang, lim))
    r = c.run("run_command", {"argv": ["true"]})
    check(r["structuredContent"]["limits"]["memory_bytes"] == 512 << 20,
          "--max-memory raised the default profile's memory: %r" % r["structuredContent"]["limits"])
    c.close()


def scenario_big_argv(c):
    """160,000 empty argv items under --max-timeout 2s: refused at once,
    naming /argv (reading them took 13 s before the run's clock)."""
    c.handshake()
    t = time.monotonic()
    r = c.run("run_command", {"argv": ["true"] + [""] * 159999})
    took = time.monotonic() - t
    check(r["isError"] and "/argv" in text_of(r), "not refused: %r" % text_of(r)[:300])
    check(took < 2, "the refusal took %.1f s" % took)
    c.close()


def scenario_queue(c):
    """--max-concurrent 1: a second call waits, both report progress."""
    c.handshake()
    a = c.call(None, "run_command", {"argv": ["sleep", "7"]}, meta={"progressToken": "tok-a"})
    b = c.call(None, "run_command", {"argv": ["echo", "second"]}, meta={"progressToken": 17})
    ra = c.tool_result(a, "run_command")
    rb = c.tool_result(b, "run_command")
    check(not ra["isError"] and not rb["isError"], "queued calls failed")
    check(rb["structuredContent"]["started_at"] >= ra["structuredContent"]["finished_at"], "ran at once")
    prog = [m["params"] for m in c.pending if m.get("method") == "notifications/progress"]
    pa = [p for p in prog if p["progressToken"] == "tok-a"]
    pb = [p for p in prog if p["progressToken"] == 17]
    check(pa and "running" in pa[0]["message"], "no progress for the running call: %r" % prog)
    check(pb and "queued" in pb[0]["message"], "no progress for the queued call: %r" % prog)
    check(all(x["progress"] < y["progress"] for x, y in zip(pa, pa[1:])), "progress must increase")
    c.close()


def iso_ms(t):
    """2026-12-07T01:19:08.191Z -> seconds (for differences)."""
    import datetime
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def scenario_session_queue(c):
    """Three calls on one session sent at once all succeed, one at a time in
    the order they came, each seeing the one before; the first progress of
    a call comes 5 s after it was sent, the waiting ones say what they wait for."""
    c.handshake()
    sent = time.monotonic()
    a = c.call(None, "run_code", {"language": "python", "session": "q", "code":
               "import time\nopen('log', 'w').write('a')\ntime.sleep(6)"}, meta={"progressToken": "a"})
    b = c.call(None, "run_code", {"language": "python", "session": "q", "code":
               "open('log', 'a').write('b')"}, meta={"progressToken": "b"})
    d = c.call(None, "run_command", {"argv": ["cat", "log"], "session": "q"})
    ra, rb, rd = (c.tool_result(x, "run_code" if x != d else "run_command") for x in (a, b, d))
    for r in (ra, rb, rd):
        check(not r["isError"], "a call on the session failed: %r" % text_of(r))
    check(rd["structuredContent"]["stdout"] == "ab", "out of order: %r" % rd["structuredContent"]["stdout"])
    sa, sb, sd = (r["structuredContent"] for r in (ra, rb, rd))
    check(sa["finished_at"] <= sb["started_at"] and sb["finished_at"] <= sd["started_at"], "ran at once")
    prog = [m for m in c.pending if m.get("method") == "notifications/progress"]
    pa = [m for m in prog if m["params"]["progressToken"] == "a"]
    pb = [m for m in prog if m["params"]["progressToken"] == "b"]
    check(pa, "no progress for the running call")
    first = pa[0]["_seen"] - sent
    check(4.5 <= first <= 5.8, "the first progress came %.2f s after the call, not at 5 s" % first)
    check(pb and "session q" in pb[0]["params"]["message"], "the waiting call does not say why: %r" % pb)
    c.close()


def scenario_commit(c):
    """A session call's edit survives the failing test run that follows it
    (the server commits always by default); commit never keeps nothing;
    every result says whether it committed."""
    c.handshake()
    r = c.run("run_code", {"language": "python", "session": "edit", "code":
                           "open('calc.py', 'w').write('def add(a, b):\\n    return a - b\\n')\nraise SystemExit(1)"})
    check(r["isError"] and r["structuredContent"]["committed"] is True, "failed edit not committed: %r"
          % r["structuredContent"].get("committed"))
    r = c.run("run_code", {"language": "python", "session": "edit", "code":
                           "import calc\nassert calc.add(2, 2) == 4, 'add is wrong'"})
    check(r["isError"] and "add is wrong" in text_of(r), "the test run did not see the edit: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["cat", "calc.py"], "session": "edit"})
    check("a - b" in r["structuredContent"]["stdout"], "the edit is lost: %r" % r["structuredContent"]["stdout"])
    # files with a session: put into it first, and kept
    r = c.run("run_command", {"argv": ["cat", "data/in.txt"], "session": "edit", "commit": "never",
                              "files": {"data/in.txt": "uploaded\n"}})
    check(r["structuredContent"]["stdout"] == "uploaded\n", "files with a session: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["cat", "data/in.txt"], "session": "edit"})
    check(r["structuredContent"]["stdout"] == "uploaded\n", "the uploaded file is gone: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["sh", "-c", "echo x > scratch"], "session": "edit", "commit": "never"})
    check(not r["isError"] and r["structuredContent"]["committed"] is False, "commit never: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["ls"], "session": "edit"})
    check("scratch" not in r["structuredContent"]["stdout"], "commit never kept a file")
    r = c.run("run_command", {"argv": ["true"]})
    check(r["structuredContent"]["committed"] is None, "a run without a session: %r" % r["structuredContent"])
    r = c.run("run_command", {"argv": ["true"], "session": "edit", "commit": "sometimes"})
    check(r["isError"] and "commit" in text_of(r), "a bad commit accepted: %r" % text_of(r))
    c.close()


def scenario_scopes(c):
    """Two servers of one user and state dir, with different scopes, see
    nothing of each other: runs, output, artifacts, sessions."""
    c.handshake()                       # --scope alpha (the test's arguments)
    other = Client(c.era, ["--scope", "beta"], c.name + "-beta")
    other.handshake()
    r = c.run("run_command", {"argv": ["sh", "-c", "mkdir -p output; echo alpha-secret | tee output/a.txt > mine"],
                              "session": "s"})
    check(not r["isError"] and r["structuredContent"]["labels"]["mcp.scope"] == "alpha", "alpha run: %r" % text_of(r))
    rid = r["structuredContent"]["id"]
    # beta cannot list, read, fetch or resolve a prefix of alpha's run
    lst = other.run("list_runs", {})
    check(all(x["id"] != rid for x in lst["structuredContent"]["runs"]), "beta lists alpha's run")
    for tool, args in (("read_output", {"run_id": rid, "stream": "stdout"}),
                       ("read_output", {"run_id": rid[:8], "stream": "stdout"}),
                       ("get_file", {"run_id": rid, "path": "output/a.txt"})):
        x = other.run(tool, args)
        check(x["isError"] and "alpha-secret" not in json.dumps(x), "beta reads alpha's run with %s" % tool)
    # beta's session of the same name is its own: empty, and what it writes stays there
    x = other.run("run_command", {"argv": ["sh", "-c", "ls; echo beta > mine"], "session": "s"})
    check(not x["isError"] and "mine" not in x["structuredContent"]["stdout"], "beta sees alpha's session: %r"
          % x["structuredContent"]["stdout"])
    x = c.run("run_command", {"argv": ["cat", "mine"], "session": "s"})
    check(x["structuredContent"]["stdout"] == "alpha-secret\n", "beta changed alpha's session")
    # alpha still sees its own
    x = c.run("get_file", {"run_id": rid, "path": "output/a.txt"})
    check(not x["isError"] and "alpha-secret" in json.dumps(x), "alpha lost its artifact: %r" % text_of(x))
    other.close()
    c.close()


# a 1x1 PNG, whole
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def file_pages(c, rid, name, limit=None, max_pages=None):
    """Each page of output/NAME of run RID that get_file gives, following
    next_offset to eof, as (offset asked, result); fewer than max_pages."""
    off, pages = 0, 0
    while True:
        args = {"run_id": rid, "path": "output/" + name, "offset": off}
        if limit:
            args["limit"] = limit
        p = c.run("get_file", args)
        check(not p["isError"], "%s at %d: %r" % (name, off, text_of(p)))
        yield off, p
        sc = p["structuredContent"]
        off, pages = sc["next_offset"], pages + 1
        if sc["eof"]:
            return
        check(max_pages is None or pages < max_pages, "%s: no end" % name)


def scenario_files_out(c):
    """A 3 MiB file fetched in pages with offset/limit (text and binary); a
    PNG artifact as an image content block."""
    import base64, hashlib
    c.handshake()
    code = ("import os, random\nos.makedirs('output', exist_ok=True)\n"
            "open('output/big.txt', 'w').write(''.join('row %%07d\\n' %% i for i in range(3 * 1024 * 1024 // 12 + 7)))\n"
            "random.seed(1)\nopen('output/big.bin', 'wb').write(random.randbytes(3 * 1024 * 1024 + 5))\n"
            "import base64\nopen('output/dot.png', 'wb').write(base64.b64decode('%s'))\n" % PNG)
    r = c.run("run_code", {"language": "python", "code": code})
    check(not r["isError"], "writing the files: %r" % text_of(r))
    rid = r["structuredContent"]["id"]
    files = {f["path"]: f for f in r["structuredContent"]["files"]}
    for name, limit in (("big.txt", None), ("big.bin", 700000)):
        got, pages = b"", 0
        for off, p in file_pages(c, rid, name, limit, max_pages=20):
            sc = p["structuredContent"]
            check(sc["offset"] == off and sc["size"] == files[name]["size"], "%s: page %r" %
                  (name, {k: sc[k] for k in sc if k != "content"}))
            got += sc["content"].encode() if sc["encoding"] == "utf-8" else base64.b64decode(sc["content"])
            pages += 1
            check(len(sc["content"]) <= 1400000, "a page over the bound")
        check(pages >= 3, "%s in %d pages" % (name, pages))
        check(hashlib.sha256(got).hexdigest() == files[name]["sha256"], "%s: the pages are not the file" % name)
    x = c.run("get_file", {"run_id": rid, "path": "output/big.txt", "offset": 10 ** 9})
    check(x["isError"] and "past its end" in text_of(x), "an offset past the end: %r" % text_of(x))
    # the env argument reaches the program, a bad name is the model's error
    x = c.run("run_command", {"argv": ["printenv", "GREETING"], "env": {"GREETING": "hello there"}})
    check(x["structuredContent"]["stdout"] == "hello there\n", "env: %r" % text_of(x))
    x = c.run("run_command", {"argv": ["true"], "env": {"1BAD": "x"}})
    check(x["isError"] and "env/1BAD" in text_of(x), "a bad env name: %r" % text_of(x))
    img = c.run("get_file", {"run_id": rid, "path": "output/dot.png"})
    blocks = [b for b in img["content"] if b["type"] == "image"]
    check(blocks and blocks[0]["mimeType"] == "image/png" and blocks[0]["data"] == PNG,
          "no image block for a PNG: %r" % [b["type"] for b in img["content"]])
    c.close()


def page_all(c, rid, path, limit=None, offset=0, most=200):
    """Page path of run rid from offset by next_offset; every page must be
    text. Returns the bytes and the number of pages."""
    got, off, pages = b"", offset, 0
    while True:
        args = {"run_id": rid, "path": path, "offset": off}
        if limit:
            args["limit"] = limit
        p = c.run("get_file", args)
        check(not p["isError"], "%s at %d: %r" % (path, off, text_of(p)))
        sc = p["structuredContent"]
        check(sc["encoding"] == "utf-8", "%s at %d, limit %s: a page of a text file as %s" %
              (path, off, limit, sc["encoding"]))
        check(sc["offset"] == off and sc["next_offset"] > off,
              "%s: page %r" % (path, {k: sc[k] for k in sc if k != "content"}))
        got += sc["content"].encode()
        off, pages = sc["next_offset"], pages + 1
        if sc["eof"]:
            return got, pages
        check(pages < most, "%s: no end after %d pages" % (path, pages))


def scenario_files_utf8(c):
    """A text file is text on every page, whatever its page boundaries
    split: paging by next_offset gets every byte once."""
    c.handshake()
    code = ("import os\nos.makedirs('output', exist_ok=True)\n"
            "open('output/eur.txt', 'w').write('\u20ac' * 1000)\n"
            "open('output/eur-big.txt', 'w').write('\u20ac' * 700000)\n"
            "open('output/mixed.txt', 'w').write('a\u00e9b\u20acc\U0001f600\\n' * 12 + 'end')\n")
    r = c.run("run_code", {"language": "python", "code": code})
    check(not r["isError"], "writing the files: %r" % text_of(r))
    rid = r["structuredContent"]["id"]
    eur = "\u20ac".encode() * 1000
    mixed = "a\u00e9b\u20acc\U0001f600\n".encode() * 12 + b"end"
    # the tester's pages: a limit that ends inside a character, an offset
    # that starts inside one
    p = c.run("get_file", {"run_id": rid, "path": "output/eur.txt", "offset": 0, "limit": 4})
    sc = p["structuredContent"]
    check(sc["encoding"] == "utf-8" and sc["content"] == "\u20ac" and sc["next_offset"] == 3,
          "offset 0 limit 4: %r" % sc)
    p = c.run("get_file", {"run_id": rid, "path": "output/eur.txt", "offset": 1, "limit": 6})
    sc = p["structuredContent"]
    check(sc["encoding"] == "utf-8" and sc["offset"] == 3 and sc["requested_offset"] == 1 and
          sc["content"] == "\u20ac" and sc["next_offset"] == 6 and "inside a UTF-8 character" in text_of(p),
          "offset 1 limit 6: %r" % sc)
    # a limit below one character still gets it, or paging would not move
    p = c.run("get_file", {"run_id": rid, "path": "output/eur.txt", "offset": 3, "limit": 1})
    sc = p["structuredContent"]
    check(sc["content"] == "\u20ac" and sc["next_offset"] == 6, "limit 1: %r" % sc)
    for path, data, limits in (("output/eur.txt", eur, (None, 100, 1000)),
                               ("output/mixed.txt", mixed, (None, 1, 2, 3, 4, 5, 7, 64))):
        for limit in limits:
            got, pages = page_all(c, rid, path, limit, most=len(data) + 1)
            check(got == data, "%s, limit %s: the pages are not the file" % (path, limit))
    got, pages = page_all(c, rid, "output/eur-big.txt")
    check(got == eur * 700 and pages == 3, "eur-big.txt: %d bytes in %d pages" % (len(got), pages))
    c.close()


def scenario_files_nul(c):
    """A file that is UTF-8 but for a NUL byte is binary as a whole:
    every page of it base64 (none "text" with \\u0000 in it), the NUL
    before, on or after a page boundary, the pages the file."""
    import base64, hashlib
    c.handshake()
    files = {"nul-mid.txt": b"line one\n" * 20 + b"a\x00b\n" + b"line two\n" * 20,
             "nul-end.txt": b"plain text, then one NUL\x00",
             "nul-first.txt": b"\x00" + b"text after the NUL\n" * 10,
             # past the text check's 64 KiB chunk, so no single read sees all
             "nul-far.txt": b"x" * (200 << 10) + b"\x00" + b"y" * 100}
    code = "import os\nos.makedirs('output', exist_ok=True)\n" + "".join(
        "open('output/%s', 'wb').write(%r)\n" % (name, data) for name, data in files.items())
    r = c.run("run_code", {"language": "python", "code": code})
    check(not r["isError"], "writing the files: %r" % text_of(r))
    rid = r["structuredContent"]["id"]
    for name, data in files.items():
        # a small limit on the small files only: a page per call
        for limit in (None, 64 << 10) + ((7,) if len(data) < 1000 else ()):
            got = b""
            for off, p in file_pages(c, rid, name, limit, max_pages=len(data) + 1):
                sc = p["structuredContent"]
                check(sc["encoding"] == "base64", "%s at %d, limit %s: a page of a file with NUL as %s: %r" %
                      (name, off, limit, sc["encoding"], sc["content"][:80]))
                check(not any(b["type"] == "text" and "\x00" in b["text"] for b in p["content"]),
                      "%s at %d: a NUL in a text block" % (name, off))
                got += base64.b64decode(sc["content"])
            check(got == data and hashlib.sha256(got).hexdigest() == sc["sha256"],
                  "%s, limit %s: the pages are not the file" % (name, limit))
        # the empty page at its end is binary too, as every other page
        p = c.run("get_file", {"run_id": rid, "path": "output/" + name, "offset": len(data)})
        sc = p["structuredContent"]
        check(not p["isError"] and sc["eof"] and sc["content"] == "" and sc["encoding"] == "base64",
              "%s at its end: %r" % (name, sc))
    # an empty file is text (no byte of it is not)
    r = c.run("run_code", {"language": "python", "code": "import os\nos.makedirs('output', exist_ok=True)\n"
                                                          "open('output/empty.txt', 'w').close()\n"})
    p = c.run("get_file", {"run_id": r["structuredContent"]["id"], "path": "output/empty.txt"})
    sc = p["structuredContent"]
    check(not p["isError"] and sc["encoding"] == "utf-8" and sc["content"] == "" and sc["eof"],
          "an empty file: %r" % sc)
    c.close()


def scenario_workdir(c):
    """hutch mcp --workdir DIR --allow-apply: a run sees DIR, leaves it as it
    was; diff shows the change; apply writes it, and refuses a conflict
    and a protected path as hutch apply does."""
    d = os.environ["MCP_WORKDIR"]
    c.handshake()
    r = c.run("run_command", {"argv": ["sh", "-c", "cat notes.txt; echo second >> notes.txt; echo new > added.txt"]})
    check(not r["isError"] and r["structuredContent"]["stdout"] == "first\n", "the run does not see DIR: %r"
          % text_of(r))
    rid = r["structuredContent"]["id"]
    with open(os.path.join(d, "notes.txt")) as f:
        check(f.read() == "first\n", "the run changed DIR itself")
    x = c.run("diff", {"run_id": rid})
    check(not x["isError"] and "+second" in text_of(x) and "added.txt" in text_of(x), "diff: %r" % text_of(x))
    x = c.run("diff", {"run_id": rid[:10], "stat": True})
    check("added" in text_of(x) and "modified" in text_of(x), "diff --stat: %r" % text_of(x))
    x = c.run("apply", {"run_id": rid})
    check(not x["isError"] and x["structuredContent"]["applied"], "apply: %r" % text_of(x))
    with open(os.path.join(d, "notes.txt")) as f:
        check(f.read() == "first\nsecond\n", "apply did not write the change")
    # a conflict: DIR changed under the run
    r = c.run("run_command", {"argv": ["sh", "-c", "echo third >> notes.txt"]})
    with open(os.path.join(d, "notes.txt"), "a") as f:
        f.write("by hand\n")
    x = c.run("apply", {"run_id": r["structuredContent"]["id"]})
    check(x["isError"] and not x["structuredContent"]["applied"] and "conflict" in text_of(x).lower(),
          "a conflicting apply: %r" % text_of(x))
    # a protected path
    r = c.run("run_command", {"argv": ["sh", "-c", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit"]})
    x = c.run("apply", {"run_id": r["structuredContent"]["id"]})
    check(x["isError"] and "protected" in text_of(x), "a protected path applied: %r" % text_of(x))
    check(not os.path.exists(os.path.join(d, ".git/hooks/pre-commit")), "the hook was written")
    # a file name with newlines cannot forge lines of the diff the model
    # (or its user) reads: it is quoted, on one line, as hutch diff does
    r = c.run("run_command", {"argv": ["sh", "-c",
                                       "printf 'evil\\n' > \"$(printf 'zz\\n@@ -1 +1 @@\\n-base\\n+base')\""]})
    forged = re.compile(r"^(@@ -1 \+1 @@|[-+]base)$", re.M)
    for args in ({"run_id": r["structuredContent"]["id"]}, {"run_id": r["structuredContent"]["id"], "stat": True}):
        x = c.run("diff", args)
        check(not x["isError"] and 'zz\\n@@ -1 +1 @@\\n-base\\n+base"' in text_of(x)
              and not forged.search(text_of(x)), "diff %r: a file name forged lines: %r" % (args, text_of(x)))
    # a run of the same scope on another directory is not applied here
    other_dir = d + "-other"
    os.makedirs(other_dir, exist_ok=True)
    os.chmod(other_dir, 0o755)
    o = Client(c.era, ["--workdir", other_dir], c.name + "-other")
    o.handshake()
    r = o.run("run_command", {"argv": ["sh", "-c", "echo elsewhere > notes.txt"]})
    o.close()
    x = c.run("apply", {"run_id": r["structuredContent"]["id"]})
    check(x["isError"] and "did not run on this server's working directory" in text_of(x),
          "another directory's run applied: %r" % text_of(x))
    with open(os.path.join(d, "notes.txt")) as f:
        check("elsewhere" not in f.read(), "another directory's change reached DIR")
    # a session or files make no sense here: said so
    x = c.run("run_command", {"argv": ["true"], "session": "s"})
    check(x["isError"] and "working directory" in text_of(x), "session with --workdir: %r" % text_of(x))
    c.close()


def scenario_no_apply(c):
    """apply is neither listed nor served without --allow-apply."""
    r = c.handshake()
    check("apply" not in [t["name"] for t in r["tools"]], "apply listed")
    m = c.wait(c.call(None, "apply", {"run_id": "01ABCDEF"}))
    check(m["error"]["code"] == -32602 and "apply" in m["error"]["message"], "apply served: %r" % m)
    c.close()


def scenario_small(c):
    """A timeout over the ceiling is said; list_runs shows a run_code row as
    its language and first line; no result hands out the server's cwd."""
    c.handshake()
    r = c.run("run_command", {"argv": ["true"], "timeout_s": 300})
    check(text_of(r).startswith("note: timeout_s 300 is over this server's ceiling: the run had 5 s\n"),
          "the clamp is silent: %r" % text_of(r)[:200])
    check(r["structuredContent"]["limits"]["timeout_ms"] == 5000 and r["structuredContent"]["notes"], "notes")
    check(r["structuredContent"]["cwd"] is None, "cwd handed out: %r" % r["structuredContent"]["cwd"])
    r = c.run("run_code", {"language": "python", "code": "\n# compute the answer\nprint(42)\n"})
    rid = r["structuredContent"]["id"]
    lst = c.run("list_runs", {"limit": 1})
    row = lst["structuredContent"]["runs"][0]
    check(row["id"] == rid and row["lang"] == "python" and row["code_first_line"] == "# compute the answer",
          "list_runs row: %r" % row)
    check("python: # compute the answer" in text_of(lst), "list_runs text: %r" % text_of(lst))
    check(row["cwd"] is None, "list_runs hands out the cwd")
    c.close()


def scenario_session_held(c):
    """A session held by a process outside the server (here the operator's
    own hutch run on mcp-held) is waited for, not an "in use" failure."""
    c.handshake()
    marker = "mcp-held-%d" % os.getpid()
    holder = subprocess.Popen([HUTCH, "run", "-q", "--session", "mcp-held", "--", "sh", "-c",
                               "echo first > f; sleep 2; : " + marker])
    deadline = time.monotonic() + 20
    while not alive(marker):
        check(time.monotonic() < deadline, "the holder never started")
        time.sleep(0.05)
    r = c.run("run_command", {"argv": ["cat", "f"], "session": "held"})
    holder.wait()
    check(not r["isError"] and r["structuredContent"]["stdout"] == "first\n", "the call did not wait: %r" % text_of(r))
    c.close()


def scenario_slot(c):
    """--max-concurrent 1: a queued call starts as soon as the slot frees
    (within 0.5 s of the first run's end), not at the next 5 s tick."""
    c.handshake()
    a = c.call(None, "run_command", {"argv": ["sleep", "2"]})
    b = c.call(None, "run_command", {"argv": ["true"]})
    ra, rb = c.tool_result(a, "run_command"), c.tool_result(b, "run_command")
    gap = iso_ms(rb["structuredContent"]["started_at"]) - iso_ms(ra["structuredContent"]["finished_at"])
    check(0 <= gap < 0.5, "the queued call started %.3f s after the slot freed" % gap)
    c.close()


def scenario_node_queue(c):
    """The server's profile has [admission] max_running = 1 and
    --max-concurrent 2: the second call waits on the node's count (hutch
    run --queue-wait), it is not refused, and the runs never overlap."""
    c.handshake()
    a = c.call(None, "run_command", {"argv": ["sleep", "2"]})
    b = c.call(None, "run_command", {"argv": ["echo", "second"]})
    ra = c.tool_result(a, "run_command")
    rb = c.tool_result(b, "run_command")
    check(not ra["isError"] and not rb["isError"], "a call failed: %r / %r" % (text_of(ra), text_of(rb)))
    first, second = sorted([ra["structuredContent"], rb["structuredContent"]], key=lambda r: r["started_at"])
    check(second["started_at"] >= first["finished_at"], "two runs at once under max_running = 1")
    c.close()


def scenario_output(c):
    """Long output: cut head and tail in the text, paged exactly by read_output."""
    c.handshake()
    r = c.run("run_code", {"language": "python", "code": "for i in range(6000): print('line %05d' % i)"})
    sc, text = r["structuredContent"], text_of(r)
    check(len(text) < 20000 and "cut here" in text and sc["id"] in text, "not cut: %d bytes" % len(text))
    off = int(text.split('"offset": ')[1].split("}")[0])
    # structuredContent is bounded like the text: the same cut stream
    check(len(json.dumps(sc)) < 3 * 16384 and "cut here" in sc["stdout"], "structuredContent not bounded: %d bytes"
          % len(json.dumps(sc)))
    check("stdout is %d bytes of text, all kept" % sc["stdout_bytes"] in text, "the marker does not say the size: %r"
          % text[text.find("[..."):][:300])
    head = c.run("read_output", {"run_id": sc["id"], "stream": "stdout", "offset": 0, "limit": off})
    full = head["structuredContent"]["text"].encode()
    check(text.encode().find(full) >= 0 and sc["stdout"].encode().startswith(full), "the head is not the stream's start")
    got, nxt = full, off
    full = None
    while True:
        p = c.run("read_output", {"run_id": sc["id"], "stream": "stdout", "offset": nxt, "limit": 20000})
        ps = p["structuredContent"]
        check(ps["offset"] == nxt and ps["total"] == sc["stdout_bytes"], "page %r" % {k: ps[k] for k in ps if k != "text"})
        got += ps["text"].encode()
        nxt = ps["next_offset"]
        if ps["eof"]:
            break
    check(len(got) == sc["stdout_bytes"] and got.endswith(b"line 05999\n") and got.startswith(b"line 00000\n"),
          "the pages do not add up to the stream")
    check(got == "".join("line %05d\n" % i for i in range(6000)).encode(), "the pages are not the stream")
    r = c.run("read_output", {"run_id": sc["id"], "stream": "stderr"})
    check(r["structuredContent"]["total"] == 0 and r["structuredContent"]["eof"], "stderr page")
    r = c.run("read_output", {"run_id": sc["id"], "stream": "stdin"})
    check(r["isError"], "bad stream accepted")
    # more than the record keeps: the marker gives the real size and says
    # the middle is gone for good; structuredContent stays small
    r = c.run("run_command", {"argv": ["seq", "1", "1000000"]})
    sc, text = r["structuredContent"], text_of(r)
    check(sc["stdout_bytes"] == 6888896 and sc["stdout_truncated"], "seq: %r" % sc["stdout_bytes"])
    check("stdout was 6888896 bytes; the record kept only its first and last" in text and "gone for good" in text,
          "the marker hides the real size: %r" % text[text.find("[..."):][:400])
    check(len(json.dumps(sc)) < 3 * 16384, "structuredContent of %d bytes" % len(json.dumps(sc)))
    c.close()


def scenario_prefixes(c):
    """A run-id prefix is resolved among the server's runs only: a prefix
    that only the operator's runs share is "no run", not "several"."""
    c.handshake()
    r = c.run("run_command", {"argv": ["true"]})
    mine = r["structuredContent"]["id"]
    # operator runs, one after the other, until two of them share a prefix
    # (at least 4 characters) that this server's run does not have
    ids, prefix = [], None
    for _ in range(300):
        ids.append(json.loads(subprocess.run([HUTCH, "run", "--json", "--", "true"], stdout=subprocess.PIPE,
                                             check=True).stdout)["id"])
        if len(ids) >= 2:
            a, b = ids[-2], ids[-1]
            n = 0
            while n < len(a) and a[n] == b[n]:
                n += 1
            if n >= 4 and not mine.startswith(a[:n]):
                prefix = a[:n]
                break
    check(prefix is not None, "no two operator runs shared a prefix apart from %s: %r" % (mine, ids))
    r = c.run("read_output", {"run_id": prefix, "stream": "stdout"})
    check(r["isError"] and "no run of this server" in text_of(r) and "several" not in text_of(r),
          "a prefix of the operator's runs only: %r" % text_of(r))
    # a prefix this run shares with the operator's is this run
    common = 0
    while mine[common] == ids[0][common]:
        common += 1
    if common >= 4:
        r = c.run("read_output", {"run_id": mine[:common], "stream": "stdout"})
        check(not r["isError"] and r["structuredContent"]["run_id"] == mine,
              "a prefix shared with the operator's runs did not find ours: %r" % text_of(r))
    c.close()


def scenario_history(c):
    """list_runs and get_file see the server's runs only; artifacts come back whole."""
    other = json.loads(subprocess.run([HUTCH, "run", "--json", "--", "echo", "not-mcp"],
                                      stdout=subprocess.PIPE, check=True).stdout)
    c.handshake()
    r = c.run("run_code", {"language": "sh", "files": {"in.txt": "from the model\n"}, "stdin": "piped\n",
                           "code": "mkdir -p output; cp in.txt output/a.txt; cat >> output/a.txt; "
                                   "printf '\\000\\001\\377' > output/b.bin"})
    check(not r["isError"], "artifact run failed: %s" % text_of(r))
    rid = r["structuredContent"]["id"]
    f = c.run("get_file", {"run_id": rid, "path": "output/a.txt"})
    check(not f["isError"] and f["structuredContent"]["content"] == "from the model\npiped\n", "text artifact %r" % f)
    f = c.run("get_file", {"run_id": rid[:12], "path": "b.bin"})
    fs = f["structuredContent"]
    check(fs["encoding"] == "base64" and fs["content"] == "AAH/", "binary artifact %r" % fs)
    check(f["content"][1]["type"] == "resource" and f["content"][1]["resource"]["blob"] == "AAH/", "resource block")
    check(c.run("get_file", {"run_id": rid, "path": "output/none"})["isError"], "a missing file")
    check(c.run("get_file", {"run_id": other["id"], "path": "x"})["isError"], "another run's files")
    check(c.run("read_output", {"run_id": other["id"], "stream": "stdout"})["isError"], "another run's output")
    r = c.run("list_runs", {})
    ids = [x["id"] for x in r["structuredContent"]["runs"]]
    check(rid in ids and other["id"] not in ids, "list_runs %r" % ids)
    r = c.run("list_runs", {"label": "mcp.client=" + c.name, "status": "success", "limit": 1})
    check([x["id"] for x in r["structuredContent"]["runs"]] == [rid], "list_runs filters %r" % r)
    check(c.run("list_runs", {"status": "bogus"})["isError"], "bad status accepted")

    # a model's session is a workspace of its own, apart from the operator's
    ws = "ws-%d" % os.getpid()
    r = c.run("run_command", {"argv": ["sh", "-c", "echo kept > note"], "session": ws})
    check(not r["isError"] and r["structuredContent"]["session"] == "mcp-" + ws, "session run: %s" % text_of(r))
    r = c.run("run_command", {"argv": ["cat", "note"], "session": ws})
    check("kept" in r["structuredContent"]["stdout"], "the session did not keep the file: %s" % text_of(r))
    check(c.run("run_command", {"argv": ["true"], "session": "x" * 61})["isError"], "a 61-char session name")
    subprocess.run([HUTCH, "session", "rm", "mcp-" + ws], stdout=subprocess.DEVNULL)
    c.close()


def scenario_framing(c):
    """One message per line: odd lines are answered or ignored, never break the stream."""
    c.handshake()
    c.raw("\n   \n")                                    # blank lines: nothing
    c.raw('{"jsonrpc":"2.0","method":"notifications/whatever"}\n')   # unknown notification: nothing
    c.raw('{"jsonrpc":"2.0","id":99,"result":{}}\n')  # a response to nothing: nothing
    c.raw('{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
    m = c.read_message(10)
    check(m == {"jsonrpc": "2.0", "id": "crlf", "result": {}}, "CRLF line: %r" % m)
    c.raw('{"jsonrpc":"1.0","id":5,"method":"ping"}\n')
    m = c.read_message(10)
    check(m["id"] == 5 and m["error"]["code"] == -32600, "jsonrpc 1.0: %r" % m)
    c.raw('{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}\n')
    m = c.read_message(10)
    check(m["id"] is None and m["error"]["code"] == -32600, "object id: %r" % m)
    # a line longer than the server keeps: one parse error, the rest of it skipped
    c.raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (81 << 20) + b'"}}\n')
    m = c.read_message(30)
    check(m and m["id"] is None and m["error"]["code"] == -32700 and "longer" in m["error"]["message"], "long line: %r" % m)
    r = c.result(c.request("ping"))
    check(r == {}, "ping after a long line")
    rc, rest = c.close()
    check(rc == 0 and rest == b"", "exit %d, left %r" % (rc, rest[:100]))


def scenario_killed(c):
    """A server killed outright still leaves no run unrecorded: its children get SIGTERM."""
    c.handshake()
    marker = "mcp-killed-%d" % os.getpid()
    c.call(None, "run_command", {"argv": ["sh", "-c", "sleep 300; : " + marker]})
    deadline = time.monotonic() + 20
    while not alive(marker):
        check(time.monotonic() < deadline, "the run never started")
        time.sleep(0.1)
    sig = int(os.environ.get("MCP_SIGNAL", "9"))
    c.proc.send_signal(sig)
    c.proc.wait(30)
    if sig != 9:
        check(c.proc.returncode == 0, "server exited %d on signal %d" % (c.proc.returncode, sig))
    deadline = time.monotonic() + 20
    while True:
        mine = [x for x in runs_of(c.name) if marker in " ".join(x["argv"])]
        if mine and mine[0]["status"] != "running":
            break
        check(time.monotonic() < deadline, "run not recorded after the server died: %r" % mine)
        time.sleep(0.2)
    check(mine[0]["status"] == "cancelled", "recorded as %s" % mine[0]["status"])
    check(not alive(marker), "a process of the run outlived the server")


def main(prefix="mcp-test", scenarios=None):
    """Run the scenario argv names: scenario_NAME of scenarios (a module's
    globals(); this module's by default), against a server started with
    the rest of argv ([--era E] [--] SERVER ARGS...)."""
    args = sys.argv[1:]
    scenario = args.pop(0)
    era = "legacy"
    if args[:1] == ["--era"]:
        era = args[1]
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    name = "%s-%s-%d-%s" % (prefix, scenario, os.getpid(), era)
    c = Client(era, args, name)
    try:
        (scenarios or globals())["scenario_" + scenario](c)
    except Fail as e:
        print("FAIL: %s (era %s)" % (e, era), file=sys.stderr)
        c.proc.kill()
        sys.exit(1)
    print("ok %s (era %s)" % (scenario, era))


if __name__ == "__main__":
    main()
