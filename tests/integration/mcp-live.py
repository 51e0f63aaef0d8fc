#!/usr/bin/python3
# mcp-live.py - scenarios of hutch mcp's live sessions (mcp-live.bats):
# a session's calls exec into one live sandbox, so files and processes
# stay between calls; the sandbox stops at the idle timeout, when the
# server exits, and when it is killed. Uses mcp-session.py's client
# (every structuredContent validated against its outputSchema).
#
#   mcp-live.py SCENARIO [--era legacy|modern] [-- SERVER-ARGS...]
import shutil
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

spec = importlib.util.spec_from_file_location(
    "mcp_session", os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp-session.py"))
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)
Client, Fail, check, text_of, alive, show = ms.Client, ms.Fail, ms.check, ms.text_of, ms.alive, ms.show
HUTCH = ms.HUTCH
STATE = os.environ["HUTCH_STATE_DIR"]


def sandboxes(prefix):
    """The live sandboxes whose name starts with prefix (hutch sandbox ls --json)."""
    return [s for s in ms.hutch_json("sandbox", "ls", "--json") if s.get("name", "").startswith(prefix)]


def wait_until(what, cond, timeout=20):
    deadline = time.monotonic() + timeout
    while not cond():
        check(time.monotonic() < deadline, "%s: not within %ss" % (what, timeout))
        time.sleep(0.1)


def server_prefix(c):
    """The sandboxes of c's server are named mcp-<its session id>-N."""
    r = c.run("list_runs", {"limit": 1})
    runs = r["structuredContent"]["runs"]
    check(runs, "no run to learn the server's session from")
    return "mcp-%s-" % runs[0]["labels"]["mcp.session"]


def sleep_marker():
    """A background process a test can find by its command line alone."""
    return "sleep %d" % (100000 + os.getpid() + int(time.monotonic() * 1000) % 100000)


def tree(session):
    return os.path.join(STATE, "sessions", session, "tree")


def run_ok(c, tool, args):
    r = c.run(tool, args)
    check(not r["isError"], "%s %r failed: %s" % (tool, args, text_of(r)))
    return r


# --- scenarios -------------------------------------------------------------

def scenario_server(c):
    """run_command starts a background server; a later call talks to it;
    list_processes shows it; list_ports answers (none published)."""
    c.handshake()
    port = 20000 + os.getpid() % 20000
    code = ("import http.server, socketserver\n"
            "class H(http.server.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        self.send_response(200); self.end_headers(); self.wfile.write(b'hello from the sandbox')\n"
            "    def log_message(self, *a): pass\n"
            "socketserver.TCPServer(('127.0.0.1', %d), H).serve_forever()\n" % port)
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "python3 server.py </dev/null >/dev/null 2>&1 & echo started"],
                                  "session": "web", "files": {"server.py": code}})
    sc = r["structuredContent"]
    check(sc["committed"] is False and sc["session"].endswith("web"), "a live call's result: %r" % sc)
    check("live session" in text_of(r) and "committed when the sandbox stops" in text_of(r),
          "the result does not say what a live call is: %r" % text_of(r))
    check(sc["labels"].get("mcp.scope") == "default" and sc["labels"]["mcp.live"].startswith("mcp-"),
          "a live call's run is not labelled as the server's: %r" % sc["labels"])
    # a later call talks to it (it may need a moment to listen)
    get = ("import time, urllib.request\n"
           "for i in range(100):\n"
           "    try:\n"
           "        print(urllib.request.urlopen('http://127.0.0.1:%d/').read().decode()); break\n"
           "    except OSError:\n"
           "        time.sleep(0.1)\n" % port)
    r = run_ok(c, "run_code", {"language": "python", "code": get, "session": "web"})
    check(r["structuredContent"]["stdout"] == "hello from the sandbox\n", "the server did not answer: %r" % text_of(r))
    r = run_ok(c, "list_processes", {"session": "web"})
    procs = r["structuredContent"]["processes"]
    check(any("server.py" in p["command"] for p in procs), "list_processes misses the server: %r" % procs)
    check(not any("hutch-mcp" in p["command"] for p in procs), "list_processes lists itself: %r" % procs)
    check(not any(p["pid"] == 1 for p in procs), "list_processes lists the sandbox's init: %r" % procs)
    r = run_ok(c, "list_ports", {"session": "web"})
    check(r["structuredContent"]["running"] is True and r["structuredContent"]["ports"] == [], "list_ports: %r" % r)
    # another scope's session of the same name is another sandbox
    other = Client(c.era, ["--scope", "beta"], c.name + "-beta")
    other.handshake()
    r = run_ok(other, "list_processes", {"session": "web"})
    check(r["structuredContent"]["running"] is False, "beta sees alpha's live sandbox: %r" % r)
    other.close()
    r = run_ok(c, "list_processes", {"session": "nothing-here"})
    check(r["structuredContent"] == {"sandbox": None, "running": False, "processes": []}, "no sandbox: %r" % r)
    # the run_code path writes its code outside the workspace
    r = run_ok(c, "run_command", {"argv": ["ls", "-A"], "session": "web"})
    check(r["structuredContent"]["stdout"].split() == ["output", "server.py"], "workspace: %r" % text_of(r))
    c.close()


