"""hutch_tool.py - run code for an agent in a hutch sandbox, live.

A tool wrapper an agent framework can use as it is (Python 3.7+, no
dependencies): it sends the run to `hutch run --request - --events` as a
hutch.request/1 document, yields the job's output as it happens, and
returns the hutch.result/1 object. See hutch-json(7).

    from hutch_tool import run_code, HutchError

    for kind, value in run_code("python", "print(6*7)", timeout_ms=5000):
        if kind == "stdout" or kind == "stderr":
            print(kind, value, end="")      # text (bytes if not UTF-8)
        elif kind == "started":
            print("run id", value)
        elif kind == "result":
            print("status", value["status"], "exit", value["exit_code"])

A caller that stops iterating (break, or the generator is closed or
collected) cancels the run: hutch gets SIGTERM, ends the job and records
it cancelled. On Linux the run also gets SIGTERM when the process that
started it dies, so a killed agent leaves no job running behind it.

`python3 hutch_tool.py LANG CODE` runs one snippet from the command line.
"""
import base64
import ctypes
import json
import signal
import subprocess
import sys

# how long a cancelled hutch gets to record the run before it is killed
CANCEL_GRACE_S = 30

__all__ = ["run", "run_code", "HutchError"]


class HutchError(Exception):
    """hutch refused the request (a hutch.error/1 object) or broke its
    contract. .error holds the object when there is one."""

    def __init__(self, message, error=None):
        super().__init__(message)
        self.error = error


def _die_with_parent():
    """In the child, before exec: SIGTERM when the parent dies (Linux's
    PR_SET_PDEATHSIG; hutch then cancels and records the run)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run(request, hutch="hutch", extra_args=()):
    """Run one hutch.request/1 document (a dict). Yields ("started", id),
    ("stdout", data), ("stderr", data), ("heartbeat", event),
    ("warning", message), and last ("result", hutch.result/1 dict).
    data is str, or bytes when the job wrote bytes that are not UTF-8.
    Raises HutchError when hutch refuses the request."""
    doc = dict(request)
    doc.setdefault("schema", "hutch.request/1")
    proc = subprocess.Popen([hutch, "run", "--request", "-", "--events", *extra_args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    try:
        proc.stdin.write(json.dumps(doc).encode())
        proc.stdin.close()
        result = None
        for line in proc.stdout:
            obj = json.loads(line)
            schema = obj.get("schema")
            if schema == "hutch.error/1":
                raise HutchError(obj["message"], obj)
            if schema != "hutch.event/1":
                raise HutchError("unexpected object: %r" % (schema,))
            kind = obj["type"]
            if kind == "started":
                yield "started", obj["id"]
            elif kind == "output":
                data = obj["data"]
                if obj["base64"]:
                    data = base64.b64decode(data)
                yield obj["stream"], data
            elif kind == "heartbeat":
                yield "heartbeat", obj
            elif kind == "warning":
                yield "warning", obj["message"]
            elif kind == "exit":
                result = obj["result"]
            # truncated and event types added later: nothing to do
        proc.wait()
        if result is None:
            err = proc.stderr.read().decode(errors="replace").strip()
            raise HutchError("hutch ended without a result (exit %d): %s" % (proc.returncode, err))
        yield "result", result
    finally:
        if proc.poll() is None:
            # the caller stopped early: cancel, so hutch ends the job and
            # records the run cancelled (SIGKILL would leave it orphaned)
            proc.terminate()
            try:
                proc.wait(CANCEL_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def run_code(language, code, timeout_ms=None, memory_mb=None, env=None, labels=None,
             idempotency_key=None, files=None, stdin=None, session=None, commit=None,
             hutch="hutch"):
    """run() for `language` code (any language hutch's languages.ini
    knows), with the common limits. files: relative path -> str or bytes,
    put in the workspace first (not with session); stdin: str or bytes
    for the program's standard input; session: a persistent workspace
    name, commit: when its changes are kept ("success", the default,
    "always" or "never")."""
    request = {"language": language, "code": code}
    if files:
        request["files"] = {
            path: ({"content": base64.b64encode(data).decode(), "encoding": "base64"}
                   if isinstance(data, bytes) else data)
            for path, data in files.items()}
    if stdin is not None:
        request["stdin"] = ({"content": base64.b64encode(stdin).decode(), "encoding": "base64"}
                            if isinstance(stdin, bytes) else stdin)
    if session:
        request["session"] = session
    if commit:
        request["commit"] = commit
    limits = {}
    if timeout_ms is not None:
        limits["timeout_ms"] = int(timeout_ms)
    if memory_mb is not None:
        limits["memory_mb"] = int(memory_mb)
    if limits:
        request["limits"] = limits
    if env:
        request["env"] = dict(env)
    if labels:
        request["labels"] = dict(labels)
    if idempotency_key:
        request["idempotency_key"] = idempotency_key
    return run(request, hutch=hutch)


def main(argv):
    if len(argv) != 3:
        print("usage: hutch_tool.py LANG CODE", file=sys.stderr)
        return 2
    try:
        for kind, value in run_code(argv[1], argv[2]):
            if kind in ("stdout", "stderr"):
                out = sys.stdout if kind == "stdout" else sys.stderr
                if isinstance(value, bytes):
                    out.buffer.write(value)
                else:
                    out.write(value)
                out.flush()
            elif kind == "result":
                print("[%s, exit %s]" % (value["status"], value["exit_code"]), file=sys.stderr)
                return value["exit_code"] if value["exit_code"] is not None else 125
    except HutchError as e:
        print("hutch_tool: %s" % e, file=sys.stderr)
        return e.error["exit_code"] if e.error else 125
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
