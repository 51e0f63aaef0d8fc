# lib.sh - helpers for the VM test scripts (sourced by tests/vm/t/*.sh;
# busybox sh inside the test VM, as uid 1000).
#
# Each script prints TAP result lines without numbers ("ok - desc",
# "not ok - desc", "ok - desc # SKIP why") and "# " diagnostics; the host
# side numbers them and writes the plan. $CG_AREA is the script's own
# delegated cgroup (owned by uid 1000, no processes in it); the script
# itself runs in $CG_AREA/shell, which root owns.

T_FAILED=0
HUTCH=${HUTCH:-/usr/bin/hutch}
PROBE=${PROBE:-/usr/bin/probe}
# hutch's data files, put there by tests/vm/run
export HUTCH_DATADIR=${HUTCH_DATADIR:-/usr/share/hutch}
export HUTCH_PROFILE_PATH=${HUTCH_PROFILE_PATH:-/usr/share/hutch/profiles}

t_ok() { echo "ok - $*"; }
t_fail() {
        echo "not ok - $*"
        T_FAILED=1
}
t_skip() { echo "ok - $1 # SKIP $2"; }
t_diag() { echo "# $*"; }
t_done() { exit $T_FAILED; }

# check DESC CMD...: one test, passing when CMD succeeds. CMD's output
# becomes diagnostics when it fails.
check() {
        _desc=$1
        shift
        if _out=$("$@" 2>&1); then
                t_ok "$_desc"
        else
                t_fail "$_desc"
                [ -n "$_out" ] && echo "$_out" | sed 's/^/#   /'
        fi
}

# Centiseconds since boot, for wall-clock measurements.
now_cs() {
        read -r _up _ </proc/uptime
        echo "${_up%.*}${_up#*.}" | sed 's/^0*//; s/^$/0/'
}

# Value of KEY in a flat-keyed cgroup file (memory.events, cpu.stat, …).
cg_key() {
        if [ -r "$1" ]; then
                awk -v k="$2" '$1 == k { print $2; found=1 } END { if (!found) print 0 }' "$1"
        else
                echo 0
        fi
}

# Enable every controller for the children of $CG_AREA.
cg_enable_area() { echo "+memory +cpu +pids +io" >"$CG_AREA/cgroup.subtree_control"; }

# run_in CGROUP CMD...: run CMD as a process of CGROUP (and wait for it).
run_in() {
        _cg=$1
        shift
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$_cg" "$@"
}

# Remove a cgroup after killing whatever is left in it.
cg_remove() {
        [ -d "$1" ] || return 0
        echo 1 >"$1/cgroup.kill" 2>/dev/null
        for _i in 1 2 3 4 5 6 7 8 9 10; do
                rmdir "$1" 2>/dev/null && return 0
                sleep 0.2
        done
        return 1
}

# in_range VALUE LOW HIGH (integers)
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

# json_get KEY: the first string or number field named KEY in the JSON
# on stdin (good enough for hutch's flat result fields, which come before
# any nested ones; there is no jq in the VM).
json_get() {
        tr -d '\n' | awk -v k="\"$1\"" '{
                i = index($0, k); if (!i) exit
                s = substr($0, i + length(k)); sub(/^[ \t]*:[ \t]*/, "", s)
                if (s ~ /^"/) { s = substr(s, 2); sub(/".*/, "", s) } else sub(/[],} \t].*/, "", s)
                print s }'
}

# hutch_ready: true when `hutch run` works in this VM. The hutch-level tests
# are written against the contract of the finished `hutch run`; until it is
# integrated they skip with the reason, unless VM_REQUIRE_HUTCH=1 (then
# the missing feature is a failure).
hutch_ready() {
        _o=$("$HUTCH" run -- true 2>&1)
        _rc=$?
        [ $_rc -eq 0 ] && return 0
        HUTCH_NOT_READY="hutch run does not work yet (hutch run -- true: exit $_rc: $(echo "$_o" | head -n1))"
        return 1
}
# hutch_skip_all DESC...: report each named test as skipped (or failed).
hutch_skip_all() {
        for _d in "$@"; do
                if [ "${VM_REQUIRE_HUTCH:-0}" = 1 ]; then
                        t_fail "$_d ($HUTCH_NOT_READY)"
                else
                        t_skip "$_d" "$HUTCH_NOT_READY"
                fi
        done
}

# hutch_setup STATE DESC...: the start of a script whose runs get their
# cgroups from $CG_AREA: hutch's store in STATE (HUTCH_STATE_DIR, the
# script's own), the controllers enabled for $CG_AREA's children, and
# HUTCH_CGROUP=$CG_AREA/runs, an empty delegated cgroup for the run
# cgroups. When `hutch run` does not work here, each DESC is reported
# as skipped (hutch_skip_all) and the script ends.
hutch_setup() {
        export HUTCH_STATE_DIR="$1"
        shift
        mkdir -p "$HUTCH_STATE_DIR"
        cg_enable_area
        mkdir "$CG_AREA/runs"
        export HUTCH_CGROUP="$CG_AREA/runs"
        if ! hutch_ready; then
                hutch_skip_all "$@"
                t_done
        fi
}

# The VM's scratch disk (ext2 on virtio-blk, owned by uid 1000) is there.
have_disk() { grep -q ' /mnt/data ' /proc/mounts; }