def scenario_publish(c):
    """--publish 8765 (the bats test's): a server run_command starts on
    port 8765 in the session's sandbox answers on the host, at the port
    list_ports names; only on loopback."""
    c.handshake()
    code = ("import http.server, socketserver\n"
            "class H(http.server.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        self.send_response(200); self.end_headers(); self.wfile.write(b'published')\n"
            "    def log_message(self, *a): pass\n"
            "socketserver.TCPServer(('127.0.0.1', 8765), H).serve_forever()\n")
    run_ok(c, "run_command", {"argv": ["sh", "-c", "python3 srv.py </dev/null >/dev/null 2>&1 &"], "session": "pub",
                              "files": {"srv.py": code}})
    r = run_ok(c, "list_ports", {"session": "pub"})
    ports = r["structuredContent"]["ports"]
    check(len(ports) == 1 and ports[0]["port"] == 8765 and ports[0]["host"] == "127.0.0.1", "list_ports: %r" % r)
    check("-> port 8765 inside" in text_of(r), "list_ports text: %r" % text_of(r))
    import urllib.request
    url = "http://127.0.0.1:%d/" % ports[0]["host_port"]
    deadline = time.monotonic() + 20
    while True:
        try:
            body = urllib.request.urlopen(url, timeout=5).read()
            break
        except OSError as e:
            check(time.monotonic() < deadline, "the published port does not answer: %s" % e)
            time.sleep(0.1)
    check(body == b"published", "the published port answered %r" % body)
    c.close()


def scenario_kernels(c):
    """--kernels: run_code in python and node keeps its variables between
    calls (the session's kernel), a final expression's value is printed,
    an error is a failed result and the state survives it; code with
    stdin runs as a program; the record names the language and code."""
    c.handshake()
    r = run_ok(c, "run_code", {"language": "python", "session": "k", "code": "import math\nx = 41"})
    check("python kernel" in text_of(r), "the result does not say it ran in the kernel: %r" % text_of(r))
    r = run_ok(c, "run_code", {"language": "python", "session": "k", "code": "x + 1"})
    check(r["structuredContent"]["stdout"] == "42\n", "a kernel variable did not persist: %r" % text_of(r))
    check(r["structuredContent"]["lang"] == "python" and r["structuredContent"]["labels"]["kernel"] == "python",
          "the record: %r" % r["structuredContent"])
    r = c.run("run_code", {"language": "python", "session": "k", "code": "assert x == 0, 'x is not 0'"})
    check(r["isError"] and "x is not 0" in r["structuredContent"]["stderr"], "an error: %r" % text_of(r))
    r = run_ok(c, "run_code", {"language": "python", "session": "k", "code": "print(math.floor(x / 2))"})
    check(r["structuredContent"]["stdout"] == "20\n", "the state did not survive an error: %r" % text_of(r))
    r = run_ok(c, "run_code", {"language": "node", "session": "k", "code": "let n = 20"})
    r = run_ok(c, "run_code", {"language": "node", "session": "k", "code": "n + 22"})
    check(r["structuredContent"]["stdout"] == "42\n", "a node kernel variable: %r" % text_of(r))
    # stdin: a program, which does not see the kernel's variables
    r = c.run("run_code", {"language": "python", "session": "k", "stdin": "in\n",
                           "code": "import sys\nprint(sys.stdin.read().strip(), 'x' in globals())"})
    check(r["structuredContent"]["stdout"] == "in False\n" and "exec instead" in text_of(r)
          and "labels" in r["structuredContent"] and "kernel" not in r["structuredContent"]["labels"],
          "code with stdin: %r" % text_of(r))
    c.close()


def scenario_kernel_busy(c):
    """A kernel call the sandbox turns away busy (its kernel is running
    another caller's call) is an error the model may retry (sandbox_busy,
    retryable, exit code 75) and recorded nowhere, as a busy exec is; the
    retry, once the kernel is free, runs."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "b", "code": "x = 41"})
    names = [s["name"] for s in sandboxes(server_prefix(c))]
    check(len(names) == 1, "the session's sandbox: %r" % names)
    name = names[0]
    # another caller holds the kernel until /tmp/go exists
    other = subprocess.Popen([HUTCH, "exec", name, "--kernel", "python", "-c",
                              "import os, time\nopen('/tmp/started', 'w').close()\n"
                              "while not os.path.exists('/tmp/go'): time.sleep(0.01)"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until("the other call", lambda: subprocess.run([HUTCH, "exec", name, "--", "test", "-e", "/tmp/started"])
                   .returncode == 0)
        before = len(ms.hutch_json("ls", "--json", "--limit", "100000"))
        r = c.run("run_code", {"language": "python", "session": "b", "code": "x + 1"})
        check(r["isError"] and r.get("_meta", {}).get("hutch/error") == {"code": "sandbox_busy", "retryable": True}
              and "exit_code=75" in text_of(r) and "running another call" in text_of(r),
              "a busy kernel call: %r" % r)
        check(len(ms.hutch_json("ls", "--json", "--limit", "100000")) == before, "the busy call was recorded")
    finally:
        subprocess.run([HUTCH, "exec", name, "--", "touch", "/tmp/go"])
        other.wait(timeout=30)
    r = run_ok(c, "run_code", {"language": "python", "session": "b", "code": "x + 1"})
    check(r["structuredContent"]["stdout"] == "42\n", "the retry: %r" % text_of(r))
    c.close()


def scenario_kernel_parallel(c):
    """The server runs kernel calls itself (a thread each): a kernel call
    of one session that takes seconds does not hold another session's,
    nor list_runs; it gets its progress; both are complete records."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "ka", "code": "import time\nx = 1"})
    run_ok(c, "run_code", {"language": "python", "session": "kb", "code": "y = 2"})
    t0 = time.monotonic()
    # the slow call sleeps long enough that the checks below hold on a
    # loaded machine too: the other calls must be answered well within it
    slow = c.call(None, "run_code", {"language": "python", "session": "ka", "code": "time.sleep(10); x + 40"},
                  meta={"progressToken": "slow"})
    r = c.tool_result(c.call(None, "run_code", {"language": "python", "session": "kb", "code": "y * 21"}),
                      "run_code")
    fast = time.monotonic() - t0
    check(r["structuredContent"]["stdout"] == "42\n", "the other session's call: %r" % text_of(r))
    r2 = c.tool_result(c.call(None, "list_runs", {"limit": 1}), "list_runs")
    check(not r2["isError"], "list_runs meanwhile: %r" % text_of(r2))
    # answered before the slow call (whatever the host's load)
    check(not any(m.get("id") == slow and "method" not in m for m in c.pending),
          "another session's call waited for the slow one (%.1fs)" % fast)
    r = c.tool_result(slow, "run_code")
    check(r["structuredContent"]["stdout"] == "41\n" and time.monotonic() - t0 >= 10,
          "the slow call: %r" % text_of(r))
    rec = show(r["structuredContent"]["id"])
    check(rec["status"] == "success" and rec["labels"].get("kernel") == "python"
          and rec["labels"].get("mcp.session") and rec["labels"].get("mcp.live", "").startswith("mcp-")
          and rec["code"] == "time.sleep(10); x + 40" and rec["stdout"] == "41\n",
          "the slow call's record: %r" % rec)
    c.close()


