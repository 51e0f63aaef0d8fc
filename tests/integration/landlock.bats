#!/usr/bin/env bats
# The landlock tier (--isolation landlock|auto) on hosts that refuse user
# namespaces, each reproduced on this machine:
#   container  a container's seccomp profile (Docker's default): clone3
#              ENOSYS, clone/unshare with CLONE_NEW* EPERM (tests/refuse-userns)
#   ubuntu     Ubuntu 24.04's AppArmor restriction: the namespace is made,
#              no capability holds in it (a BPF LSM program on `capable`,
#              tests/userns-nocaps*; needs root, clang, bpftool, libbpf and
#              a kernel that loads BPF LSM programs)
#   maxzero    user.max_user_namespaces = 0 (tests/userns-limit-zero sets it
#              in a user namespace of its own; needs root)
# and on this host as it is.

load lib

bats_require_minimum_version 1.5.0

setup_file() {
        # the helpers built by make check (TEST_BINDIR: where
        # unprivileged.sh put its copies)
        local bindir=${TEST_BINDIR:-${TOP_BUILDDIR:-}/tests}
        export REFUSE="$bindir/refuse-userns"
        export LIMITZERO="$bindir/userns-limit-zero"
        export NOCAPS_DIR="$BATS_FILE_TMPDIR/nocaps"
        export NOCAPS_WHY=""
        mkdir -p "$NOCAPS_DIR"
        # the Ubuntu simulator is built here, from the running kernel's BTF
        if [ "$(id -u)" -ne 0 ]; then
                NOCAPS_WHY="the BPF LSM simulator needs root"
        elif ! command -v clang >/dev/null || ! command -v bpftool >/dev/null ||
             [ ! -e /usr/include/bpf/libbpf.h ] || [ ! -e /sys/kernel/btf/vmlinux ]; then
                NOCAPS_WHY="clang, bpftool, libbpf's headers or the kernel's BTF are missing"
        elif ! bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$NOCAPS_DIR/vmlinux.h" 2>/dev/null ||
             ! clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$NOCAPS_DIR" \
                     -c "$TESTS_DIR/userns-nocaps.bpf.c" -o "$NOCAPS_DIR/userns-nocaps.bpf.o" 2>/dev/null ||
             ! cc -o "$NOCAPS_DIR/userns-nocaps" "$TESTS_DIR/userns-nocaps.c" -lbpf 2>/dev/null; then
                NOCAPS_WHY="the BPF LSM simulator does not build here"
        else
                # the loader says why it cannot run (exit 77)
                local out rc=0
                out=$("$NOCAPS_DIR/userns-nocaps" "$NOCAPS_DIR/userns-nocaps.bpf.o" true 2>&1) || rc=$?
                [ "$rc" -eq 0 ] || NOCAPS_WHY="the BPF LSM program does not load here: ${out:-exit $rc}"
        fi
}

setup() { common_setup; }
teardown() {
        stop_servers
        # a live sandbox a failed test left
        local s
        for s in $("$HUTCH" sandbox ls --json 2>/dev/null | jq -r .name); do
                timeout 20 "$HUTCH" sandbox stop "$s" || true
        done
        host_dirs_cleanup
}

SERVERS=()

# Set W to the command prefix that runs hutch on host $1, or skip.
on_host() {
        case "$1" in
        container)
                [ -x "$REFUSE" ] || skip "tests/refuse-userns is not built"
                W=("$REFUSE") ;;
        ubuntu)
                [ -z "$NOCAPS_WHY" ] || skip "$NOCAPS_WHY"
                W=("$NOCAPS_DIR/userns-nocaps" "$NOCAPS_DIR/userns-nocaps.bpf.o") ;;
        maxzero)
                [ "$(id -u)" -eq 0 ] || skip "userns-limit-zero needs root"
                [ -x "$LIMITZERO" ] || skip "tests/userns-limit-zero is not built"
                W=("$LIMITZERO") ;;
        this)
                W=() ;;
        esac
}

# the namespace tier, the default, fails there: one line, the cause, and
# nothing of the job runs
default_fails() {
        on_host "$1"
        local d m
        d=$(host_dir)
        m="$d/ran"
        run "${W[@]}" "$HUTCH" run -- sh -c "touch $m"
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        # the refusal, where it met the run: the clone (a container, a
        # limit at 0) or the first mount inside (Ubuntu)
        [[ "$output" == *namespace* || "$output" == *"Operation not permitted"* ]]
        [[ "$output" != *landlock* ]]
        [ ! -e "$m" ]
}

# a real job: tools of the host, a workspace copy and its change set
real_job() {
        on_host "$1"
        local d
        d=$(host_dir)
        echo one > "$d/a"
        run --separate-stderr "${W[@]}" "$HUTCH" run --json --isolation "$2" --workdir "$d" -- \
                sh -c 'cat a; echo two > a; echo new > b; python3 -c "print(6*7)" >&2; ls /usr/bin/env'
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.status == "success"'
        echo "$output" | jq -e '.stdout == "one\n/usr/bin/env\n"'
        echo "$output" | jq -e '.stderr | test("42")'
        echo "$output" | jq -e '.enforcement.isolation.tier == "landlock"'
        echo "$output" | jq -e '[.files[] | .path + ":" + .kind] | sort == ["a:modified", "b:added"]'
        # the host's tree is the caller's to change (hutch apply), not the job's
        [ "$(cat "$d/a")" = one ]
        [ ! -e "$d/b" ]
}

