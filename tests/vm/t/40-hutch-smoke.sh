# 40-hutch-smoke.sh - a smoke set of the host integration suite
# (tests/integration/run-basic.bats, run-isolation.bats, limits.bats)
# on the VM's real 6.1 kernel, in busybox sh (the VM has no bash, bats
# or python3): exit codes, isolation, signals, the wall-clock timeout,
# all with hutch's run cgroup in place (HUTCH_CGROUP set).
. /tests/lib.sh

A=$CG_AREA
hutch_setup "/tmp/hutch-state-smoke-$(id -u)" "hutch smoke: exit codes, isolation, signals, timeout"

# rc_is WANT CMD...: CMD exits WANT
rc_is() {
        _want=$1
        shift
        "$@" >/dev/null 2>&1
        _rc=$?
        [ $_rc -eq "$_want" ] || { echo "exit $_rc, want $_want"; return 1; }
}

# ---- doctor ----
out=$("$HUTCH" doctor 2>&1)
doctor_ok() { echo "$out" | grep -q "^OK      cgroup v2 delegation: $A/runs (\$HUTCH_CGROUP), controllers: memory cpu pids"; }
check "hutch doctor: the delegated cgroup and its controllers" doctor_ok
[ $T_FAILED = 0 ] || echo "$out" | sed 's/^/#   /'
out=$(env -u HUTCH_CGROUP "$HUTCH" doctor 2>&1)
doctor_missing() {
        echo "$out" | grep -q "^MISSING cgroup v2 delegation: .*not writable" &&
                echo "$out" | grep -q "fix: .*HUTCH_CGROUP.*systemd-run --user --scope -p Delegate=yes"
}
check "hutch doctor without HUTCH_CGROUP (own cgroup not delegated): why, and how to fix it" doctor_missing
out=$(env -u HUTCH_CGROUP "$HUTCH" run --json -- true 2>/dev/null)
fell_back() { echo "$out" | tr -d '\n' | grep -q '"memory": *{[^}]*"mechanism": *"watchdog"'; }
check "hutch run without a usable cgroup falls back to the watchdog" fell_back
check "and refuses --require cpus with 125" rc_is 125 env -u HUTCH_CGROUP "$HUTCH" run --require cpus -- true

# ---- exit codes ----
check "exit code 0 passes through" rc_is 0 "$HUTCH" run -- sh -c 'exit 0'
check "exit code 3 passes through" rc_is 3 "$HUTCH" run -- sh -c 'exit 3'
check "exit code 255 passes through" rc_is 255 "$HUTCH" run -- sh -c 'exit 255'
check "killed by SIGKILL exits 137 (and is not taken for oom)" rc_is 137 "$HUTCH" run -- sh -c 'kill -KILL $$'
check "killed by SIGSEGV exits 139" rc_is 139 "$HUTCH" run -- sh -c 'kill -SEGV $$'
check "command not found exits 127" rc_is 127 "$HUTCH" run -- no-such-command-hutch
check "not executable exits 126" rc_is 126 "$HUTCH" run -- /etc/hostname
check "setup failure exits 125" rc_is 125 "$HUTCH" run --ro /nonexistent-hutch-path -- true
out=$("$HUTCH" run --json -- sh -c 'kill -KILL $$' 2>/dev/null)
check "a SIGKILLed job is status signaled, not oom ($(echo "$out" | json_get status))" \
        [ "$(echo "$out" | json_get status)" = signaled ]

# ---- isolation ----
check "PID 1 inside is hutch-init" [ "$("$HUTCH" run -- cat /proc/1/comm 2>&1)" = hutch-init ]
n=$("$HUTCH" run -- sh -c 'ls -d /proc/[0-9]* | wc -l' 2>&1)
check "the job sees only the sandbox's processes ($n)" [ "$n" -le 5 ]
check "runs as uid 1000 in /workspace" [ "$("$HUTCH" run -- sh -c 'echo $(id -u) $(pwd)' 2>&1)" = "1000 /workspace" ]
map=$("$HUTCH" run --uid 0 -- cat /proc/self/uid_map 2>&1)
set -- $map
check "the sandbox user maps to host uid $2, never host root" [ "$1" = 0 -a "$2" != 0 -a "$3" = 1 ]
check "writes to /usr fail" rc_is 1 "$HUTCH" run -- sh -c 'echo x > /usr/hutch-write-test'
check "nothing written to /usr on the host" [ ! -e /usr/hutch-write-test ]
check "no capabilities inside" sh -c '"$1" run -- grep -q "CapEff:.*0000000000000000" /proc/self/status' sh "$HUTCH"
nets=$("$HUTCH" run -- sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '" 2>&1)
check "only lo in the network namespace ($nets)" [ "$nets" = lo ]
cg=$("$HUTCH" run -- cat /proc/self/cgroup 2>&1)
check "the job's cgroup namespace is rooted at its run cgroup ($cg)" [ "$cg" = "0::/" ]

# ---- timeout ----
t0=$(now_cs)
rc_is 124 "$HUTCH" run --timeout 1s --grace 500ms -- sh -c 'trap "" TERM; sleep 30'
rc=$?
t1=$(now_cs)
check "--timeout 1s ends a TERM-ignoring job with 124 in $(((t1 - t0) * 10)) ms" \
        [ $rc -eq 0 -a $(((t1 - t0) * 10)) -lt 6000 ]

# ---- signals ----
"$HUTCH" run -- sleep 30 >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM to hutch cancels the run: exit 143 (got $rc)" [ $rc -eq 143 ]
check "no sleep 30 outlives it" sh -c '! ps -o args | grep -q "^sleep 30"'
# refused after the run cgroup was made: it must go too
check "--require of an unset limit refuses with 125" rc_is 125 "$HUTCH" run --require max_file_size -- true
check "every run cgroup is gone" [ -z "$(ls -d "$A"/runs/*/ 2>/dev/null)" ]
rmdir "$A/runs" 2>/dev/null

t_done
