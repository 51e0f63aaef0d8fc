# A hutch kernel: a Python interpreter that stays up in a live sandbox
# and runs one request after another in one namespace (hutch-exec(1),
# --kernel python). It is started as the sandbox's job like any other,
# with this text as its -c argument.
#
# fd 0 is a stream socket to the sandbox's supervisor: requests and
# replies, each a 4-byte big-endian length and that many bytes of JSON.
# A request is {"code": TEXT}; the reply {"status": "ok" | "error" |
# "interrupted", "value": repr of a final expression or null, "ename":
# the exception's name}. fds 1 and 2 are the call's stdout and stderr.
# The supervisor trusts nothing written here: code run here can write
# to the socket too, and only its own call's result can suffer.
#
# SIGINT (the call's deadline) raises KeyboardInterrupt in the running
# code; one that comes while no code runs (late, or through a thread the
# code left) is ignored.
import ast
import json
import linecache
import os
import signal
import socket
import struct
import sys
import traceback

VALUE_MAX = 65536
FRAME_MAX = 1 << 26
running = False


def on_sigint(signum, frame):
    if running:
        raise KeyboardInterrupt


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_request(sock):
    head = read_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > FRAME_MAX:
        return None
    body = read_exact(sock, n)
    return None if body is None else json.loads(body)


def print_error(e):
    # from the first frame of the code on: the driver's own are noise
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<kernel>":
        tb = tb.tb_next
    t = tb
    while t is not None and t.tb_next is not None:
        if t.tb_next.tb_frame.f_code is on_sigint.__code__:
            t.tb_next = None
        t = t.tb_next
    traceback.print_exception(type(e), e, tb)


def run(code, ns):
    global running
    status, value, ename = "ok", None, ""
    linecache.cache["<kernel>"] = (len(code), None, code.splitlines(True), "<kernel>")
    try:
        running = True
        try:
            tree = ast.parse(code, "<kernel>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<kernel>", "exec"), ns)
            if last is not None:
                v = eval(compile(last, "<kernel>", "eval"), ns)
                if v is not None:
                    ns["_"] = v
                    value = repr(v)
        finally:
            running = False
    except KeyboardInterrupt as e:
        status = "interrupted"
        print_error(e)
    except BaseException as e:  # SystemExit too: the kernel stays up
        status, ename = "error", type(e).__name__
        print_error(e)
    if value is not None and len(value) > VALUE_MAX:
        value = value[:VALUE_MAX] + "..."
    return {"status": status, "value": value, "ename": ename}


def main():
    sock = socket.socket(fileno=os.dup(0))  # os.dup: close-on-exec
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # what the code starts reads nothing of ours
    os.close(null)
    signal.signal(signal.SIGINT, on_sigint)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.argv = [""]
    while True:
        req = read_request(sock)
        if not isinstance(req, dict):
            return
        reply = run(str(req.get("code", "")), ns)
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        body = json.dumps(reply).encode()
        sock.sendall(struct.pack(">I", len(body)) + body)


main()