passwd_refused() {
        on_host "$1"
        local before
        before=$(sha256sum /etc/passwd)
        run "${W[@]}" "$HUTCH" run --isolation auto -- sh -c 'echo x > /etc/passwd'
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* || "$output" == *"Read-only file system"* ]]
        [ "$(sha256sum /etc/passwd)" = "$before" ]
}

# the caller's ~/.ssh, readable to everyone on the host: only the tier
# keeps it from the job
ssh_hidden() {
        on_host "$1"
        local home
        home=$(host_dir)
        mkdir -p "$home/.ssh"
        echo "secret-$(unique)" > "$home/.ssh/id_test"
        chmod 755 "$home/.ssh"
        chmod 644 "$home/.ssh/id_test"
        HOME="$home" run "${W[@]}" "$HUTCH" run --isolation "$2" -- \
                sh -c "cat $home/.ssh/id_test; ls $home/.ssh"
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
        [[ "$output" != *secret-* ]]
        # ls listed nothing: its only words are its error
        ! echo "$output" | grep -qx id_test || false
}

# --timeout ends the job and a daemon it left in a session of its own;
# with $3 = stubborn every process ignores SIGTERM, so only the SIGKILL
# after the grace ends them (then the supervisor, not init, ends the
# orphans)
timeout_ends_daemon() {
        on_host "$1"
        local n=$((100000 + RANDOM)) trap=""
        [ "${3:-}" != stubborn ] || trap="trap '' TERM;"
        run "${W[@]}" "$HUTCH" run --isolation "$2" --timeout 1s --grace 200ms -- \
                sh -c "$trap (setsid sleep $n.5 &); setsid sleep $n.25 & sleep $n"
        [ "$status" -eq 124 ]
        run pgrep -f "sleep $n"
        [ "$status" -ne 0 ]
}

# ---- network allow: hutch's egress proxy, and nothing else ----------------

# start_server: an HTTP server on 127.0.0.1 (egress-server.py); sets PORT
start_server() {
        local ready="$BATS_TEST_TMPDIR/ready.$RANDOM"
        python3 "$BATS_TEST_DIRNAME/egress-server.py" http "$ready" "$BATS_TEST_TMPDIR/server.log" \
                >/dev/null 2>&1 &
        SERVERS+=("$!")
        wait_for_file "$ready" 50 || { echo "server did not start"; return 1; }
        PORT=$(cat "$ready")
}

stop_servers() {
        local pid
        for pid in "${SERVERS[@]}"; do
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        done
        SERVERS=()
}

