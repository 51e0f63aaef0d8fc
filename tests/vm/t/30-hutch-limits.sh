# 30-hutch-limits.sh - `hutch run`'s limits and metering end to end on a
# real kernel, as uid 1000 with HUTCH_CGROUP set to a delegated cgroup.
# Written against the contract of the finished `hutch run`:
#   hutch run [--json] --memory 64M --cpus 0.5 --pids N --cpu-time 1s
#           --timeout 3s --disk 16M --workdir DIR -- CMD...
#   hutch show --json ID   with fields status, exit_code, peak_memory_mb,
#                        cpu_ms, duration_ms, enforcement
# Until `hutch run` works these skip with the reason (VM_REQUIRE_HUTCH=1
# turns that into failures).
. /tests/lib.sh

A=$CG_AREA
hutch_setup "/tmp/hutch-state-$(id -u)" \
        "hutch: memory hog -> status oom, exit 137" \
        "hutch: fork bomb contained by --pids, nothing outlives the run" \
        "hutch: --cpus 0.5 busy loop gets about half of wall time" \
        "hutch: --cpu-time 1s -> status cpu_timeout, exit 124" \
        "hutch: disk fill stops at --disk with ENOSPC" \
        "hutch: page-cache-heavy job under --memory is not OOM-killed" \
        "hutch: cpu_ms and peak_memory_mb agree with cpu.stat and memory.peak within 5%"

no_leftovers() { [ -z "$(ls -d "$A"/runs/*/ 2>/dev/null)" ]; }

# ---- memory hog ----
# (dd's one 256M read() is charged inside the kernel: memory.max ends it
# with the OOM killer; hutch sets no memory.high unless asked, so nothing
# throttles the hog first and the verdict comes at once)
t0=$(now_cs)
out=$("$HUTCH" run --json --memory 64M -- dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null)
rc=$?
t1=$(now_cs)
id=$(echo "$out" | json_get id)
t_diag "OOM verdict after $(((t1 - t0) * 10)) ms wall (hutch run start to exit), message: $(echo "$out" | json_get message)"
check "hutch: memory hog under --memory 64M exits 137 (got $rc)" [ $rc -eq 137 ]
check "hutch: its result says status oom" [ "$(echo "$out" | json_get status)" = oom ]
check "hutch: the OOM verdict came well before the 30s default timeout ($(((t1 - t0) * 10)) ms)" \
        [ $(((t1 - t0) * 10)) -lt 10000 ]
show=$("$HUTCH" show --json "$id" 2>&1)
check "hutch show --json $id: status oom, exit_code 137" \
        [ "$(echo "$show" | json_get status)" = oom -a "$(echo "$show" | json_get exit_code)" = 137 ]
names_memory() { echo "$show" | tr -d '\n' | grep -q '"memory": *{[^}]*"mechanism": *"cgroup"'; }
check "hutch show: enforcement names the memory cgroup" names_memory
says_cgroup() { echo "$show" | json_get message | grep -q 'cgroup'; }
check "hutch show: the message says the cgroup's OOM killer ended it" says_cgroup
human=$("$HUTCH" show "$id" 2>&1)
shows_cgroup() { echo "$human" | grep -q "^  cgroup: *$A/runs/run-$id (memory.max memory.swap.max memory.oom.group cpu.max pids.max)"; }
check "hutch show: names the run cgroup and the files written" shows_cgroup
check "hutch: the run cgroup is gone" no_leftovers

# the same hog with memory.high set just below memory.max (what an
# explicit memory_high does): throttled first, still oom in the end
# (2.3-12.5 s under TCG, hence the long timeout: this measures, not races)
t0=$(now_cs)
out=$("$HUTCH" run --json --timeout 60s --memory 64M --memory-high 51M -- dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null)
rc=$?
t1=$(now_cs)
t_diag "with --memory-high 51M: exit $rc, status $(echo "$out" | json_get status) after $(((t1 - t0) * 10)) ms wall"
check "hutch: hog under --memory-high 51M --memory 64M still ends as oom (exit $rc)" [ $rc -eq 137 ]