def scenario_kernel_threads(c):
    """Kernel calls of four sessions at once, round after round: each
    runs in a thread of the server with a store connection of its own.
    Every answer is a run the store has, with its own id; the store stays
    sound (SQLite single-threaded, or one shared last id, broke both)."""
    c.handshake()
    n, rounds = 4, 25
    for i in range(n):
        run_ok(c, "run_code", {"language": "python", "session": "t%d" % i, "code": "x = 0"})
    seen = set()
    for rnd in range(rounds):
        ids = [c.call(None, "run_code", {"language": "python", "session": "t%d" % i, "code": "x += 1\nx"})
               for i in range(n)]
        for i, rid in enumerate(ids):
            r = c.tool_result(rid, "run_code")
            check(not r["isError"] and r["structuredContent"]["stdout"] == "%d\n" % (rnd + 1),
                  "round %d, session t%d: %r" % (rnd, i, text_of(r)))
            run_id = r["structuredContent"]["id"]
            check(run_id not in seen, "round %d: run id %s answered twice" % (rnd, run_id))
            seen.add(run_id)
            check(show(run_id)["status"] == "success", "round %d: run %s" % (rnd, run_id))
    doctor = subprocess.run([HUTCH, "doctor"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode()
    check("quick_check ok" in doctor, "the store after: %s" % doctor[-400:])
    c.close()


def scenario_kernel_exit(c):
    """The server's end of input while a kernel call loops (its timeout
    far off): the server stops the sandbox, which ends the call, and
    exits within seconds, leaving no process."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "ke", "code": "x = 1"})
    prefix = server_prefix(c)
    c.call(None, "run_code", {"language": "python", "session": "ke", "timeout_s": 120,
                              "code": "import time\nwhile True: time.sleep(0.05)"})
    wait_until("the loop's call to run", lambda: ms.hutch_json("ls", "--json", "--sandbox", prefix + "1",
                                                                "--status", "running"), 20)
    t0 = time.monotonic()
    c.proc.stdin.close()
    try:
        c.proc.wait(30)
    except subprocess.TimeoutExpired:
        raise Fail("the server did not exit within 30 s of its end of input")
    check(time.monotonic() - t0 < 30, "exit took too long")
    check(not sandboxes(prefix), "a sandbox is left: %r" % sandboxes(prefix))


def scenario_kernel_latency(c):
    """Not a check: the median of 150 kernel calls (x += 1) on one
    session through MCP, in ms, printed for the report: request written
    to response read, the answer not validated (the schema check is the
    client's time, not the server's)."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "kl", "code": "x = 0"})
    t = []
    for i in range(150):
        t0 = time.monotonic()
        m = c.wait(c.call(None, "run_code", {"language": "python", "session": "kl", "code": "x += 1"}))
        t.append((time.monotonic() - t0) * 1000)
        check(not m["result"]["isError"], "call failed: %r" % m)
    r = run_ok(c, "run_code", {"language": "python", "session": "kl", "code": "x"})
    check(r["structuredContent"]["stdout"] == "150\n", "x: %r" % text_of(r))
    t.sort()
    print("kernel latency %s: median %.2f ms, min %.2f, p90 %.2f (n=%d)"
          % (" ".join(c.server_args), t[len(t) // 2], t[0], t[int(len(t) * 0.9)], len(t)))
    c.close()


def scenario_nokernels(c):
    """--no-kernels: run_code in python runs as a program each call (no
    variable persists), files still do."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "nk", "code": "x = 1\nopen('f', 'w').write('y')"})
    r = run_ok(c, "run_code", {"language": "python", "session": "nk",
                               "code": "print('x' in globals(), open('f').read())"})
    check(r["structuredContent"]["stdout"] == "False y\n" and "kernel" not in r["structuredContent"]["labels"],
          "--no-kernels: %r" % text_of(r))
    c.close()


def scenario_state(c):
    """A file and a process an earlier call left are there for the next
    call (no interpreter variable involved); a module written in one call
    is imported by run_code in the next; stdin and env reach the command."""
    c.handshake()
    marker = sleep_marker()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "echo 42 > state; %s >/dev/null 2>&1 & echo $! > pidfile"
                                       % marker], "session": "st"})
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "cat state; kill -0 $(cat pidfile) && echo alive; "
                                           "tr '\\0' ' ' < /proc/$(cat pidfile)/cmdline"], "session": "st"})
    out = r["structuredContent"]["stdout"]
    check(out.startswith("42\nalive\n") and marker in out, "state did not persist: %r" % out)
    check(alive(marker), "the background process is not running")
    run_ok(c, "run_code", {"language": "python", "session": "st", "code": "open('helper.py','w').write('X = 7\\n')"})
    r = run_ok(c, "run_code", {"language": "python", "session": "st", "code": "import helper\nprint(helper.X * 6)"})
    check(r["structuredContent"]["stdout"] == "42\n", "import across calls: %r" % text_of(r))
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "cat; echo \"$GREETING\""], "session": "st",
                                  "stdin": "it's a 'quoted' $(line)\n", "env": {"GREETING": "héllo 'x'"}})
    check(r["structuredContent"]["stdout"] == "it's a 'quoted' $(line)\nhéllo 'x'\n", "stdin/env: %r" % text_of(r))
    r = run_ok(c, "run_code", {"language": "c", "session": "st",
                               "code": "#include <stdio.h>\nint main(void){printf(\"c ok\\n\");return 0;}\n"})
    check(r["structuredContent"]["stdout"] == "c ok\n", "a compiled language: %r" % text_of(r))
    r = c.run("run_code", {"language": "c", "session": "st", "code": "int main(void){ return nope; }\n"})
    check(r["isError"] and "compile failed" in r["structuredContent"]["stderr"], "a compile error: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["sh", "-c", "exit 3"], "session": "st"})
    check(r["isError"] and r["structuredContent"]["exit_code"] == 3, "exit code: %r" % text_of(r))
    r = c.run("run_command", {"argv": ["sleep", "30"], "session": "st", "timeout_s": 1})
    check(r["structuredContent"]["status"] == "timeout", "a call's timeout: %r" % text_of(r))
    r = run_ok(c, "run_command", {"argv": ["cat", "state"], "session": "st"})
    check(alive(marker), "a call's timeout ended the sandbox")
    c.close()
    check(not alive(marker), "a process of the session outlived the server")


def store_holding(needles):
    """The files under the state dir that hold any of needles (bytes)."""
    found = []
    for root, dirs, files in os.walk(STATE):
        for f in files:
            path = os.path.join(root, f)
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue        # a socket, a fifo
            found += ["%s (%s)" % (path, n.decode()) for n in needles if n in data]
    return found


def scenario_private(c):
    """A live call's stdin and env reach the command and land nowhere in
    the state dir (a fresh run records neither): not in the exec's
    record, not in a file left in the sandbox that its stop commits;
    files work and their content is not in the exec's argv."""
    c.handshake()
    tag = "%d%d" % (os.getpid(), int(time.monotonic() * 1000))
    # lower case in, upper case out: the call's output (recorded, as a
    # fresh run's is) does not hold them as given
    sin, senv, sfile = ("s3cret-in-" + tag), ("s3cret-env-" + tag), ("S3CRET-FILE-" + tag)
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "{ cat; echo \"$TOKEN\"; } | tr a-z A-Z; cat sub/f.txt"],
                                  "session": "pv", "stdin": sin + "\n", "env": {"TOKEN": senv},
                                  "files": {"sub/f.txt": sfile + "\n"}})
    check(r["structuredContent"]["stdout"] == "%s\n%s\n%s\n" % (sin.upper(), senv.upper(), sfile),
          "the call: %r" % text_of(r))
    run_id = r["structuredContent"]["id"]
    r = run_ok(c, "run_code", {"language": "python", "session": "pv", "stdin": sin + "-2\n",
                               "env": {"TOKEN": senv + "-2"},
                               "code": "import os, sys\nprint(sys.stdin.read().strip().upper(), "
                                       "os.environ['TOKEN'].upper())"})
    check(r["structuredContent"]["stdout"] == "%s-2 %s-2\n" % (sin.upper(), senv.upper()),
          "run_code: %r" % text_of(r))
    check("exec instead" in text_of(r), "the fallback from the kernel is not said: %r" % text_of(r))
    argv = json.dumps(show(run_id).get("argv"))
    check("hutch-mcp" in argv and sfile not in argv and sin not in argv and senv not in argv,
          "the exec's recorded argv: %s" % argv)
    found = store_holding([sin.encode(), senv.encode()])
    check(not found, "stdin or env in the state dir while the session is up: %s" % found)
    c.close()
    found = store_holding([sin.encode(), senv.encode()])
    check(not found, "stdin or env in the state dir after the session's stop: %s" % found)
    check(store_holding([sfile.encode()]), "the session's file was not committed")


def scenario_nul(c):
    """A NUL byte a live exec or a kernel call writes shows as U+FFFD:
    the result keeps run id, status and what follows it; read_output
    gives the same; stdin or a file with a NUL is refused, naming it."""
    c.handshake()
    F = "\ufffd"
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "printf 'a\\000b\\n'; printf 'e\\000f' >&2"], "session": "x"})
    sc = r["structuredContent"]
    check(sc["stdout"] == "a" + F + "b\n" and sc["stderr"] == "e" + F + "f" and sc["id"] in text_of(r)
          and "live session" in text_of(r), "an exec's NUL: %r" % text_of(r))
    p = run_ok(c, "read_output", {"run_id": sc["id"], "stream": "stderr"})["structuredContent"]
    check(p["text"] == "e" + F + "f" and p["total"] == 5 and p["eof"], "read_output: %r" % p)
    r = run_ok(c, "run_code", {"language": "python", "code": "print('a\\0b')", "session": "nk"})
    sc = r["structuredContent"]
    check(sc["labels"].get("kernel") == "python", "not a kernel call: %r" % text_of(r))
    check(sc["stdout"] == "a" + F + "b\n" and sc["status"] == "success" and sc["id"] in text_of(r),
          "a kernel call's NUL: %r" % text_of(r))
    for args, field in [({"stdin": "a\u0000b"}, "stdin"), ({"files": {"f": "a\u0000b"}}, "files/f")]:
        r = c.run("run_command", dict(args, argv=["cat"], session="x"))
        check(r["isError"] and text_of(r).startswith(field + ": a live session takes text without NUL"),
              "%s: %r" % (field, text_of(r)))
    c.close()


