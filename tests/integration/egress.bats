#!/usr/bin/env bats
# egress.bats - network = allow: default-deny egress with allow rules.
#
# Every server is started here, on 127.0.0.1, and reached from the
# sandbox only through --add-host NAME=127.0.0.1 plus an allow rule;
# no name is ever resolved through the host's resolver and no packet
# goes anywhere else (addresses like 203.0.113.9 end inside the
# sandbox's own namespace, which has no device but lo).

load lib

SERVERS=()

setup() {
        common_setup
        command -v python3 >/dev/null || skip "python3 is not installed (test servers)"
        [ -x /usr/bin/python3 ] || skip "the sandbox needs /usr/bin/python3"
        LOG="$BATS_TEST_TMPDIR/server.log"
        : >"$LOG"
        SERVER="$BATS_TEST_DIRNAME/egress-server.py"
}

teardown() {
        local pid
        for pid in "${SERVERS[@]}"; do
                kill "$pid" 2>/dev/null || true
        done
        host_dirs_cleanup
}

# start MODE [ARGS...]: a server on 127.0.0.1; sets PORT.
start() {
        local ready="$BATS_TEST_TMPDIR/ready.$RANDOM"
        python3 "$SERVER" "$1" "$ready" "$LOG" "${@:2}" >/dev/null 2>&1 &
        SERVERS+=("$!")
        wait_for_file "$ready" 50 || { echo "server did not start"; return 1; }
        PORT=$(cat "$ready")
}

# The job: python3 -c CODE inside the sandbox, with hutch's own flags first.
job() {
        local code=$1
        shift
        run "$HUTCH" run "$@" -- /usr/bin/python3 -c "$code"
}

# conns FILTER: the connections of the newest run, one JSON object a line.
conns() {
        "$HUTCH" show --json "$("$HUTCH" ls --json | head -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" |
                python3 -c 'import json,sys
for c in json.load(sys.stdin)["connections"]: print(json.dumps(c, sort_keys=True))'
}

