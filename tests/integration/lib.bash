# lib.bash - shared helpers for the integration tests.
# $SBX is the sbx binary under test; $PROBE the static probe helper.

: "${SBX:?SBX must point at the sbx binary}"

common_setup() {
        export SBX_STATE_DIR="$BATS_TEST_TMPDIR/state"
        # the job's environment must not depend on the caller's
        unset SBX_CGROUP
}

# A name nobody else on the host uses, for markers we look for afterwards.
unique() {
        echo "sbx-test-$$-$BATS_TEST_NUMBER-$RANDOM$RANDOM"
}

# Wait (up to $2 tenths of a second) for file $1 to contain something.
wait_for_file() {
        local i
        for ((i = 0; i < ${2:-50}; i++)); do
                [ -s "$1" ] && return 0
                sleep 0.1
        done
        return 1
}

# Is any process whose command line contains $1 alive on the host?
host_has_process() {
        pgrep -f -- "$1" >/dev/null
}

# Free TCP port on 127.0.0.1.
free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
