#!/usr/bin/env bats
# net.bats - network escapes under the default profile (network none).
# Host-side listeners (TCP on 127.0.0.1, an abstract unix socket) record
# every connection they accept; the job tries to reach them, open raw
# and packet sockets, and change routes; afterwards the listeners must
# have accepted nothing and the host's links and routes be unchanged.

load lib

setup() {
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        M=$(marker)
        LISTENER=
        LOG="$BATS_TEST_TMPDIR/accepted"
        : >"$LOG"
}

teardown() {
        [ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null
        if am_root && ip route show 10.254.254.0/24 2>/dev/null | grep -q .; then
                ip route del 10.254.254.0/24 2>/dev/null
        fi
        true
}

# listen tcp|abstract: a host listener that logs each accepted
# connection to $LOG; sets ADDR (the port, or the abstract name) once
# it is listening. Not in $(...): that would wait for the listener.
listen() {
        command -v python3 >/dev/null || skip "python3 is not installed (host-side listener)"
        local ready="$BATS_TEST_TMPDIR/ready"
        rm -f "$ready"
        python3 - "$1" "$M" "$LOG" "$ready" >/dev/null 2>&1 <<'EOF' &
import socket, sys
kind, name, log, ready = sys.argv[1:5]
if kind == "tcp":
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    info = str(s.getsockname()[1])
else:
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + name)
    info = name
s.listen(16)
open(ready, "w").write(info)
s.settimeout(30)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    open(log, "a").write("ACCEPTED\n")
    c.close()
EOF
        LISTENER=$!
        wait_for_ready "$ready"
        ADDR=$(cat "$ready")
}

wait_for_ready() {
        local i
        for ((i = 0; i < 50; i++)); do
                [ -s "$1" ] && return 0
                sleep 0.1
        done
        echo "host listener did not start" >&2
        return 1
}

assert_nothing_accepted() {
        sleep 0.2
        [ ! -s "$LOG" ] || { echo "the host listener accepted a connection from the job" >&2; return 1; }
}

@test "net: a host TCP listener on 127.0.0.1 is not reachable" {
        listen tcp
        sandboxed -- "$PROBE" connect "$ADDR"
        [ "$status" -eq 0 ]
        assert_refused
        assert_nothing_accepted
}

# network allow: the rules name another address and port only, so the
# host's listener is out of reach directly (the namespace tier's own lo;
# the landlock tier's answer to connect()) and through the proxy (loopback
# needs a rule of its own)
@test "net: with network allow, a host TCP listener on 127.0.0.1 no rule names is not reachable" {
        listen tcp
        if under_gvisor; then
                # gVisor takes network none only: allow is refused, never
                # run with less than it says
                sandboxed --allow 203.0.113.9:1 -- "$PROBE" connect "$ADDR"
                [ "$status" -eq 125 ]
                [[ "$output" == *"only network none is supported"* ]]
                assert_nothing_accepted
                return 0
        fi
        sandboxed --allow 203.0.113.9:1 -- "$PROBE" connect "$ADDR"
        [ "$status" -eq 0 ]
        assert_refused
        sandboxed --allow 203.0.113.9:1 -- /usr/bin/python3 -c '
import os, sys, urllib.request
for v in ("no_proxy", "NO_PROXY"):
    os.environ.pop(v, None)
try:
    urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=5).read(); print("OK")
except Exception as e:
    print("refused:", e)' "$ADDR"
        [ "$status" -eq 0 ]
        assert_refused
        assert_nothing_accepted
}

@test "net: a host abstract unix socket (@name) is not reachable" {
        listen abstract
        sandboxed -- "$PROBE" abstract "$ADDR"
        [ "$status" -eq 0 ]
        assert_refused
        assert_nothing_accepted
}

@test "net: packet sockets are refused" {
        sandboxed --uid 0 -- "$PROBE" socket packet
        [ "$status" -eq 0 ]
        assert_refused
}

@test "net: raw IPv4 and IPv6 sockets are refused" {
        sandboxed --uid 0 -- "$PROBE" socket raw
        [ "$status" -eq 0 ]
        assert_refused
        sandboxed --uid 0 -- "$PROBE" socket raw6
        [ "$status" -eq 0 ]
        assert_refused
}

@test "net: the job sees no interface but lo, and the host's links are unchanged" {
        landlock_skip "no network namespace: the job sees the host's interfaces in /sys and /proc (with network none it can open no AF_INET, AF_INET6, netlink or packet socket)"
        before=$(ip -o link 2>/dev/null | awk -F': ' '{ print $2 }' | sort | xargs)
        sandboxed -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
        [ "$status" -eq 0 ]
        [ "$output" = lo ] || { echo "interfaces seen: $output" >&2; false; }
        after=$(ip -o link 2>/dev/null | awk -F': ' '{ print $2 }' | sort | xargs)
        [ "$before" = "$after" ]
}

@test "net: a route added over rtnetlink does not reach the host" {
        sandboxed --uid 0 -- "$PROBE" route
        [ "$status" -eq 0 ]
        assert_refused
        run ip route show 10.254.254.0/24
        [ -z "$output" ] || { echo "host route table now has: $output" >&2; false; }
}

@test "net: taking lo down or adding addresses changes nothing on the host" {
        command -v ip >/dev/null || skip "ip(8) is not installed"
        skip_in_selftest "unconfined, this would take the host's lo down"
        before=$(ip -o addr 2>/dev/null | sort)
        sandboxed --uid 0 -- sh -c 'ip addr add 10.254.253.1/32 dev lo; ip link set lo down; ip link add d0 type dummy; true' 2>/dev/null
        [ "$before" = "$(ip -o addr 2>/dev/null | sort)" ]
        ip -o link | grep -q ' lo:.*UP' || ip -o link | grep -q 'lo:.*LOOPBACK,UP'
}
