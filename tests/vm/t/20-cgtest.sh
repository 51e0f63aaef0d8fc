# 20-cgtest.sh - the cgroup module itself (src/limits/cgroup-*.c, through the
# tests/vm/cgtest driver) on a real kernel, as uid 1000: a run cgroup
# made with cgroup_run_new(), a child born in it with clone3
# CLONE_INTO_CGROUP, limits enforced and counters read back; and the
# ways cgroup_base_prepare() finds, or refuses, a base.
. /tests/lib.sh

A=$CG_AREA
check "uid $(id -u) enables memory cpu pids io in its delegated $A" cg_enable_area

# 1. HUTCH_CGROUP names an empty delegated cgroup; hutch runs next to it.
mkdir "$A/runs"
t_diag "cgtest limits with HUTCH_CGROUP=$A/runs"
HUTCH_CGROUP=$A/runs cgtest limits
rmdir "$A/runs" 2>/dev/null

# 2. No HUTCH_CGROUP; hutch is alone in a delegated cgroup of its own and
#    must move itself into the hutch-supervisor leaf.
mkdir "$A/own"
t_diag "cgtest own, alone in $A/own"
run_in "$A/own" env -u HUTCH_CGROUP cgtest own
check "the leaf is all that is left in $A/own" \
        sh -c "[ \"\$(ls -d $A/own/*/ | wc -l)\" -eq 1 ] && [ -d $A/own/hutch-supervisor ]"

# 3. Its cgroup holds another process: moving that one is not hutch's
#    business, so it must refuse and say why.
mkdir "$A/busy"
sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 60' "$A/busy" &
sleeper=$!
sleep 0.3
t_diag "cgtest busy, next to pid $sleeper in $A/busy"
run_in "$A/busy" env -u HUTCH_CGROUP cgtest busy
kill $sleeper 2>/dev/null
wait $sleeper 2>/dev/null

# 4. Its cgroup is not delegated (root owns $A/shell).
t_diag "cgtest denied, in root-owned $A/shell"
env -u HUTCH_CGROUP cgtest denied

# 5. HUTCH_CGROUP is delegated too but hutch runs outside it, and the common
#    ancestor is root's: the kernel would refuse the clone3.
t_diag "cgtest outside, HUTCH_CGROUP=${A%/*}/elsewhere"
HUTCH_CGROUP=${A%/*}/elsewhere cgtest outside

t_done
