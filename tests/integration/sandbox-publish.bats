#!/usr/bin/env bats
# Published ports of a live sandbox: `hutch sandbox start --publish
# [HOST_PORT:]PORT` relays 127.0.0.1:HOST_PORT on the host to
# 127.0.0.1:PORT in the sandbox's network namespace. A server an exec
# starts answers from the host; the host side listens on loopback only;
# every connection is recorded; no connection can stall the supervisor;
# stop closes the listener.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() {
        common_setup
        command -v python3 >/dev/null || skip "python3 is not installed (test servers and clients)"
        [ -x /usr/bin/python3 ] || skip "the sandbox needs /usr/bin/python3"
}

teardown() {
        [ -z "${HOLDER:-}" ] || kill "$HOLDER" 2>/dev/null || true
        [ -z "${UPSTREAM:-}" ] || kill "$UPSTREAM" 2>/dev/null || true
        stop_sandboxes
}

# GET http://127.0.0.1:$1/ (timeout $2 s, default 5): the body on
# stdout, exit 0; else exit 7 refused, 52 empty reply, 56 reset, 28 time
# out, 22 an HTTP error, 1 anything else (curl's numbers).
get() {
        python3 -c '
import http.client, socket, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=float(sys.argv[2]))
    c.request("GET", "/")
    r = c.getresponse()
    sys.stdout.write(r.read().decode())
    sys.exit(0 if r.status == 200 else 22)
except ConnectionRefusedError:
    print("refused", file=sys.stderr); sys.exit(7)
except (ConnectionResetError, BrokenPipeError):
    print("reset", file=sys.stderr); sys.exit(56)
except http.client.BadStatusLine:
    print("empty reply", file=sys.stderr); sys.exit(52)
except (socket.timeout, TimeoutError):
    print("timed out", file=sys.stderr); sys.exit(28)
except OSError as e:
    print(e, file=sys.stderr); sys.exit(1)
' "$1" "${2:-5}"
}

# The host port sandbox $1 publishes its port $2 on (sandbox ls --json).
host_port() {
        "$HUTCH" sandbox ls --json | jq -r --arg n "$1" --argjson p "$2" \
                'select(.name == $n) | .ports[] | select(.port == $p) | .host_port'
}

# Start, by an exec of sandbox $1, an HTTP server on 127.0.0.1:$2 inside
# serving a file that says $3, and wait until it answers from the host
# on port $4.
serve() {
        run "$HUTCH" exec "$1" -- sh -c "mkdir -p www$2 && echo '$3' > www$2/index.html &&
                { python3 -m http.server $2 --bind 127.0.0.1 -d www$2 >/dev/null 2>&1 & }"
        [ "$status" -eq 0 ]
        WAIT_TENTHS=150 wait_until get "$4" 2 >/dev/null || {
                # what to look at when it never answers: is the server there?
                echo "no answer on 127.0.0.1:$4; inside:"
                "$HUTCH" exec "$1" -- sh -c "ps -eo pid,pgid,args; cat /proc/net/tcp" || true
                "$HUTCH" sandbox ls --json || true
                return 1
        }
}

# The addresses the host listens on for TCP port $1, one a line
# (/proc/net/tcp and tcp6, state 0A: LISTEN).
listening_on() {
        local hex
        hex=$(printf '%04X' "$1")
        awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' \
                /proc/net/tcp /proc/net/tcp6
}

@test "a server an exec starts answers from the host, which listens on 127.0.0.1 only" {
        fixed=$(free_port)
        start_sandbox p1 --publish 8000 --publish "$fixed:8001"
        # start says where the auto-picked port is, and ls --json too
        auto=$(host_port p1 8000)
        [ -n "$auto" ] && [ "$auto" -gt 0 ]
        [ "$(host_port p1 8001)" = "$fixed" ]
        [[ "$stderr" == *"sandbox p1: 127.0.0.1:$auto -> port 8000 inside"* ]]
        [[ "$stderr" == *"sandbox p1: 127.0.0.1:$fixed -> port 8001 inside"* ]]
        "$HUTCH" sandbox ls --json | jq -e 'select(.name == "p1") | [.ports[].host] == ["127.0.0.1", "127.0.0.1"]'
        # and the table
        run "$HUTCH" sandbox ls
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == *PORTS ]]
        [[ "$output" == *"p1 "*" $auto->8000,$fixed->8001"* ]]

        serve p1 8000 "from inside" "$auto"
        run get "$auto"
        [ "$status" -eq 0 ]
        [ "$output" = "from inside" ]
        serve p1 8001 "second" "$fixed"
        [ "$(get "$fixed")" = "second" ]

        # loopback only: 0100007F is 127.0.0.1; nothing on any other address
        for p in "$auto" "$fixed"; do
                run listening_on "$p"
                [ "$status" -eq 0 ]
                [ "$output" = "0100007F:$(printf '%04X' "$p")" ]
        done
        # the sandbox cannot reach the host's listener: its loopback is its own
        run "$HUTCH" exec p1 -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $fixed), 2)"
        [ "$status" -ne 0 ]
        [[ "$output" == *"refused"* ]]
}

