#!/usr/bin/env bats
# hutch run: what the job can see and change, and what it cannot.

load lib

setup() { common_setup; }

@test "the job is not PID 1; PID 1 is hutch's init" {
        run "$HUTCH" run -- sh -c 'echo $$; cat /proc/1/comm'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" != 1 ]
        [ "${lines[1]}" = hutch-init ]
}

@test "the job sees only the sandbox's processes" {
        run "$HUTCH" run -- sh -c 'ls -d /proc/[0-9]* | wc -l'
        [ "$status" -eq 0 ]
        # init, sh and ls (and nothing from the host)
        [ "$output" -le 4 ]
}

@test "no capabilities and no_new_privs inside" {
        run "$HUTCH" run -- cat /proc/self/status
        [ "$status" -eq 0 ]
        echo "$output" | grep -qx 'CapEff:	0000000000000000'
        echo "$output" | grep -qx 'CapPrm:	0000000000000000'
        echo "$output" | grep -qx 'CapBnd:	0000000000000000'
        echo "$output" | grep -qx 'CapAmb:	0000000000000000'
        echo "$output" | grep -qx 'NoNewPrivs:	1'
}

@test "writes to /usr, /etc and / fail and nothing appears on the host" {
        m=$(unique)
        run "$HUTCH" run -- sh -c "touch /usr/$m || echo usr-denied; touch /etc/$m || echo etc-denied; mkdir /$m || echo root-denied"
        [[ "$output" == *usr-denied* ]]
        [[ "$output" == *etc-denied* ]]
        [[ "$output" == *root-denied* ]]
        [ ! -e "/usr/$m" ]
        [ ! -e "/etc/$m" ]
        [ ! -e "/$m" ]
}

@test "a file written to /tmp inside does not appear on the host" {
        m=$(unique)
        run "$HUTCH" run -- sh -c "echo x > /tmp/$m && cat /tmp/$m"
        [ "$status" -eq 0 ]
        [ "$output" = x ]
        [ ! -e "/tmp/$m" ]
}

@test "/tmp, /var/tmp, HOME and /workspace are writable and empty each run" {
        run "$HUTCH" run -- sh -c 'touch /tmp/a /var/tmp/v $HOME/b /workspace/c && ls -A /workspace $HOME'
        [ "$status" -eq 0 ]
        # nothing but the (empty) artifacts dir hutch makes for every run
        run "$HUTCH" run -- sh -c 'find /tmp /var/tmp $HOME /workspace -mindepth 1 ! -path /workspace/output | wc -l; ls -A /workspace/output | wc -l'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf '0\n0')" ]
}

# /var/tmp is the FHS's other temp dir (cvs, git's cvsimport tests, vim
# use it): sticky and world-writable like /tmp, but its own directory;
# the rest of /var is read-only.
@test "/var/tmp is a temp dir of its own, mode 1777; /var itself is read-only" {
        run "$HUTCH" run -q -- sh -c 'stat -c %a /tmp /var/tmp; touch /var/tmp/x; ls /tmp; mkdir /var/lib 2>&1 | grep -c "Read-only"'
        [ "$status" -eq 0 ]
        [ "$output" = "1777"$'\n'"1777"$'\n'"1" ]
}

@test "/etc/shadow is not readable, not even by a uid 0 job" {
        [ -e /etc/shadow ] || skip "no /etc/shadow on this host"
        run "$HUTCH" run -- cat /etc/shadow
        [ "$status" -ne 0 ]
        run "$HUTCH" run --uid 0 -- cat /etc/shadow
        [ "$status" -ne 0 ]
        [[ "$output" != *root:* ]]
}

@test "sensitive /proc files are masked and /proc/sys is read-only" {
        run "$HUTCH" run --uid 0 -- sh -c 'cat /proc/kcore; echo kcore=$?; echo c > /proc/sysrq-trigger; echo sysrq=$?; echo 1 > /proc/sys/kernel/ns_last_pid; echo sys=$?'
        [[ "$output" == *"kcore=1"* ]]
        [[ "$output" != *"sysrq=0"* ]]
        [[ "$output" != *"sys=0"* ]]
}

