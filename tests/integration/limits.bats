#!/usr/bin/env bats
# Limits without cgroups (this is how they hold on a host with no
# delegated cgroup v2): the memory and cpu watchdog, RLIMIT_NPROC,
# RLIMIT_FSIZE. tests/vm/ covers the cgroup v2 mechanisms. HUTCH_CGROUP=none
# pins the fallbacks, also on a host that does delegate a cgroup.

load lib

setup() {
        common_setup
        export HUTCH_CGROUP=none
}

@test "without a cgroup the report names each fallback, and --require refuses the rest" {
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run --json --cpus 0.5 --cpu-time 10s -- true
        [ "$status" -eq 0 ]
        mech() { python3 -c 'import json,sys; l=json.load(sys.stdin)["enforcement"]["limits"]; print(" ".join(l[k]["mechanism"] for k in sys.argv[1:]))' "$@"; }
        [ "$(echo "$output" | mech memory cpu_time pids cpus)" = "watchdog watchdog rlimit not enforced" ]
        run "$HUTCH" run --require pids -- true
        [ "$status" -eq 0 ]
        # the watchdog is partial (SysV shm, fds in flight, kernel memory)
        [ "$("$HUTCH" run --json -- true | jq -r .enforcement.limits.memory.partial)" = true ]
        run "$HUTCH" run --require memory -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"required limit memory cannot be enforced"*"SysV shm"* ]]
        run "$HUTCH" run --require cpus -- true
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"required limit cpus cannot be enforced"*"HUTCH_CGROUP=none"* ]]
}

@test "an unusable HUTCH_CGROUP is a warning, and the fallbacks hold" {
        HUTCH_CGROUP=/nonexistent-hutch-cgroup run "$HUTCH" run -- echo ok
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "hutch: run: HUTCH_CGROUP: HUTCH_CGROUP=/nonexistent-hutch-cgroup is not a cgroup v2 directory; limits fall back to the watchdog and rlimits" ]
        [ "${lines[1]}" = ok ]
}

@test "a memory hog is killed by the watchdog: oom, exit 137" {
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run --memory 64M -- python3 -c 'x = bytearray(400 * 1024 * 1024); print("survived")'
        [ "$status" -eq 137 ]
        [[ "$output" != *survived* ]]
        [[ "$output" == *"memory limit 64M exceeded"*watchdog* ]]
}

@test "memory shared copy-on-write after fork is not counted twice" {
        command -v python3 >/dev/null || skip "python3 not installed"
        # 60M in the parent, 4 children sharing it: RSS sums to 300M, PSS to ~60M
        run "$HUTCH" run --memory 150M -- python3 -c '
import os, time
x = bytearray(60 * 1024 * 1024)
pids = [os.fork() or (time.sleep(1), os._exit(0)) for _ in range(4)]
for p in pids: os.waitpid(p, 0)
print("ok")'
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}

@test "a job under its memory limit is left alone" {
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run --memory 200M -- python3 -c 'x = bytearray(50 * 1024 * 1024); print("ok")'
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}

@test "cpu time is summed over the tree: cpu_timeout, exit 124" {
        run "$HUTCH" run --cpu-time 1s --timeout 20s -- sh -c 'for i in 1 2 3 4; do (while :; do :; done) & done; wait'
        [ "$status" -eq 124 ]
        [[ "$output" == *"cpu time limit 1s exceeded"* ]]
}

@test "cpu time of children their parent waits for is counted once: a job under its budget runs to its end" {
        command -v python3 >/dev/null || skip "python3 not installed"
        # six children of 0.25 s, each waited for: 1.5 s of a 3 s budget,
        # however the watchdog's walks fall between fork, exit and wait
        run "$HUTCH" run --cpu-time 3s --timeout 60s -- python3 -c "$(cat "$BATS_TEST_DIRNAME/cpu-burn.py")" waited 6 0.25
        [ "$status" -eq 0 ]
        [ "$output" = done ]
}