@test "a fresh sandbox's published port answers, start after start" {
        # The supervisor once took init's network namespace before init
        # had joined it (on a quiet host the namespace is built beside
        # init's setup, cpu-steer.c): every connection was then reset,
        # for the sandbox's whole life, in about half of the starts.
        local round
        for round in 1 2 3 4 5 6; do
                start_sandbox "pf$round" --publish 8000
                port=$(host_port "pf$round" 8000)
                serve "pf$round" 8000 "fresh $round" "$port"
                [ "$(get "$port")" = "fresh $round" ]
                run "$HUTCH" sandbox stop "pf$round"
                [ "$status" -eq 0 ]
        done
}

@test "every connection to a published port is recorded with the sandbox's run" {
        start_sandbox p2 --publish 8000 --publish 8009
        hp=$(host_port p2 8000)
        none=$(host_port p2 8009)
        id=$("$HUTCH" sandbox ls --json | jq -r 'select(.name == "p2") | .id')
        serve p2 8000 hello "$hp"
        for i in 1 2 3; do
                [ "$(get "$hp")" = hello ]
        done
        run get "$none"
        [ "$status" -ne 0 ]
        run "$HUTCH" sandbox stop p2
        [ "$status" -eq 0 ]
        run "$HUTCH" show "$id" --json
        [ "$status" -eq 0 ]
        # the three answered (and the server's wait_until ones) moved bytes both ways
        echo "$output" | jq -e --arg r "publish 127.0.0.1:$hp:8000" '
                [.connections[] | select(.rule == $r and .decision == "published" and .proto == "tcp"
                        and .dest == "127.0.0.1:8000" and .bytes_in > 0 and .bytes_out > 0
                        and .end == null and .time_ms > 0 and .duration_ms >= 0)] | length >= 3'
        echo "$output" | jq -e --arg r "publish 127.0.0.1:$none:8009" '
                [.connections[] | select(.rule == $r and .end == "refused" and .bytes_out == 0)] | length == 1'
        run "$HUTCH" show "$id"
        [[ "$output" == *"published tcp"*"127.0.0.1:8000"* ]]
}

@test "a published port nothing listens on inside is refused at once, not left hanging" {
        start_sandbox p3 --publish 8000
        hp=$(host_port p3 8000)
        SECONDS=0
        run get "$hp" 15
        # refused (7), an empty reply (52) or a reset (56); never a time-out (28)
        [[ " 7 52 56 " == *" $status "* ]]
        [ "$SECONDS" -lt 10 ]
        # and the sandbox serves on: a server started now answers
        serve p3 8000 late "$hp"
}

@test "a client that never reads, and more connections than the limit, stall no exec and no other port" {
        start_sandbox p4 --publish 8000 --publish 8001
        flood=$(host_port p4 8000)
        web=$(host_port p4 8001)
        # a server that writes without end to whoever connects
        run "$HUTCH" exec p4 -- sh -c "{ python3 -c '
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", 8000)); s.listen(128)
def pour(c):
    try:
        while True: c.sendall(b\"x\" * 65536)
    except OSError: pass
while True:
    c, _ = s.accept(); threading.Thread(target=pour, args=(c,), daemon=True).start()
' >/dev/null 2>&1 & }"
        [ "$status" -eq 0 ]
        serve p4 8001 ok "$web"
        # 80 clients (the limit is 64) that connect and never read
        python3 -c '
import socket, sys, time
held = []
for _ in range(80):
    try: held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5))
    except OSError: pass
open(sys.argv[2], "w").write(str(len(held)))
time.sleep(600)
' "$flood" "$BATS_TEST_TMPDIR/held" &
        HOLDER=$!
        wait_for_file "$BATS_TEST_TMPDIR/held" 200
        # the relay is full of what nobody reads; the supervisor is not
        run timeout 20 "$HUTCH" exec p4 --timeout 15s -- echo still
        [ "$status" -eq 0 ]
        [ "$output" = still ]
        run get "$web" 15
        # every relay slot is taken by the flood: the web port's client is
        # reset at once rather than queued behind it
        [ "$status" -ne 0 ] && [ "$status" -ne 28 ]
        kill "$HOLDER"
        wait "$HOLDER" || true
        HOLDER=
        # the slots free as the clients go: the web port answers again
        wait_until get "$web" 2 >/dev/null
        id=$("$HUTCH" sandbox ls --json | jq -r 'select(.name == "p4") | .id')
        "$HUTCH" sandbox stop p4
        "$HUTCH" show "$id" --json | jq -e '[.connections[] | select(.end == "connection limit")] | length >= 1'
}

