#!/usr/bin/env bats
# privilege.bats - privilege escalation and secrets. setuid and
# file-capability binaries must give nothing, every capability set must
# be empty after exec, nested user namespaces, new keyrings and id-map
# rewrites are refused, and secrets in hutch's own environment stay out of
# the job's reach. Host side: the account files, the host's key list and
# the job's view of its maps are checked after each attempt.

load lib

setup() {
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        M=$(marker)
        WORK=$(mktemp -d /tmp/hutchsec.XXXXXX)
        chmod 0755 "$WORK"
}

teardown() {
        [ -z "${WORK:-}" ] || rm -rf "$WORK"
}

# gVisor's /proc/PID/status has neither CapAmb nor NoNewPrivs: prctl(2)
# answers for them, in a second run of the same options
gvisor_nnp_and_ambient() {
        local out
        out=$("$HUTCH" run -q "$@" -- python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
amb = [c for c in range(64) if libc.prctl(47, 1, c, 0, 0) == 1]
print("nnp", libc.prctl(39, 0, 0, 0, 0), "ambient", len(amb))')
        [ "$out" = "nnp 1 ambient 0" ] || { echo "prctl says: $out" >&2; return 1; }
}

assert_no_caps() {
        local set sets="CapInh CapPrm CapEff CapBnd CapAmb"
        # the landlock tier run by another user than root: the job is that
        # user, whose bounding set only CAP_SETPCAP could shrink; with
        # no_new_privs (checked below) nothing can raise a capability from
        # it (hutch-run(1) ISOLATION)
        if under_landlock && ! am_root; then
                sets="CapInh CapPrm CapEff CapAmb"
        fi
        if under_gvisor; then
                sets="CapInh CapPrm CapEff CapBnd"
                gvisor_nnp_and_ambient "${GVISOR_RUN_OPTS[@]}" || return 1
        fi
        for set in $sets; do
                echo "$output" | grep -qx "$set:	0000000000000000" || {
                        echo "$set not empty: $output" >&2
                        return 1
                }
        done
        under_gvisor || echo "$output" | grep -qx 'NoNewPrivs:	1'
}

# The job's uid as the kernel it runs on sees it: under gvisor always 0
# of gVisor's kernel (rootless runsc maps one id; hutch-run(1)).
job_uid() {
        if under_gvisor; then
                echo 0
        elif under_landlock; then
                # no user namespace: root's job has a uid of its own, from
                # the range (run/landlock-uid.h) this pass reads back;
                # anyone else's is the caller
                if am_root; then echo own; else id -u; fi
        else
                echo "${1:-1000}"
        fi
}

@test "privilege: the job holds no capability in any set, as uid 1000 and as uid 0" {
        GVISOR_RUN_OPTS=()
        sandboxed -- "$PROBE" caps
        [ "$status" -eq 0 ]
        assert_no_caps
        GVISOR_RUN_OPTS=(--uid 0)
        sandboxed --uid 0 -- "$PROBE" caps
        [ "$status" -eq 0 ]
        assert_no_caps
}

@test "privilege: a setuid-root copy of a binary runs without privilege" {
        am_root || skip "making a setuid-root file needs root on the host"
        install -m 4755 -o root -g root "$PROBE" "$WORK/suid-probe"
        GVISOR_RUN_OPTS=(--ro "$WORK")
        sandboxed --ro "$WORK" -- "$WORK/suid-probe" caps
        [ "$status" -eq 0 ]
        # real, effective, saved and fs uid all stay the job's
        local u
        u=$(job_uid)
        if [ "$u" = own ]; then
                u=$(echo "$output" | awk '/^Uid:/ { print $2 }')
                [ "$u" -ge 2130706432 ] && [ "$u" -le 2147352575 ]
        fi
        echo "$output" | grep -qx "Uid:	$u	$u	$u	$u" || {
                echo "$output" >&2
                false
        }
        assert_no_caps
}

@test "privilege: a binary with file capabilities runs without them" {
        landlock_skip "no user namespace: the host honours the file's capabilities, which no_new_privs keeps from being granted, so its exec fails with EPERM instead of running without them"
        command -v setcap >/dev/null || skip "setcap (libcap2-bin) is not installed"
        cp "$PROBE" "$WORK/fcap-probe"
        setcap cap_net_raw,cap_sys_admin,cap_dac_override+eip "$WORK/fcap-probe" 2>/dev/null ||
                skip "cannot set file capabilities here (needs root or CAP_SETFCAP)"
        GVISOR_RUN_OPTS=(--ro "$WORK")
        sandboxed --ro "$WORK" -- "$WORK/fcap-probe" caps
        [ "$status" -eq 0 ]
        assert_no_caps
}

@test "privilege: the host's setuid binaries (su, passwd, chsh, newgrp) change nothing" {
        local acct=(/etc/passwd /etc/shadow /etc/group /etc/gshadow)
        before=$(fingerprint "${acct[@]}")
        sandboxed -- sh -c 'exec 2>/dev/null; for b in su passwd chsh newgrp; do command -v $b; done
                su -c "id -u >/tmp/x" root </dev/null; passwd -d sandbox </dev/null
                chsh -s /bin/sh </dev/null; newgrp root </dev/null; id -u; grep CapEff /proc/self/status'
        [ "$before" = "$(fingerprint "${acct[@]}")" ]
        [ "${output##*$'\n'}" = "CapEff:	0000000000000000" ] || { echo "the job gained a capability: $output" >&2; false; }
        output=${output%$'\n'*}
        if under_gvisor; then
                # uid 0 of gVisor's kernel from the start, without capabilities
                [ "${output##*$'\n'}" = 0 ] || { echo "$output" >&2; false; }
        else
                [ "${output##*$'\n'}" != 0 ] || { echo "the job became uid 0: $output" >&2; false; }
        fi
}

@test "privilege: nested user namespaces are refused" {
        if under_gvisor; then
                # gVisor's kernel makes nested user namespaces itself, in the
                # sentry: root there reaches nothing of the host's (the root
                # stays read-only, no host namespace is made)
                sandboxed -- sh -c "unshare -r sh -c 'id -u; echo x >/etc/$M; echo x >/$M; uname -r' 2>/dev/null; true"
                [ "$status" -eq 0 ]
                [ "${lines[0]}" = 0 ] || { echo "$output" >&2; false; }
                [ ! -e "/etc/$M" ] && [ ! -e "/$M" ]
                gvisor_kernel_check
                return
        fi
        sandboxed -- "$PROBE" syscall unshare-user
        [ "$status" -eq 0 ]
        assert_refused
        sandboxed -- sh -c 'unshare -r id -u 2>/dev/null || echo refused'
        [ "$output" = refused ]
}

@test "privilege: a new session keyring is refused and shows nowhere on the host" {
        sandboxed -- "$PROBE" keyring "hutchkey$M"
        [ "$status" -eq 0 ]
        assert_refused
        ! grep -q "hutchkey$M" /proc/keys 2>/dev/null
}

@test "privilege: the job cannot rewrite its uid_map, gid_map or setgroups" {
        landlock_skip "no user namespace: the job's ids are host ids (root's job is uid 65534) under the host's own maps, which need CAP_SETUID to change"
        if under_gvisor; then
                # the maps the job sees are gVisor's kernel's own (its ids
                # are not host ids; runsc maps one host id under the
                # sentry, out of the job's reach); written once, they stay
                sandboxed -- sh -c 'exec 2>/dev/null
                        echo "0 0 1" >/proc/self/uid_map && echo rewrote-uid; echo "0 0 1" >/proc/self/gid_map && echo rewrote-gid
                        echo allow >/proc/self/setgroups && echo wrote-setgroups
                        cat /proc/self/uid_map /proc/self/gid_map; id -u'
                [ "$status" -eq 0 ]
                lines=($output)
                [ "${lines[*]}" = "0 0 4294967295 0 0 4294967295 0" ] || { echo "$output" >&2; false; }
                return
        fi
        sandboxed -- sh -c 'exec 2>/dev/null
                echo "0 0 4294967295" >/proc/self/uid_map; echo "0 0 4294967295" >/proc/self/gid_map
                echo allow >/proc/self/setgroups; echo "0 0 1" >/proc/1/uid_map
                cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups; id -u'
        [ "$status" -eq 0 ]
        host_uid=$(id -u) host_gid=$(id -g)
        [ "$host_uid" -eq 0 ] && host_uid=65534 host_gid=65534
        lines=($output)
        # one mapped id, onto the host's unprivileged id; setgroups denied
        [ "${lines[*]:0:6}" = "1000 $host_uid 1 1000 $host_gid 1" ] || { echo "$output" >&2; false; }
        [ "${lines[6]}" = deny ]
        [ "${lines[7]}" = 1000 ]
}

@test "privilege: secrets in hutch's environment are not visible to the job" {
        export AWS_SECRET_ACCESS_KEY="aws$M" GITHUB_TOKEN="gh$M" OPENAI_API_KEY="oa$M"
        # $PPID is init inside (and the caller, unconfined)
        sandboxed -- sh -c 'exec 2>/dev/null; env; cat /proc/self/environ /proc/1/environ /proc/*/environ
                cat /proc/$PPID/environ /proc/1/cmdline /proc/1/task/*/environ; true'
        unset AWS_SECRET_ACCESS_KEY GITHUB_TOKEN OPENAI_API_KEY
        [ "$status" -eq 0 ]
        [[ "$output" != *"$M"* ]] || { echo "secret seen: $output" >&2; false; }
        [[ "$output" == *PATH=* ]]      # the job did print its environment
}

@test "privilege: /proc/1/mem and /proc/1/environ of init are unreadable, even as uid 0" {
        export AWS_SECRET_ACCESS_KEY="aws$M"
        sandboxed --uid 0 -- sh -c 'exec 2>/dev/null; for p in 1 $PPID; do cat /proc/$p/environ
                grep -a "aws" /proc/$p/mem; done; true'
        unset AWS_SECRET_ACCESS_KEY
        [[ "$output" != *"$M"* ]]
}
