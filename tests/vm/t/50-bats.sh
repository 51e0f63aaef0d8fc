# 50-bats.sh - the core of the host integration suite (run-basic and
# run-isolation .bats) under bats on the VM's 6.1 kernel, with every run
# in its own cgroup. run-signals.bats stays on the host: its bounds
# (forks done within 1 s, a timeout within 4 s) assume a real CPU, not
# TCG sharing two cores with other work; 40-hutch-smoke.sh checks signals
# and timeouts here with bounds that hold under TCG. tests/vm/run copies bats, bash and
# the suite in when the host has them; the tests that need python3 skip
# themselves (the VM has none).
. /tests/lib.sh

if ! command -v bats >/dev/null || [ ! -f /tests/bats/lib.bash ]; then
        t_skip "integration suite under bats" "bats or bash not on the host that built the VM"
        t_done
fi
if ! hutch_ready; then
        hutch_skip_all "integration suite under bats"
        t_done
fi

A=$CG_AREA
cg_enable_area
mkdir "$A/runs"
# The suite unsets HUTCH_CGROUP for its jobs' sake (common_setup); a
# wrapper sets it again for hutch alone, so the runs get their cgroups.
cat >/tmp/hutch-cg <<EOS
#!/bin/sh
HUTCH_CGROUP=$A/runs exec $HUTCH "\$@"
EOS
chmod +x /tmp/hutch-cg
cd /tests/bats || exit 1
# One known difference, not hutch's: busybox sh runs its own head applet,
# which words a failed write as "I/O error", never "No space left on
# device"; that test is reported as a skip (30-hutch-limits checks ENOSPC).
HUTCH=/tmp/hutch-cg bats --tap run-basic.bats run-isolation.bats 2>&1 |
        grep -E '^(ok|not ok|#)' | sed -e 's/^\(not ok\|ok\) [0-9]* /\1 - bats: /' \
                -e '/^not ok - bats: the disk limit gives ENOSPC/ s/^not ok \(.*\)$/ok \1 # SKIP busybox head words ENOSPC as "I\/O error"/'
check "bats: every run removed its cgroup" [ -z "$(ls -d "$A"/runs/*/ 2>/dev/null)" ]
t_done
