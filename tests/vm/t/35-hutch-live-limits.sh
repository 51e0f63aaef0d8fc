# 35-hutch-live-limits.sh - a live sandbox's limits with a delegated
# cgroup v2 (tests/integration/sandbox-limits.bats covers them without
# one): memory.max (with memory.oom.group) ends the whole sandbox and its
# run and the exec that ran say oom; pids.max refusals are named by the
# exec and by the sandbox's run; cpu.stat holds cpu_time for the whole
# sandbox; nothing, the run cgroup included, outlives it.
. /tests/lib.sh

A=$CG_AREA
hutch_setup "/tmp/hutch-state-live-$(id -u)" \
        "hutch live: memory hog in a live sandbox -> the exec and the sandbox say oom" \
        "hutch live: fork bomb under --pids names pids.max" \
        "hutch live: cpu_time summed in the cgroup stops the sandbox"

no_leftovers() { [ -z "$(ls -d "$A"/runs/*/ 2>/dev/null)" ]; }
# the id of the live sandbox $1 (sandbox ls --json has one line per sandbox)
sandbox_id() { "$HUTCH" sandbox ls --json | grep "\"name\":\"$1\"" | json_get id; }
listed() { "$HUTCH" sandbox ls --json | grep -q "\"name\":\"$1\""; }
# wait up to 10 s for CMD to succeed
wait_for() {
        _i=0
        while [ $_i -lt 100 ]; do
                "$@" && return 0
                sleep 0.1
                _i=$((_i + 1))
        done
        return 1
}
gone() { ! listed "$1"; }

# ---- memory ----
"$HUTCH" sandbox start m --memory 64M >/dev/null
wait_for listed m
id=$(sandbox_id m)
held=$("$HUTCH" sandbox ls --json | grep '"name":"m"' | grep -c '"memory":"cgroup"')
check "hutch live: sandbox ls --json says memory is held by the cgroup" [ "$held" = 1 ]
out=$("$HUTCH" exec m --timeout 60s -- dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1)
rc=$?
t_diag "exec under --memory 64M: exit $rc: $(echo "$out" | tail -n 1)"
check "hutch live: a memory hog exec exits 137 (got $rc)" [ $rc -eq 137 ]
exec_json=$("$HUTCH" ls --sandbox m --json | head -n 1)
check "hutch live: the exec's record says oom" [ "$(echo "$exec_json" | json_get status)" = oom ]
wait_for gone m
check "hutch live: the OOM killer ended the sandbox" gone m
show=$("$HUTCH" show --json "$id" 2>&1)
t_diag "sandbox run: $(echo "$show" | json_get message)"
check "hutch live: the sandbox's run says oom" [ "$(echo "$show" | json_get status)" = oom ]
says_oom() { echo "$show" | json_get message | grep -q "OOM killer"; }
check "hutch live: its message names the OOM killer" says_oom
wait_for no_leftovers
check "hutch live: the sandbox's run cgroup is gone" no_leftovers

# ---- pids ----
"$HUTCH" sandbox start p --pids 32 >/dev/null
wait_for listed p
id=$(sandbox_id p)
out=$("$HUTCH" exec p --timeout 5s -- sh -c 'while :; do sleep 100 & done' 2>&1)
rc=$?
msg=$("$HUTCH" ls --sandbox p --json | head -n 1 | json_get message)
t_diag "fork bomb exec: exit $rc: $msg"
names_pids() { echo "$msg" | grep -q "pids limit 32 reached: pids.max refused"; }
check "hutch live: the fork bomb's exec names pids.max" names_pids
check "hutch live: the sandbox runs on after the fork bomb" listed p
"$HUTCH" sandbox stop p
msg=$("$HUTCH" show --json "$id" | json_get message)
sandbox_names_pids() { echo "$msg" | grep -q "pids.max refused"; }
check "hutch live: the sandbox's run names pids.max at its stop" sandbox_names_pids
check "hutch live: no 'sleep 100' outlives the sandbox" sh -c '! ps -o args | grep -q "^sleep 100"'
wait_for no_leftovers
check "hutch live: the fork bomb sandbox's cgroup is gone" no_leftovers

# ---- cpu_time ----
"$HUTCH" sandbox start c --cpu-time 1s >/dev/null
wait_for listed c
id=$(sandbox_id c)
"$HUTCH" exec c --timeout 60s -- sh -c 'for i in 1 2 3 4; do (while :; do :; done) & done; wait' >/dev/null 2>&1
rc=$?
check "hutch live: cpu_time 1s over four loops: the exec exits 124 (got $rc)" [ $rc -eq 124 ]
wait_for gone c
show=$("$HUTCH" show --json "$id" 2>&1)
t_diag "sandbox run: $(echo "$show" | json_get message)"
check "hutch live: the sandbox's run says cpu_timeout" [ "$(echo "$show" | json_get status)" = cpu_timeout ]
wait_for no_leftovers
check "hutch live: the cpu_time sandbox's cgroup is gone" no_leftovers
rmdir "$A/runs" 2>/dev/null
t_done
