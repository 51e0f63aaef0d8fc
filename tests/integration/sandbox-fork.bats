#!/usr/bin/env bats
# `hutch sandbox fork NAME NEW`: NEW starts from a copy of NAME's
# workspace files as they were at the fork; afterwards neither sees the
# other's changes; the original runs on; the copy follows no symlink,
# carries no set-id bit, socket or mount; it is bounded by --disk; it is
# recorded; bad input gets one line.

bats_require_minimum_version 1.5.0
load lib
load sandbox-lib

setup() { common_setup; }

teardown() { stop_sandboxes; }

tree() { echo "$HUTCH_STATE_DIR/sessions/$1/tree"; }

@test "files at the fork are in NEW; later changes in either stay there; the original runs on" {
        start_sandbox s1
        run "$HUTCH" exec s1 -- sh -c 'echo one > f; mkdir -p d/e; echo two > d/e/g; printf x > "$(printf "a\nb")";
                printf y > "-- -rf *"; sleep 3041 >/dev/null 2>&1 & echo ok'
        [ "$status" -eq 0 ]
        run "$HUTCH" sandbox fork s1 n1
        [ "$status" -eq 0 ]
        [ "$output" = n1 ]
        start_sandbox n1
        run "$HUTCH" exec n1 -- sh -c 'cat f d/e/g "$(printf "a\nb")" "./-- -rf *"'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'one\ntwo\nxy')" ]
        # processes are not forked: the original's sleep is only there
        run "$HUTCH" exec n1 -- sh -c 'pgrep -x sleep || echo none'
        [ "$output" = none ]
        run "$HUTCH" exec s1 -- pgrep -x sleep
        [ "$status" -eq 0 ]
        # change both
        "$HUTCH" exec s1 -- sh -c 'echo s1 > f; echo only > s1-only'
        "$HUTCH" exec n1 -- sh -c 'echo n1 > f; rm d/e/g'
        run "$HUTCH" exec s1 -- sh -c 'cat f d/e/g; ls'
        [ "${lines[0]}" = s1 ]
        [ "${lines[1]}" = two ]
        run "$HUTCH" exec n1 -- sh -c 'cat f; ls d/e | wc -l; test -e s1-only && echo leaked || echo apart'
        [ "${lines[0]}" = n1 ]
        [ "${lines[1]}" = 0 ]
        [ "${lines[2]}" = apart ]
}

@test "a fork of a session-backed sandbox: the session's files and the sandbox's changes; options carried" {
        "$HUTCH" run -q --session base -- sh -c 'echo base > b'
        start_sandbox s2 --session base --timeout 37s
        "$HUTCH" exec s2 -- sh -c 'echo change > c'
        run "$HUTCH" sandbox fork s2 n2
        [ "$status" -eq 0 ]
        # the original's session has not changed: the sandbox is still up
        [ ! -e "$(tree base)/c" ]
        [ "$(cat "$(tree n2)/b" "$(tree n2)/c")" = "$(printf 'base\nchange')" ]
        start_sandbox n2
        "$HUTCH" sandbox ls --json | jq -e 'select(.name == "n2") | .args == ["--timeout", "37s", "--session", "n2"]'
        run "$HUTCH" exec n2 -- sh -c 'cat b c'
        [ "$output" = "$(printf 'base\nchange')" ]
        # NEW's workspace is its own session: --session or --workdir is refused
        "$HUTCH" sandbox stop n2
        run "$HUTCH" sandbox start n2 --session base
        [ "$status" -eq 2 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"n2 is a fork"* ]]
}

@test "symlinks stay links, set-id bits go, sockets and mounts are left out, FIFOs are new" {
        echo secret-input > "$BATS_TEST_TMPDIR/in.txt"
        start_sandbox s3 --input "$BATS_TEST_TMPDIR/in.txt:in.txt"
        run "$HUTCH" exec s3 -- sh -c 'cat input/in.txt; ln -s /etc etc-link; ln -s ../../../../../.. up;
                echo x > suid; chmod 6755 suid; mkdir sgid-dir; chmod 2775 sgid-dir; mkfifo fifo;
                python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")"; ls -l suid'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = secret-input ]
        [[ "${lines[1]}" == -rwsr-sr-x* ]]
        run "$HUTCH" sandbox fork s3 n3
        [ "$status" -eq 0 ]
        [[ "$output" == *"1 socket(s) or device node(s), 1 mount point(s)"* ]]
        t=$(tree n3)
        [ -L "$t/etc-link" ] && [ "$(readlink "$t/etc-link")" = /etc ]
        [ -L "$t/up" ] && [ "$(readlink "$t/up")" = ../../../../../.. ]
        [ "$(stat -c %a "$t/suid")" = 755 ]
        [ "$(stat -c %a "$t/sgid-dir")" = 775 ]
        [ -p "$t/fifo" ]
        [ ! -e "$t/sock" ] && [ ! -L "$t/sock" ]
        # the --input bind is the host's file, not the workspace's
        [ ! -e "$t/input/in.txt" ]
        # nothing of /etc came along
        [ "$(find "$t" | wc -l)" -lt 20 ]
        # owned as a session's files are: by the sandbox user's host id
        [ "$(find "$t" -user "$(id -u)" -o -user 65534 | wc -l)" -eq "$(find "$t" | wc -l)" ]
}

