#!/usr/bin/env bats
# hostside.bats - what a job leaves behind cannot hurt the host. Each test
# is checked from the host side: the size of the blob store and the
# database, the modes apply installs, the bytes that reach a terminal,
# the JSON fields of the record, what a profile from an untrusted place
# is allowed to do.

bats_require_minimum_version 1.5.0
load lib

teardown() { host_dirs_cleanup; }

setup() {
        common_setup
        W="$(host_dir)/w"
        mkdir -p "$W"
        echo human > "$W/f.txt"
        echo '#!/bin/sh' > "$W/tool.sh"
        make_tree "$W"
}

# bytes_of PATH: allocated bytes of a tree (du counts blocks, not length)
bytes_of() {
        du -sB1 "$1" | cut -f1
}

# on_tty CMD...: run CMD with stdout and stderr on a new pseudo-terminal;
# print what reached the terminal, byte for byte, in hex.
on_tty() {
        python3 - "$@" <<'EOF'
import os, subprocess, sys
m, s = os.openpty()
p = subprocess.Popen(sys.argv[1:], stdout=s, stderr=s, stdin=subprocess.DEVNULL)
os.close(s)
out = b""
while True:
    try:
        b = os.read(m, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
p.wait()
sys.stdout.write(out.hex())
EOF
}

@test "a sparse file is bounded by --disk and never expanded into the blob store" {
        run "$HUTCH" run -q --disk 16M --workdir "$W" -- sh -c \
                'truncate -s 3G big.bin && truncate -s 8M holey.bin && echo end >> holey.bin'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        # 3 GB of holes would have been 3 GB of blobs; 8 MB of holes stay holes
        [ "$(bytes_of "$HUTCH_STATE_DIR/blobs")" -lt $((2 * 1024 * 1024)) ]
        run "$HUTCH" show --json "$id"
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "big.bin") | .skip')" = max_bytes ]
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "holey.bin") | .skip')" = null ]
        # and it still applies exactly, sparse
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]     # a partial change set needs --force
        run "$HUTCH" apply --force "$id"
        [ "$status" -eq 0 ]
        [ "$(stat -c %s "$W/holey.bin")" -eq $((8 * 1024 * 1024 + 4)) ]
        [ "$(bytes_of "$W/holey.bin")" -lt $((1024 * 1024)) ]
        [ ! -e "$W/big.bin" ]
}

@test "a session commit of a sparse file stays sparse" {
        run "$HUTCH" run -q --disk 1G --session sparse -- sh -c 'truncate -s 512M s.bin && echo x >> s.bin'
        [ "$status" -eq 0 ]
        [ "$(bytes_of "$HUTCH_STATE_DIR/blobs")" -lt $((2 * 1024 * 1024)) ]
        f=$(find "$HUTCH_STATE_DIR" -name s.bin -path '*sessions*' | head -n 1)
        [ -n "$f" ]
        [ "$(stat -c %s "$f")" -eq $((512 * 1024 * 1024 + 2)) ]
        [ "$(bytes_of "$f")" -lt $((1024 * 1024)) ]
}

@test "thousands of long-named files cost the store little, and are counted" {
        # 20000 files under a 1.5 KB path: recorded one by one, this was
        # tens of MB of rows and WAL
        run "$HUTCH" run -q --workdir "$W" -- sh -c '
                d=.; for i in 1 2 3 4 5 6; do d=$d/$(printf "%0250d" $i); done
                mkdir -p "$d" && cd "$d" && seq 20000 | xargs touch'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        size=$(cat "$HUTCH_STATE_DIR"/hutch.db* | wc -c)
        [ "$size" -lt $((4 * 1024 * 1024)) ]
        run "$HUTCH" show --json "$id"
        # the first directory past limits.max_path is counted, and not walked
        [ "$(echo "$output" | jq -r .files_unlisted)" -ge 1 ]
        [ "$(echo "$output" | jq '[.files[] | select((.path | length) > 1024)] | length')" -eq 0 ]
        [ "$(echo "$output" | jq -r .files_error)" = null ]
}

