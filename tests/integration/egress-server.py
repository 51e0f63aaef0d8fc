#!/usr/bin/env python3
# egress-server.py - host-side test servers for egress.bats, on 127.0.0.1
# only. Usage: egress-server.py MODE READYFILE LOGFILE [CERT KEY]
#   http  answer each request with "hello HOST PATH" (HTTP/1.0)
#   tls   the same over TLS with CERT/KEY
#   big   send 4 MiB of "x" to each client, then close
#   hold  accept and keep every connection open
# Writes the port to READYFILE once listening; appends one line per
# accepted connection to LOGFILE.
import socket, ssl, sys, threading

mode, ready, log = sys.argv[1:4]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(128)
ctx = None
if mode == "tls":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
held = []

def serve(c):
    try:
        if ctx:
            c = ctx.wrap_socket(c, server_side=True)
        if mode == "big":
            c.sendall(b"x" * (4 << 20))
            c.close()
            return
        if mode == "hold":
            held.append(c)
            return
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                return
            data += chunk
        lines = data.decode("latin-1").split("\r\n")
        host = "-"
        for l in lines[1:]:
            if l.lower().startswith("host:"):
                host = l[5:].strip()
        body = ("hello %s %s\n" % (host, lines[0].split(" ")[1])).encode()
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        c.close()
    except Exception as e:
        with open(log, "a") as f:
            f.write("error %s\n" % e)

with open(ready + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
import os
os.rename(ready + ".tmp", ready)
while True:
    c, peer = srv.accept()
    with open(log, "a") as f:
        f.write("accepted %s\n" % (peer,))
    threading.Thread(target=serve, args=(c,), daemon=True).start()