def scenario_planted(c):
    """A hostile earlier call plants symlinks at the paths later calls
    of the session would use in the sandbox's /tmp (the script, its
    stdin; the seq is a counter): a later call's env and stdin must not
    land where the earlier call's code can read them, and the later
    call must run as asked (security/live-attacks.bats)."""
    c.handshake()
    tag = "%d%d" % (os.getpid(), int(time.monotonic() * 1000))
    sin, senv = ("pl4nted-in-" + tag), ("pl4nted-env-" + tag)
    plant = ("for i in $(seq 1 400); do for x in sh stdin; do "
             "ln -sf /tmp/leak-$x-$i /tmp/.hutch-mcp-$i.$x; done; done; echo planted")
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", plant], "session": "pl"})
    check(r["structuredContent"]["stdout"] == "planted\n", "planting: %r" % text_of(r))
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "cat; echo \"$TOKEN\""], "session": "pl",
                                  "stdin": sin + "\n", "env": {"TOKEN": senv}})
    check(r["structuredContent"]["stdout"] == "%s\n%s\n" % (sin, senv), "the victim call: %r" % text_of(r))
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "cat /tmp/leak-* 2>/dev/null; true"], "session": "pl"})
    out = r["structuredContent"]["stdout"]
    check(sin not in out and senv not in out, "an earlier call read a later one's stdin or env: %r" % out)
    # FIFOs at the source paths of run_code calls to come, each with a
    # process that takes the call's code and hands it its own instead
    evil = "import os; print('PWNED', os.environ.get('TOKEN'))"
    plant = ("for i in $(seq 1 40); do f=/tmp/.hutch-mcp-$i.py; rm -f $f; mkfifo $f && "
             "{ cat $f > /dev/null; echo \"%s\" > $f; } </dev/null >/dev/null 2>&1 & done; echo planted" % evil)
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", plant], "session": "pl"})
    check(r["structuredContent"]["stdout"] == "planted\n", "planting FIFOs: %r" % text_of(r))
    r = c.run("run_code", {"language": "python", "session": "pl", "env": {"TOKEN": senv},
                           "code": "import os\nprint(os.environ['TOKEN'].upper())"})
    out = r["structuredContent"]["stdout"]
    check("PWNED" not in out and out == senv.upper() + "\n", "run_code ran planted code: %r" % text_of(r))
    c.close()