@test "sandbox stop closes the published port's listener" {
        start_sandbox p5 --publish 8000
        hp=$(host_port p5 8000)
        [ -n "$(listening_on "$hp")" ]
        run "$HUTCH" sandbox stop p5
        [ "$status" -eq 0 ]
        [ -z "$(listening_on "$hp")" ]
        run get "$hp"
        [ "$status" -eq 7 ]
}

@test "a published port works under --allow, and its rows and the egress ones are both kept" {
        start_sandbox p6 --publish 8000 --allow "api.test:443"
        hp=$(host_port p6 8000)
        id=$("$HUTCH" sandbox ls --json | jq -r 'select(.name == "p6") | .id')
        serve p6 8000 "with egress" "$hp"
        [ "$(get "$hp")" = "with egress" ]
        # 20 egress connections no rule allows (more rows than the published
        # ones: added over them, they would hide every one); the capture takes
        # and closes them (their status is the egress tests' business)
        run "$HUTCH" exec p6 -- python3 -c "
import socket
held = [socket.create_connection(('192.0.2.1', 443), 3) for _ in range(20)]
for s in held:
    s.sendall(b'GET / HTTP/1.0\r\n\r\n')
for s in held:
    s.recv(1)"
        "$HUTCH" sandbox stop p6
        # both kinds of rows are kept with the sandbox's run, none over another
        run "$HUTCH" show "$id" --json
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '[.connections[] | select(.decision == "published")] | length >= 2'
        echo "$output" | jq -e '[.connections[] | select(.decision == "denied" and (.dest | test("192.0.2.1")))] | length == 20'
}

# Sandbox $1's run (sandbox ls --json).
run_of() { "$HUTCH" sandbox ls --json | jq -r --arg n "$1" 'select(.name == $n) | .id'; }

# Run $1's record holds a published connection of rule $2 and an egress
# one allowed to $3, both ended, with the bytes they moved.
has_both() {
        "$HUTCH" show "$1" --json | jq -e --arg r "$2" --arg d "$3" '
                ([.connections[] | select(.decision == "published" and .rule == $r and .bytes_in > 0
                        and .bytes_out > 0 and .end == null)] | length >= 1) and
                ([.connections[] | select(.proto == "tcp" and .decision == "allowed" and .dest == $d
                        and .bytes_out > 0 and .bytes_in > 0)] | length == 1)' >/dev/null
}

@test "connections are recorded as they end: seen while the sandbox runs, kept when its supervisor is killed" {
        local ready="$BATS_TEST_TMPDIR/ready"
        python3 "$BATS_TEST_DIRNAME/egress-server.py" http "$ready" "$BATS_TEST_TMPDIR/upstream.log" \
                >/dev/null 2>&1 &
        UPSTREAM=$!
        wait_for_file "$ready" 50
        up=$(cat "$ready")
        start_sandbox p7 --publish 8000 --allow "api.test:$up" --add-host api.test=127.0.0.1
        hp=$(host_port p7 8000)
        id=$(run_of p7)
        serve p7 8000 "recorded live" "$hp"
        [ "$(get "$hp")" = "recorded live" ]
        run "$HUTCH" exec p7 -- python3 -c "
import socket
s = socket.create_connection(('api.test', $up), 5)
s.sendall(b'GET /x HTTP/1.0\r\nHost: api.test\r\n\r\n')
data = b''
while True:
    b = s.recv(65536)
    if not b: break
    data += b
print(data.decode().split('\r\n\r\n', 1)[-1].strip())"
        [ "$status" -eq 0 ]
        [ "$output" = "hello api.test /x" ]
        # both in the record within a batch or two, the sandbox still up
        WAIT_TENTHS=50 wait_until has_both "$id" "publish 127.0.0.1:$hp:8000" "api.test:$up"
        listed p7
        run "$HUTCH" show "$id"
        [[ "$output" == *"published tcp"*"127.0.0.1:8000"* ]]
        [[ "$output" == *"allowed  tcp   api.test:$up"* ]]
        # nothing of the record waits for a stop that never comes
        sup=$(state p7 supervisor_pid)
        [ -n "$sup" ] && [ "$sup" -gt 0 ]
        kill -KILL "$sup"
        wait_until not_listed p7
        has_both "$id" "publish 127.0.0.1:$hp:8000" "api.test:$up"
}

