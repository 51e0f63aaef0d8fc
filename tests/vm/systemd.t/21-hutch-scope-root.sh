# 21-hutch-scope-root.sh - hutch as root in a system service's cgroup that
# holds other processes (this test's own shell): cgroup v2 gives no
# controllers to children of a cgroup with processes in it, and hutch
# never moves processes it did not start, so it asks the system manager
# for a transient scope instead. Runs as root.
. /tests/lib.sh

export HUTCH_STATE_DIR=/tmp/hutch-state-scope-root
mkdir -p "$HUTCH_STATE_DIR"
unset HUTCH_CGROUP

show_cgroup() { "$HUTCH" show "$1" | sed -n 's/^  cgroup: *//p' | head -n1 | sed 's/ (.*//'; }
show_unit() { "$HUTCH" show "$1" | sed -n 's/^ *in \(hutch-[^ ]*\.scope\), delegated by systemd$/\1/p'; }

# keep a second process in our cgroup for the whole script
sleep 600 &
keeper=$!

out=$("$HUTCH" run --json --memory 64M -- true)
rc=$?
id=$(echo "$out" | json_get id)
cg=$(show_cgroup "$id")
unit=$(show_unit "$id")
if [ $rc -eq 0 ] && [ "$unit" = "hutch-$id.scope" ] &&
   case $cg in */hutch-$id.scope/run-$id) true ;; *) false ;; esac; then
        t_ok "hutch as root: a busy service cgroup -> the system manager's scope hutch-ID.scope"
else
        t_fail "hutch as root: a busy service cgroup -> the system manager's scope hutch-ID.scope"
        t_diag "rc=$rc unit='$unit' cgroup='$cg'"
        "$HUTCH" show "$id" 2>&1 | sed 's/^/#   /'
fi
check "hutch as root: the other process stayed where it was" \
        sh -c '[ "$(sed -n "s/^0:://p" /proc/$0/cgroup)" = "$(sed -n "s/^0:://p" /proc/self/cgroup)" ]' "$keeper"

out=$("$HUTCH" run --json --memory 64M -- dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null)
rc=$?
st=$(echo "$out" | json_get status)
check "hutch as root: memory hog in the scope -> oom, 137" [ $rc -eq 137 -a "$st" = oom ]

kill $keeper 2>/dev/null
t_done
