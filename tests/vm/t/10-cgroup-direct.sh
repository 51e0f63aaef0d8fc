# 10-cgroup-direct.sh - the kernel facts hutch's limits rest on, checked
# straight through cgroupfs as the unprivileged test user: in a
# delegated subtree uid 1000 can enable controllers and set limits, and
# the kernel enforces memory.max (OOM kill counted in memory.events),
# pids.max (forks refused, counted in pids.events), cpu.max (a busy loop
# gets its share), io.max (writes throttled) and memory.high (a
# page-cache-heavy job is reclaimed, not killed).
. /tests/lib.sh

A=$CG_AREA
check "uid $(id -u) enables memory cpu pids io in its delegated $A" cg_enable_area

# ---- memory.max ----
mkdir "$A/mem" && echo 32M >"$A/mem/memory.max" && echo 0 >"$A/mem/memory.swap.max"
run_in "$A/mem" dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null
rc=$?
check "64M buffer under memory.max=32M is killed (status $rc)" [ $rc -eq 137 ]
oom=$(cg_key "$A/mem/memory.events" oom_kill)
check "memory.events counts the OOM kill (oom_kill $oom)" [ "$oom" -ge 1 ]
run_in "$A/mem" dd if=/dev/zero of=/dev/null bs=8M count=4 2>/dev/null
check "an 8M buffer in the same cgroup is fine" [ $? -eq 0 ]
check "memory cgroup removed" cg_remove "$A/mem"

# ---- pids.max ----
mkdir "$A/pids" && echo 8 >"$A/pids/pids.max"
run_in "$A/pids" sh -c 'i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); done; sleep 30' \
        >/dev/null 2>&1 &
sleep 1
cur=$(cat "$A/pids/pids.current")
ev=$(cg_key "$A/pids/pids.events" max)
check "a fork loop under pids.max=8 holds $cur processes" [ "$cur" -le 8 ]
check "pids.events counts refused forks (max $ev)" [ "$ev" -ge 1 ]
echo 1 >"$A/pids/cgroup.kill"
wait
check "cgroup.kill ends the fork loop, cgroup removed" cg_remove "$A/pids"

# ---- cpu.max ----
mkdir "$A/cpu" && echo "50000 100000" >"$A/cpu/cpu.max"
t0=$(now_cs)
run_in "$A/cpu" timeout -s KILL 3 sh -c 'while :; do :; done'
t1=$(now_cs)
wall_ms=$(((t1 - t0) * 10))
use_ms=$(($(cg_key "$A/cpu/cpu.stat" usage_usec) / 1000))
thr=$(cg_key "$A/cpu/cpu.stat" nr_throttled)
pct=$((use_ms * 100 / wall_ms))
check "busy loop under cpu.max 50000 100000 used ${use_ms} ms cpu in ${wall_ms} ms wall (${pct}%)" \
        in_range $pct 35 65
check "cpu.stat nr_throttled $thr" [ "$thr" -gt 0 ]
check "cpu cgroup removed" cg_remove "$A/cpu"

# ---- io.max ----
if have_disk && [ -r /sys/block/vda/dev ]; then
        dev=$(cat /sys/block/vda/dev)
        mkdir "$A/io"
        check "io.max $dev wbps=1048576 accepted" sh -c "echo '$dev wbps=1048576' > $A/io/io.max"
        t0=$(now_cs)
        run_in "$A/io" dd if=/dev/zero of=/mnt/data/io.bin bs=256K count=16 oflag=direct 2>/dev/null
        t1=$(now_cs)
        ms=$(((t1 - t0) * 10))
        wb=$(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); s += $i } } END { print s + 0 }' "$A/io/io.stat")
        check "4M of direct writes at 1 MiB/s take ${ms} ms" [ $ms -ge 2500 ]
        check "io.stat counts them (wbytes $wb)" [ "$wb" -ge 4194304 ]
        rm -f /mnt/data/io.bin
        cg_remove "$A/io"
else
        t_skip "io.max throttles writes" "no scratch disk (virtio-blk) in this VM"
fi

# ---- memory.high with page cache ----
if have_disk; then
        dd if=/dev/zero of=/mnt/data/big bs=1M count=128 2>/dev/null
        mkdir "$A/cache" && echo 48M >"$A/cache/memory.max" && echo 38M >"$A/cache/memory.high" &&
                echo 0 >"$A/cache/memory.swap.max"
        run_in "$A/cache" sh -c 'cat /mnt/data/big > /dev/null && cat /mnt/data/big > /dev/null &&
                dd if=/dev/zero of=/mnt/data/big2 bs=1M count=128 2>/dev/null && sync'
        rc=$?
        oom=$(cg_key "$A/cache/memory.events" oom_kill)
        high=$(cg_key "$A/cache/memory.events" high)
        peak=$(cat "$A/cache/memory.peak")
        check "reading and writing 128M files under memory.max=48M succeeds (status $rc)" [ $rc -eq 0 ]
        check "page cache is reclaimed, nothing OOM-killed (oom_kill $oom, high events $high)" [ "$oom" -eq 0 ]
        check "memory.peak $peak stays under memory.max" [ "$peak" -le $((48 * 1048576)) ]
        rm -f /mnt/data/big /mnt/data/big2
        cg_remove "$A/cache"
else
        t_skip "page cache under memory.high" "no scratch disk (virtio-blk) in this VM"
fi

t_done