# --require: every named limit is held by the cgroup here
out=$("$HUTCH" run --require memory --require cpus --require pids --require memory_high --memory-high 32M -- true 2>&1)
check "hutch: --require memory cpus pids memory_high runs with a delegated cgroup (exit $?: $out)" [ -z "$out" ]

# ---- supervisor killed ----
# The sandbox dies with hutch (PDEATHSIG), but a SIGKILLed hutch cannot
# remove its run cgroup: hutch gc does, when it marks the run orphaned.
"$HUTCH" run -- sleep 100 >/dev/null 2>&1 &
pid=$!
sleep 1
kill -KILL $pid
wait $pid 2>/dev/null
sleep 0.5
left=$(ls -d "$A"/runs/run-*/ 2>/dev/null)
empty_left() { [ -n "$left" ] && [ "$(cg_key "${left%/}/cgroup.events" populated)" = 0 ]; }
check "hutch: a SIGKILLed hutch leaves only its empty run cgroup (${left:-none})" empty_left
out=$("$HUTCH" gc 2>&1)
t_diag "hutch gc: $out"
gc_removed() { echo "$out" | grep -q "^removed cgroup ${left%/} of run" && no_leftovers; }
check "hutch gc marks the run orphaned and removes its cgroup" gc_removed

# ---- fork bomb ----
# (busybox sh gives up when fork fails, bash would keep trying until the
# timeout: either way the bomb must end within the timeout, and the
# refused forks must be on record)
t0=$(now_cs)
out=$("$HUTCH" run --json --pids 32 --timeout 5s -- sh -c 'while :; do sleep 100 & done' 2>/dev/null)
rc=$?
t1=$(now_cs)
msg=$(echo "$out" | json_get message)
t_diag "fork bomb: status $(echo "$out" | json_get status), exit $rc, $(((t1 - t0) * 10)) ms: $msg"
check "hutch: fork bomb under --pids 32 ends by the 5s timeout (exit $rc, $(((t1 - t0) * 10)) ms)" \
        [ $rc -ne 0 -a $(((t1 - t0) * 10)) -lt 15000 ]
pids_noted() { echo "$msg" | grep -q 'pids.max refused'; }
check "hutch: the message records the forks pids.max refused" pids_noted
check "hutch: no 'sleep 100' outlives the run" sh -c '! ps -o args | grep -q "^sleep 100"'
check "hutch: fork bomb's run cgroup is gone" no_leftovers

# ---- --cpus 0.5 ----
out=$("$HUTCH" run --json --cpus 0.5 --timeout 3s -- sh -c 'while :; do :; done' 2>/dev/null)
cpu=$(echo "$out" | json_get cpu_ms)
wall=$(echo "$out" | json_get duration_ms)
pct=$((${cpu:-0} * 100 / ${wall:-1}))
check "hutch: --cpus 0.5 busy loop used $cpu ms cpu in $wall ms wall ($pct%)" in_range $pct 35 65

# ---- --cpu-time ----
out=$("$HUTCH" run --json --cpu-time 1s --timeout 20s -- sh -c 'while :; do :; done' 2>/dev/null)
rc=$?
cpu=$(echo "$out" | json_get cpu_ms)
check "hutch: --cpu-time 1s -> exit 124 (got $rc)" [ $rc -eq 124 ]
check "hutch: status cpu_timeout after $cpu ms cpu" \
        [ "$(echo "$out" | json_get status)" = cpu_timeout -a "${cpu:-0}" -ge 1000 -a "${cpu:-0}" -lt 3000 ]

# ---- disk ----
out=$("$HUTCH" run --disk 16M -- dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1)
rc=$?
enospc() { [ $rc -ne 0 ] && echo "$out" | grep -q 'No space left on device'; }
check "hutch: writing 64M under --disk 16M fails with ENOSPC (exit $rc)" enospc
# the scratch is tmpfs: its pages are memory charged to the run cgroup,
# so a disk larger than memory fills up to memory.max and no further
out=$("$HUTCH" run --json --memory 64M --disk 128M -- dd if=/dev/zero of=/tmp/fill bs=1M count=96 2>/dev/null)
rc=$?
check "hutch: 96M written to scratch under --memory 64M --disk 128M counts as memory: oom (exit $rc)" \
        [ $rc -eq 137 -a "$(echo "$out" | json_get status)" = oom ]

