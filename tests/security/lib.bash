# lib.bash - shared helpers for the security bats tests.
#
# The contract with `hutch run` lives here and only here, so a change in
# its options is a one-line fix:
#   - the probe is bound read-only at its host path (--ro) and run there;
#   - a profile is chosen with -p NAME;
#   - exit status 125 means the sandbox could not be set up.
# make check exports HUTCH (the built hutch), PROBE (the built tests/probe)
# and HUTCH_DATADIR (the source tree's share/, where seccomp.ini lives).

: "${HUTCH:?HUTCH must name the hutch binary}"
: "${PROBE:?PROBE must name the tests/probe binary}"

# HUTCH_SECURITY_RUNTIME=gvisor runs the whole suite with every `hutch run`
# under --runtime gvisor (tests/security/gvisor.sh does, in make check):
# $HUTCH becomes a wrapper that adds the option to run, and tests whose
# native check does not apply there say so with gvisor_instead (below).
# Unset or "native": $HUTCH is the binary itself, nothing changes.
HUTCH_RUNTIME=${HUTCH_SECURITY_RUNTIME:-native}
case $HUTCH_RUNTIME in
native) ;;
gvisor)
        if [ -z "${HUTCH_BINARY:-}" ]; then
                export HUTCH_BINARY=$HUTCH
                HUTCH="$BATS_RUN_TMPDIR/hutch-gvisor"
                if [ ! -x "$HUTCH" ]; then
                        printf '#!/bin/sh\nif [ "$1" = run ]; then shift; exec %q run --runtime gvisor "$@"; fi\nexec %q "$@"\n' \
                                "$HUTCH_BINARY" "$HUTCH_BINARY" >"$HUTCH.$$"
                        chmod 755 "$HUTCH.$$"
                        mv -f "$HUTCH.$$" "$HUTCH"
                fi
                export HUTCH
        fi
        ;;
*)
        echo "HUTCH_SECURITY_RUNTIME=$HUTCH_RUNTIME: not a runtime (native, gvisor)" >&2
        return 1
        ;;
esac

# HUTCH_SECURITY_ISOLATION=landlock runs the whole suite with every
# `hutch run` under --isolation landlock (tests/security/landlock.sh does,
# in make check): $HUTCH becomes a wrapper that adds the option to run.
# The shipped strict profile requires the disk limit, which the tier
# holds per file only, so it refuses to run there (landlock.bats checks
# that), and so does its pids limit without a cgroup (RLIMIT_NPROC over
# the whole uid: partial); the wrapper gives `-p strict` a profile that
# extends strict and requires only the timeout, so strict's syscall
# policy is still tried in the tier. Cases the tier cannot hold skip with the reason (landlock_skip,
# below); hutch-run(1) ISOLATION lists the same.
HUTCH_ISOLATION=${HUTCH_SECURITY_ISOLATION:-namespaces}
case $HUTCH_ISOLATION in
namespaces) ;;
landlock)
        if [ -z "${HUTCH_BINARY:-}" ]; then
                export HUTCH_BINARY=$HUTCH
                HUTCH="$BATS_RUN_TMPDIR/hutch-landlock"
                strict="$BATS_RUN_TMPDIR/strict-landlock.ini"
                if [ ! -x "$HUTCH" ]; then
                        printf '%s\n' "extends = strict" \
                                "description = strict without require = disk pids (the landlock tier's tests)" \
                                "[limits]" "require = timeout" >"$strict.$$"
                        mv -f "$strict.$$" "$strict"
                        cat >"$HUTCH.$$" <<WRAPPER
#!/bin/sh
[ "\$1" = run ] || exec $(printf %q "$HUTCH_BINARY") "\$@"
shift
# --uid and --gid are not applied in this tier, and hutch says so on
# stderr (hutch-run(1)): dropped, so what a case reads is the job's
n=\$# prev= drop= job=
for a do
        if [ -z "\$job" ]; then
                [ "\$a" = -- ] && job=1
                [ -n "\$drop" ] && { drop=; prev=\$a; continue; }
                case \$a in --uid|--gid) drop=1; prev=\$a; continue ;; --uid=*|--gid=*) prev=\$a; continue ;; esac
        fi
        [ "\$prev" = -p ] && [ "\$a" = strict ] && a=$(printf %q "$strict")
        set -- "\$@" "\$a"
        prev=\$a
done
shift "\$n"
exec $(printf %q "$HUTCH_BINARY") run --isolation landlock "\$@"
WRAPPER
                        chmod 755 "$HUTCH.$$"
                        mv -f "$HUTCH.$$" "$HUTCH"
                fi
                export HUTCH
        fi
        ;;
*)
        echo "HUTCH_SECURITY_ISOLATION=$HUTCH_ISOLATION: not an isolation tier (namespaces, landlock)" >&2
        return 1
        ;;
esac

# under_landlock: the suite runs in the landlock tier.
under_landlock() {
        [ "$HUTCH_ISOLATION" = landlock ]
}

