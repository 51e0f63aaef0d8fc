#!/bin/sh
# The machine hutch's systemd user manager fallback is meant for, checked
# from inside: uid 1000 in a scope under user-1000.slice that root owns
# and did not delegate (as an ssh login's session-N.scope), a running
# user manager reachable on $XDG_RUNTIME_DIR/systemd/private, and that
# manager able to move us into a delegated scope of its own, which needs
# PID 1 (AttachProcessesToUnit over the system bus) since uid 1000
# cannot write the cgroup.procs of the common ancestor user-1000.slice.
. /tests/lib.sh

CG=/sys/fs/cgroup

check "running as uid 1000" test "$(id -u)" = 1000

cg=$(sed -n 's/^0:://p' /proc/self/cgroup)   # the cgroup v2 line
t_diag "own cgroup: $cg (owner uid $(stat -c %u "$CG$cg" 2>/dev/null))"
case $cg in
/user.slice/user-1000.slice/user@1000.service/*) t_fail "own cgroup is not the user manager's ($cg)" ;;
/user.slice/user-1000.slice/*.scope) t_ok "own cgroup is a scope under user-1000.slice" ;;
*) t_fail "own cgroup is a scope under user-1000.slice ($cg)" ;;
esac
check "a logind session of ours (XDG_SESSION_ID=${XDG_SESSION_ID:-}) holds us" \
        test "$cg" = "/user.slice/user-1000.slice/session-${XDG_SESSION_ID:-}.scope"
check "own cgroup is owned by root" test "$(stat -c %u "$CG$cg")" = 0
check "own cgroup.procs is owned by root" test "$(stat -c %u "$CG$cg/cgroup.procs")" = 0
if [ -w "$CG$cg/cgroup.procs" ] || sh -c 'echo $$ >"$1/cgroup.procs"' sh "$CG$cg" 2>/dev/null; then
        t_fail "uid 1000 cannot write its own cgroup.procs"
else
        t_ok "uid 1000 cannot write its own cgroup.procs"
fi
if mkdir "$CG$cg/hutch-probe" 2>/dev/null; then
        rmdir "$CG$cg/hutch-probe"
        t_fail "uid 1000 cannot make a cgroup below its own"
else
        t_ok "uid 1000 cannot make a cgroup below its own"
fi

check "XDG_RUNTIME_DIR is /run/user/1000" test "${XDG_RUNTIME_DIR:-}" = /run/user/1000
check "XDG_RUNTIME_DIR is owned by uid 1000" test "$(stat -c %u "$XDG_RUNTIME_DIR")" = 1000
check "the user manager's private socket \$XDG_RUNTIME_DIR/systemd/private" test -S "$XDG_RUNTIME_DIR/systemd/private"
# dbus-user-session is installed: the user manager listens on the user
# bus socket and starts dbus-daemon on the first connection
check "the user bus socket \$XDG_RUNTIME_DIR/bus" test -S "$XDG_RUNTIME_DIR/bus"
check "DBUS_SESSION_BUS_ADDRESS names it" test "${DBUS_SESSION_BUS_ADDRESS:-}" = "unix:path=$XDG_RUNTIME_DIR/bus"
check "the system bus socket /run/dbus/system_bus_socket" test -S /run/dbus/system_bus_socket
t_diag "environment: $(env | grep -E '^(XDG_|DBUS_|HOME=|PATH=|USER=|LOGNAME=|SHELL=)' | sort | tr '\n' ' ')"
t_diag "logind: $(systemctl is-active systemd-logind.service), our session: $(loginctl show-session "${XDG_SESSION_ID:-}" \
        -p Type -p Class -p Scope 2>&1 | tr '\n' ' ')"
check "the user manager is running (systemctl --user is-system-running)" \
        sh -c 'state=$(systemctl --user is-system-running); echo "$state"; [ "$state" = running ]'

# What the hutch feature asks for over D-Bus, done by systemd-run: a
# transient scope with Delegate=yes holding the caller. The scope must
# be the user manager's and uid 1000's.
out=$(systemd-run --user --scope --quiet -p Delegate=yes sh -c '
        cg=$(sed -n "s/^0:://p" /proc/self/cgroup)
        echo "$cg $(stat -c %u "/sys/fs/cgroup$cg") $(stat -c %u "/sys/fs/cgroup$cg/cgroup.procs")"
        echo "controllers: $(cat "/sys/fs/cgroup$cg/cgroup.controllers")"
        mkdir "/sys/fs/cgroup$cg/sub" && echo $$ >"/sys/fs/cgroup$cg/sub/cgroup.procs" && echo "child cgroup: ok"
' 2>&1)
rc=$?
echo "$out" | sed 's/^/#   /'
read -r scope scope_owner procs_owner <<EOF
$out
EOF
if [ $rc -eq 0 ] && case $scope in /user.slice/user-1000.slice/user@1000.service/*.scope) true ;; *) false ;; esac; then
        t_ok "systemd-run --user --scope -p Delegate=yes moves us under user@1000.service"
else
        t_fail "systemd-run --user --scope -p Delegate=yes moves us under user@1000.service (exit $rc)"
fi
check "that scope's cgroup is owned by uid 1000" test "${scope_owner:-}" = 1000
check "that scope's cgroup.procs is owned by uid 1000" test "${procs_owner:-}" = 1000
check "a cgroup made below that scope takes a process" sh -c 'echo "$1" | grep -qx "child cgroup: ok"' sh "$out"
controllers=$(echo "$out" | sed -n 's/^controllers://p')
for c in memory pids cpu; do
        case "$controllers " in
        *" $c "*) t_ok "the $c controller is available in that scope" ;;
        *) t_fail "the $c controller is available in that scope (controllers:$controllers)" ;;
        esac
done

# hutch dlopens libsystemd.so.0 by name: it must be in a directory of the
# dynamic loader's system search path (there is no ld.so.cache here)
lib=""
for d in $(/lib64/ld-linux-x86-64.so.2 --help 2>/dev/null | sed -n 's/^ *\(\/[^ ]*\) (system search path)$/\1/p'); do
        [ -e "$d/libsystemd.so.0" ] && lib=$d/libsystemd.so.0 && break
done
t_diag "libsystemd: ${lib:-none} -> $(readlink "$lib" 2>/dev/null)"
check "libsystemd.so.0 is in the loader's system search path" test -n "$lib"

check "hutch run -- true" "$HUTCH" run -- true
t_diag "hutch doctor on cgroups: $("$HUTCH" doctor 2>&1 | grep -i cgroup | head -n 3 | tr '\n' ' ')"

t_done
