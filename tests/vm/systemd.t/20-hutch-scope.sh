# 20-hutch-scope.sh - hutch in a login session whose scope root owns (as
# over ssh): no cgroup where it runs is delegated to it, so it asks the
# user manager for a transient scope hutch-ID.scope with Delegate=yes and
# makes the run cgroup below that. Runs as uid 1000.
. /tests/lib.sh

export HUTCH_STATE_DIR=/tmp/hutch-state-scope-$(id -u)
mkdir -p "$HUTCH_STATE_DIR"
unset HUTCH_CGROUP

own_before=$(sed -n 's/^0:://p' /proc/self/cgroup)
manager_cg=$(sed -n 's/^0:://p' /proc/1/cgroup 2>/dev/null)

# the human `hutch show` names the run cgroup and the scope
show_cgroup() { "$HUTCH" show "$1" | sed -n 's/^  cgroup: *//p' | head -n1 | sed 's/ (.*//'; }
show_unit() { "$HUTCH" show "$1" | sed -n 's/^ *in \(hutch-[^ ]*\.scope\), delegated by systemd$/\1/p'; }

# ---- a run gets a cgroup inside its own systemd scope ----
out=$("$HUTCH" run --json --memory 64M --cpus 0.5 --pids 64 -- cat /proc/self/cgroup)
rc=$?
id=$(echo "$out" | json_get id)
cg=$(show_cgroup "$id")
unit=$(show_unit "$id")
if [ $rc -eq 0 ] && [ "$unit" = "hutch-$id.scope" ] &&
   case $cg in */user@1000.service/*/hutch-$id.scope/run-$id) true ;; *) false ;; esac; then
        t_ok "hutch: with no delegated cgroup, the run's cgroup is in the transient scope hutch-ID.scope"
else
        t_fail "hutch: with no delegated cgroup, the run's cgroup is in the transient scope hutch-ID.scope"
        t_diag "rc=$rc unit='$unit' cgroup='$cg'"
        "$HUTCH" show "$id" 2>&1 | sed 's/^/#   /'
fi

# the limits are the cgroup's, not the fallbacks'
e=$("$HUTCH" show --json "$id")
check "hutch: memory, cpus and pids are held by the cgroup in the scope" \
        sh -c 'for k in memory cpus pids; do
                echo "$0" | tr -d "\n" | grep -q "\"$k\": *{[^}]*\"mechanism\": *\"cgroup\"" || { echo "$k not by cgroup"; exit 1; }
        done' "$e"

# ---- the shell was left where it was; hutch moved only itself ----
own_after=$(sed -n 's/^0:://p' /proc/self/cgroup)
check "hutch: the calling shell stays in its own (root-owned) cgroup" [ "$own_before" = "$own_after" ]

# ---- systemd removes the scope once hutch has exited ----
gone=no
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        if [ -z "$(find /sys/fs/cgroup -type d -name "hutch-$id.scope" 2>/dev/null)" ]; then
                gone=yes
                break
        fi
        sleep 0.1
done
check "hutch: the scope and its cgroups are gone after the run" [ $gone = yes ]

# ---- a memory hog is killed by memory.max inside the scope ----
out=$("$HUTCH" run --json --memory 64M -- dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null)
rc=$?
st=$(echo "$out" | json_get status)
msg=$(echo "$out" | json_get message)
if [ $rc -eq 137 ] && [ "$st" = oom ] && case $msg in *cgroup*) true ;; *) false ;; esac; then
        t_ok "hutch: memory hog in a systemd scope -> oom, 137, by the cgroup"
else
        t_fail "hutch: memory hog in a systemd scope -> oom, 137, by the cgroup"
        t_diag "rc=$rc status=$st message=$msg"
fi

# ---- concurrent runs each get their own scope ----
for i in 1 2 3 4; do
        "$HUTCH" run --json -- sleep 0.5 >"/tmp/scope-par.$i" 2>&1 &
done
wait
ok=yes
for i in 1 2 3 4; do
        pid_id=$(json_get id <"/tmp/scope-par.$i")
        u=$(show_unit "$pid_id")
        [ "$u" = "hutch-$pid_id.scope" ] || { ok=no; t_diag "run $i: id='$pid_id' unit='$u'"; sed 's/^/#   /' "/tmp/scope-par.$i"; }
done
check "hutch: 4 concurrent runs each get their own scope" [ $ok = yes ]

# ---- without the private socket: the user bus ----
# (a runtime dir of ours without systemd/private; the session bus named
# by DBUS_SESSION_BUS_ADDRESS still reaches the manager, and the
# requester of a job hears its JobRemoved there too)
rt=/tmp/rt-empty-$$
mkdir -p "$rt" && chmod 0700 "$rt"
bus=${DBUS_SESSION_BUS_ADDRESS:-unix:path=/run/user/1000/bus}
out=$(XDG_RUNTIME_DIR=$rt DBUS_SESSION_BUS_ADDRESS=$bus "$HUTCH" run --json -- true 2>&1)
id=$(echo "$out" | json_get id)
u=$(show_unit "$id")
if [ "$u" = "hutch-$id.scope" ]; then
        t_ok "hutch: without the manager's private socket, the scope comes over the user bus"
else
        t_fail "hutch: without the manager's private socket, the scope comes over the user bus"
        t_diag "unit='$u'"
        echo "$out" | sed 's/^/#   /'
fi

# ---- no manager to ask: the fallbacks, with the reason ----
out=$(env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR=$rt "$HUTCH" run --json --memory 64M -- true 2>&1)
rc=$?
id=$(echo "$out" | json_get id)
c=$("$HUTCH" show "$id" | sed -n 's/^  cgroup: *//p')
if [ $rc -eq 0 ] && [ -z "$(show_unit "$id")" ] &&
   echo "$out" | tr -d '\n' | grep -q '"memory": *{[^}]*"mechanism": *"watchdog"'; then
        t_ok "hutch: no manager socket -> no scope, the watchdog holds memory"