@test "the scratch tmpfs has an inode cap (limits.inodes)" {
        run "$HUTCH" run -q --inodes 500 -- sh -c 'cd /tmp && seq 1000 | xargs touch'
        [ "$status" -ne 0 ]
        [[ "$output" == *"No space left"* ]]
        run "$HUTCH" run -q --inodes 5000 -- sh -c 'cd /tmp && seq 1000 | xargs touch'
        [ "$status" -eq 0 ]
}

@test "an output dir replaced by a symlink is a recorded failure, and the changes are kept" {
        run --separate-stderr "$HUTCH" run -q --json --workdir "$W" -- sh -c 'echo agent > f.txt; rmdir output && ln -s /tmp output'
        [ "$status" -eq 1 ]
        [ "$(echo "$output" | jq -r .status)" = success ]
        [[ "$(echo "$output" | jq -r .files_error)" == "artifacts /workspace/output: "* ]]
        [[ "$(echo "$output" | jq -r .message)" == "files not recorded: "* ]]
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "f.txt") | .kind')" = modified ]
}

@test "an unusable blob store is a recorded failure, never a plain success" {
        run "$HUTCH" run -q -- true
        rm -rf "$HUTCH_STATE_DIR/blobs"
        touch "$HUTCH_STATE_DIR/blobs"        # not a dir, even for root
        run --separate-stderr "$HUTCH" run -q --json --workdir "$W" -- sh -c 'echo agent > f.txt'
        [ "$status" -eq 1 ]
        [ "$(echo "$output" | jq -r .files_error)" != null ]
        [ "$(echo "$output" | jq -r .message)" != null ]
        id=$(echo "$output" | jq -r .id)
        run "$HUTCH" show "$id"
        [[ "$output" == *"files not recorded"* ]]
}

@test "a name that is not UTF-8 keeps a lossless form in JSON" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c 'touch "$(printf "bad\377name")"'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        b64=$(echo "$output" | jq -r '.changes[] | select(.path_b64) | .path_b64')
        [ "$(echo "$b64" | base64 -d | od -An -tx1 | tr -d ' \n')" = 626164ff6e616d65 ]
        [ "$(echo "$output" | jq -r '.changes[] | select(.path_b64) | .path')" = "bad�name" ]
        run "$HUTCH" show --json "$id"
        [ "$(echo "$output" | jq -r '.files[] | select(.path_b64) | .path_b64')" = "$b64" ]
}

@test "apply never installs the job's group- and world-write or special bits" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c \
                'chmod 0777 tool.sh && mkdir d && chmod 1777 d && echo x > d/n && chmod 4766 d/n'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" diff --stat "$id"
        [[ "$output" == *"tool.sh  (mode 0644 -> 0777)"* ]]
        [[ "$output" == *"d/  (mode 1777)"* ]]
        run "$HUTCH" show "$id"
        [[ "$output" == *"tool.sh  (mode 0644 -> 0777)"* ]]
        run sh -c "umask 022 && '$HUTCH' apply '$id'"
        [ "$status" -eq 0 ]
        [ "$(stat -c %a "$W/tool.sh")" = 755 ]
        [ "$(stat -c %a "$W/d")" = 755 ]
        [ "$(stat -c %a "$W/d/n")" = 744 ]
}

@test "apply --keep-modes installs the job's permission bits, never set-id" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c 'chmod 0777 tool.sh && echo x > n && chmod 6775 n'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run sh -c "umask 022 && '$HUTCH' apply --keep-modes '$id'"
        [ "$status" -eq 0 ]
        [ "$(stat -c %a "$W/tool.sh")" = 777 ]
        [ "$(stat -c %a "$W/n")" = 775 ]
}

ESCAPES='\033]52;c;aGk=\007\033]0;title\007\033[2J\302\235evil\r\b\bsafe\n'

