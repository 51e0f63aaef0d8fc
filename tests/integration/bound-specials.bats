#!/usr/bin/env bats
# bound-specials.bats - a unix socket or FIFO in a host tree bound with
# -i or --ro is not reachable from the job: a host service listening on
# it gets no connection, a host reader of the FIFO sees nothing.

bats_require_minimum_version 1.5.0
load lib

setup() {
        common_setup
        D=$(host_dir)
        mkdir -p "$D/tree/sub"
        echo data > "$D/tree/sub/file"
        chmod -R a+rX "$D/tree"
        # a host service on a socket anyone may connect to
        python3 - "$D/tree/sub/sock" "$D/tree/fifo" "$D/log" <<'PY' &
import os, socket, sys
sock, fifo, log = sys.argv[1:]
s = socket.socket(socket.AF_UNIX)
s.bind(sock)
os.chmod(sock, 0o777)
os.mkfifo(fifo)
os.chmod(fifo, 0o666)
s.listen(5)
open(log, "w").write("listening\n")
while True:
    c, _ = s.accept()
    open(log, "a").write("connected\n")
    c.send(b"HOST-SERVICE\n")
    c.close()
PY
        SERVER=$!
        for i in $(seq 100); do [ -s "$D/log" ] && break; sleep 0.05; done
        [ -s "$D/log" ]
}

teardown() {
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
        host_dirs_cleanup
}

# connects to each path given, prints what it got or the error
probe_script='
import os, socket, sys
for p in sys.argv[1:]:
    if p.endswith("fifo"):
        try:
            os.open(p, os.O_WRONLY | os.O_NONBLOCK); print(p, "OPENED")
        except OSError as e:
            print(p, e.strerror)
        continue
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); print(p, s.recv(64))
    except OSError as e:
        print(p, e.strerror)
'

@test "a host socket under --ro or -i cannot be connected to" {
        run "$HUTCH" run -q --ro "$D/tree:/data" -i "$D/tree:t" -- python3 -c "$probe_script" \
                /data/sub/sock /workspace/input/t/sub/sock
        [ "$status" -eq 0 ]
        [[ "$output" != *HOST-SERVICE* ]]
        [[ "$output" == *"/data/sub/sock Permission denied"* ]]
        [[ "$output" == *"/workspace/input/t/sub/sock Permission denied"* ]]
        run grep connected "$D/log"
        [ "$status" -eq 1 ]
        # the rest of the tree is there as it was
        run "$HUTCH" run -q --ro "$D/tree:/data" -- cat /data/sub/file
        [ "$output" = data ]
}

@test "a host FIFO under --ro cannot be opened" {
        run "$HUTCH" run -q --ro "$D/tree:/data" -- python3 -c "$probe_script" /data/fifo
        [ "$status" -eq 0 ]
        [[ "$output" != *OPENED* ]]
        [[ "$output" == *"/data/fifo Permission denied"* ]]
}

@test "a socket bound on its own is masked too, and the mask cannot be removed" {
        run "$HUTCH" run -q --ro "$D/tree/sub/sock:/run/s" -- sh -c \
                'python3 -c "$1" /run/s; rm -f /run/s 2>/dev/null && echo REMOVED; umount /run/s 2>/dev/null && echo UNMOUNTED; true' \
                sh "$probe_script"
        [[ "$output" != *HOST-SERVICE* ]]
        [[ "$output" != *REMOVED* ]]
        [[ "$output" != *UNMOUNTED* ]]
        ! grep -q connected "$D/log"
}

@test "a socket in the --workdir tree is not reachable through the overlay" {
        run "$HUTCH" run -q --workdir "$D/tree" -- python3 -c "$probe_script" /workspace/sub/sock
        [[ "$output" != *HOST-SERVICE* ]]
        ! grep -q connected "$D/log"
}