# ---- page cache under memory.high ----
if have_disk; then
        mkdir -p /mnt/data/pc && dd if=/dev/zero of=/mnt/data/pc/big bs=1M count=160 2>/dev/null
        out=$("$HUTCH" run --json --memory 64M --memory-high 48M --ro /mnt/data/pc:/data -- \
                sh -c 'cat /data/big > /dev/null && cat /data/big > /dev/null' 2>/dev/null)
        rc=$?
        check "hutch: reading a 160M file twice under --memory 64M --memory-high 48M succeeds (status $(echo "$out" | json_get status), exit $rc)" \
                [ $rc -eq 0 ]
        rm -rf /mnt/data/pc
else
        t_skip "hutch: page-cache-heavy job under --memory is not OOM-killed" "no scratch disk"
fi

# ---- io.max ----
# direct writes to the scratch disk (virtio-blk) under wbps=1M: 3 MiB
# cannot finish in much under 2 s; without the limit it takes a blink
if have_disk && [ -r /sys/block/vda/dev ]; then
        dev=$(cat /sys/block/vda/dev)
        mkdir -p /mnt/data/io
        io_run() {
                _t0=$(now_cs)
                out=$("$HUTCH" run --json --rw /mnt/data/io:/data "$@" -- \
                        dd if=/dev/zero of=/data/x bs=256K count=12 oflag=direct 2>/dev/null)
                rc=$?
                el=$(($(now_cs) - _t0))
        }
        io_run
        free_el=$el
        io_run --io-max "$dev wbps=1M"
        held=$(echo "$out" | tr -d '\n' | grep -q '"io_max": *{[^}]*"mechanism": *"cgroup"' && echo yes)
        check "hutch: --io-max \"$dev wbps=1M\": 3 MiB of direct writes take ${el}0 ms (${free_el}0 ms without), held by io.max" \
                [ $rc -eq 0 -a "$held" = yes -a $el -ge 180 -a $el -gt $((free_el * 2)) ]
        io_run --io-max "/dev/vda wbps=1M"
        check "hutch: --io-max names the disk by path too (${el}0 ms)" [ $rc -eq 0 -a $el -ge 180 ]
        out=$("$HUTCH" run --io-max "/dev/no-such-disk wbps=1M" -- true 2>&1)
        rc=$?
        check "hutch: --io-max with a missing device: exit 125 naming it" \
                sh -c '[ $0 -eq 125 ] && echo "$1" | grep -q "no-such-disk"' "$rc" "$out"
        rm -rf /mnt/data/io
else
        t_skip "hutch: --io-max wbps holds direct writes" "no scratch disk"
fi

# ---- metering vs the kernel's own counters ----
# A fresh HUTCH_CGROUP holding this one run: its cpu.stat and memory.peak
# are the run's, hierarchically, after the run cgroup is gone.
mkdir "$A/meter"
out=$(HUTCH_CGROUP=$A/meter "$HUTCH" run --json --memory 256M -- sh -c \
        'dd if=/dev/zero of=/dev/null bs=48M count=1; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' 2>/dev/null)
cpu=$(echo "$out" | json_get cpu_ms)
mem=$(echo "$out" | json_get peak_memory_mb)
mem=${mem%.*}
kcpu=$(($(cg_key "$A/meter/cpu.stat" usage_usec) / 1000))
kmem=$(($(cat "$A/meter/memory.peak" 2>/dev/null || echo 0) / 1048576))
within5() { d=$(($1 - $2)); [ $d -lt 0 ] && d=$((-d)); [ $((d * 100)) -le $((5 * $2 + 100)) ]; }
check "hutch: cpu_ms $cpu vs cpu.stat $kcpu ms within 5%" within5 "${cpu:-0}" "$kcpu"
check "hutch: peak_memory_mb $mem vs memory.peak $kmem MiB within 5%" within5 "${mem:-0}" "$kmem"
rmdir "$A/meter" "$A/runs" 2>/dev/null

t_done