@test "/dev is minimal" {
        run "$HUTCH" run -- ls /dev
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | tr '\n' ' ')" = "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " ]
        run "$HUTCH" run -- sh -c 'echo x > /dev/null && head -c 4 /dev/urandom | wc -c'
        [ "$output" = 4 ]
}

@test "only lo exists in the network namespace, and it is up" {
        run "$HUTCH" run -- cat /proc/net/dev
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | tail -n +3 | awk -F: '{gsub(/ /,"",$1); print $1}')" = lo ]
        run "$HUTCH" run -- cat /sys/class/net/lo/operstate
        # /sys is not mounted: fall back to asking the kernel through /proc
        run "$HUTCH" run -- sh -c 'grep -c . /proc/net/if_inet6 2>/dev/null || true'
}

@test "a TCP listener on host 127.0.0.1 is not reachable" {
        command -v python3 >/dev/null || skip "python3 not installed"
        port=$(free_port)
        python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(5); s.settimeout(8)
try:
    while True:
        c, _ = s.accept(); c.sendall(b'host-secret\n'); c.close()
except Exception:
    pass
" &
        listener=$!
        # reachable from the host, so the test means something (python may
        # take a while to start on a loaded machine)
        for i in $(seq 100); do
                run bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && cat <&3"
                [ "$output" = host-secret ] && break
                sleep 0.1
        done
        [ "$output" = host-secret ]
        run "$HUTCH" run -- bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && cat <&3"
        kill "$listener" 2>/dev/null || true
        [ "$status" -ne 0 ]
        [[ "$output" != *host-secret* ]]
}

@test "the disk limit gives ENOSPC in /tmp, /var/tmp, HOME and /workspace" {
        for dir in /tmp /var/tmp /home/sandbox /workspace; do
                run "$HUTCH" run --disk 2M -- sh -c "head -c 4000000 /dev/zero > $dir/fill"
                [ "$status" -ne 0 ]
                [[ "$output" == *"No space left on device"* ]]
        done
        run "$HUTCH" run --disk 8M -- sh -c 'head -c 4000000 /dev/zero > /tmp/fill && wc -c < /tmp/fill'
        [ "$status" -eq 0 ]
        [ "$output" = 4000000 ]
}

@test "a bind's destination is made however many of its parents are missing" {
        # the sandbox user may be another host uid: use a world-readable dir
        d=$(mktemp -d /tmp/hutch-ro.XXXXXX)
        echo deep > "$d/f"
        chmod -R a+rX "$d"
        run "$HUTCH" run --ro "$d:/deep/a/b/c" --ro "$d/f:/deeper/x/y/file" --ro "$d:/var/lib/hutch-t/d" \
                -- sh -c 'cat /deep/a/b/c/f /deeper/x/y/file /var/lib/hutch-t/d/f; stat -c %F /deeper/x/y/file'
        rm -rf "$d"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ "$output" = "$(printf 'deep\ndeep\ndeep\nregular file')" ]
}

@test "a file bound over an existing file in a read-only dir replaces it; a dir there is refused" {
        { [ -f /etc/debian_version ] && [ ! -L /etc/debian_version ]; } ||
                skip "no regular /etc/debian_version on this host"
        d=$(mktemp -d /tmp/hutch-ro.XXXXXX)
        echo mine > "$d/f"
        chmod -R a+rX "$d"
        # /etc is the host's, read-only inside: the mountpoint exists and
        # cannot be opened for writing, nor does it need to be
        run "$HUTCH" run --ro "$d/f:/etc/debian_version" -- cat /etc/debian_version
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ "$output" = mine ]
        run "$HUTCH" run --ro "$d/f:/etc" -- true
        rm -rf "$d"
        [ "$status" -eq 125 ]
        [[ "$output" == *"/etc: Is a directory"* ]]
}

@test "--ro binds a host path read-only" {
        # the sandbox user may be another host uid: use a world-readable dir
        d=$(mktemp -d /tmp/hutch-ro.XXXXXX)
        echo hello > "$d/f"
        chmod -R a+rX "$d"
        run "$HUTCH" run --ro "$d:/data" -- sh -c 'cat /data/f; echo x > /data/f || echo denied'
        [ "${lines[0]}" = hello ]
        [[ "$output" == *denied* ]]
        [ "$(cat "$d/f")" = hello ]
        rm -rf "$d"
}
