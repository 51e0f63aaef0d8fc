#!/usr/bin/env bats
# hutch run: exit codes, identity, environment, stdio.

bats_require_minimum_version 1.5.0
load lib

setup() { common_setup; }

@test "a job's exit code passes through" {
        run "$HUTCH" run -- sh -c 'exit 0'
        [ "$status" -eq 0 ]
        run "$HUTCH" run -- sh -c 'exit 3'
        [ "$status" -eq 3 ]
        run "$HUTCH" run -- sh -c 'exit 255'
        [ "$status" -eq 255 ]
}

@test "a job killed by signal N exits 128+N" {
        run "$HUTCH" run -- sh -c 'kill -KILL $$'
        [ "$status" -eq 137 ]
        run "$HUTCH" run -- sh -c 'kill -SEGV $$'
        [ "$status" -eq 139 ]
}

@test "command not found exits 127 and says so" {
        run -127 "$HUTCH" run -- pyhton3-does-not-exist
        [ "$status" -eq 127 ]
        [[ "$output" == *"hutch: command not found: pyhton3-does-not-exist"* ]]
}

@test "a command that cannot be executed exits 126" {
        run "$HUTCH" run -- /etc/hostname
        [ "$status" -eq 126 ]
        [[ "$output" == *"cannot execute /etc/hostname"* ]]
}

@test "a setup failure exits 125 with one line naming step and path" {
        run "$HUTCH" run --ro /nonexistent-hutch-path -- true
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        [ "$output" = "hutch: setup: bind /nonexistent-hutch-path: No such file or directory" ]
}

# The sandbox can fail and exit while hutch's start message is on its way;
# its report must still arrive (it once came out, a few runs in a hundred,
# as "sandbox init exited before the job started").
@test "a setup failure is reported as itself every time" {
        for i in $(seq 40); do
                run "$HUTCH" run -q --ro /nonexistent-hutch-path -- true
                [ "$output" = "hutch: setup: bind /nonexistent-hutch-path: No such file or directory" ] ||
                        { echo "run $i: $output"; return 1; }
        done
}

@test "bad command-line values exit 2 and name the option" {
        run "$HUTCH" run --timeout soon -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"timeout"*"soon"* ]]
        run "$HUTCH" run
        [ "$status" -eq 2 ]
        run "$HUTCH" frobnicate
        [ "$status" -eq 2 ]
}

@test "the job runs as uid/gid 1000 named sandbox, in /workspace, on host sandbox" {
        run "$HUTCH" run -- sh -c 'id -u; id -g; id -un; pwd; hostname; echo $HOME'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 1000 ]
        [ "${lines[1]}" = 1000 ]
        [ "${lines[2]}" = sandbox ]
        [ "${lines[3]}" = /workspace ]
        [ "${lines[4]}" = sandbox ]
        [ "${lines[5]}" = /home/sandbox ]
}

@test "--uid 0 gives a root-looking job that still has no capabilities" {
        run "$HUTCH" run --uid 0 -- sh -c 'id -u; grep CapEff /proc/self/status; cat /etc/shadow'
        [ "${lines[0]}" = 0 ]
        [[ "${lines[1]}" == *"0000000000000000" ]]
        [ "$status" -ne 0 ]
}

@test "the sandbox user is never host root" {
        run "$HUTCH" run --uid 0 -- cat /proc/self/uid_map
        [ "$status" -eq 0 ]
        read -r inside outside count <<<"$output"
        [ "$inside" = 0 ]
        [ "$outside" != 0 ]
        [ "$count" = 1 ]
}

@test "the environment is a fixed set plus -e" {
        HUTCH_SECRET_TOKEN=hunter2 run "$HUTCH" run -e FOO=bar -e LANG=de_DE.UTF-8 -- env
        [ "$status" -eq 0 ]
        [[ "$output" != *hunter2* ]]
        [[ "$output" != *HUTCH_SECRET_TOKEN* ]]
        run sh -c "HUTCH_SECRET_TOKEN=x '$HUTCH' run -e FOO=bar -e LANG=de_DE.UTF-8 -- env | sort"
        [ "$output" = "$(printf '%s\n' FOO=bar HOME=/home/sandbox LANG=de_DE.UTF-8 \
                PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TZ=UTC)" ]
}

@test "stdout and stderr stay separate streams" {
        run sh -c "'$HUTCH' run -- sh -c 'echo out; echo err >&2' 2>/dev/null"
        [ "$output" = out ]
        run sh -c "'$HUTCH' run -- sh -c 'echo out; echo err >&2' 2>&1 >/dev/null"
        [ "$output" = err ]
}

@test "stdin passes through" {
        run sh -c "printf 'hello\nworld\n' | '$HUTCH' run -- sh -c 'wc -l'"
        [ "$status" -eq 0 ]
        [ "$output" = 2 ]
}

@test "only fds 0-2 are open in the job" {
        run "$HUTCH" run -- sh -c 'ls /proc/self/fd'
        [ "$status" -eq 0 ]
        # 0 1 2 and the fd ls itself uses to read the directory
        [ "$(echo "$output" | tr '\n' ' ')" = "0 1 2 3 " ]
}

@test "a large output passes through intact" {
        run sh -c "'$HUTCH' run -- sh -c 'head -c 20000000 /dev/zero' | wc -c"
        [ "$output" = 20000000 ]
}