@test "the copy is bounded by the sandbox's --disk; a failed fork leaves nothing" {
        "$HUTCH" run -q --session big -- sh -c 'head -c 6000000 /dev/urandom > big'
        start_sandbox s4 --session big --disk 4M
        run "$HUTCH" sandbox fork s4 n4
        [ "$status" -eq 1 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"more than the sandbox's --disk"* ]]
        [ ! -e "$HUTCH_STATE_DIR/sessions/n4" ]
        [ ! -e "$HUTCH_STATE_DIR/sandboxes/n4.fork" ]
        # the original was not left paused
        run "$HUTCH" exec s4 --timeout 10s -- true
        [ "$status" -eq 0 ]
}

@test "a running sandbox is paused while it is copied (needs a run cgroup)" {
        start_sandbox s5
        sid=$(jq -r .id "$HUTCH_STATE_DIR/sandboxes/s5.json")
        cg=$("$HUTCH" show "$sid" --json | jq -r '.enforcement.cgroup.path // empty')
        [ -n "$cg" ] || skip "no run cgroup here, nothing to freeze: $("$HUTCH" show "$sid" --json | jq -r .enforcement.cgroup.reason)"
        # the copy goes by name: a, then 64 MB in m, then z; a writer
        # counts in a, then in z, each write whole (renamed into place)
        "$HUTCH" exec s5 -- sh -c 'head -c 64000000 /dev/zero > m; i=0;
                while :; do i=$((i+1)); echo $i > t; mv t a; echo $i > t; mv t z; done >/dev/null 2>&1 &'
        wait_until "$HUTCH" exec s5 -- test -s z
        run "$HUTCH" sandbox fork s5 n5
        [ "$status" -eq 0 ]
        id=$("$HUTCH" ls --label forked_from=s5 --json | jq -r .id)
        "$HUTCH" show "$id" --json | jq -r .message | grep -q "; paused"
        # one instant: z is a's value or the one before (frozen between
        # the two writes); a copy that ran alongside the writer has a z
        # from the end of the copy, well past a
        a=$(cat "$(tree n5)/a") z=$(cat "$(tree n5)/z")
        echo "a=$a z=$z"
        [ "$a" -eq "$z" ] || [ "$a" -eq $((z + 1)) ]
        # and thawed: the writer goes on
        wait_until "$HUTCH" exec s5 -- sh -c "[ \$(cat a) -gt $a ]"
}

@test "while a fork holds the workspace new execs are answered busy (75); its hang-up frees them" {
        start_sandbox s5h
        # a fork's client, speaking the control socket's wire: it asks
        # for the workspace, then holds it while hutch exec tries
        run python3 - "$HUTCH_STATE_DIR/sandboxes" s5h "$HUTCH" <<'PY'
import os, socket, struct, subprocess, sys
os.chdir(sys.argv[1])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[2] + ".sock")
s.send(b"C" + bytes(15))
msg, anc, _, _ = s.recvmsg(512, socket.CMSG_SPACE(4))
fds = [struct.unpack("i", d[:4])[0] for (lvl, typ, d) in anc if typ == socket.SCM_RIGHTS]
print("lent", msg[:1].decode(), len(fds), sorted(os.listdir(fds[0])) if fds else None)
held = subprocess.run([sys.argv[3], "exec", sys.argv[2], "--", "true"], capture_output=True)
print("held", held.returncode)
s.close()
freed = subprocess.run([sys.argv[3], "exec", sys.argv[2], "--", "true"], capture_output=True)
print("freed", freed.returncode, freed.stderr.decode().strip())
PY
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "lent C 1 ['output']" ]
        [ "${lines[1]}" = "held 75" ]
        [ "${lines[2]}" = "freed 0 " ]
}

