# 60-ubuntu-landlock.sh - the landlock tier where user namespaces are
# refused as on Ubuntu 24.04: made, but no capability holds in them. The
# VM's init runs this script under the BPF LSM program that does that
# (tests/userns-nocaps.bpf.c; Debian's kernel has the BPF LSM on, and no
# lockdown). On this 6.1 kernel Landlock is ABI 2: no TCP or scope rules,
# which the report must say.
. /tests/lib.sh

HUTCH_STATE_DIR=/tmp/hutch-state-ubuntu-"$(id -u)"
export HUTCH_STATE_DIR
mkdir -p "$HUTCH_STATE_DIR"

if [ ! -e /tests/userns-nocaps.bpf.o ] || [ ! -x /usr/bin/userns-nocaps ]; then
        t_skip "the Ubuntu refusal, reproduced" "the BPF LSM simulator was not built on the host (clang, bpftool, libbpf)"
        t_done
fi
refused() { ! unshare -r true 2>/dev/null; }
check "under the simulator a user namespace gets no capability (unshare -r fails)" refused
if [ "$T_FAILED" = 1 ]; then
        t_skip "the landlock tier on that host" "the simulator did not take hold"
        t_done
fi

out=$("$HUTCH" run -- true 2>&1)
rc=$?
default_fails() { [ "$rc" -eq 125 ] && echo "$out" | grep -q "Operation not permitted" && [ "$(echo "$out" | wc -l)" -eq 1 ]; }
check "the namespace tier fails in one line, at its first mount (EPERM): $out" default_fails

before=$(md5sum /etc/passwd)
out=$("$HUTCH" run --isolation auto -- sh -c 'echo x > /etc/passwd' 2>&1)
rc=$?
passwd_kept() { [ "$rc" -ne 0 ] && [ "$(md5sum /etc/passwd)" = "$before" ] && echo "$out" | grep -q "landlock tier"; }
check "auto: the landlock tier runs, and /etc/passwd stays as it was" passwd_kept

mkdir -p "$HOME/.ssh" && echo "secret-key" >"$HOME/.ssh/id_test" && chmod 755 "$HOME" "$HOME/.ssh" &&
        chmod 644 "$HOME/.ssh/id_test"
out=$("$HUTCH" run --isolation landlock -- cat "$HOME/.ssh/id_test" 2>&1)
ssh_hidden() { ! echo "$out" | grep -q secret-key && echo "$out" | grep -q "Permission denied"; }
check "the caller's ~/.ssh is out of reach" ssh_hidden

out=$("$HUTCH" run --json --isolation landlock -- id -u 2>/dev/null)
report_says() {
        echo "$out" | grep -q '"tier":"landlock"' && echo "$out" | grep -q '"landlock_abi_used":[1-5],' &&
                echo "$out" | grep -q 'signals are not scoped' && echo "$out" | grep -q '"stdout":"1000\\n"'
}
check "the record says landlock, its ABI, what that ABI lacks; the job is the caller's uid" report_says

n=$(( $(date +%s) % 100000 + 200000 ))
"$HUTCH" run --isolation landlock --timeout 1s --grace 200ms -- \
        sh -c "trap '' TERM; (setsid sleep $n.5 &); sleep $n" >/dev/null 2>&1
rc=$?
daemon_gone() { [ "$rc" -eq 124 ] && ! ps | grep -v grep | grep -q "sleep $n"; }
check "--timeout ends a setsid() daemon that ignores SIGTERM" daemon_gone
t_done