# A process that watches the sandbox's /tmp (inotify) for the
# directories run_code calls make there and, in each, takes every
# source file (main.EXT) as soon as it is written: it logs what it read
# and puts a program of its own in its place. It logs each directory it
# sees, so a test can tell that it watched.
WATCHER = r"""
import ctypes, os, re, struct
libc = ctypes.CDLL(None, use_errno=True)
IN_CLOSE_WRITE, IN_CREATE, IN_ISDIR = 0x8, 0x100, 0x40000000
EVIL = "print('PWNED by the watcher')\n"
fd = libc.inotify_init1(0)
top = libc.inotify_add_watch(fd, b"/tmp", IN_CREATE)
log = open("/tmp/watch.log", "a", buffering=1)
dirs = {}

def take(path):
    if not re.fullmatch(r"main\.[a-z]+", os.path.basename(path)):
        return
    try:
        data = open(path).read()
    except OSError:
        return
    if not data or data == EVIL:
        return
    log.write("stole %s %r\n" % (path, data))
    with open(path + ".new", "w") as f:
        f.write(EVIL)
    os.rename(path + ".new", path)

log.write("ready %d %d\n" % (fd, top))
while True:
    buf = os.read(fd, 65536)
    i = 0
    while i < len(buf):
        wd, mask, _, n = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
        i += 16 + n
        if wd == top and mask & IN_ISDIR and name.startswith(".hutch-mcp-"):
            d = "/tmp/" + name
            dirs[libc.inotify_add_watch(fd, d.encode(), IN_CLOSE_WRITE)] = d
            log.write("dir %s\n" % d)
            for f in os.listdir(d):
                take(d + "/" + f)
        elif wd in dirs and mask & IN_CLOSE_WRITE:
            take(dirs[wd] + "/" + name)
"""


def scenario_watched(c):
    """A process an earlier call left running watches /tmp and races
    into each new code directory to read the source and put its own
    program there: a later run_code call (python, as a program; sh; c,
    compiled) runs its own code, and the watcher never reads it. The
    watcher sees the c call's directory (its compiled program's), so it
    was watching (security: hutch-mcp(1), "Live sessions")."""
    c.handshake()
    tag = "%d%d" % (os.getpid(), int(time.monotonic() * 1000))
    start = ("python3 watch.py </dev/null >/dev/null 2>&1 & "
             "for i in $(seq 1 100); do [ -s /tmp/watch.log ] && break; sleep 0.1; done; cat /tmp/watch.log")
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", start], "session": "wa", "files": {"watch.py": WATCHER}})
    check(r["structuredContent"]["stdout"].startswith("ready "), "the watcher did not start: %r" % text_of(r))
    # env: a program, not the python kernel
    r = c.run("run_code", {"language": "python", "session": "wa", "env": {"TOKEN": "py-" + tag},
                           "code": "import os\nprint('ran', os.environ['TOKEN'])  # py-src-%s\n" % tag})
    check(r["structuredContent"]["stdout"] == "ran py-%s\n" % tag, "the python call: %r" % text_of(r))
    r = c.run("run_code", {"language": "sh", "session": "wa", "code": "echo ran sh # sh-src-%s\n" % tag})
    check(r["structuredContent"]["stdout"] == "ran sh\n", "the sh call: %r" % text_of(r))
    r = c.run("run_code", {"language": "c", "session": "wa",
                           "code": "#include <stdio.h>\n/* c-src-%s */\nint main(void){puts(\"ran c\");return 0;}\n"
                                   % tag})
    check(r["structuredContent"]["stdout"] == "ran c\n", "the c call: %r" % text_of(r))
    r = run_ok(c, "run_command", {"argv": ["cat", "/tmp/watch.log"], "session": "wa"})
    log = r["structuredContent"]["stdout"]
    check("dir /tmp/.hutch-mcp-" in log, "the watcher saw no code directory: %r" % log)
    check("stole" not in log and tag not in log, "the watcher read a later call's source: %r" % log)
    c.close()