GET='
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(b"GET /x HTTP/1.0\r\nHost: " + host.encode() + b"\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
    print("GOT", data.decode().split("\r\n\r\n", 1)[-1].strip() or "EMPTY")
except Exception as e:
    print("ERR", type(e).__name__)
'

get() {
        run "$HUTCH" run "${@:3}" -- /usr/bin/python3 -c "$GET" "$1" "$2"
}

@test "egress: an allowed name and port reach the host server; others do not" {
        start http
        get api.test "$PORT" --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [ "$status" -eq 0 ]
        [[ "$output" == *"GOT hello api.test /x"* ]]

        # same server, a name no rule allows: no DNS answer at all
        get other.test "$PORT" --allow "api.test:$PORT" --add-host api.test=127.0.0.1 \
                --add-host other.test=127.0.0.1
        [[ "$output" == *"ERR gaierror"* ]]

        # an allowed name on a port no rule names: nothing listens for it
        get api.test 9 --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [[ "$output" == *"ERR ConnectionRefusedError"* ]]
        [ "$(grep -c accepted "$LOG")" -eq 1 ]
}

@test "egress: a denied port on a captured listener is closed and logged" {
        start http
        # both names get DNS answers; only web.test may use the port
        get api.test "$PORT" --allow "web.test:$PORT" --allow "api.test:443" \
                --add-host api.test=127.0.0.1 --add-host web.test=127.0.0.1
        # an HTTP client is told why, in hutch's words
        [[ "$output" == *"GOT hutch: egress denied: no rule"* ]]
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
        run conns
        [[ "$output" == *'"decision": "denied"'*'"dest": "api.test:'"$PORT"'"'*'"reason": "no rule"'* ]]
        # the job's pid (as the sandbox sees it) is in the record
        [[ "$output" =~ \"pid\":\ [0-9]+ ]]
}

@test "egress: --deny wins over --allow" {
        start http
        get api.test "$PORT" --allow "*.test:$PORT" --deny api.test --add-host api.test=127.0.0.1
        [[ "$output" == *"ERR gaierror"* ]]
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
}

@test "egress: a client ignoring proxy variables and raw IPs are held to the rules" {
        start http
        # no proxy variables: the connection is still caught and allowed
        code='
import os, socket
for v in list(os.environ):
    if "proxy" in v.lower(): del os.environ[v]
s = socket.create_connection(("api.test", '"$PORT"'), timeout=5)
s.sendall(b"GET /raw HTTP/1.0\r\nHost: api.test\r\n\r\n")
print(s.recv(4096).decode().split("\r\n\r\n")[-1].strip())
# dialling an address instead of a name: loopback, metadata and a public
# address no rule names all end at the capture and are refused
for ip in ("127.0.0.1", "169.254.169.254", "203.0.113.9", "10.0.0.1"):
    try:
        t = socket.create_connection((ip, '"$PORT"'), timeout=3)
        t.sendall(b"GET / HTTP/1.0\r\n\r\n")
        d = t.recv(200)
        print(ip, "CLOSED" if not d else "DENIED" if b"hutch: egress denied" in d else "DATA")
    except OSError as e:
        print(ip, "ERR")
# raw sockets need a capability the job does not have
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    print("RAW OPEN")
except OSError:
    print("RAW REFUSED")
'
        job "$code" --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [ "$status" -eq 0 ]
        [[ "$output" == *"hello api.test /raw"* ]]
        for ip in 127.0.0.1 169.254.169.254 203.0.113.9 10.0.0.1; do
                [[ "$output" == *"$ip DENIED"* || "$output" == *"$ip CLOSED"* || "$output" == *"$ip ERR"* ]]
        done
        [[ "$output" != *"DATA"* ]]
        [[ "$output" == *"RAW REFUSED"* ]]
        [ "$(grep -c accepted "$LOG")" -eq 1 ]
        run conns
        [[ "$output" == *'"dest": "169.254.169.254:'"$PORT"'"'* ]]
        [[ "$output" == *'"dest": "203.0.113.9:'"$PORT"'"'* ]]
}

@test "egress: proxy variables are set and the proxy holds to the rules" {
        start http
        code='
import os, urllib.request
print(os.environ["http_proxy"])
print(urllib.request.urlopen("http://api.test:'"$PORT"'/viaproxy", timeout=5).read().decode().strip())
try:
    urllib.request.urlopen("http://denied.test:'"$PORT"'/", timeout=5).read()
    print("DENIED-OPEN")
except Exception as e:
    print("DENIED-FAILED")
'
        job "$code" --allow "api.test:$PORT" --add-host api.test=127.0.0.1 --add-host denied.test=127.0.0.1
        [ "$status" -eq 0 ]
        [[ "$output" == *"http://127.0.0.1:3128"* ]]
        # the origin gets the request in origin form (RFC 9112 3.2)
        [[ "$output" == *"hello api.test:$PORT /viaproxy"* ]]
        [[ "$output" == *"DENIED-FAILED"* ]]
        [ "$(grep -c accepted "$LOG")" -eq 1 ]
}

@test "egress: an IP literal sent through the proxy is judged by address rules, as a direct connection is" {
        start http
        local allowed=$PORT
        start http
        local other=$PORT
        # a client that sends every URL to the proxy, IP literals included
        # (hutch's no_proxy would exempt 127.0.0.1: it is dropped here)
        code='
import os, sys, urllib.request
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://127.0.0.1:3128"}))
for port, tag in ((sys.argv[1], "allowed"), (sys.argv[2], "other")):
    try:
        print(tag, opener.open("http://127.0.0.1:%s/literal" % port, timeout=5).read().decode().strip())
    except Exception as e:
        print(tag, "FAILED", type(e).__name__)
'
        run "$HUTCH" run --allow "127.0.0.1:$allowed" -- /usr/bin/python3 -c "$code" "$allowed" "$other"
        [ "$status" -eq 0 ]
        [[ "$output" == *"allowed hello 127.0.0.1:$allowed /literal"* ]]
        [[ "$output" == *"other FAILED"* ]]
        [ "$(grep -c accepted "$LOG")" -eq 1 ]
}

@test "egress: through the proxy, a stock python3 -m http.server gets origin-form requests" {
        local dir="$BATS_TEST_TMPDIR/www" port
        mkdir -p "$dir/sub"
        echo "stock server file" > "$dir/sub/f.txt"
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
        SERVERS+=("$!")
        # wait until it listens
        for _ in $(seq 100); do
                python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" \
                        2>/dev/null && break
                sleep 0.1
        done
        code='
import urllib.request
print(urllib.request.urlopen("http://api.test:'"$port"'/sub/f.txt", timeout=5).read().decode().strip())
print(urllib.request.urlopen("http://api.test:'"$port"'/sub/f.txt?x=1", timeout=5).read().decode().strip())
'
        job "$code" --allow "api.test:$port" --add-host api.test=127.0.0.1
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'stock server file\nstock server file')" ]
}

@test "egress: the stub DNS answers allowed names only; other UDP reaches nothing" {
        command -v python3 >/dev/null
        # a host UDP listener: nothing of the job's may arrive
        local ready="$BATS_TEST_TMPDIR/udp"
        python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    d, a = s.recvfrom(2048)
    open(sys.argv[2], "a").write("accepted udp\n")
' "$ready" "$LOG" &
        SERVERS+=("$!")
        wait_for_file "$ready" 50
        local uport
        uport=$(cat "$ready")
        code='
import socket, struct
def q(name, server="203.0.113.53", qtype=1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    msg = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for l in name.split("."):
        msg += bytes([len(l)]) + l.encode()
    msg += b"\0" + struct.pack(">HH", qtype, 1)
    s.sendto(msg, (server, 53))
    r, peer = s.recvfrom(512)
    rcode = r[3] & 15; an = struct.unpack(">H", r[6:8])[0]
    ip = ".".join(map(str, r[-4:])) if an else "-"
    return "rcode=%d an=%d ip=%s from=%s" % (rcode, an, ip, peer[0])
print("allowed", q("API.test"))
print("aaaa", q("api.test", qtype=28))
print("denied", q("evil.test"))
print("gai", socket.getaddrinfo("api.test", 443, socket.AF_INET)[0][4][0])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for dst in ("127.0.0.1", "203.0.113.9"):
    u.sendto(b"ping", (dst, '"$uport"'))
print("sent")
'
        job "$code" --allow api.test --add-host api.test=127.0.0.1 --add-host evil.test=127.0.0.1
        [ "$status" -eq 0 ]
        [[ "$output" =~ allowed\ rcode=0\ an=1\ ip=198\.18\.[0-9]+\.[0-9]+\ from=203\.0\.113\.53 ]]
        [[ "$output" == *"aaaa rcode=0 an=0"* ]]
        [[ "$output" == *"denied rcode=3 an=0"* ]]
        [[ "$output" =~ gai\ 198\.18\. ]]
        [[ "$output" == *"sent"* ]]
        sleep 0.3
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
        run conns
        [[ "$output" == *'"dest": "evil.test"'*'"proto": "dns"'* ]]
}

tls_setup() {
        command -v openssl >/dev/null || skip "openssl is not installed (self-signed test certificate)"
        CERTDIR=$(host_dir)
        openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=api.test \
                -addext "subjectAltName=DNS:api.test" \
                -keyout "$CERTDIR/key.pem" -out "$CERTDIR/cert.pem" >/dev/null 2>&1 ||
                skip "openssl cannot make a self-signed certificate here"
        chmod 644 "$CERTDIR"/*.pem
        start tls "$CERTDIR/cert.pem" "$CERTDIR/key.pem"
}

TLSGET='
import socket, ssl, sys
dial, sni, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile="/workspace/input/cert.pem")
ctx.check_hostname = False
try:
    s = socket.create_connection((dial, port), timeout=5)
    t = ctx.wrap_socket(s, server_hostname=sni)
    t.sendall(b"GET /tls HTTP/1.0\r\nHost: api.test\r\n\r\n")
    data = b""
    while True:
        c = t.recv(4096)
        if not c: break
        data += c
    print("TLS", data.decode().split("\r\n\r\n")[-1].strip())
except Exception as e:
    print("ERR", type(e).__name__)
'

tlsget() {
        run "$HUTCH" run -i "$CERTDIR/cert.pem" --allow "api.test:$PORT" --add-host api.test=127.0.0.1 \
                --add-host evil.test=127.0.0.1 -- /usr/bin/python3 -c "$TLSGET" "$1" "$2" "$PORT"
}

@test "egress: TLS with an allowed SNI goes through, untouched" {
        tls_setup
        tlsget api.test api.test
        [ "$status" -eq 0 ]
        [[ "$output" == *"TLS hello api.test /tls"* ]]
        run conns
        [[ "$output" == *'"decision": "allowed"'*'"resolved": "127.0.0.1:'"$PORT"'"'*'"sni": "api.test"'* ]]
}

@test "egress: TLS with an SNI that differs from the name dialled is denied" {
        tls_setup
        tlsget api.test evil.test
        [[ "$output" == *"ERR"* ]]
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
        run conns
        [[ "$output" == *'"reason": "SNI mismatch"'* ]]
}

@test "egress: TLS to a raw IP with a denied SNI is denied" {
        tls_setup
        tlsget 203.0.113.9 evil.test
        [[ "$output" == *"ERR"* ]]
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
        run conns
        [[ "$output" == *'"dest": "203.0.113.9:'"$PORT"'"'*'"reason": "no rule"'*'"sni": "evil.test"'* ]]
        # an allowed SNI on a raw IP reaches the name's own address, not the IP
        tlsget 203.0.113.9 api.test
        [[ "$output" == *"TLS hello api.test /tls"* ]]
}

@test "egress: the record names each decision, with bytes and rule" {
        start http
        run "$HUTCH" run --json --allow "api.test:$PORT" --add-host api.test=127.0.0.1 -- \
                /usr/bin/python3 -c "$GET" api.test "$PORT"
        [ "$status" -eq 0 ]
        echo "$output" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
tcp = [c for c in r["connections"] if c["proto"] == "tcp"]
assert len(tcp) == 1, tcp
c = tcp[0]
assert c["decision"] == "allowed" and c["rule"] == "api.test:'"$PORT"'", c
assert c["dest"] == "api.test:'"$PORT"'" and c["name"] == "api.test" and c["host"] == "api.test", c
assert c["resolved"] == "127.0.0.1:'"$PORT"'", c
assert c["bytes_out"] > 30 and c["bytes_in"] > 30 and c["duration_ms"] >= 0 and c["time_ms"] > 0, c
assert "pid" in c
dns = [c for c in r["connections"] if c["proto"] == "dns"]
assert dns and dns[0]["decision"] == "allowed" and dns[0]["rule"] == "api.test:'"$PORT"'", dns
assert r["enforcement"]["network"].startswith("allow"), r["enforcement"]
'
        run "$HUTCH" show "$("$HUTCH" ls --json | head -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
        [[ "$output" == *"--- connections ---"* ]]
        [[ "$output" == *"allowed  tcp   api.test:$PORT"* ]]
}

@test "egress: a flood of denied DNS queries never pushes out a later allowed connection" {
        start http
        # 10,050 denied queries (more than the 10,000 records kept), then
        # one connection that carries data: it must be in the record
        code='
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
for i in range(10050):
    msg = struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0)
    for l in ("n%d" % i, "denied", "test"):
        msg += bytes([len(l)]) + l.encode()
    msg += b"\0" + struct.pack(">HH", 1, 1)
    s.sendto(msg, ("203.0.113.53", 53))
    s.recvfrom(512)
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.sendall(b"GET /x HTTP/1.0\r\nHost: api.test\r\n\r\n")
print("GOT", len(c.recv(65536)) > 0)
'
        run "$HUTCH" run --json --timeout 60s --allow "api.test:$PORT" --add-host api.test=127.0.0.1 -- \
                /usr/bin/python3 -c "$code" api.test "$PORT"
        [ "$status" -eq 0 ]
        echo "$output" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
assert "GOT True" in r["stdout"], r["stdout"]
tcp = [c for c in r["connections"] if c["proto"] == "tcp" and c["decision"] == "allowed"]
assert len(tcp) == 1 and tcp[0]["bytes_in"] > 0, [c for c in r["connections"] if c["proto"] != "dns"]
summary = [c for c in r["connections"] if c["proto"] == "summary"]
assert summary and summary[0]["dropped"] >= 50, summary
'
}

@test "egress: a job flooding connections is held to max_connections and the run still ends on time" {
        start hold
        code='
import socket
held, refused = [], 0
for i in range(40):
    try:
        s = socket.create_connection(("api.test", '"$PORT"'), timeout=3)
        s.sendall(b"x")
        held.append(s)
    except OSError:
        refused += 1
import time; time.sleep(1.5)
alive = 0
for s in held:
    s.setblocking(False)
    try:
        d = s.recv(1)
        if d != b"": alive += 1
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print("alive", alive, flush=True)
time.sleep(60)
'
        job "$code" --timeout 4s --net-max-connections 5 --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [ "$status" -eq 124 ]
        [[ "$output" =~ alive\ ([0-9]+) ]]
        [ "${BASH_REMATCH[1]}" -le 5 ]
        [ "$(grep -c accepted "$LOG")" -le 5 ]
        run conns
        [[ "$output" == *'"reason": "connection limit"'* ]]
}

@test "egress: max_bytes ends the transfer and says so" {
        start big
        code='
import socket
s = socket.create_connection(("api.test", '"$PORT"'), timeout=5)
s.sendall(b"GET / HTTP/1.0\r\n\r\n")
n = 0
while True:
    try:
        c = s.recv(65536)
    except OSError:
        break
    if not c: break
    n += len(c)
print("received", n)
'
        job "$code" --net-max-bytes 100K --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [[ "$output" =~ received\ ([0-9]+) ]]
        [ "${BASH_REMATCH[1]}" -le 102400 ]
        run conns
        [[ "$output" == *'"end": "byte limit"'* ]]
}

@test "egress: a malformed rule is a usage error naming it" {
        run "$HUTCH" run --allow 'bad..name:443' -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"bad..name:443"* ]]
        run "$HUTCH" run --allow 'api.test:99999' -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"api.test:99999"* ]]
        run "$HUTCH" run --add-host 'api.test' -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"add-host"* ]]
        run "$HUTCH" run --allow 'api.test:*' -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"more than 128 ports"* ]]
}

# The status of the running egress helper of hutch process $1, once it
# is confined (Seccomp: 2); fails if it never is.
helper_status() {
        local helper
        helper_confined() {
                helper=$(pgrep -P "$1" -x hutch-egress) || return 1
                grep -q '^Seccomp:[[:space:]]*2$' "/proc/$helper/status"
        }
        WAIT_TENTHS=100 wait_until helper_confined "$1" || return 1
        cat "/proc/$helper/status"
}

@test "egress: the helper runs with no_new_privs, no capabilities and its seccomp filter" {
        start http
        out="$BATS_TEST_TMPDIR/out"
        "$HUTCH" run --allow "api.test:$PORT" --add-host api.test=127.0.0.1 -- \
                sh -c 'echo ready; sleep 30' < /dev/null > "$out" 2>&1 &
        pid=$!
        wait_for_file "$out"
        run helper_status "$pid"
        kill -TERM "$pid"
        wait "$pid" || true
        [ "$status" -eq 0 ] || { echo "no confined hutch-egress under $pid" >&2; false; }
        [[ "$output" == *$'\nNoNewPrivs:\t1\n'* ]]
        [[ "$output" == *$'\nSeccomp:\t2\n'* ]]
        [[ "$output" == *$'\nCapEff:\t0000000000000000\n'* ]]
        [[ "$output" == *$'\nCapPrm:\t0000000000000000\n'* ]]
        [[ "$output" == *$'\nCapInh:\t0000000000000000\n'* ]]
        [[ "$output" == *$'\nCapAmb:\t0000000000000000\n'* ]]
        if [ "$(id -u)" -eq 0 ]; then
                # root's helper: an empty bounding set, and files touched as
                # the sandbox's uid (the fourth Uid field), never as root
                [[ "$output" == *$'\nCapBnd:\t0000000000000000\n'* ]]
                fsuid=$(echo "$output" | awk '/^Uid:/ {print $5}')
                [ "$fsuid" != 0 ]
        fi
}

@test "egress: --net none keeps its meaning with allow rules" {
        start http
        get api.test "$PORT" --net none --allow "api.test:$PORT" --add-host api.test=127.0.0.1
        [[ "$output" == *"not used"* ]]
        [[ "$output" == *"ERR"* ]]
        [ "$(grep -c accepted "$LOG" || true)" -eq 0 ]
}

@test "egress: doctor says whether network = allow works here" {
        run "$HUTCH" doctor
        [[ "$output" =~ (OK|WARN)\ +network\ =\ allow\ \(egress\ rules\) ]]
}

@test "egress: a profile outside the trusted dirs cannot open the network" {
        local d
        d=$(host_dir)
        printf '[network]\nallow = api.test\n' >"$d/open.ini"
        run "$HUTCH" run -p "$d/open.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"network access: refused"* ]]
        printf '[network]\nadd_host = api.test=127.0.0.1\n' >"$d/pin.ini"
        run "$HUTCH" run -p "$d/pin.ini" -- true
        [ "$status" -eq 125 ]
        # narrowing is fine: deny rules
        printf '[network]\ndeny = evil.test\n' >"$d/deny.ini"
        run "$HUTCH" run -p "$d/deny.ini" -- true
        [ "$status" -eq 0 ]
}

@test "egress: a secret's value the job puts in a name it looks up or asks the proxy for is redacted in the record" {
        local value="nsec$(date +%N)"
        run env TOK="$value" "$HUTCH" run --secret TOK --net allow --allow only-this.invalid:443 \
                --json -- python3 -c '
import os, socket
t = os.environ["TOK"]
try: socket.getaddrinfo(t + ".example.invalid", 80)
except Exception: pass
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("CONNECT " + t + "-c.invalid:443 HTTP/1.1\r\n\r\n").encode())
s.recv(100)'
        [ "$status" -eq 0 ]
        [[ "$output" != *"$value"* ]]
        # the lookup and the proxy's request are there, redacted
        echo "$output" | jq -e '[.connections[] | select(.proto == "dns" and .dest == "[secret TOK].example.invalid")] | length >= 1'
        echo "$output" | jq -e '[.connections[] | select(.host == "[secret TOK]-c.invalid")] | length == 1'
        local id
        id=$(echo "$output" | jq -r .id)
        run "$HUTCH" show "$id"
        [[ "$output" != *"$value"* ]]
        run grep -rqaF "$value" "$HUTCH_STATE_DIR"
        [ "$status" -eq 1 ]
}
