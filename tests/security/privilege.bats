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
        rm -rf "$WORK"
}

assert_no_caps() {
        local set
        for set in CapInh CapPrm CapEff CapBnd CapAmb; do
                echo "$output" | grep -qx "$set:	0000000000000000" || {
                        echo "$set not empty: $output" >&2
                        return 1
                }
        done
        echo "$output" | grep -qx 'NoNewPrivs:	1'
}

@test "privilege: the job holds no capability in any set, as uid 1000 and as uid 0" {
        sandboxed -- "$PROBE" caps
        [ "$status" -eq 0 ]
        assert_no_caps
        sandboxed --uid 0 -- "$PROBE" caps
        [ "$status" -eq 0 ]
        assert_no_caps
}

@test "privilege: a setuid-root copy of a binary runs without privilege" {
        am_root || skip "making a setuid-root file needs root on the host"
        install -m 4755 -o root -g root "$PROBE" "$WORK/suid-probe"
        sandboxed --ro "$WORK" -- "$WORK/suid-probe" caps
        [ "$status" -eq 0 ]
        # real, effective, saved and fs uid all stay the job's
        echo "$output" | grep -qx 'Uid:	1000	1000	1000	1000' || {
                echo "$output" >&2
                false
        }
        assert_no_caps
}

@test "privilege: a binary with file capabilities runs without them" {
        command -v setcap >/dev/null || skip "setcap (libcap2-bin) is not installed"
        cp "$PROBE" "$WORK/fcap-probe"
        setcap cap_net_raw,cap_sys_admin,cap_dac_override+eip "$WORK/fcap-probe" 2>/dev/null ||
                skip "cannot set file capabilities here (needs root or CAP_SETFCAP)"
        sandboxed --ro "$WORK" -- "$WORK/fcap-probe" caps
        [ "$status" -eq 0 ]
        assert_no_caps
}

@test "privilege: the host's setuid binaries (su, passwd, chsh, newgrp) change nothing" {
        local acct=(/etc/passwd /etc/shadow /etc/group /etc/gshadow)
        before=$(fingerprint "${acct[@]}")
        sandboxed -- sh -c 'exec 2>/dev/null; for b in su passwd chsh newgrp; do command -v $b; done
                su -c "id -u >/tmp/x" root </dev/null; passwd -d sandbox </dev/null
                chsh -s /bin/sh </dev/null; newgrp root </dev/null; id -u'
        [ "$before" = "$(fingerprint "${acct[@]}")" ]
        [ "${output##*$'\n'}" != 0 ] || { echo "the job became uid 0: $output" >&2; false; }
}

@test "privilege: nested user namespaces are refused" {
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