def scenario_kernel_cancel(c):
    """notifications/cancelled of an in-process kernel call interrupts it
    as its deadline would: no answer comes for it, its record says
    cancelled, the session's next call runs at once, and the kernel's
    state lives on (what the call did before the interrupt, no fresh
    kernel)."""
    c.handshake()
    run_ok(c, "run_code", {"language": "python", "session": "kc", "code": "import time\nx = 1"})
    prefix = server_prefix(c)
    code = "x = 2\ntime.sleep(40)\nx = 3"
    t0 = time.monotonic()
    rid = c.call(None, "run_code", {"language": "python", "session": "kc", "timeout_s": 120, "code": code})
    wait_until("the call to run", lambda: ms.hutch_json("ls", "--json", "--sandbox", prefix + "1",
                                                         "--status", "running"), 20)
    time.sleep(1)       # its row is written just before the kernel gets the code
    c.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    # the session's next call waits for the cancelled one to end
    r = run_ok(c, "run_code", {"language": "python", "session": "kc", "code": "x * 21"})
    check(time.monotonic() - t0 < 25, "the cancelled call ran on (%.1f s)" % (time.monotonic() - t0))
    check(r["structuredContent"]["stdout"] == "42\n" and "fresh" not in text_of(r),
          "the kernel's state after the cancel: %r" % text_of(r))
    check(not [m for m in c.pending if m.get("id") == rid], "an answer came for the cancelled call")
    mine = [x for x in ms.hutch_json("ls", "--json", "--sandbox", prefix + "1") if show(x["id"]).get("code") == code]
    check(len(mine) == 1 and mine[0]["status"] == "cancelled", "the cancelled call's record: %r" % mine)
    check("interrupted" in show(mine[0]["id"]).get("message", ""), "its message: %r" % show(mine[0]["id"]))
    # cancelled at once, in the same breath as the call: before it
    # starts (no record), before the kernel has the code (nothing runs),
    # or as the kernel starts it (the interrupt, repeated until the code
    # takes it); never the call run on to its kill with the kernel's state
    code = "time.sleep(5)\nx = 100"
    rid = c.call(None, "run_code", {"language": "python", "session": "kc", "timeout_s": 120, "code": code})
    c.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    r = run_ok(c, "run_code", {"language": "python", "session": "kc", "code": "x * 21"})
    check(r["structuredContent"]["stdout"] == "42\n" and "fresh" not in text_of(r),
          "the kernel's state after an early cancel: %r" % text_of(r))
    # a call the cancel took before it started has no record; one
    # started has one, cancelled
    mine = [x for x in ms.hutch_json("ls", "--json", "--sandbox", prefix + "1") if show(x["id"]).get("code") == code]
    check(len(mine) <= 1 and all(x["status"] == "cancelled" for x in mine),
          "the early-cancelled call's record: %r" % mine)
    check(not [m for m in c.pending if m.get("id") == rid], "an answer came for the early-cancelled call")
    c.close()


def scenario_forged_ps(c):
    """A process whose command line or name holds a newline cannot add
    made-up entries to list_processes (security/live-attacks.bats)."""
    c.handshake()
    marker = sleep_marker()
    forge = ("import ctypes, os, time\n"
             "if os.fork() == 0:\n"
             "    ctypes.CDLL(None).prctl(15, b'z\\n4343 1 S made-up', 0, 0, 0)\n"
             "    os._exit(0)\n"
             "if os.fork() == 0:\n"
             "    os.execv('/bin/sleep', ['zz\\n4242 1 S made-up', '%s'])\n"
             "time.sleep(100000)\n" % marker.split()[1])
    run_ok(c, "run_command", {"argv": ["sh", "-c", "python3 -c \"$0\" </dev/null >/dev/null 2>&1 &", forge],
                              "session": "ps"})
    procs = []
    for _ in range(100):
        procs = run_ok(c, "list_processes", {"session": "ps"})["structuredContent"]["processes"]
        if any(p["state"] == "Z" for p in procs) and any(marker.split()[1] in p["command"] for p in procs):
            break
        time.sleep(0.1)
    check(any(p["state"] == "Z" for p in procs) and any(marker.split()[1] in p["command"] for p in procs),
          "the forging processes are not listed: %r" % procs)
    check(not any(p["pid"] in (4242, 4343) for p in procs), "a made-up entry: %r" % procs)
    c.close()