@test "cpu time of children nobody waits for (SIGCHLD ignored) counts too" {
        command -v python3 >/dev/null || skip "python3 not installed"
        # ten children of 0.4 s each, one after another, reaped by the
        # kernel: no parent's cutime ever holds them
        run "$HUTCH" run --cpu-time 2s --timeout 60s -- python3 -c "$(cat "$BATS_TEST_DIRNAME/cpu-burn.py")" unwaited 10 0.4
        echo "$output"
        [ "$status" -eq 124 ]
        [[ "$output" == *"cpu time limit 2s exceeded"* ]]
        [[ "$output" != *done* ]]
}

@test "a fork bomb is contained by the pids limit" {
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run --pids 32 --timeout 20s -- python3 -c '
import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)'
        [ "$status" -eq 0 ]
        read -r word n errno <<<"$output"
        [ "$word" = stopped ]
        # init and python count too
        [ "$n" -le 30 ]
        [ "$errno" -eq 11 ]
}

@test "the pids limit counts this sandbox only, not the host uid's other processes" {
        # 40 processes of ours outside (same host uid when unprivileged)
        for i in $(seq 40); do sleep 10 & done
        run "$HUTCH" run --pids 16 -- sh -c 'sleep 0.1 & sleep 0.1 & wait; echo ok'
        kill $(jobs -p) 2>/dev/null || true
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}

@test "max-file-size stops a file at the limit with SIGXFSZ" {
        run "$HUTCH" run --max-file-size 1M -- sh -c 'head -c 2M /dev/zero > /tmp/big'
        [ "$status" -eq $((128 + 25)) ]
}

# nofile is the hard limit; processes start at 1024 as on a host and may
# raise themselves up to it (Go's os tests open 1200 files that way).
@test "nofile: soft 1024, hard --nofile; the job may raise to the cap, not past it" {
        run "$HUTCH" run -q -- sh -c 'ulimit -Sn; ulimit -Hn; ulimit -Sn 4096 && ulimit -Sn'
        [ "$status" -eq 0 ]
        [ "$output" = "1024"$'\n'"4096"$'\n'"4096" ]
        run "$HUTCH" run -q --nofile 100 -- sh -c 'ulimit -Sn; ulimit -Hn; ulimit -Sn 101 2>/dev/null || echo refused'
        [ "$status" -eq 0 ]
        [ "$output" = "100"$'\n'"100"$'\n'"refused" ]
        # raised to the cap, EMFILE comes at the cap
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run -q --nofile 2000 -- python3 -c '
import errno, os, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (2000, 2000))
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print(e.errno == errno.EMFILE, max(fds))'
        [ "$status" -eq 0 ]
        [ "$output" = "True 1999" ]
}

@test "bad limit values are rejected with the option named" {
        run "$HUTCH" run --memory lots -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"memory"*lots* ]]
        run "$HUTCH" run --pids 1.5 -- true
        [ "$status" -eq 2 ]
}

@test "the job runs on exactly the CPUs hutch was given, whatever the setup used" {
        command -v python3 >/dev/null || skip "python3 not installed"
        [ "$(nproc --all)" -ge 2 ] || skip "one CPU: the setup has nowhere else to go"
        # the setup runs on the CPUs other than the supervisor's; the job
        # must get the whole mask back, not that narrowed one
        cpus() { grep Cpus_allowed_list /proc/self/status; }
        want=$(cpus)
        for i in 1 2 3 4 5; do
                run "$HUTCH" run -- grep Cpus_allowed_list /proc/self/status
                [ "$status" -eq 0 ]
                [ "$output" = "$want" ]
        done
        # a mask of one CPU stays that one CPU
        run python3 -c 'import os, sys; os.sched_setaffinity(0, {1}); os.execvp(sys.argv[1], sys.argv[1:])' \
                "$HUTCH" run -- grep Cpus_allowed_list /proc/self/status
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | awk '{print $2}')" = 1 ]
        # two of them stay both
        run python3 -c 'import os, sys; os.sched_setaffinity(0, {0, 1}); os.execvp(sys.argv[1], sys.argv[1:])' \
                "$HUTCH" run -- grep Cpus_allowed_list /proc/self/status
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | awk '{print $2}')" = 0-1 ]
}