# Real clients (curl, python's urllib) reach an allowed server through the
# proxy variables; the same server's other port, reached directly, is
# refused, and so is the allowed one without the proxy. $1: the host, $2:
# the tier asked for.
proxy_reaches_allowed() {
        on_host "$1"
        command -v curl >/dev/null || skip "curl is not installed"
        SERVERS=()
        start_server
        local allowed=$PORT
        start_server
        local other=$PORT
        run --separate-stderr "${W[@]}" "$HUTCH" run --json --isolation "$2" \
                --allow "api.test:$allowed" --add-host api.test=127.0.0.1 -- sh -c '
curl -sS -m 10 "http://api.test:$1/by-curl"; echo " curl=$?"
python3 -c "import urllib.request, sys
print(urllib.request.urlopen(\"http://api.test:%s/by-urllib\" % sys.argv[1], timeout=10).read().decode().strip())" "$1"
curl -sS -m 10 -o /dev/null "http://api.test:$2/other-port"; echo "denied-port=$?"
curl -sS -m 10 --noproxy "*" "http://127.0.0.1:$1/direct"; echo "direct=$?"
curl -sS -m 10 --noproxy "*" "http://127.0.0.1:$2/direct"; echo "direct-other=$?"' sh "$allowed" "$other"
        stop_servers
        [ "$status" -eq 0 ]
        local out
        out=$(echo "$output" | jq -r .stdout)
        [[ "$out" == *"hello api.test:$allowed /by-curl"*" curl=0"* ]]
        [[ "$out" == *"hello api.test:$allowed /by-urllib"* ]]
        # the proxy answers 403 for a port no rule names; curl exits 0 or 22
        [[ "$out" != *"/other-port"* ]]
        [[ "$out" == *"direct=7"* ]]
        [[ "$out" == *"direct-other=7"* ]]
        # the servers saw the proxy's two connections, nothing direct
        [ "$(grep -c '^accepted' "$BATS_TEST_TMPDIR/server.log")" -eq 2 ]
        echo "$output" | jq -e '.enforcement.isolation.tier == "landlock"'
        echo "$output" | jq -e '.enforcement.network | startswith("allow, through hutch'"'"'s proxy only")'
        echo "$output" | jq -e '[.enforcement.isolation.not_held[] | select(test("proxy"))] | length >= 2'
        local id
        id=$(echo "$output" | jq -r .id)
        run "$HUTCH" show --json "$id"
        [ "$status" -eq 0 ]
        # the record: the two through the proxy, and the one it refused
        echo "$output" | jq -e --arg r "127.0.0.1:$allowed" \
                '[.connections[] | select(.decision == "allowed" and .host == "api.test" and .resolved == $r)]
                 | length == 2'
        echo "$output" | jq -e '[.connections[] | select(.decision == "denied" and .host == "api.test")] | length == 1'
        echo "$output" | jq -e '[.connections[] | select(.decision == "allowed")] | length == 2'
}

# the record and --json say which tier ran, and auto says why
record_says() {
        on_host "$1"
        run --separate-stderr "${W[@]}" "$HUTCH" run --json --isolation auto -- true
        [ "$status" -eq 0 ]
        # auto says so where the user looks
        [[ "$stderr" == *"the job runs in the landlock tier"* ]]
        local id
        id=$(echo "$output" | jq -r .id)
        echo "$output" | jq -e '.enforcement.isolation.tier == "landlock"'
        echo "$output" | jq -e '.enforcement.isolation.requested == "auto"'
        echo "$output" | jq -e '.enforcement.isolation.namespaces_refused | length > 0'
        echo "$output" | jq -e '.enforcement.isolation.not_held | length > 3'
        echo "$output" | jq -e '.enforcement.isolation.landlock_abi >= 1'
        run "$HUTCH" show --json "$id"
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.enforcement.isolation.tier == "landlock"'
        # and a run that requires namespaces does not run at all
        local d
        d=$(host_dir)
        run "${W[@]}" "$HUTCH" run --isolation auto --require isolation=namespaces -- touch "$d/ran"
        [ "$status" -eq 125 ]
        [[ "$output" == *"required isolation namespaces"* ]]
        [ ! -e "$d/ran" ]
}

@test "container: the default fails with the cause, and runs nothing" { default_fails container; }
@test "container: doctor points at the landlock tier" {
        on_host container
        run "${W[@]}" "$HUTCH" doctor
        [ "$status" -ne 0 ]
        echo "$output" | grep -q '^MISSING unprivileged user namespaces'
        echo "$output" | grep -q '^WARN    landlock tier.*Landlock ABI [0-9].*hutch run --isolation auto'
}
@test "container: --isolation landlock runs a real job" { real_job container landlock; }
@test "container: --isolation auto runs a real job" { real_job container auto; }
@test "container: /etc/passwd cannot be written, the host's is unchanged" { passwd_refused container; }
@test "container: the caller's ~/.ssh is out of reach" { ssh_hidden container auto; }
@test "container: --timeout ends a setsid() daemon" { timeout_ends_daemon container auto; }
@test "container: --timeout ends a setsid() daemon that ignores SIGTERM" { timeout_ends_daemon container landlock stubborn; }
@test "container: the record and --json say landlock" { record_says container; }

@test "ubuntu: the default fails with the cause, and runs nothing" { default_fails ubuntu; }
@test "ubuntu: --isolation landlock runs a real job" { real_job ubuntu landlock; }
@test "ubuntu: --isolation auto runs a real job" { real_job ubuntu auto; }
@test "ubuntu: /etc/passwd cannot be written, the host's is unchanged" { passwd_refused ubuntu; }
@test "ubuntu: the caller's ~/.ssh is out of reach" { ssh_hidden ubuntu auto; }
@test "ubuntu: --timeout ends a setsid() daemon" { timeout_ends_daemon ubuntu auto; }
@test "ubuntu: --timeout ends a setsid() daemon that ignores SIGTERM" { timeout_ends_daemon ubuntu landlock stubborn; }
@test "ubuntu: the record and --json say landlock" { record_says ubuntu; }

@test "container: --isolation auto with network allow reaches the allowed server through the proxy only" { proxy_reaches_allowed container auto; }

@test "maxzero: the default fails with the cause, and runs nothing" { default_fails maxzero; }
@test "maxzero: --isolation landlock runs a real job" { real_job maxzero landlock; }
@test "maxzero: --isolation auto runs a real job" { real_job maxzero auto; }
@test "maxzero: /etc/passwd cannot be written, the host's is unchanged" { passwd_refused maxzero; }
@test "maxzero: the caller's ~/.ssh is out of reach" { ssh_hidden maxzero auto; }
@test "maxzero: --timeout ends a setsid() daemon" { timeout_ends_daemon maxzero auto; }
@test "maxzero: --timeout ends a setsid() daemon that ignores SIGTERM" { timeout_ends_daemon maxzero landlock stubborn; }
@test "maxzero: the record and --json say landlock" { record_says maxzero; }

@test "this host: auto keeps the namespace tier where it works" {
        run "$HUTCH" run --json --isolation auto -- cat /proc/1/comm
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.stdout == "hutch-init\n"'
        echo "$output" | jq -e '.enforcement.isolation.tier == "namespaces"'
        echo "$output" | jq -e '.enforcement.isolation | has("namespaces_refused") | not'
}

@test "this host: --isolation landlock runs here too, as an unprivileged uid without capabilities" {
        run "$HUTCH" run --isolation landlock -- cat /proc/self/status
        [ "$status" -eq 0 ]
        echo "$output" | grep -qx 'CapEff:	0000000000000000'
        echo "$output" | grep -qx 'CapPrm:	0000000000000000'
        echo "$output" | grep -qx 'CapAmb:	0000000000000000'
        echo "$output" | grep -qx 'NoNewPrivs:	1'
        uid=$(echo "$output" | awk '/^Uid:/ { print $2 }')
        [ "$uid" -ne 0 ]
        # root's job: a uid of its own (landlock-uid.bats), never root's or nobody's
        [ "$(id -u)" -ne 0 ] || { [ "$uid" -ge 2130706432 ] && [ "$uid" -le 2147352575 ]; }
}

@test "this host: the artifacts dir exists when the job starts, and is collected, as in the namespace tier" {
        local d
        d=$(host_dir)
        echo a > "$d/a"
        run --separate-stderr "$HUTCH" run --json --isolation landlock --workdir "$d" -- \
                sh -c 'echo report > output/r.txt; echo b > a'
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '[.files[] | .path + ":" + .kind] | sort == ["a:modified", "r.txt:output"]'
        [ ! -e "$d/output" ]
}

@test "this host: the landlock tier leaves no scratch behind" {
        local base
        base=$(host_dir)
        TMPDIR="$base" run "$HUTCH" run --isolation landlock -- sh -c 'echo x > "$TMPDIR/f"; echo x > "$HOME/g"'
        [ "$status" -eq 0 ]
        [ -z "$(ls -A "$base")" ]
}

@test "this host: the landlock tier leaves no scratch behind when the job made a directory unreadable" {
        local base
        base=$(host_dir)
        TMPDIR="$base" run "$HUTCH" run --isolation landlock -- \
                sh -c 'mkdir -p "$TMPDIR/a/b" && echo x > "$TMPDIR/a/b/f" && chmod 000 "$TMPDIR/a/b" "$TMPDIR/a"'
        [ "$status" -eq 0 ]
        [ -z "$(ls -A "$base")" ]
}

@test "this host: what the landlock tier cannot do is refused with the reason" {
        run "$HUTCH" run --isolation landlock --runtime gvisor -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"gvisor"* ]]
}