@test "without a cgroup, a process writing through the fork: each file whole, or the fork fails, never stuck" {
        start_sandbox s5b
        "$HUTCH" exec s5b -- sh -c 'while :; do head -c 100000 /dev/zero > w; done >/dev/null 2>&1 &'
        wait_until "$HUTCH" exec s5b -- test -s w
        run "$HUTCH" sandbox fork s5b n5b
        if [ "$status" -eq 0 ]; then
                # one moment's version: a prefix of what the writer writes
                size=$(stat -c %s "$(tree n5b)/w")
                [ "$size" -le 100000 ]
                cmp -n "$size" "$(tree n5b)/w" /dev/zero
        else
                [ "$status" -eq 1 ]
                [[ "$output" == *"kept changing"* || "$output" == *"cannot copy"* ]]
                [ ! -e "$HUTCH_STATE_DIR/sessions/n5b" ]
        fi
        # new execs are served again
        run "$HUTCH" exec s5b --timeout 10s -- true
        [ "$status" -eq 0 ]
}

@test "the fork is recorded; a stopped fork can be forked and removed as a session" {
        start_sandbox s6
        "$HUTCH" exec s6 -- sh -c 'echo v1 > v'
        "$HUTCH" sandbox fork s6 n6
        id=$("$HUTCH" ls --sandbox n6 --json | jq -r .id)
        "$HUTCH" show "$id" --json | jq -e '.status == "success" and .argv == ["sandbox", "fork", "s6", "n6"]
                and .labels.forked_from == "s6" and .labels.sandbox == "n6"'
        "$HUTCH" show "$id" --json | jq -r .message | grep -q "forked from running sandbox s6"
        [ "$("$HUTCH" ls --session n6 --json | jq -r .id)" = "$id" ]
        # n6 was never started: it is a stopped fork, and forks again
        run "$HUTCH" sandbox fork n6 n6b
        [ "$status" -eq 0 ]
        [ "$(cat "$(tree n6b)/v")" = v1 ]
        "$HUTCH" ls --label forked_from=n6 --json | jq -e '.argv == ["sandbox", "fork", "n6", "n6b"]'
        # removing its session removes the stopped fork
        "$HUTCH" session rm n6b
        run "$HUTCH" sandbox fork n6b n6c
        [ "$status" -eq 1 ]
        [[ "$output" == *"no running sandbox or stopped fork named n6b"* ]]
}

@test "errors: unknown NAME, existing NEW, bad names, a --workdir sandbox; one line each" {
        start_sandbox s7
        one_line() { [ "${#lines[@]}" -eq 1 ]; }
        run "$HUTCH" sandbox fork nosuch n7
        [ "$status" -eq 1 ] && one_line
        [[ "$output" == *"no running sandbox or stopped fork named nosuch"* ]]
        run "$HUTCH" sandbox fork s7 s7
        [ "$status" -eq 2 ] && one_line
        run "$HUTCH" sandbox fork s7 '../x'
        [ "$status" -eq 2 ] && one_line
        [[ "$output" == *'"../x": not a sandbox name'* ]]
        run "$HUTCH" sandbox fork -x n7
        [ "$status" -eq 2 ] && one_line
        run "$HUTCH" sandbox fork s7
        [ "$status" -eq 2 ] && one_line
        # NEW taken: by a running sandbox, a stopped fork, a session
        start_sandbox busy
        run "$HUTCH" sandbox fork s7 busy
        [ "$status" -eq 1 ] && one_line
        [[ "$output" == *"busy exists already (running)"* ]]
        "$HUTCH" sandbox fork s7 n7 >/dev/null
        run "$HUTCH" sandbox fork s7 n7
        [ "$status" -eq 1 ] && one_line
        [[ "$output" == *"n7 exists already (a stopped fork"* ]]
        "$HUTCH" run -q --session sess7 -- true
        run "$HUTCH" sandbox fork s7 sess7
        [ "$status" -eq 1 ] && one_line
        [[ "$output" == *"a session named sess7 exists already"* ]]
        # a --workdir sandbox's files are the host's: refused
        mkdir "$BATS_TEST_TMPDIR/wd"
        start_sandbox w7 --workdir "$BATS_TEST_TMPDIR/wd"
        run "$HUTCH" sandbox fork w7 n7w
        [ "$status" -eq 1 ] && one_line
        [[ "$output" == *"host --workdir"* ]]
        [ ! -e "$HUTCH_STATE_DIR/sessions/n7w" ]
        # the refusals left the sandboxes serving
        run "$HUTCH" exec w7 -- true
        [ "$status" -eq 0 ]
}