# landlock_skip REASON: this case checks what only the namespace tier
# gives; in the landlock tier it is skipped with REASON, in the words of
# hutch-run(1) ISOLATION.
landlock_skip() {
        if under_landlock; then
                skip "landlock tier: $1"
        fi
}

# under_gvisor: the suite runs under the gvisor runtime.
under_gvisor() {
        [ "$HUTCH_RUNTIME" = gvisor ]
}

# gvisor_kernel_check: the last line of $output is the kernel release the
# job saw (`uname -r` run after the attack, in the same sandbox); under
# gvisor it must be gVisor's, never the host's: the answer before it came
# from gVisor's kernel, and nothing reached the host's.
gvisor_kernel_check() {
        local seen=${output##*$'\n'}
        if [ -z "$seen" ] || [ "$seen" = "$(uname -r)" ]; then
                echo "the job saw the host's kernel ($seen): not under gVisor; output: $output" >&2
                return 1
        fi
}

# What gVisor's kernel itself implements of the calls hutch's seccomp
# policy denies, and why each is harmless there: the call is served inside
# the sentry, a user-space kernel, and makes no host system call (the
# sentry's own host calls are held by runsc's filters). Any other answer
# under gvisor must be a refusal (gvisor_denied).
declare -gA GVISOR_SERVES=(
        [unshare-user]="a user namespace of gVisor's kernel, nested in the sentry; the host makes none, and the job's caps there reach no host object"
        [clone-newuser]="a user namespace of gVisor's kernel, nested in the sentry; the host makes none"
        [unshare-mount]="a mount namespace of gVisor's kernel; mounting in it still needs capabilities (mount is refused)"
        [clone-newns]="a mount namespace of gVisor's kernel; mounting in it still needs capabilities (mount is refused)"
        [syslog]="reads gVisor's own log buffer, never the host's (gvisor.bats checks dmesg shows gVisor's)"
        [ptrace]="traces a process of gVisor's kernel; no host process is visible to the job (process.bats)"
        [i386]="gVisor's kernel answers int 0x80 itself; the stub process that traps it makes no host call"
        [tiocsti]="the job's fds are gVisor's pipes (-t is refused under gvisor), which answer ENOTTY: no host terminal is reachable"
        [tiocsti-pipe]="gVisor's pipe answers ENOTTY: it is not a terminal, and no host terminal is reachable"
        [tiocsti-high]="gVisor's pipe answers ENOTTY: it is not a terminal, and no host terminal is reachable"
        [tioclinux]="gVisor's pipe answers ENOTTY: there is no host console to reach"
)

# gvisor_denied NAME [PROFILE]: under gvisor, what the native runtime's
# "NAME is denied" protects: the call is answered by gVisor's kernel (not
# the host's), and the answer is a refusal (EPERM, ENOSYS, EACCES,
# EOPNOTSUPP, EINVAL, ENODEV), or the call is one GVISOR_SERVES says gVisor
# implements harmlessly inside the sentry.
gvisor_denied() {
        local name=$1 profile=${2:-}
        run "$HUTCH" run ${profile:+-p "$profile"} --ro "$PROBE" -- /bin/sh -c '"$0" syscall "$1"; uname -r' "$PROBE" "$name"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; return 1; }
        gvisor_kernel_check
        case ${lines[0]} in
        EPERM | ENOSYS | EACCES | EOPNOTSUPP | EINVAL | ENODEV) return 0 ;;
        esac
        if [ -z "${GVISOR_SERVES[$name]:-}" ]; then
                echo "gVisor let $name through (${lines[0]}), and nothing says why that is harmless" >&2
                return 1
        fi
}

# gvisor_skip REASON: this case checks something hutch itself does only
# in the native runtime; under gvisor it is skipped with REASON (which
# says what holds instead, or which test checks that).
gvisor_skip() {
        if under_gvisor; then
                skip "gvisor: $1"
        fi
}

# run_probe ARGS...: run the probe in a default sandbox, via bats' `run`.
run_probe() {
        run "$HUTCH" run --ro "$PROBE" -- "$PROBE" "$@"
}

# run_probe_in PROFILE ARGS...: the same under another profile.
run_probe_in() {
        local profile=$1
        shift
        run "$HUTCH" run -p "$profile" --ro "$PROBE" -- "$PROBE" "$@"
}

# hutch_run_in PROFILE CMD...: run a host command in a sandbox.
hutch_run_in() {
        local profile=$1
        shift
        run "$HUTCH" run -p "$profile" -- "$@"
}

# Skip the whole file when this host cannot build a sandbox at all
# (no user namespaces, say): that is `hutch doctor`'s business, not a
# seccomp failure. Any other failure is left to the tests.
require_sandbox() {
        local out
        # every test records its runs in a store of its own, never in the
        # caller's (whose schema another hutch may have moved on)
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        local rc=0
        out=$("$HUTCH" run -- /bin/true 2>&1) || rc=$?
        if [ "$rc" -eq 125 ]; then
                skip "hutch run cannot set up a sandbox here: ${out}"
        fi
}