@test "--publish: bad values are one-line usage errors naming the flag" {
        for bad in 70000 0 abc 8000:0 1:2:3 -1 "0.0.0.0:8080:80" "[::1]:80:80" ""; do
                run --separate-stderr "$HUTCH" sandbox start pbad --publish "$bad"
                [ "$status" -eq 2 ]
                [ "${#stderr_lines[@]}" -eq 1 ]
                [[ "$stderr" == *"--publish"* ]]
        done
        run --separate-stderr "$HUTCH" sandbox start pbad --publish 8000 --publish 9000:8000
        [ "$status" -eq 2 ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == *"--publish 9000:8000: port 8000 is published twice"* ]]
        run --separate-stderr "$HUTCH" sandbox start pbad --publish 9000:8000 --publish 9000:8001
        [ "$status" -eq 2 ]
        [[ "$stderr" == *"published twice"* ]]
        run --separate-stderr "$HUTCH" sandbox start pbad --publish
        [ "$status" -eq 2 ]
        [[ "$stderr" == *"--publish"* ]]
        # network = host has no ports of its own to publish
        run --separate-stderr "$HUTCH" sandbox start pbad --net host --publish 8000
        [ "$status" -eq 2 ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == *"--publish"*"network = host"* ]]
        # not for a one-shot run
        run --separate-stderr "$HUTCH" run --publish 8000 -- true
        [ "$status" -eq 2 ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == *"--publish is for a live sandbox"* ]]
        ! listed pbad || false
}

@test "--publish: a host port in use or privileged is refused before anything starts" {
        busy=$(free_port)
        python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").write("up"); time.sleep(600)' "$busy" "$BATS_TEST_TMPDIR/busy" &
        HOLDER=$!
        wait_for_file "$BATS_TEST_TMPDIR/busy" 100
        run --separate-stderr "$HUTCH" sandbox start pbusy --publish "$busy:8000"
        [ "$status" -eq 125 ]
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == *"--publish $busy:8000"*"in use"* ]]
        ! listed pbusy || false
        if [ "$(id -u)" -ne 0 ]; then
                low=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
                [ "$low" -gt 80 ] || skip "unprivileged ports start at $low here"
                run --separate-stderr "$HUTCH" sandbox start plow --publish 80:8000
                [ "$status" -eq 2 ]
                [ "${#stderr_lines[@]}" -eq 1 ]
                [[ "$stderr" == *"--publish 80:8000: host port 80 is privileged"* ]]
        fi
}

@test "no process of the sandbox holds the host's listener" {
        start_sandbox p7 --publish 8000
        hp=$(host_port p7 8000)
        # the listener's socket inode (/proc/net/tcp's tenth column)
        inode=$(awk -v p=":$(printf '%04X' "$hp")" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
                /proc/net/tcp)
        [ -n "$inode" ] && [ "$inode" != 0 ]
        sup=$(jq -r .supervisor_pid "$HUTCH_STATE_DIR/sandboxes/p7.json")
        init=$(jq -r .init_pid "$HUTCH_STATE_DIR/sandboxes/p7.json")
        # the supervisor holds it, as it must: the check can see it
        ls -l "/proc/$sup/fd" | grep -q "socket:\[$inode\]"
        run "$HUTCH" exec p7 -- sh -c 'sleep 3017 >/dev/null 2>&1 & echo ok'
        [ "$output" = ok ]
        for p in "$init" $(descendants "$init" | cut -d: -f1); do
                run sh -c "ls -l /proc/$p/fd 2>/dev/null"
                [[ "$output" != *"socket:[$inode]"* ]]
        done
}

@test "an open connection to a published port holds the idle timeout off" {
        start_sandbox p8 --publish 8000 --idle-timeout 3s
        hp=$(host_port p8 8000)
        serve p8 8000 idle "$hp"
        # a client that keeps one connection open for 6 s
        python3 -c 'import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
open(sys.argv[2], "w").write("up"); time.sleep(6)' "$hp" "$BATS_TEST_TMPDIR/open" &
        HOLDER=$!
        wait_for_file "$BATS_TEST_TMPDIR/open" 100
        # not a wait for a state: the time it must outlast
        sleep 4.5
        listed p8
        wait "$HOLDER"
        HOLDER=
        # once it closes, the idle timeout runs again
        WAIT_TENTHS=100 wait_until not_listed p8
}

@test "a connection its client closed holds the idle timeout off no longer, though the server keeps its end" {
        start_sandbox p9 --publish 8000 --idle-timeout 3s
        hp=$(host_port p9 8000)
        # a server that greets, then keeps every connection and never
        # writes again: the relay sees the client's FIN, nothing more
        run "$HUTCH" exec p9 -- sh -c 'python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", 8000)); s.listen(5); keep = []
while True:
    c, _ = s.accept(); c.sendall(b\"hi\\n\"); keep.append(c)
" >/dev/null 2>&1 &'
        [ "$status" -eq 0 ]
        greet() {
                python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2); s.settimeout(2)
sys.exit(0 if s.recv(10) == b"hi\n" else 1)' "$hp"
        }
        WAIT_TENTHS=100 wait_until greet
        # the client has gone; 3 s without an exec and no connection in use
        WAIT_TENTHS=120 wait_until not_listed p9
}