@test "this host: the socket families follow the network mode" {
        run "$HUTCH" run --isolation landlock -- python3 -c '
import socket
for fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),
                 (socket.AF_INET6, socket.SOCK_DGRAM), (socket.AF_UNIX, socket.SOCK_STREAM)):
    try:
        socket.socket(fam, typ); print("open")
    except OSError as e:
        print(e.errno)
socket.socketpair(); print("pair")'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf '97\n97\n97\n97\npair')" ]
        run "$HUTCH" run --isolation landlock --network host -- python3 -c '
import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print("udp")'
        [ "$status" -eq 0 ]
        [ "$output" = udp ]
}

@test "this host: network allow reaches the allowed server through the proxy only" {
        proxy_reaches_allowed this landlock
}

# An allow rule by address (127.0.0.1:PORT) works with the proxy
# variables as set: no_proxy exempts nothing here (a direct connect is
# refused), and the proxy judges an IP literal by address rules.
@test "this host: network allow by address reaches 127.0.0.1 through the proxy, as curl and urllib send it" {
        command -v curl >/dev/null || skip "curl is not installed"
        SERVERS=()
        start_server
        local allowed=$PORT
        start_server
        local other=$PORT
        run --separate-stderr "$HUTCH" run --isolation landlock --allow "127.0.0.1:$allowed" -- sh -c '
echo "no_proxy=${no_proxy:-unset}"
curl -sS -m 10 "http://127.0.0.1:$1/by-curl"; echo " curl=$?"
python3 -c "import urllib.request, sys
print(urllib.request.urlopen(\"http://127.0.0.1:%s/by-urllib\" % sys.argv[1], timeout=10).read().decode().strip())" "$1"
curl -sS -m 10 -o /dev/null "http://127.0.0.1:$2/other"; echo "other=$?"' sh "$allowed" "$other"
        stop_servers
        [ "$status" -eq 0 ]
        [[ "$output" == *"no_proxy=unset"* ]]
        [[ "$output" == *"hello 127.0.0.1:$allowed /by-curl"*" curl=0"* ]]
        [[ "$output" == *"hello 127.0.0.1:$allowed /by-urllib"* ]]
        [ "$(grep -c '^accepted' "$BATS_TEST_TMPDIR/server.log")" -eq 2 ]
}

# The proxy listens on the host's 127.0.0.1, where any host process may
# connect to it: only the connections the job holds are let through.
@test "this host: network allow: a host process cannot use the run's proxy" {
        SERVERS=()
        start_server
        local d
        d=$(host_dir)
        chmod 777 "$d"
        python3 -c "
import os, socket, sys, time
d, port = sys.argv[1], sys.argv[2]
while not os.path.exists(d + '/port'):
    time.sleep(0.02)
proxy = int(open(d + '/port').read())
s = socket.create_connection(('127.0.0.1', proxy), timeout=10)
s.sendall(('GET http://api.test:%s/from-host HTTP/1.1\r\nHost: api.test:%s\r\n\r\n' % (port, port)).encode())
data = b''
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
open(d + '/host.tmp', 'w').write(data.decode('latin-1')); os.rename(d + '/host.tmp', d + '/host')" "$d" "$PORT" &
        local host=$!
        run --separate-stderr "$HUTCH" run --json --isolation landlock --rw "$d" --timeout 60s \
                --allow "api.test:$PORT" --add-host api.test=127.0.0.1 -- sh -c '
echo "${http_proxy##*:}" > "$1/port.tmp"; mv "$1/port.tmp" "$1/port"
while [ ! -e "$1/host" ]; do sleep 0.02; done
curl -sS -m 10 "http://api.test:$2/from-job"' sh "$d" "$PORT"
        wait "$host"
        stop_servers
        [ "$status" -eq 0 ]
        echo "$output" | jq -e --arg p "$PORT" '.stdout == "hello api.test:\($p) /from-job\n"'
        grep -q "403 Forbidden" "$d/host"
        grep -q "not the job's connection" "$d/host"
        # the server saw the job's connection only
        [ "$(grep -c '^accepted' "$BATS_TEST_TMPDIR/server.log")" -eq 1 ]
        echo "$output" | jq -e '[.connections[] | select(.decision == "denied" and .reason == "not the job'"'"'s connection")] | length == 1'
        echo "$output" | jq -e '[.connections[] | select(.decision == "allowed")] | length == 1'
}

# Landlock's TCP rules name a port, not an address: the proxy's port on
# another address must stay out of reach, also when the job changes the
# address in its memory while hutch looks at it (a thread flips it
# between the proxy's and another in a loop). A listener of the host's
# on 127.0.0.2 at the proxy's very port counts what reaches it.
@test "this host: network allow: the proxy's port on another address, TCP Fast Open, bind and listen are refused" {
        local d
        d=$(host_dir)
        chmod 777 "$d"
        python3 -c "
import os, socket, sys, time
d = sys.argv[1]
while not os.path.exists(d + '/port'):
    time.sleep(0.02)
port = int(open(d + '/port').read())
s = socket.socket(); s.bind(('127.0.0.2', port)); s.listen(64); s.settimeout(60)
open(d + '/ready', 'w').write('1')
while True:
    try:
        c, a = s.accept()
    except OSError:
        break
    open(d + '/accepted', 'a').write(repr(a) + '\n')" "$d" &
        local srv=$!
        run --separate-stderr "$HUTCH" run --json --isolation landlock --rw "$d" --allow api.test:1 \
                --add-host api.test=127.0.0.1 -- python3 -c '
import ctypes, errno, os, socket, struct, sys, threading, time
d = sys.argv[1]
port = int(os.environ["http_proxy"].rsplit(":", 1)[1])
open(d + "/port.tmp", "w").write(str(port)); os.rename(d + "/port.tmp", d + "/port")
while not os.path.exists(d + "/ready"):
    time.sleep(0.02)
def err(f):
    try:
        f(); return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print("other-address", err(lambda: socket.create_connection(("127.0.0.2", port), timeout=5)))
s6 = socket.socket(socket.AF_INET6)
print("other-address-v6", err(lambda: s6.connect(("::ffff:127.0.0.2", port))))
print("proxy-v6", err(lambda: socket.socket(socket.AF_INET6).connect(("::ffff:127.0.0.1", port))))
print("fastopen", err(lambda: socket.socket().sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.2", port))))
print("bind", err(lambda: socket.socket().bind(("127.0.0.1", 0))))
print("listen", err(lambda: socket.socket().listen()))
# the race: connect() on a sockaddr a second thread keeps rewriting
libc = ctypes.CDLL(None, use_errno=True)
def sin(a):
    return struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton(a) + bytes(8)
good, bad = sin("127.0.0.1"), sin("127.0.0.2")
buf = ctypes.create_string_buffer(good, 16)
stop = False
def flip():
    i = 0
    while not stop:
        ctypes.memmove(buf, bad if i & 1 else good, 16); i += 1
t = threading.Thread(target=flip); t.start()
peers = {}
import random
# until both answers were seen often: a race that never read the proxy
# address, or never the other, would prove nothing
for i in range(5000):
    if i >= 1000 and peers.get("127.0.0.1", 0) >= 100 and peers.get("EACCES", 0) >= 100:
        break
    if random.random() < 0.3:
        time.sleep(0)
    s = socket.socket()
    if libc.connect(s.fileno(), buf, 16) == 0:
        p = s.getpeername()[0]; peers[p] = peers.get(p, 0) + 1
    else:
        e = errno.errorcode.get(ctypes.get_errno(), "?")
        peers[e] = peers.get(e, 0) + 1
    s.close()
stop = True; t.join()
print("race", sorted(peers), peers)' "$d"
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
        local out
        out=$(echo "$output" | jq -r '.stdout, .stderr, .message')
        echo "$out"
        [ "$status" -eq 0 ]
        [[ "$out" == *"other-address EACCES"* ]]
        [[ "$out" == *"other-address-v6 EACCES"* ]]
        [[ "$out" == *"proxy-v6 ok"* ]]
        [[ "$out" == *"fastopen EOPNOTSUPP"* || "$out" == *"fastopen ENOTSUP"* ]]
        [[ "$out" == *"bind EACCES"* ]]
        [[ "$out" == *"listen EACCES"* ]]
        # every connect reached the proxy or was refused; none reached 127.0.0.2
        [[ "$out" == *"race ['127.0.0.1', 'EACCES']"* ]]
        [[ "$out" != *"race"*"127.0.0.2"* ]]
        [ ! -e "$d/accepted" ]
}

# A job that floods the proxy fills its listen backlog; its connects then
# wait for the proxy, and init must not wait with them: it goes on
# answering the job's other connect(2)s at once, answers each waiting one
# by its deadline, keeps no more waiting than its bound (the rest are
# refused at once), and the proxy works again once it takes connections.
# The helper is stopped (SIGSTOP) while the job floods, so its backlog
# fills for certain and stays full: its accept loop otherwise keeps up
# with a flood init makes one connect at a time.
@test "this host: network allow: a job that fills the proxy's backlog does not stall its init" {
        SERVERS=()
        start_server
        local d
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run --isolation landlock --rw "$d" --timeout 90s --allow "127.0.0.1:$PORT" -- python3 -c '
import os, socket, sys, threading, time, urllib.request
d, server = sys.argv[1], sys.argv[2]
proxy = int(os.environ["http_proxy"].rsplit(":", 1)[1])
open(d + "/port.tmp", "w").write(str(proxy)); os.rename(d + "/port.tmp", d + "/port")
while not os.path.exists(d + "/stopped"):
    time.sleep(0.02)
lock = threading.Lock()
flood = {"ok": 0, "at-once": 0, "late": 0, "other": 0, "slowest": 0.0}
full = []
stop = False
def flooder():
    while not stop:
        s = socket.socket()
        t = time.monotonic()
        try:
            s.connect(("127.0.0.1", proxy)); k = "ok"
        except ConnectionRefusedError:
            k = "at-once" if time.monotonic() - t < 0.5 else "late"
        except OSError:
            k = "other"
        dt = time.monotonic() - t
        s.close()
        with lock:
            flood[k] += 1
            flood["slowest"] = max(flood["slowest"], dt)
            if k != "ok" and not full:
                full.append(time.monotonic())
        if k != "ok":
            time.sleep(0.01)
# more than init keeps waiting (64)
threads = [threading.Thread(target=flooder) for _ in range(80)]
for t in threads:
    t.start()
# meanwhile, connects init refuses (not the proxy): each needs init
worst, n, while_full, answer = 0.0, 0, 0, "none"
end = time.monotonic() + 6
while time.monotonic() < end:
    s = socket.socket()
    t = time.monotonic()
    try:
        s.connect(("127.0.0.1", 1)); answer = "connected"
    except OSError as e:
        answer = os.strerror(e.errno)
    worst = max(worst, time.monotonic() - t)
    s.close()
    n += 1
    with lock:
        while_full += 1 if full and full[0] < t else 0
    time.sleep(0.05)
stop = True
for t in threads:
    t.join()
print("flood ok=%(ok)d at-once=%(at-once)d late=%(late)d other=%(other)d slowest=%(slowest).3f" % flood)
print("probe n=%d while-full=%d worst=%.3f answer=%s" % (n, while_full, worst, answer))
sys.stdout.flush()
open(d + "/probed", "w").write("1")
while not os.path.exists(d + "/resumed"):
    time.sleep(0.02)
print(urllib.request.urlopen("http://127.0.0.1:%s/after" % server, timeout=30).read().decode().strip())' \
                "$d" "$PORT" >"$d/out" 2>"$d/err" &
        local h=$! helper=""
        if wait_for_file "$d/port" 100; then
                helper=$(pgrep -P "$h" -x hutch-egress || true)
        fi
        if [ -n "$helper" ]; then
                kill -STOP "$helper"
                echo 1 > "$d/stopped"
                wait_for_file "$d/probed" 600 || true
                kill -CONT "$helper"
                echo 1 > "$d/resumed"
        else
                kill "$h" 2>/dev/null || true
        fi
        local rc=0
        wait "$h" || rc=$?
        stop_servers
        local out
        out=$(cat "$d/out" "$d/err")
        echo "$out"
        [ -n "$helper" ]
        [ "$rc" -eq 0 ]
        # the backlog filled: the proxy took some, then one waited in vain
        [[ "$out" =~ flood\ ok=([0-9]+)\ at-once=([0-9]+)\ late=([0-9]+)\ other=([0-9]+)\ slowest=([0-9.]+) ]]
        [ "${BASH_REMATCH[1]}" -ge 1 ]
        [ "${BASH_REMATCH[4]}" -eq 0 ]
        # waiting ones were refused at their deadline (2 s), none later
        [ "${BASH_REMATCH[3]}" -ge 1 ]
        python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 4.0)' "${BASH_REMATCH[5]}"
        # past init's bound, refused at once
        [ "${BASH_REMATCH[2]}" -ge 1 ]
        # init answered every other connect promptly meanwhile (it waited
        # 2 s per flooding connect before)
        [[ "$out" =~ probe\ n=([0-9]+)\ while-full=([0-9]+)\ worst=([0-9.]+)\ answer=(.*) ]]
        [ "${BASH_REMATCH[2]}" -ge 10 ]
        python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 0.5)' "${BASH_REMATCH[3]}"
        [[ "${BASH_REMATCH[4]}" == "Permission denied"* ]]
        # and the proxy works again
        [[ "$out" == *"hello 127.0.0.1:$PORT /after"* ]]
}

# The same in a live sandbox, where init also serves the supervisor and
# every exec: while one exec's connects wait for the stopped proxy,
# another exec starts, its connect(2)s are answered and it is reported,
# all promptly.
@test "this host: live sandbox: an exec that fills the proxy's backlog does not stall init for the others" {
        SERVERS=()
        start_server
        local d box=stall$$
        d=$(host_dir)
        chmod 777 "$d"
        run --separate-stderr "$HUTCH" sandbox start "$box" --isolation landlock --rw "$d" --allow "127.0.0.1:$PORT"
        [ "$status" -eq 0 ]
        local helper
        helper=$(pgrep -P "$(jq -r .supervisor_pid "$HUTCH_STATE_DIR/sandboxes/$box.json")" -x hutch-egress || true)
        [ -z "$helper" ] || kill -STOP "$helper"
        "$HUTCH" exec "$box" -- python3 -c '
import os, socket, sys, threading, time
d = sys.argv[1]
proxy = int(os.environ["http_proxy"].rsplit(":", 1)[1])
end = time.monotonic() + 8
counts = {"ok": 0, "refused": 0}
lock = threading.Lock()
def flooder():
    while time.monotonic() < end:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", proxy)); k = "ok"
        except OSError:
            k = "refused"
        s.close()
        with lock:
            counts[k] += 1
        if k != "ok":
            open(d + "/full", "a").write("1")
            time.sleep(0.01)
threads = [threading.Thread(target=flooder) for _ in range(80)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("flood ok=%(ok)d refused=%(refused)d" % counts)' "$d" >"$d/flood" 2>&1 &
        local a=$!
        wait_for_file "$d/full" 100 || true
        local t0 t1
        t0=$(date +%s%N)
        run timeout 60 "$HUTCH" exec "$box" -- python3 -c '
import os, socket, time
worst = 0.0
for i in range(5):
    s = socket.socket()
    t = time.monotonic()
    try:
        s.connect(("127.0.0.1", 1)); answer = "connected"
    except OSError as e:
        answer = os.strerror(e.errno)
    worst = max(worst, time.monotonic() - t)
    s.close()
print("probe worst=%.3f answer=%s" % (worst, answer))'
        t1=$(date +%s%N)
        [ -z "$helper" ] || kill -CONT "$helper"
        local rc=0
        wait "$a" || rc=$?
        timeout 60 "$HUTCH" sandbox stop "$box" || true
        stop_servers
        echo "$output"
        cat "$d/flood"
        echo "the probing exec took $(( (t1 - t0) / 1000000 )) ms"
        [ -n "$helper" ]
        [ "$rc" -eq 0 ]
        [ -s "$d/full" ]
        grep -Eq '^flood ok=[1-9][0-9]* refused=[1-9]' "$d/flood"
        [ "$status" -eq 0 ]
        [[ "$output" =~ probe\ worst=([0-9.]+)\ answer=(.*) ]]
        python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 0.5)' "${BASH_REMATCH[1]}"
        [[ "${BASH_REMATCH[2]}" == "Permission denied"* ]]
        # started, served and reported: far below one wait for the proxy (2 s)
        [ $(( (t1 - t0) / 1000000 )) -lt 1500 ]
}

# Landlock (ABI <= 7) does not hold connect() to a unix socket's path: a
# listening socket of the host's, open to everyone, stays out of reach
@test "this host: a host unix socket cannot be reached" {
        local d
        d=$(host_dir)
        python3 -c "
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind('$d/s'); os.chmod('$d/s', 0o777); s.listen()
open('$d/ready', 'w').write('1\n'); s.settimeout(30)
try:
    s.accept(); open('$d/accepted', 'w').write('1\n')
except OSError:
    pass" &
        srv=$!
        wait_for_file "$d/ready"
        run "$HUTCH" run --isolation landlock --network host -- python3 -c "
import socket
try:
    socket.socket(socket.AF_UNIX).connect('$d/s'); print('connected')
except OSError as e:
    print(e.errno)"
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
        [ "$status" -eq 0 ]
        [ "$output" = 97 ]
        [ ! -e "$d/accepted" ]
}

# socketpair(2) is the one way to a unix socket, and a datagram pair's
# socket sends to any path sendto(2) names, or that connect(2) repoints
# it at (Landlock scopes abstract names only): a host's /dev/log or
# journal socket. Only stream and seqpacket pairs are made, which cannot.
@test "this host: a socketpair cannot reach a host unix datagram socket, in every network mode" {
        local d net
        d=$(host_dir)
        python3 -c "
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind('$d/s'); os.chmod('$d/s', 0o777)
open('$d/ready', 'w').write('1\n'); s.settimeout(30)
try:
    while True:
        s.recv(100); open('$d/got', 'a').write('1\n')
except OSError:
    pass" &
        srv=$!
        wait_for_file "$d/ready"
        for net in none host; do
                run "$HUTCH" run --isolation landlock --network "$net" -- python3 -c "
import socket
for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
    try:
        a, b = socket.socketpair(socket.AF_UNIX, kind)
    except OSError as e:
        print(int(kind), 'pair', e.errno); continue
    try:
        a.sendto(b'x', '$d/s'); print(int(kind), 'sent')
    except OSError as e:
        print(int(kind), 'sendto', e.errno)
    b.close()
    try:
        a.connect('$d/s'); a.send(b'x'); print(int(kind), 'connected')
    except OSError as e:
        print(int(kind), 'connect', e.errno)"
                echo "$net: $output"
                [ "$status" -eq 0 ]
                [[ "$output" == *"2 pair 93"* ]]
                # a seqpacket send drops the name: it reaches the pair's peer
                [[ "$output" != *"2 sent"* && "$output" != *connected* ]]
        done
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
        [ ! -e "$d/got" ]
}

# The disk limit without a tmpfs: a watch walks the scratch on the
# watchdog's tick and ends the job over --disk (beyond the workspace
# copy), counting allocated blocks, and entries against limits.inodes.
# Each job below keeps running until something ends it (--timeout is
# only the safety net the status must not show).
@test "this host: the disk watch ends a job that writes more than --disk in files each under it" {
        local d
        d=$(host_dir)
        # the workspace copy is not the job's to pay for
        head -c 12M /dev/zero > "$d/big"
        run --separate-stderr "$HUTCH" run --json --isolation landlock --workdir "$d" --disk 20M --timeout 20s -- \
                sh -c 'for i in 1 2 3; do head -c 8M /dev/zero > "$TMPDIR/f$i"; done; while :; do sleep 0.05; done'
        [ "$status" -eq 153 ]
        echo "$output" | jq -e '.status == "disk_limit"'
        echo "$output" | jq -e '.message | test("^disk limit 20M exceeded: the scratch held [0-9.]+[KMG] beyond the workspace copy")'
        echo "$output" | jq -e '.enforcement.limits.disk.mechanism == "watch"'
        echo "$output" | jq -e '.enforcement.limits.disk.partial == true'
        echo "$output" | jq -e '[.enforcement.isolation.not_held[] | select(test("deleted while it still holds them open"))] | length == 1'
}

@test "this host: the disk watch counts what files take, not their size, and not the workspace copy" {
        local d
        d=$(host_dir)
        head -c 12M /dev/zero > "$d/big"
        # 3 x 19M sparse, 12M copied in, 15M written: 27M beyond the copy
        # by size, 15M by blocks. The job gives the watch rounds to err in
        # (a window, not a wait for anything) and then ends by itself.
        run --separate-stderr "$HUTCH" run --json --isolation landlock --workdir "$d" --disk 20M --timeout 20s -- \
                sh -c 'for i in 1 2 3; do truncate -s 19M "$TMPDIR/s$i"; done; head -c 15M /dev/zero > w
                       sleep 0.5; du -sh "$TMPDIR" >/dev/null; echo done'
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.status == "success" and .stdout == "done\n"'
}

@test "this host: the disk watch holds limits.inodes and a tree nested past its reach" {
        local p
        p="$BATS_TEST_TMPDIR/inodes.ini"
        printf 'extends = default\n[limits]\ninodes = 100\n' > "$p"
        run --separate-stderr "$HUTCH" run --json -p "$p" --trust-profile --isolation landlock --timeout 20s -- \
                sh -c 'i=0; while [ $i -lt 200 ]; do : > "$TMPDIR/f$i"; i=$((i + 1)); done; while :; do sleep 0.05; done'
        [ "$status" -eq 153 ]
        echo "$output" | jq -e '.status == "disk_limit"'
        echo "$output" | jq -e '.message | test("held [0-9]+ entries, over the [0-9]+ allowed \\(limits.inodes 100")'
        run --separate-stderr "$HUTCH" run --json --isolation landlock --timeout 60s -- python3 -c '
import os, time
fd = os.open(os.environ["TMPDIR"], os.O_RDONLY)
for i in range(300):
    os.mkdir("d", dir_fd=fd); n = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n
while True:
    time.sleep(0.05)'
        [ "$status" -eq 153 ]
        echo "$output" | jq -e '.message | test("nested directories more than 256 deep")'
}

# A directory the watch cannot open (mode 000: as an unprivileged
# caller the supervisor is the job's uid without CAP_DAC_OVERRIDE) used
# to end each round with EACCES before its sums were looked at: the
# whole scratch went unwatched. Now only that directory's contents go
# uncounted (hutch-run(1) says so) and the rest still ends the job.
@test "this host: a directory the job makes unreadable does not blind the disk watch" {
        run --separate-stderr "$HUTCH" run --json --isolation landlock --disk 20M --timeout 20s -- \
                sh -c 'mkdir "$TMPDIR/locked" && chmod 000 "$TMPDIR/locked" || exit 9
                       for i in 1 2 3; do head -c 8M /dev/zero > "$TMPDIR/f$i"; done; while :; do sleep 0.05; done'
        [ "$status" -eq 153 ]
        echo "$output" | jq -e '.status == "disk_limit"'
        echo "$output" | jq -e '[.enforcement.isolation.not_held[] | select(test("made unreadable or unsearchable"))] | length == 1'
}

# Any user may make a btrfs subvolume (an ioctl), which has a device
# number of its own: the walk took that for a mount point and skipped all
# it held. The scratch is put on a btrfs loop mount, in a mount namespace
# of the test's own (gone with it), so this needs root and btrfs.
@test "this host: a btrfs subvolume the job makes does not hide from the disk watch" {
        [ "$(id -u)" -eq 0 ] || skip "a btrfs loop mount needs root"
        grep -qw btrfs /proc/filesystems || skip "the kernel has no btrfs"
        command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs (btrfs-progs) is not installed"
        command -v unshare >/dev/null || skip "unshare(1) is not installed"
        local d
        d=$(host_dir)
        chmod 755 "$d"
        truncate -s 300M "$d/img"
        mkfs.btrfs -q "$d/img" >/dev/null 2>&1 || skip "mkfs.btrfs fails here"
        mkdir "$d/mnt"
        run --separate-stderr unshare -m --propagation private -- sh -c '
                mount -o loop "$1/img" "$1/mnt" || exit 77
                chmod 1777 "$1/mnt"
                TMPDIR="$1/mnt" "$2" run --json --isolation landlock --disk 20M --timeout 20s -- python3 -c "
import fcntl, os, struct, time
t = os.environ[\"TMPDIR\"]
fd = os.open(t, os.O_RDONLY)
# BTRFS_IOC_SUBVOL_CREATE: struct btrfs_ioctl_vol_args { __s64 fd; char name[4088]; }
fcntl.ioctl(fd, 0x5000940e, bytearray(struct.pack(\"q\", 0) + b\"vol\".ljust(4088, b\"\\0\")))
for i in range(3):
    with open(t + \"/vol/f%d\" % i, \"wb\") as f:
        f.write(b\"x\" * (8 << 20))
while True:
    time.sleep(0.05)"
                rc=$?
                umount "$1/mnt"
                exit $rc' sh "$d" "$HUTCH"
        [ "$status" -ne 77 ] || skip "a loop mount of btrfs fails here"
        echo "$output"
        [ "$status" -eq 153 ]
        echo "$output" | jq -e '.status == "disk_limit"'
}

# the disk watch is not a bound a hostile job cannot pass (what it writes
# between two looks, files it deleted but holds open): a profile that
# requires the disk limit (strict) is refused, never run with less
@test "this host: --require disk, and so -p strict, refuse the landlock tier" {
        local d
        d=$(host_dir)
        run "$HUTCH" run --isolation landlock -p strict -- touch "$d/ran"
        [ "$status" -eq 125 ]
        # the disk limit, and (without a cgroup) the pids limit, are partial
        [[ "$output" == *"required limit "*"cannot be enforced on this host"* ]]
        [ ! -e "$d/ran" ]
        run "$HUTCH" run --isolation landlock --require disk -- touch "$d/ran"
        [ "$status" -eq 125 ]
        [[ "$output" == *"required limit disk"*"RLIMIT_FSIZE"* ]]
        [ ! -e "$d/ran" ]
        run --separate-stderr "$HUTCH" run --json --isolation landlock -- true
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.enforcement.limits.disk.partial == true'
}