# The relay batches big streams (it sleeps up to 2 ms after a large
# round); a line written after a burst must still arrive while the job
# is still running, not when it ends.
@test "output passes through live, also right after a burst" {
        fifo="$BATS_TEST_TMPDIR/out"
        mkfifo "$fifo"
        "$HUTCH" run -q -- sh -c 'head -c 300000 /dev/zero | tr "\000" x; echo; echo first; sleep 4; echo second' >"$fifo" &
        pid=$!
        exec 7<"$fifo"
        start=$(date +%s%N)
        got=""
        # (grep, not bash's read: read takes a pipe byte by byte, which
        # for a 300 KB line takes seconds under emulation)
        if timeout 10 grep -m 1 -q '^first$' <&7; then
                got=$(( ($(date +%s%N) - start) / 1000000 ))
        fi
        cat <&7 >/dev/null
        exec 7<&-
        wait "$pid"
        echo "first line after ${got:-never} ms" >&2
        [ -n "$got" ] && [ "$got" -lt 3000 ]
}

@test "--tty gives the job a terminal and restores ours" {
        command -v script >/dev/null || skip "script(1) not installed"
        run script -qec "stty -g > $BATS_TEST_TMPDIR/before; '$HUTCH' run -t -- sh -c 'test -t 0 && test -t 1 && echo is-a-tty; tty'; stty -g > $BATS_TEST_TMPDIR/after" /dev/null
        [ "$status" -eq 0 ]
        [[ "$output" == *is-a-tty* ]]
        [[ "$output" == */dev/pts/0* ]]
        cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
}

@test "without --tty the job has no controlling terminal" {
        command -v script >/dev/null || skip "script(1) not installed"
        run script -qec "'$HUTCH' run -- sh -c 'tty; cat /dev/tty'" /dev/null
        [[ "$output" == *"not a tty"* ]]
}

@test "--help and --version work" {
        run "$HUTCH" --version
        [ "$status" -eq 0 ]
        [[ "$output" == "hutch "* ]]
        run "$HUTCH" run --help
        [ "$status" -eq 0 ]
        [[ "$output" == *"Usage: hutch run"* ]]
        run "$HUTCH" --help
        [ "$status" -eq 0 ]
        [[ "$output" == *run* ]]
}

@test "hutch's memory does not grow with output: 2 GiB leave its peak RSS under 8 MiB" {
        command -v python3 >/dev/null || skip "python3 not installed"
        # VmHWM is hutch's own high-water mark; sample it until hutch exits
        run python3 -c '
import subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "run", "--", "head", "-c", "2147483648", "/dev/zero"], stdout=subprocess.DEVNULL)
hwm = 0
while p.poll() is None:
    try:
        for line in open("/proc/%d/status" % p.pid):
            if line.startswith("VmHWM:"):
                hwm = max(hwm, int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.02)
print(p.returncode, hwm)' "$HUTCH"
        [ "$status" -eq 0 ]
        read -r code kb <<<"$output"
        [ "$code" -eq 0 ]
        [ "$kb" -gt 0 ]
        [ "$kb" -lt 8192 ]
}

@test "cpu time counts the job's tree: what it waited for, and what outlived it" {
        # (no jq: this runs in the VM too, under a run cgroup's cpu.stat)
        # a child the job waits for
        # The busy child runs until it has used 0.4 s of cpu (40 ticks of
        # /proc/PID/stat's utime + stime), however loaded the machine is.
        burn='sh -c "while :; do :; done" & p=$!; t=0
              while [ "$t" -lt 40 ]; do sleep 0.05; set -- $(cut -d" " -f14,15 /proc/$p/stat); t=$(($1 + $2)); done'
        run "$HUTCH" run --json -- sh -c "$burn"'; kill $p; wait $p; exit 0'
        [ "$status" -eq 0 ]
        [[ "$output" =~ \"cpu_ms\":([0-9]+) ]]
        [ "${BASH_REMATCH[1]}" -ge 300 ]
        # a child left running when the job ends: killed with the sandbox,
        # and its cpu time is in the record too
        run "$HUTCH" run --json -- sh -c "$burn"
        [ "$status" -eq 0 ]
        [[ "$output" =~ \"cpu_ms\":([0-9]+) ]]
        [ "${BASH_REMATCH[1]}" -ge 300 ]
}

@test "hutch returns only when its sandbox is gone, and the record is complete by then" {
        command -v python3 >/dev/null || skip "python3 not installed"
        command -v jq >/dev/null || skip "jq not installed"
        # as a child subreaper, anything of hutch's left running would be
        # re-parented to us: after hutch exits, we must have no child
        run python3 -c '
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:   # PR_SET_CHILD_SUBREAPER
    sys.exit("prctl: %s" % os.strerror(ctypes.get_errno()))
left = 0
for i in range(30):
    p = subprocess.run([sys.argv[1], "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3"],
                       capture_output=True)
    if p.returncode != 3 or p.stdout != b"out\n" or p.stderr != b"err\n":
        sys.exit("run %d: %d %r %r" % (i, p.returncode, p.stdout, p.stderr))
    try:
        os.waitpid(-1, os.WNOHANG)      # a child, running or not
        left += 1
    except ChildProcessError:
        pass
print(left)' "$HUTCH"
        [ "$status" -eq 0 ]
        [ "$output" = 0 ]
        run "$HUTCH" ls --json --limit 30
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -s '[.[] | select(.status == "failed" and .exit_code == 3 and
                                                  .stdout_bytes == 4 and .stderr_bytes == 4)] | length')" = 30 ]
}