else
        t_fail "hutch: no manager socket -> no scope, the watchdog holds memory"
        t_diag "rc=$rc cgroup='$c'"
fi
rm -rf "$rt"

# ---- doctor says where the cgroup will come from ----
d=$("$HUTCH" doctor 2>&1)
if echo "$d" | grep -q "^OK *cgroup v2 delegation: each run gets a transient scope"; then
        t_ok "hutch doctor: reports the systemd user manager's delegated scopes"
else
        t_fail "hutch doctor: reports the systemd user manager's delegated scopes"
        echo "$d" | grep -i cgroup | sed 's/^/#   /'
fi

# ---- HUTCH_CGROUP=none asks nobody ----
out=$(HUTCH_CGROUP=none "$HUTCH" run --json -- true)
id=$(echo "$out" | json_get id)
u=$(show_unit "$id")
c=$("$HUTCH" show "$id" | sed -n 's/^  cgroup: *//p')
if [ -z "$u" ] && case $c in none*) true ;; *) false ;; esac; then
        t_ok "hutch: HUTCH_CGROUP=none: no scope is asked for"
else
        t_fail "hutch: HUTCH_CGROUP=none: no scope is asked for"
        t_diag "unit='$u' cgroup='$c'"
fi

# ---- what the scope costs (diagnostic, not a timed test) ----
t0=$(now_cs)
for i in 1 2 3 4 5; do "$HUTCH" run -- true; done
t1=$(now_cs)
for i in 1 2 3 4 5; do HUTCH_CGROUP=none "$HUTCH" run -- true; done
t2=$(now_cs)
t_diag "5 runs with a systemd scope: $(( (t1 - t0) * 10 )) ms; without a cgroup: $(( (t2 - t1) * 10 )) ms (TCG emulation)"
t_diag "manager cgroup seen from here: ${manager_cg:-?}; own cgroup: $own_before"

t_done
