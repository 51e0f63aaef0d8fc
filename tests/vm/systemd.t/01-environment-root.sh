#!/bin/sh
# The root side of the systemd VM: root in the test service's own
# cgroup, which systemd did not delegate, with PID 1 reachable on its
# private socket and on the system bus, able to give us a delegated
# scope of its own.
. /tests/lib.sh

check "running as root" test "$(id -u)" = 0
cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
t_diag "own cgroup: $cg"
check "own cgroup is the test service's" test "$cg" = /system.slice/hutch-vmtest.service
check "the test service is not delegated" \
        sh -c 'd=$(systemctl show -P Delegate hutch-vmtest.service); echo "Delegate=$d"; [ "$d" = no ]'
check "PID 1's private socket /run/systemd/private" test -S /run/systemd/private
check "the system bus socket /run/dbus/system_bus_socket" test -S /run/dbus/system_bus_socket

out=$(systemd-run --scope --quiet -p Delegate=yes sh -c 'sed -n "s/^0:://p" /proc/self/cgroup' 2>&1)
rc=$?
t_diag "systemd-run --scope -p Delegate=yes: $out"
case $out in
/system.slice/*.scope) [ $rc -eq 0 ] && t_ok "systemd-run --scope -p Delegate=yes moves us to a scope of PID 1's" ;;
*) t_fail "systemd-run --scope -p Delegate=yes moves us to a scope of PID 1's (exit $rc)" ;;
esac

check "hutch run -- true (as root)" "$HUTCH" run -- true

t_done
