#!/usr/bin/env bats
# seccomp.bats - the default and strict policies, seen from inside a real
# sandbox: every syscall the default profile denies is tried by the probe
# (tests/probe.c, with arguments that fail differently when the call is
# allowed: ENOENT, EBADF, ENOTTY...), and must answer EPERM, or ENOSYS
# where the policy says so. A few calls that must stay allowed are
# checked too, so a policy that denies everything cannot pass.

load lib

setup() {
        require_sandbox
}

# Under gvisor (HUTCH_SECURITY_RUNTIME=gvisor) hutch's filter is not the
# job's: gVisor's kernel serves every call. A denial then means: answered
# by gVisor's kernel, and refused there or harmless inside it
# (gvisor_denied, lib.bash); what only hutch's policy does is skipped.
denied() {
        if under_gvisor; then
                gvisor_denied "$1"
                return
        fi
        run_probe syscall "$1"
        assert_probe_says EPERM
}

# Whether this kernel serves int 0x80 at all: some hosts (paravirtual
# guests, kernels booted with ia32_emulation=0) fault it before any
# filter runs, and the probe then dies of SIGSEGV outside a sandbox too.
# There the call is unreachable, which is stronger than denied, and the
# check has nothing to test.
host_serves_i386() {
        case $("$PROBE" syscall i386 2>/dev/null) in
        OK|UNSUPPORTED) return 0 ;;   # UNSUPPORTED: the probe skips it itself
        *) return 1 ;;
        esac
}

denied_strict() {
        if under_gvisor; then
                gvisor_denied "$1" strict
                return
        fi
        run_probe_in strict syscall "$1"
        assert_probe_says EPERM
}

@test "seccomp: the job runs with a filter and no_new_privs" {
        if under_gvisor; then
                # runsc's spec sets no_new_privs, and gVisor's kernel, not
                # the host's, serves the job with no capability at all
                run "$HUTCH" run --ro "$PROBE" -- /bin/sh -c '"$0" caps; uname -r' "$PROBE"
                [ "$status" -eq 0 ]
                [[ "$output" == *$'CapEff:\t0000000000000000'* ]]
                [[ "$output" == *$'CapBnd:\t0000000000000000'* ]]
                gvisor_kernel_check
                return
        fi
        run_probe caps
        [ "$status" -eq 0 ]
        [[ "$output" == *$'NoNewPrivs:\t1'* ]]
        [[ "$output" == *$'Seccomp:\t2'* ]]
}

@test "seccomp: mount is denied" { denied mount; }
@test "seccomp: umount2 is denied" { denied umount2; }
@test "seccomp: pivot_root is denied" { denied pivot_root; }
@test "seccomp: chroot is denied" { denied chroot; }
@test "seccomp: move_mount is denied" { denied move_mount; }
@test "seccomp: open_tree is denied" { denied open_tree; }
@test "seccomp: fsopen is denied" { denied fsopen; }
@test "seccomp: fsconfig is denied" { denied fsconfig; }
@test "seccomp: fsmount is denied" { denied fsmount; }
@test "seccomp: fspick is denied" { denied fspick; }
@test "seccomp: mount_setattr is denied" { denied mount_setattr; }
@test "seccomp: unshare(CLONE_NEWUSER) is denied" { denied unshare-user; }
@test "seccomp: unshare(CLONE_NEWNET) is denied" { denied unshare-net; }
@test "seccomp: unshare(CLONE_NEWNS) is denied" { denied unshare-mount; }
@test "seccomp: clone(CLONE_NEWUSER) is denied" { denied clone-newuser; }
@test "seccomp: clone(CLONE_NEWNS) is denied" { denied clone-newns; }

@test "seccomp: clone3 answers ENOSYS so libc falls back to clone" {
        run_probe syscall clone3
        assert_probe_says ENOSYS
}

