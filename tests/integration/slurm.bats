#!/usr/bin/env bats
# slurm.bats - hutch under a real Slurm cluster on this host: munged,
# slurmctld and two slurmd -N nodeN (node1, node2) on 127.0.0.1 with a
# generated slurm.conf, their state, logs and munge key and socket in a
# temporary directory; Slurm's cgroup v1 task plugin where the v1
# hierarchies are mounted (its cgroups removed afterwards). A job array of hutch.request/1 files is fanned
# out across both nodes as an unprivileged user (contrib/slurm), each
# task's run kept in a node-local store, and gathered with export and
# import into one store: every task's run must be there once, with its
# node and labels, and a second gather must change nothing.
#
# Needs root (slurmd launches jobs as the submitting user, so it starts
# as root) and the slurm-wlm and munge packages; skipped otherwise.

load lib

# Seconds the cluster may take to come up, and the array to finish.
CLUSTER_UP_S=30
ARRAY_S=90

daemon_pids() {
        cat "$SLURM_DIR"/pids 2>/dev/null || true
}

stop_cluster() {
        local pid
        if [ -z "${SLURM_DIR:-}" ] || [ ! -d "$SLURM_DIR" ]; then
                return 0
        fi
        for pid in $(daemon_pids); do
                kill -TERM "$pid" 2>/dev/null || true
        done
        for pid in $(daemon_pids); do
                # bounded: a daemon that ignores TERM for 5 s is killed
                for _ in $(seq 50); do
                        kill -0 "$pid" 2>/dev/null || break
                        sleep 0.1
                done
                kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        done
        # the cgroups task/cgroup made, deepest first (only empty ones go)
        local d
        for d in /sys/fs/cgroup/*/slurm_node1 /sys/fs/cgroup/*/slurm_node2; do
                [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        rm -rf "$SLURM_DIR"
}

# start NAME COMMAND...: in the background, logs in the cluster dir,
# never holding bats' own descriptors (it would wait for them)
start() {
        local name=$1
        shift
        "$@" >"$SLURM_DIR/log/$name.out" 2>&1 3>&- 4>&- </dev/null &
        echo $! >>"$SLURM_DIR/pids"
}

fail_setup() {
        local why=$1
        echo "# $why" >&3
        tail -n 20 "$SLURM_DIR"/log/* 2>/dev/null | sed 's/^/# /' >&3
        stop_cluster
        return 1
}

# bats 1.8 cannot skip from setup_file: the reason is exported for
# setup(), which skips each test with it
skip_file() {
        export SLURM_SKIP="$1"
}

setup_file() {
        export SLURM_SKIP=""
        if [ "$(id -u)" -ne 0 ]; then
                skip_file "slurmd must start as root (it launches jobs as the submitting user); this is the unprivileged pass, the root pass runs the cluster"
                return 0
        fi
        local missing="" c
        for c in munged mungekey slurmctld slurmd sbatch squeue sinfo runuser; do
                command -v "$c" >/dev/null || missing="$missing $c"
        done
        if [ -n "$missing" ]; then
                skip_file "slurm-wlm and munge are not installed (missing:$missing)"
                return 0
        fi
        local user=hutch-unpriv
        if ! id "$user" >/dev/null 2>&1; then
                if ! useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"; then
                        skip_file "cannot create the unprivileged user $user"
                        return 0
                fi
        fi

        SLURM_DIR=$(mktemp -d /tmp/hutch-slurm.XXXXXX)
        export SLURM_DIR SLURM_USER=$user
        # the user's clients read slurm.conf and reach the munge socket
        chmod 755 "$SLURM_DIR"
        mkdir -p "$SLURM_DIR"/{log,state,munge,msock,bin,nodes,out,reqs}
        chmod 700 "$SLURM_DIR/munge"
        chmod 755 "$SLURM_DIR/msock"
        cp "$HUTCH" "$SLURM_DIR/bin/hutch"
        cp -R "$TESTS_DIR/../contrib/slurm" "$SLURM_DIR/contrib"
        cp -R "$HUTCH_DATADIR" "$SLURM_DIR/share"
        cp -R "$HUTCH_PROFILE_PATH" "$SLURM_DIR/profiles"
        chmod -R a+rX "$SLURM_DIR/bin" "$SLURM_DIR/contrib" "$SLURM_DIR/share" "$SLURM_DIR/profiles"
        chown "$user" "$SLURM_DIR/nodes" "$SLURM_DIR/out"

        if ! mungekey -c -k "$SLURM_DIR/munge/munge.key" >/dev/null 2>&1; then
                stop_cluster
                skip_file "mungekey cannot make a key here"
                return 0
        fi
        # --force: munged refuses a socket outside its usual directory
        # owned by root otherwise; every path is ours
        start munged munged -F --force --socket="$SLURM_DIR/msock/munge.socket" \
                --key-file="$SLURM_DIR/munge/munge.key" --pid-file="$SLURM_DIR/munge/munged.pid" \
                --log-file="$SLURM_DIR/log/munged.log" --seed-file="$SLURM_DIR/munge/seed"
        for _ in $(seq 50); do
                [ -S "$SLURM_DIR/msock/munge.socket" ] && break
                sleep 0.1
        done
        if [ ! -S "$SLURM_DIR/msock/munge.socket" ]; then
                local why
                why=$(tail -n 3 "$SLURM_DIR/log/munged.out" "$SLURM_DIR/log/munged.log" 2>/dev/null | tr '\n' ' ')
                stop_cluster
                skip_file "munged would not start here: $why"
                return 0
        fi

        # Slurm's cgroup v1 plugins (task/cgroup puts each step in a
        # memory cgroup holding its allocation) where the v1 memory and
        # freezer hierarchies are mounted, as on this hybrid host; else
        # proctrack/linuxproc and task/none, and the cgroup checks below
        # are left out
        SLURM_TASK=none
        if [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/freezer ] &&
           [ -w /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/freezer ]; then
                SLURM_TASK=cgroup
        fi
        export SLURM_TASK
        local p0 p1 p2
        # three distinct free ports: each free_port() is free on its own
        for _ in $(seq 20); do
                p0=$(free_port) p1=$(free_port) p2=$(free_port)
                [ "$p0" != "$p1" ] && [ "$p1" != "$p2" ] && [ "$p0" != "$p2" ] && break
        done
        local proctrack=linuxproc
        [ "$SLURM_TASK" = cgroup ] && proctrack=cgroup
        cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=hutchtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$p0
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/msock/munge.socket
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool-%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd-%n.log
ProctrackType=proctrack/$proctrack
TaskPlugin=task/$SLURM_TASK
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MessageTimeout=10
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p1 CPUs=1 RealMemory=1024 State=UNKNOWN
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p2 CPUs=1 RealMemory=1024 State=UNKNOWN
PartitionName=test Nodes=node1,node2 Default=YES MaxTime=5 State=UP
EOF
        chmod 644 "$SLURM_DIR/slurm.conf"
        # the hierarchy is slurm_NODE below each v1 controller's root;
        # stop_cluster removes what the daemons leave there
        printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\nConstrainRAMSpace=yes\n' \
                >"$SLURM_DIR/cgroup.conf"
        chmod 644 "$SLURM_DIR/cgroup.conf"
        export SLURM_CONF="$SLURM_DIR/slurm.conf"
        start slurmctld slurmctld -D -f "$SLURM_CONF"
        start slurmd-node1 slurmd -D -f "$SLURM_CONF" -N node1
        start slurmd-node2 slurmd -D -f "$SLURM_CONF" -N node2
        local idle=""
        for _ in $(seq $((CLUSTER_UP_S * 10))); do
                idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
                [ "$idle" = 2 ] && break
                sleep 0.1
        done
        [ "$idle" = 2 ] || fail_setup "the cluster did not come up in ${CLUSTER_UP_S}s: $(sinfo -N 2>&1 | tr '\n' ' ')"
}

teardown_file() {
        stop_cluster
}

setup() {
        [ -z "$SLURM_SKIP" ] || skip "$SLURM_SKIP"
        common_setup
}

# as_user COMMAND...: as the unprivileged user, with the cluster's config
as_user() {
        runuser -u "$SLURM_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
                LANG=C.UTF-8 TMPDIR=/tmp SLURM_CONF="$SLURM_CONF" HUTCH="$SLURM_DIR/bin/hutch" \
                HUTCH_DATADIR="$SLURM_DIR/share" HUTCH_PROFILE_PATH="$SLURM_DIR/profiles" \
                HUTCH_NODE_STATE="$SLURM_DIR/nodes" HUTCH_STATE_DIR="$SLURM_DIR/out/central" "$@"
}

@test "slurm: a job array of requests runs on both nodes and gathers into one store" {
        local n=4 i
        for ((i = 0; i < n; i++)); do
                printf '{"schema":"hutch.request/1","argv":["sh","-c","echo request-%d"],"labels":{"req":"%d"},"limits":{"memory_mb":64}}\n' \
                        "$i" "$i" >"$SLURM_DIR/reqs/req-$i.json"
        done
        chmod -R a+rX "$SLURM_DIR/reqs"

        # --mem: each task's allocation is 50 MiB, below the request's 64
        run as_user timeout "$ARRAY_S" "$SLURM_DIR/contrib/hutch-fanout" "$SLURM_DIR/reqs" "$SLURM_DIR/out/run" \
                --mem=50M
        if [ "$status" -ne 0 ]; then
                cat "$SLURM_DIR"/out/run/slurm-*.out 2>/dev/null | sed 's/^/# task: /'
                tail -n 20 "$SLURM_DIR"/log/slurmctld.log | sed 's/^/# ctld: /'
        fi
        [ "$status" -eq 0 ]
        [[ "$output" == *"imported $n runs from stdin (0 already here)"* ]]

        # every task's run, once, with its node, labels and allocation
        run as_user "$SLURM_DIR/bin/hutch" ls --json
        [ "$status" -eq 0 ]
        [ "$(printf '%s\n' "$output" | grep -c '"schema"')" -eq "$n" ]
        printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/ls.jsonl"
        run python3 - "$BATS_TEST_TMPDIR/ls.jsonl" "$n" "$(uname -n)" "$SLURM_TASK" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n, host = int(sys.argv[2]), sys.argv[3]
reqs = sorted(r["labels"]["req"] for r in runs)
assert reqs == [str(i) for i in range(n)], reqs
assert len({r["id"] for r in runs}) == n
tasks = sorted(r["labels"]["slurm.array_task_id"] for r in runs)
assert tasks == [str(i) for i in range(n)], tasks
assert len({r["labels"]["slurm.array_job_id"] for r in runs}) == 1
for r in runs:
    assert r["status"] == "success", r
    assert r["imported"] is True and r["node"] == host, r
    # the request file named by the task is the one that ran
    assert r["labels"]["request"] == "req-%s.json" % r["labels"]["slurm.array_task_id"], r["labels"]
    assert r["labels"]["req"] == r["labels"]["slurm.array_task_id"], r["labels"]
    # the allocation's 50 MiB, not the request's 64
    assert r["limits"]["memory_bytes"] == 50 << 20, r["limits"]
    s = r["enforcement"]["slurm"]
    assert s["capped"] == ["memory"] and s["memory_from"] == "SLURM_MEM_PER_NODE", s
    assert s["node"] == r["labels"]["slurm.node"], s
    # with task/cgroup the task runs in Slurm's cgroup, which hutch names
    if sys.argv[4] == "cgroup":
        assert "/job_%s/" % r["labels"]["slurm.job_id"] in s["cgroup"], s
    else:
        assert s["cgroup"] is None, s
nodes = {r["labels"]["slurm.node"] for r in runs}
assert nodes == {"node1", "node2"}, nodes
EOF
        echo "$output"
        [ "$status" -eq 0 ]

        # the output head and tail came along
        local id
        id=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["id"])' "$BATS_TEST_TMPDIR/ls.jsonl")
        run as_user "$SLURM_DIR/bin/hutch" show --json "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *'"stdout":"request-'* ]]

        # ls --node: the runs of both nodes' stores are here under the host's name
        run as_user "$SLURM_DIR/bin/hutch" ls --node "$(uname -n)" --label slurm.node=node2 --json
        [ "$status" -eq 0 ]
        [ "$(printf '%s\n' "$output" | grep -c '"schema"')" -ge 1 ]

        # a second gather changes nothing; gc never takes them for orphans
        run as_user "$SLURM_DIR/contrib/hutch-gather" "$SLURM_DIR/out/run"
        [ "$status" -eq 0 ]
        [[ "$output" == *"imported 0 runs from stdin ($n already here)"* ]]
        run as_user "$SLURM_DIR/bin/hutch" gc --dry-run
        [ "$status" -eq 0 ]
        run as_user "$SLURM_DIR/bin/hutch" ls --status orphaned --json
        [ "$status" -eq 0 ]
        [ -z "$output" ]

        # no task's job is left on the cluster
        [ -z "$(squeue -h)" ]
}

@test "slurm: srun -N2 hutch run works as from a shell, on both nodes, labelled with its step" {
        run as_user env HUTCH_STATE_DIR="$SLURM_DIR/out/srun" timeout 60 \
                srun -N2 --ntasks-per-node=1 --mem=40M "$SLURM_DIR/bin/hutch" run -q -- sh -c 'echo from-srun'
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(printf '%s\n' "$output" | grep -c '^from-srun$')" -eq 2 ]

        run as_user env HUTCH_STATE_DIR="$SLURM_DIR/out/srun" "$SLURM_DIR/bin/hutch" ls --json
        [ "$status" -eq 0 ]
        printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/srun.jsonl"
        run python3 - "$BATS_TEST_TMPDIR/srun.jsonl" "$SLURM_TASK" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(runs) == 2, runs
assert {r["labels"]["slurm.node"] for r in runs} == {"node1", "node2"}
assert len({r["labels"]["slurm.job_id"] for r in runs}) == 1
for r in runs:
    assert r["status"] == "success" and r["imported"] is False, r
    assert r["labels"]["slurm.step_id"].isdigit(), r["labels"]
    s = r["enforcement"]["slurm"]
    if sys.argv[2] == "cgroup":
        # the step's memory cgroup holds the allocation: hutch read it
        assert "/job_%s/" % r["labels"]["slurm.job_id"] in s["cgroup"], s
        assert s["memory_from"].startswith("memory.limit_in_bytes of /slurm_node"), s
        assert s["memory_bytes"] == 40 << 20 and s["capped"] == ["memory"], s
        assert r["limits"]["memory_bytes"] == 40 << 20, r["limits"]
    else:
        # srun alone passes no memory figure to the step (sbatch does),
        # and task/none makes no cgroup: the profile's limit stays
        assert s["memory_bytes"] is None and s["capped"] == [], s
        assert r["limits"]["memory_bytes"] == 512 << 20, r["limits"]
PY
        echo "$output"
        [ "$status" -eq 0 ]

        # doctor, run by Slurm, says what it found
        run as_user timeout 60 srun -N1 --mem=40M "$SLURM_DIR/bin/hutch" doctor
        echo "$output"
        if [ "$SLURM_TASK" = cgroup ]; then
                [[ "$output" == *"Slurm job step: job "*" on node node"*", cgroup /slurm_node"*"allocation: memory 40 MiB (memory.limit_in_bytes of /slurm_node"* ]]
        else
                [[ "$output" == *"Slurm job step: job "*" on node node"*"allocation: memory unknown, cpus 1 ("* ]]
        fi
}
