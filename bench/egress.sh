#!/usr/bin/env bash
# Cost of network = allow: time to first byte and the throughput of
# 100 MB through an allowed connection, against the same fetch with
# --net host, measured in the same run.
#
# A server on 127.0.0.1 (python3) answers "ttfb" with one line and "big"
# with 100 MB. A job (python3) inside the sandbox times its own fetches,
# so the sandbox's start is not counted: with --net host it dials
# 127.0.0.1 directly, with --allow it dials bench.test (--add-host
# bench.test=127.0.0.1), through the capture, the helper's decision and
# relay. Runs alternate; prints each median and the ratio allow/host.
#
#   bench/egress.sh [N]           (default N=10; HUTCH=path/to/hutch)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
n=${1:-10}
hutch=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v python3 >/dev/null || { echo "python3 not installed" >&2; exit 77; }
export HUTCH_STATE_DIR=${HUTCH_STATE_DIR:-$(mktemp -d)}
tmp=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT

python3 - "$tmp/port" <<'PY' &
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
chunk = b"x" * (1 << 20)
def serve(c):
    req = c.recv(100)
    if req.startswith(b"big"):
        for _ in range(100):
            c.sendall(chunk)
    else:
        c.sendall(b"pong\n")
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")

client='
import socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
s = socket.create_connection((host, port)); s.sendall(b"ttfb\n"); s.recv(100)
ttfb = time.perf_counter() - t0
s.close()
buf = bytearray(1 << 20); n = 0
t0 = time.perf_counter()
s = socket.create_connection((host, port)); s.sendall(b"big\n")
while True:
    k = s.recv_into(buf)
    if not k: break
    n += k
dt = time.perf_counter() - t0
assert n == 100 << 20, n
print("%.6f %.1f" % (ttfb * 1000, n / dt / 1e6))
'
host_cmd=("$hutch" run -q --net host -- /usr/bin/python3 -c "$client" 127.0.0.1 "$port")
allow_cmd=("$hutch" run -q --allow "bench.test:$port" --add-host bench.test=127.0.0.1 --
           /usr/bin/python3 -c "$client" bench.test "$port")
"${host_cmd[@]}" >/dev/null || { echo "hutch --net host cannot run here" >&2; exit 1; }
"${allow_cmd[@]}" >/dev/null || { echo "hutch --allow cannot run here (see hutch doctor)" >&2; exit 1; }

ht=() hm=() at=() am=()
for ((i = 0; i < n; i++)); do
        read -r t m < <("${host_cmd[@]}"); ht+=("$t"); hm+=("$m")
        read -r t m < <("${allow_cmd[@]}"); at+=("$t"); am+=("$m")
done
awk -v ht="$(bench_median "${ht[@]}")" -v at="$(bench_median "${at[@]}")" -v hm="$(bench_median "${hm[@]}")" \
    -v am="$(bench_median "${am[@]}")" -v n="$n" 'BEGIN {
        printf "runs:        %d each, alternating\n", n
        printf "first byte:  --net host %.3f ms, --allow %.3f ms, ratio %.2f (allow/host)\n", ht, at, at / ht
        printf "100 MB:      --net host %.0f MB/s, --allow %.0f MB/s, ratio %.2f (allow/host)\n", hm, am, am / hm
}'