def scenario_exit(c):
    """End of input: the sandbox stops, its files are committed (the
    default policy), no process is left, the sandbox is gone."""
    c.handshake()
    marker = sleep_marker()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "echo kept > f; %s >/dev/null 2>&1 &" % marker],
                              "session": "ex"})
    check(alive(marker), "the background process is not running")
    prefix = server_prefix(c)
    check(len(sandboxes(prefix)) == 1, "no live sandbox: %r" % sandboxes(prefix))
    rc, _ = c.close()
    check(rc == 0, "server exited %d" % rc)
    # the server waited for the stop: nothing is left when it has exited
    check(not alive(marker), "a process of the session outlived the server")
    check(sandboxes(prefix) == [], "a sandbox outlived the server")
    f = os.path.join(tree("mcp-ex"), "f")
    check(os.path.exists(f) and open(f).read() == "kept\n", "the session's file was not committed")
    sb = [r for r in ms.hutch_json("ls", "--json", "--label", "mcp.scope=default")
          if r["argv"][:1] == ["sandbox"] and r["argv"][1].startswith(prefix)]
    check(len(sb) == 1 and sb[0]["status"] == "success", "the sandbox's run: %r" % sb)
    check(show(sb[0]["id"])["committed"] is True, "the sandbox's run did not commit")


def scenario_never(c):
    """commit never on the session's latest call: the stop throws the
    sandbox's files away (its run is cancelled, nothing committed); a
    later commit always call would have kept them."""
    c.handshake()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "echo one > a"], "session": "nv"})
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "echo two > b"], "session": "nv", "commit": "never"})
    check(r["structuredContent"]["committed"] is False and "thrown away" in text_of(r), "never: %r" % text_of(r))
    prefix = server_prefix(c)
    rc, _ = c.close()
    check(rc == 0 and sandboxes(prefix) == [], "the sandbox outlived the server")
    check(not os.path.exists(os.path.join(tree("mcp-nv"), "a")) and
          not os.path.exists(os.path.join(tree("mcp-nv"), "b")), "commit never kept the files")
    # a new server: the session is as it was; commit success keeps a success
    c2 = Client(c.era, c.server_args, c.name + "-2")
    c2.handshake()
    r = run_ok(c2, "run_command", {"argv": ["sh", "-c", "ls; echo three > c"], "session": "nv", "commit": "success"})
    check(r["structuredContent"]["stdout"] in ("", "output\n"), "the thrown away files came back: %r" % text_of(r))
    c2.close()
    check(os.path.exists(os.path.join(tree("mcp-nv"), "c")), "commit success did not keep a success")


def scenario_killed(c):
    """SIGKILL to the server: its keeper stops the session's sandbox;
    no process is left behind."""
    c.handshake()
    marker = sleep_marker()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "%s >/dev/null 2>&1 &" % marker], "session": "kd"})
    check(alive(marker), "the background process is not running")
    prefix = server_prefix(c)
    c.proc.send_signal(signal.SIGKILL)
    c.proc.wait(30)
    wait_until("the sandbox stops after SIGKILL of the server", lambda: sandboxes(prefix) == [])
    wait_until("the session's processes end", lambda: not alive(marker))
    wait_until("the keeper exits", lambda: not alive("mcp --idle-timeout 777s"))


def scenario_term(c):
    """SIGTERM to the server: it stops the session's sandbox itself
    (committing) and exits 0; no process is left."""
    c.handshake()
    marker = sleep_marker()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "echo t > f; %s >/dev/null 2>&1 &" % marker], "session": "tm"})
    prefix = server_prefix(c)
    c.proc.send_signal(signal.SIGTERM)
    rc = c.proc.wait(60)
    check(rc == 0, "server exited %d on SIGTERM" % rc)
    check(sandboxes(prefix) == [] and not alive(marker), "the sandbox outlived the server")
    check(os.path.exists(os.path.join(tree("mcp-tm"), "f")), "the session's file was not committed")


def scenario_idle(c):
    """--idle-timeout: the session's sandbox stops by itself after it
    (committing), and the next call starts a new one."""
    c.handshake()
    marker = sleep_marker()
    run_ok(c, "run_command", {"argv": ["sh", "-c", "echo 1 > n; echo art > output/a.txt; %s >/dev/null 2>&1 &"
                                       % marker], "session": "id"})
    answered = time.monotonic()         # the idle time counts from the call's end, just before
    prefix = server_prefix(c)           # (list_runs: not a call of the session)
    first = [s["name"] for s in sandboxes(prefix)]
    check(len(first) == 1, "no live sandbox")
    wait_until("the idle sandbox stops", lambda: sandboxes(prefix) == [], timeout=30)
    # --idle-timeout 2s (the bats test's): not before, whatever the load
    check(time.monotonic() - answered >= 1.9, "stopped %.2f s after the call, before its idle timeout"
          % (time.monotonic() - answered))
    check(not alive(marker), "a process outlived the idle stop")

    # The sandbox leaves `sandbox ls` when its supervisor stops serving;
    # its workspace is committed after that, before its run's final
    # status is written: the record, not the listing, says it is done.
    def sandbox_run():
        runs = c.run("list_runs", {})["structuredContent"]["runs"]
        return [x for x in runs if x["argv"] == ["sandbox", first[0]]]
    wait_until("the sandbox's run ends", lambda: [x["status"] for x in sandbox_run()] not in ([], ["running"]),
               timeout=30)
    sb = sandbox_run()
    check(len(sb) == 1 and sb[0]["status"] == "success", "the sandbox's run: %r" % sb)
    check(os.path.exists(os.path.join(tree("mcp-id"), "n")), "the idle stop did not commit")
    # the sandbox's own run holds the change set and the artifacts, for diff and get_file
    d = run_ok(c, "diff", {"run_id": sb[0]["id"]})
    check("b/n" in text_of(d), "diff of the sandbox's run: %r" % text_of(d))
    g = run_ok(c, "get_file", {"run_id": sb[0]["id"], "path": "output/a.txt"})
    check(g["structuredContent"]["content"] == "art\n", "get_file of the sandbox's run: %r" % g)
    r = run_ok(c, "run_command", {"argv": ["cat", "n"], "session": "id"})
    check(r["structuredContent"]["stdout"] == "1\n", "the next call: %r" % text_of(r))
    check([s["name"] for s in sandboxes(prefix)] not in ([], first), "no new sandbox for the next call")
    c.close()