@test "diff, show, logs and ls neutralise escapes on a terminal" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c "printf '$ESCAPES' > f.txt; printf '$ESCAPES'; printf '$ESCAPES' >&2"
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        for verb in "diff $id" "show $id" "logs $id" "logs --stderr $id" "ls"; do
                hex=$(on_tty "$HUTCH" $verb)
                [ -n "$hex" ]
                # the bytes, one per word: no ESC, BEL, BS, U+009D (C2 9D);
                # CR only as the pty's CR LF
                bytes=" $(echo "$hex" | fold -w2 | paste -sd' ') "
                [[ "$bytes" != *" 1b "* ]] || { echo "$verb: ESC reached the terminal" >&2; false; }
                [[ "$bytes" != *" 07 "* ]] || { echo "$verb: BEL reached the terminal" >&2; false; }
                [[ "$bytes" != *" 08 "* ]] || { echo "$verb: BS reached the terminal" >&2; false; }
                [[ "$bytes" != *" c2 9d "* ]] || { echo "$verb: U+009D reached the terminal" >&2; false; }
                [[ "${bytes//0d 0a/crlf}" != *" 0d "* ]] || { echo "$verb: a bare CR reached the terminal" >&2; false; }
        done
        hex=$(on_tty "$HUTCH" diff "$id")
        [[ "$(echo "$hex" | xxd -r -p)" == *"^[]52;c;aGk=^G"* ]]
}

@test "redirected diff output stays exact and applies with patch" {
        run "$HUTCH" run -q --workdir "$W" -- sh -c "printf '$ESCAPES' > f.txt"
        id=$(last_run_id)
        "$HUTCH" diff "$id" > "$BATS_TEST_TMPDIR/x.patch"
        grep -q "$(printf '\033')" "$BATS_TEST_TMPDIR/x.patch"
        cp -r "$W" "$BATS_TEST_TMPDIR/copy"
        (cd "$BATS_TEST_TMPDIR/copy" && patch -s -p1 < "$BATS_TEST_TMPDIR/x.patch")
        cmp "$BATS_TEST_TMPDIR/copy/f.txt" <(printf "$ESCAPES")
}

# A name with newlines printed raw would add lines of the job's choosing
# to the diff a reviewer reads before hutch apply: here a fake hunk that
# "changes" base to base. Text views quote such a name as git does.
FORGED='zz\n@@ -1 +1 @@\n-base\n+base'

# no_forged_lines: $output has none of the lines FORGED would make
no_forged_lines() {
        if grep -nE '^(@@ -1 \+1 @@|[-+]base)$' <<<"$output"; then
                echo "a file name forged the lines above" >&2
                return 1
        fi
}

@test "diff, --stat, show and apply quote a file name with newlines, as git does; the patch still applies" {
        echo base > "$W/README"
        run -0 "$HUTCH" run -q --workdir "$W" -- sh -c "printf 'evil\n' > \"\$(printf '$FORGED')\"; echo x > 'd\\q\"'"
        id=$(last_run_id)
        # the quoted form: one line, backslash and quote escaped too
        quoted='"b/zz\n@@ -1 +1 @@\n-base\n+base"'
        run -0 "$HUTCH" diff "$id"
        echo "$output"
        no_forged_lines
        [[ "$output" == *$'\n'"+++ $quoted"$'\n'* ]]
        [[ "$output" == *'diff --hutch "a/d\\q\"" "b/d\\q\""'* ]]
        run -0 "$HUTCH" diff --stat "$id"
        echo "$output"
        no_forged_lines
        [[ "$output" == *' "zz\n@@ -1 +1 @@\n-base\n+base"'$'\n'* ]]
        run -0 "$HUTCH" show "$id"
        echo "$output"
        no_forged_lines
        [[ "$output" == *' "zz\n@@ -1 +1 @@\n-base\n+base"'* ]]
        # the quoted header is what patch(1) reads: the exact name comes back
        "$HUTCH" diff "$id" > "$BATS_TEST_TMPDIR/x.patch"
        cp -r "$W" "$BATS_TEST_TMPDIR/copy"
        (cd "$BATS_TEST_TMPDIR/copy" && patch -s -p1 < "$BATS_TEST_TMPDIR/x.patch")
        cmp "$BATS_TEST_TMPDIR/copy/$(printf "$FORGED")" <(echo evil)
        cmp "$BATS_TEST_TMPDIR/copy/d\\q\"" <(echo x)
        # a conflict on that name: apply names it quoted too
        printf 'host\n' > "$W/$(printf "$FORGED")"
        run -1 "$HUTCH" apply "$id"
        echo "$output"
        no_forged_lines
        [[ "$output" == *' "zz\n@@ -1 +1 @@\n-base\n+base"'* ]]
}