@test "seccomp: setns is denied" { denied setns; }
@test "seccomp: keyctl is denied" { denied keyctl; }
@test "seccomp: add_key is denied" { denied add_key; }
@test "seccomp: request_key is denied" { denied request_key; }
@test "seccomp: bpf is denied" { denied bpf; }
@test "seccomp: perf_event_open is denied" { denied perf_event_open; }
@test "seccomp: userfaultfd is denied" { denied userfaultfd; }
@test "seccomp: io_uring_setup is denied" { denied io_uring_setup; }
@test "seccomp: open_by_handle_at is denied" { denied open_by_handle_at; }
@test "seccomp: name_to_handle_at is denied" { denied name_to_handle_at; }
@test "seccomp: kexec_load is denied" { denied kexec_load; }
@test "seccomp: kexec_file_load is denied" { denied kexec_file_load; }
@test "seccomp: init_module is denied" { denied init_module; }
@test "seccomp: finit_module is denied" { denied finit_module; }
@test "seccomp: delete_module is denied" { denied delete_module; }
@test "seccomp: reboot is denied" { denied reboot; }
@test "seccomp: swapon is denied" { denied swapon; }
@test "seccomp: swapoff is denied" { denied swapoff; }
@test "seccomp: settimeofday is denied" { denied settimeofday; }
@test "seccomp: clock_settime is denied" { denied clock_settime; }
@test "seccomp: clock_adjtime is denied" { denied clock_adjtime; }
@test "seccomp: acct is denied" { denied acct; }
@test "seccomp: quotactl is denied" { denied quotactl; }
@test "seccomp: syslog is denied" { denied syslog; }
@test "seccomp: ptrace is denied" { denied ptrace; }
@test "seccomp: process_vm_readv is denied" { denied process_vm_readv; }
@test "seccomp: ioctl TIOCSTI on the terminal is denied" { denied tiocsti; }
@test "seccomp: ioctl TIOCSTI on a pipe is denied (not ENOTTY)" { denied tiocsti-pipe; }
@test "seccomp: ioctl TIOCSTI with upper bits set is denied" { denied tiocsti-high; }
@test "seccomp: ioctl TIOCLINUX is denied" { denied tioclinux; }
@test "seccomp: personality(PER_LINUX32) is denied" { denied personality; }
@test "seccomp: personality(ADDR_NO_RANDOMIZE) is denied" { denied personality-noaslr; }
@test "seccomp: modify_ldt is denied" { denied modify_ldt; }
@test "seccomp: iopl is denied" { denied iopl; }
@test "seccomp: ioperm is denied" { denied ioperm; }
@test "seccomp: i386 int 0x80 syscalls are denied" {
        under_gvisor || host_serves_i386 ||
                skip "this kernel faults int 0x80 outside any sandbox too (no i386 syscall entry)"
        denied i386
}
@test "seccomp: x32 syscalls are denied" { denied x32; }

@test "seccomp: syscalls newer than the policy answer ENOSYS" {
        run_probe syscall future
        assert_probe_says ENOSYS
}

# Allowed: a policy that denies everything must not pass this file.
@test "seccomp: getpid is allowed" {
        run_probe syscall getpid
        assert_probe_says OK
}

@test "seccomp: clone without namespace flags is allowed" {
        run_probe syscall clone
        assert_probe_says OK
}

@test "seccomp: unshare(CLONE_FILES) is allowed" {
        run_probe syscall unshare-files
        assert_probe_says OK
}

@test "seccomp: ordinary ioctls are allowed" {
        run_probe syscall fionread
        assert_probe_says OK
}

@test "seccomp: the personality query and the default persona are allowed" {
        gvisor_skip "hutch's policy is not the job's under gVisor, whose kernel answers personality() with EINVAL (the denied personas are refused too)"
        run_probe syscall personality-query
        assert_probe_says OK
        run_probe syscall personality-default
        assert_probe_says OK
}

# strict: the same denials hold under the allow-list, and calls the
# default allows but strict does not list are denied.
@test "seccomp strict: the deny-list still holds" {
        local name
        for name in mount umount2 open_tree fsopen unshare-user clone-newuser setns keyctl \
                    bpf perf_event_open userfaultfd io_uring_setup open_by_handle_at \
                    kexec_load init_module reboot swapon settimeofday acct quotactl syslog \
                    ptrace tiocsti-pipe tiocsti-high tioclinux personality i386 x32; do
                # see host_serves_i386: no i386 entry, nothing to deny
                [ "$name" = i386 ] && ! under_gvisor && ! host_serves_i386 && continue
                denied_strict "$name"
        done
}

@test "seccomp strict: clone3 answers ENOSYS" {
        run_probe_in strict syscall clone3
        assert_probe_says ENOSYS
}

@test "seccomp strict: unlisted calls are denied (unshare without namespaces)" {
        gvisor_skip "strict's allow-list is hutch's filter, which gVisor's kernel replaces; unshare(CLONE_FILES) is harmless there"
        denied_strict unshare-files
}

@test "seccomp strict: ordinary calls are allowed" {
        run_probe_in strict syscall getpid
        assert_probe_says OK
        run_probe_in strict syscall clone
        assert_probe_says OK
        run_probe_in strict syscall fionread
        assert_probe_says OK
}
