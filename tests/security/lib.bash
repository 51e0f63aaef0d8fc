# lib.bash - shared helpers for the security bats tests.
#
# The contract with `sbx run` lives here and only here, so a change in
# its options is a one-line fix:
#   - the probe is bound read-only at its host path (--ro) and run there;
#   - a profile is chosen with -p NAME;
#   - exit status 125 means the sandbox could not be set up.
# make check exports SBX (the built sbx), PROBE (the built tests/probe)
# and SBX_DATADIR (the source tree's share/, where seccomp.ini lives).

: "${SBX:?SBX must name the sbx binary}"
: "${PROBE:?PROBE must name the tests/probe binary}"

# run_probe ARGS...: run the probe in a default sandbox, via bats' `run`.
run_probe() {
        run "$SBX" run --ro "$PROBE" -- "$PROBE" "$@"
}

# run_probe_in PROFILE ARGS...: the same under another profile.
run_probe_in() {
        local profile=$1
        shift
        run "$SBX" run -p "$profile" --ro "$PROBE" -- "$PROBE" "$@"
}

# sbx_run_in PROFILE CMD...: run a host command in a sandbox.
sbx_run_in() {
        local profile=$1
        shift
        run "$SBX" run -p "$profile" -- "$@"
}

# Skip the whole file when this host cannot build a sandbox at all
# (no user namespaces, say): that is `sbx doctor`'s business, not a
# seccomp failure. Any other failure is left to the tests.
require_sandbox() {
        local out
        if ! out=$("$SBX" run -- /bin/true 2>&1); then
                if [ "$?" -eq 125 ]; then
                        skip "sbx run cannot set up a sandbox here: ${out}"
                fi
        fi
}

# assert_probe_says WORD...: the probe's one line of output is one of WORDs.
assert_probe_says() {
        local want
        if [ "$status" -ne 0 ]; then
                echo "sbx run exited $status; output: $output" >&2
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