@test "a profile from an untrusted place cannot widen the sandbox" {
        P="$BATS_TEST_TMPDIR/p.ini"
        for body in "[network]\nmode = host" "[filesystem]\nro = /etc" "[filesystem]\nmask =" \
                "[filesystem]\nsystem_dirs = /usr /root" "[seccomp]\nallow = ptrace" \
                "[seccomp]\nallow_ptrace = yes" "[seccomp]\ndefault_action = log" \
                "[filesystem]\nroot = /usr"; do
                printf "# untrusted\n$body\n" > "$P"
                run "$HUTCH" run -p "$P" -- true
                [ "$status" -eq 125 ]
                [[ "$output" == "hutch: profile $P:3: "*": refused from a profile outside the trusted directories"* ]]
        done
        # narrowing is fine: fewer system dirs, more masks
        printf '[filesystem]\nsystem_dirs = /usr /bin /lib /lib64 /etc\nmask += /etc/hosts\n' > "$P"
        run "$HUTCH" run -p "$P" -- true
        [ "$status" -eq 0 ]
        # the operator can vouch for it, or say the same on the command line
        printf '[network]\nmode = host\n' > "$P"
        run "$HUTCH" run --trust-profile -p "$P" -- true
        [ "$status" -eq 0 ]
        printf '[limits]\ntimeout = 5s\n' > "$P"
        run "$HUTCH" run -p "$P" --net host -- true
        [ "$status" -eq 0 ]
}

@test "many open memfds cannot hold up the deadline (the watchdog walks them in slices)" {
        hard=$(ulimit -Hn)
        [ "$hard" != unlimited ] || hard=1048576
        [ "$hard" -ge 4096 ] || skip "hard RLIMIT_NOFILE $hard is too small to make the watchdog slow"
        # 240k memfds in all (what made a 3 s run last 57 s), over
        # processes that create them in parallel before the deadline
        [ "$hard" -le 20000 ] || hard=20000
        per=$((hard - 16))
        procs=$(( 240000 / per + 1 ))
        [ "$procs" -le 64 ] || procs=64
        cat > "$W/memfds.py" <<'PY'
import os, resource, sys, time
procs, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
for _ in range(procs):
    if os.fork() == 0:
        fds = []
        try:
            for _ in range(n):
                fds.append(os.memfd_create("x"))
        except OSError:
            pass
        time.sleep(120)
        os._exit(0)
time.sleep(120)
PY
        run --separate-stderr "$HUTCH" run --json --memory 1G --nofile "$hard" --timeout 3s --workdir "$W" -- \
                python3 memfds.py "$procs" "$per"
        [ "$status" -eq 124 ]
        [ "$(echo "$output" | jq -r .status)" = timeout ]
        # the quadratic walk took 57 s here for 240k memfds; a sample
        # may cost one slice of a tick, so the run ends near its deadline
        [ "$(echo "$output" | jq -r .duration_ms)" -lt 15000 ]
}