def check_cap_refusal(r, cap, session):
    """r is the --max-sessions refusal: retryable admission_full naming
    the cap, the option, the session and how a slot frees."""
    t = text_of(r)
    check(r["isError"] and r["_meta"]["hutch/error"] == {"code": "admission_full", "retryable": True},
          "a new session over the cap was not refused as admission_full: %r" % r)
    check("--max-sessions %d" % cap in t and "--idle-timeout" in t and '"%s"' % session in t and
          "did not run" in t, "the refusal does not say why and how to free a slot: %r" % t)


def scenario_cap(c):
    """--max-sessions 2: two sessions start live sandboxes, a third is
    refused (admission_full, retryable) and nothing of it runs; the two
    still serve calls. Three new sessions sent at once: one refused."""
    c.handshake()
    bg = "sleep 600 >/dev/null 2>&1 & echo started"
    for i in (1, 2):
        run_ok(c, "run_command", {"argv": ["sh", "-c", bg], "session": "cap%d" % i})
    prefix = server_prefix(c)
    check(len(sandboxes(prefix)) == 2, "two sessions, sandboxes %r" % sandboxes(prefix))
    runs = len(c.run("list_runs", {"limit": 100})["structuredContent"]["runs"])
    marker = sleep_marker()
    r = c.run("run_command", {"argv": ["sh", "-c", "%s >/dev/null 2>&1 & echo started" % marker],
                              "session": "cap3"})
    check_cap_refusal(r, 2, "cap3")
    check('"cap1"' in text_of(r) and '"cap2"' in text_of(r), "the live sessions are not named: %r" % text_of(r))
    # nothing of it ran: no sandbox, no run, no session, no process
    check(len(sandboxes(prefix)) == 2, "a third sandbox: %r" % sandboxes(prefix))
    check(len(c.run("list_runs", {"limit": 100})["structuredContent"]["runs"]) == runs, "the refused call left a run")
    check(not os.path.exists(os.path.join(STATE, "sessions", "mcp-cap3")), "the refused call made its session")
    check(not alive(marker), "the refused call's process runs")
    # the live sessions still work, in their own sandboxes
    r = run_ok(c, "run_command", {"argv": ["sh", "-c", "echo again"], "session": "cap1"})
    check(r["structuredContent"]["stdout"] == "again\n", "session 1 after the refusal: %r" % text_of(r))
    # a call without a session starts no live sandbox: it still runs
    run_ok(c, "run_command", {"argv": ["true"]})
    c.close()


def scenario_cap_burst(c):
    """--max-sessions 2 and three new sessions' calls sent at once (the
    server admits them all before any sandbox is up): two start, one is
    refused when it would start a third."""
    c.handshake()
    rids = [c.call(None, "run_command", {"argv": ["sh", "-c", "echo hi"], "session": "b%d" % i}) for i in range(3)]
    rs = [c.tool_result(rid, "run_command") for rid in rids]
    refused = [i for i, r in enumerate(rs) if r["isError"]]
    check(len(refused) == 1, "three sessions at once under --max-sessions 2: refused %r: %r"
          % (refused, [text_of(r) for r in rs]))
    check_cap_refusal(rs[refused[0]], 2, "b%d" % refused[0])
    check(len(sandboxes(server_prefix(c))) == 2, "sandboxes: %r" % sandboxes(server_prefix(c)))
    c.close()


def scenario_cap_idle(c):
    """--max-sessions 1 --idle-timeout 2s: a session whose sandbox
    stopped at its idle timeout no longer counts."""
    c.handshake()
    run_ok(c, "run_command", {"argv": ["true"], "session": "one"})
    prefix = server_prefix(c)
    check_cap_refusal(c.run("run_command", {"argv": ["true"], "session": "two"}), 1, "two")
    wait_until("the idle sandbox stops", lambda: sandboxes(prefix) == [], timeout=30)
    run_ok(c, "run_command", {"argv": ["true"], "session": "two"})
    check(len(sandboxes(prefix)) == 1, "sandboxes: %r" % sandboxes(prefix))
    c.close()


def scenario_fallback(c):
    """A profile a live sandbox refuses (runtime gvisor): the call runs
    as a fresh session call, and its result says so."""
    c.handshake()
    r = c.run("run_command", {"argv": ["sh", "-c", "echo fb > f"], "session": "fb"})
    check("live sandbox could not start" in text_of(r) and "gvisor" in text_of(r),
          "the fallback is not said: %r" % text_of(r))
    if shutil.which("runsc"):
        check(r["structuredContent"]["notes"] and "fresh sandbox" in r["structuredContent"]["notes"][0], "notes: %r" % r)
    else:
        # the fresh call needs gVisor too: without runsc it fails, and
        # says both why it did not run live and why it did not run
        check(r["isError"] and "runsc" in text_of(r) and "fresh sandbox" in text_of(r),
              "without runsc: %r" % r)
    c.close()


def scenario_latency(c):
    """Not a check: the median of 30 run_command calls (true) on one
    session, in ms, printed for the report."""
    c.handshake()
    c.run("run_command", {"argv": ["true"], "session": "lat"})
    t = []
    for i in range(30):
        t0 = time.monotonic()
        r = c.run("run_command", {"argv": ["true"], "session": "lat"})
        t.append((time.monotonic() - t0) * 1000)
        check(not r["isError"], "call failed: %r" % text_of(r))
    t.sort()
    print("latency %s: median %.1f ms, min %.1f, p90 %.1f" % (" ".join(c.server_args), t[15], t[0], t[27]))
    c.close()


if __name__ == "__main__":
    ms.main("mcp-live", globals())
