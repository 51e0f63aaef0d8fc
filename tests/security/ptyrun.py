#!/usr/bin/env python3
"""ptyrun.py - run a command on a real pseudo-terminal, as a user at a
shell would, and report what the terminal saw and how it was left.

    ptyrun.py [--keys SECS:TEXT]... [--stall SECS] [--timeout SECS] -- CMD...

CMD runs in a new session whose controlling terminal is the pty slave
(stdin, stdout and stderr are that terminal). --keys types TEXT (Python
escapes allowed: \\r, \\x03) SECS seconds after the start. --stall reads
nothing from the terminal for the first SECS seconds, so its output
buffer fills and writers to it block, as behind a stopped terminal or a
paused pager. After CMD exits, this prints, one per line:
    status N            CMD's exit status (or -SIG)
    elapsed SECS        wall time until CMD exited
    ldisc N             the terminal's line discipline (0: N_TTY)
    nonblock 0|1        O_NONBLOCK on the terminal's shared description
    winsize ROWSxCOLS   the window size
    lflag-echo 0|1      ECHO still set
    output REPR         everything CMD wrote to the terminal
"""
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import time


def main():
    args = sys.argv[1:]
    keys, stall, timeout = [], 0.0, 60.0
    while args and args[0] != "--":
        opt, val = args[0], args[1]
        args = args[2:]
        if opt == "--keys":
            secs, text = val.split(":", 1)
            keys.append((float(secs), text.encode().decode("unicode_escape").encode("latin-1")))
        elif opt == "--stall":
            stall = float(val)
        elif opt == "--timeout":
            timeout = float(val)
        else:
            sys.exit("ptyrun.py: unknown option " + opt)
    cmd = args[1:]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.close(master)
        os.execvp(cmd[0], cmd)
    out = b""
    status = None
    keys.sort()
    while status is None:
        now = time.monotonic() - start
        while keys and keys[0][0] <= now:
            os.write(master, keys.pop(0)[1])
        if now > timeout:
            os.kill(pid, signal.SIGKILL)
        reading = now >= stall
        wait = 0.05
        r, _, _ = select.select([master] if reading else [], [], [], wait)
        if r:
            try:
                out += os.read(master, 65536)
            except OSError:
                pass
        p, st = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            status = os.waitstatus_to_exitcode(st)
    elapsed = time.monotonic() - start
    # what is still queued for the terminal
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    ldisc = struct.unpack("i", fcntl.ioctl(slave, termios.TIOCGETD, bytes(4)))[0]
    rows, cols = struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, bytes(8)))[:2]
    nonblock = 1 if fcntl.fcntl(slave, fcntl.F_GETFL) & os.O_NONBLOCK else 0
    lflag = termios.tcgetattr(slave)[3]
    print("status", status)
    print("elapsed %.1f" % elapsed)
    print("ldisc", ldisc)
    print("nonblock", nonblock)
    print("winsize %dx%d" % (rows, cols))
    print("lflag-echo", 1 if lflag & termios.ECHO else 0)
    print("output", repr(out))


main()