# The memory entry names what holds SysV IPC. The two passes differ on
# purpose: as real root hutch writes the job's IPC namespace's limits
# (the namespace's uid 0 is unmapped, so global root owns them); rootless
# nobody may (only that uid 0 could, and the sandbox maps only the job's
# uid), so the report must say shm is not counted.
@test "the memory entry says what holds SysV shm: the IPC namespace's limits as root, nothing rootless" {
        run --separate-stderr env HUTCH_CGROUP=none "$HUTCH" run --json --memory 64M -- \
                cat /proc/sys/kernel/shmall /proc/sys/kernel/shmmax
        [ "$status" -eq 0 ]
        m=$(echo "$output" | jq -c .enforcement.limits.memory)
        [ "$(echo "$m" | jq -r .partial)" = true ]
        if [ "$(id -u)" -eq 0 ]; then
                pages=$(( 64 * 1048576 / $(getconf PAGESIZE) ))
                [ "$(echo "$m" | jq -r .ipc.shmall)" = "$pages" ]
                [ "$(echo "$m" | jq -r .ipc.shmmax)" = 67108864 ]
                [[ "$(echo "$m" | jq -r .reason)" == *"SysV shm is held apart, by the IPC namespace's kernel.shmall"* ]]
                # what the job itself sees
                [ "$(echo "$output" | jq -r .stdout)" = "$(printf '%s\n67108864' "$pages")" ]
        else
                [ "$(echo "$m" | jq -r .ipc)" = null ]
                [[ "$(echo "$m" | jq -r .reason)" == *"not counted: SysV shm segments no process has attached"* ]]
                run "$HUTCH" run --require memory --memory 64M -- true
                [ "$status" -eq 125 ]
        fi
}

@test "as root, SysV shm past --memory is refused inside, and the host's memory stays free" {
        [ "$(id -u)" -eq 0 ] || skip "rootless the IPC namespace's limits cannot be written (the test above checks the report says so)"
        command -v nsenter >/dev/null || skip "nsenter not installed"
        export HUTCH_CGROUP=none
        cp "$PROBE" "$W/probe"
        avail() { awk '/^MemAvailable:/ { printf "%d\n", $2 * 1024 }' /proc/meminfo; }
        before=$(avail)
        # one segment over --memory, then 32 of 64M (2G) held detached
        "$HUTCH" run -q --memory 64M --timeout 60s --workdir "$W" -- sh -c '
                ./probe sysvshm 65M 0
                for i in $(seq 32); do ./probe sysvshm 64M 10 & done
                sleep 2; echo ready; wait' > "$BATS_TEST_TMPDIR/out" 2>&1 &
        hutch=$!
        # up to 50 s, inside the run's own 60: under a parallel make check
        # the 33 probes' page faults can take more than the 20 s this was
        for _ in $(seq 500); do grep -q ready "$BATS_TEST_TMPDIR/out" && break; sleep 0.1; done
        grep -q ready "$BATS_TEST_TMPDIR/out"
        during=$(avail)
        # from the host: the bytes of every segment in the job's namespace
        # the sandbox's init: hutch's child in an IPC namespace of its own
        init=
        for p in $(pgrep -P "$hutch"); do
                [ "$(readlink "/proc/$p/ns/ipc")" = "$(readlink /proc/self/ns/ipc)" ] || init=$p
        done
        [ -n "$init" ]
        held=$(nsenter --target "$init" --ipc awk 'NR > 1 { s += $4 } END { printf "%d\n", s }' /proc/sysvipc/shm)
        echo "init $init held $held before $before during $during"
        cat "$BATS_TEST_TMPDIR/out"
        wait "$hutch"
        [ "$held" -le 67108864 ]
        [ "$held" -gt 0 ]
        [ $(( before - during )) -lt $(( 1024 * 1048576 )) ]
        [ "$(grep -c '^held' "$BATS_TEST_TMPDIR/out")" -eq 1 ]
        [ "$(grep -c '^ENOSPC' "$BATS_TEST_TMPDIR/out")" -eq 31 ]
        [ "$(grep -c '^EINVAL' "$BATS_TEST_TMPDIR/out")" -eq 1 ]
}