# assert_probe_says WORD...: the probe's one line of output is one of WORDs.
assert_probe_says() {
        local want
        if [ "$status" -ne 0 ]; then
                echo "hutch run exited $status; output: $output" >&2
                return 1
        fi
        if [ "$output" = UNSUPPORTED ]; then
                skip "probe: not available on this architecture"
        fi
        for want in "$@"; do
                [ "$output" = "$want" ] && return 0
        done
        echo "expected one of: $*; got: $output" >&2
        return 1
}

# find_tool NAME: the tool's path under the system dirs a sandbox binds
# (/usr, /bin), or skip: a tool in $HOME or a version manager's shims is
# not visible inside the sandbox.
find_tool() {
        local d
        for d in /usr/local/bin /usr/bin /bin; do
                if [ -x "$d/$1" ]; then
                        echo "$d/$1"
                        return 0
                fi
        done
        return 1
}

# ---- helpers for the hostile suites (fs, process, tty, net, privilege,
# resources). Every case attacks from inside and then looks at the host.
#
# Self-test: with HUTCH_SECURITY_SELFTEST=unsandboxed, `sandboxed` runs the
# command directly on the host instead of in a sandbox. Run a suite that
# way (by hand, never in make check) to see that its cases can fail: an
# attack that works on an unconfined host must turn the case red. Cases
# that would harm the host when unconfined (kill -9 -1, guessing pids)
# narrow or skip themselves in that mode, saying so.

# sandboxed [HUTCH-RUN-OPTIONS...] -- CMD...: `hutch run` with the probe bound
# read-only, via bats' `run`.
sandboxed() {
        if [ "${HUTCH_SECURITY_SELFTEST:-}" = unsandboxed ]; then
                while [ $# -gt 0 ] && [ "$1" != -- ]; do
                        shift
                done
                shift
                run "$@"
                return
        fi
        run "$HUTCH" run --ro "$PROBE" "$@"
}

# The raw command line of `sandboxed`, for callers that need a pty, a
# background job or redirections of their own (no `run`).
sandbox_cmd() {
        if [ "${HUTCH_SECURITY_SELFTEST:-}" = unsandboxed ]; then
                while [ $# -gt 0 ] && [ "$1" != -- ]; do
                        shift
                done
                shift
                printf '%q ' "$@"
                return
        fi
        printf '%q ' "$HUTCH" run --ro "$PROBE" "$@"
}

selftest() {
        [ "${HUTCH_SECURITY_SELFTEST:-}" = unsandboxed ]
}

# skip_in_selftest REASON: this attack would hurt the host if unconfined.
skip_in_selftest() {
        if selftest; then
                skip "self-test: $1"
        fi
}

# A name nobody else on the host uses, for markers looked for afterwards.
marker() {
        echo "hutchsec$$x${BATS_TEST_NUMBER}x$RANDOM$RANDOM"
}

# A whole number unique enough to find a process by its command line
# (`sleep 7123451234`), which sleep and the probe both accept.
unique_secs() {
        echo "7${RANDOM}${BATS_TEST_NUMBER}$$"
}

# fingerprint PATH...: what the host holds at PATH (type, mode, owner,
# links, size, mtime, content hash), or "absent". Compare before/after.
fingerprint() {
        local p
        for p in "$@"; do
                if [ -L "$p" ] || [ -e "$p" ]; then
                        stat -c '%n %F %a %u:%g %h %s %Y %i' -- "$p"
                        if [ -f "$p" ] && [ -r "$p" ]; then
                                sha256sum -- "$p"
                        elif [ -d "$p" ] && [ -r "$p" ]; then
                                ls -lan --time-style=+%s -- "$p" | sha256sum
                        fi
                else
                        echo "$p absent"
                fi
        done
}

# Host pids whose command line contains $1 (a marker), one a line.
host_pids_matching() {
        # an empty pattern matches every process: kill_matching "" would
        # SIGKILL everything the caller may signal (as root, the machine)
        [ -n "$1" ] || return 0
        pgrep -f -- "$1" || true
}

# Kill (by pid) what a failed case left behind on the host.
kill_matching() {
        local pid
        for pid in $(host_pids_matching "$1"); do
                kill -9 "$pid" 2>/dev/null || true
        done
}

# Wait up to $2 tenths of a second until no host process matches $1.
wait_gone() {
        local i
        for ((i = 0; i < ${2:-30}; i++)); do
                [ -z "$(host_pids_matching "$1")" ] && return 0
                sleep 0.1
        done
        echo "still running on the host: $(host_pids_matching "$1" | xargs)" >&2
        return 1
}

# assert_refused: the probe's verdict ($output's last line) is not OK.
assert_refused() {
        local last=${output##*$'\n'}
        if [ "$last" = OK ]; then
                echo "the attack succeeded (probe says OK); output: $output" >&2
                return 1
        fi
        if [ -z "$last" ]; then
                echo "no verdict from the probe (status $status)" >&2
                return 1
        fi
}

# Is the test running as root (so host files outside our own dirs are
# writable, and an escape would show)?
am_root() {
        [ "$(id -u)" -eq 0 ]
}
