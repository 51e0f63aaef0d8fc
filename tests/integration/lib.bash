# lib.bash - shared helpers for the integration tests.
# $HUTCH is the hutch binary under test; $PROBE the static probe helper.

: "${HUTCH:?HUTCH must point at the hutch binary}"

common_setup() {
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        # the job's environment must not depend on the caller's
        unset HUTCH_CGROUP
}

# A name nobody else on the host uses, for markers we look for afterwards.
unique() {
        echo "hutch-test-$$-$BATS_TEST_NUMBER-$RANDOM$RANDOM"
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

# A new directory the sandbox user can reach: bats' own temporary dirs
# are private (0700), and the sandbox user is not the caller when the
# suite runs as root. Removed by host_dirs_cleanup (call it in teardown).
host_dir() {
        local d
        d=$(mktemp -d "${TMPDIR:-/tmp}/hutch-test.XXXXXX")
        chmod 755 "$d"
        echo "$d" >> "$BATS_TEST_TMPDIR/.host-dirs"
        echo "$d"
}

host_dirs_cleanup() {
        [ -f "$BATS_TEST_TMPDIR/.host-dirs" ] || return 0
        while read -r d; do
                chmod -R u+rwX "$d" 2>/dev/null || true
                rm -rf "$d"
        done < "$BATS_TEST_TMPDIR/.host-dirs"
}

# A host directory the sandbox user can read and write through an
# overlay: world-readable, and when the suite runs as root, owned by the
# id root's sandbox is mapped to (65534), as a real user's tree would be
# owned by that user.
make_tree() {
        mkdir -p "$1"
        chmod -R a+rX "$1"
        if [ "$(id -u)" -eq 0 ]; then
                chown -R 65534:65534 "$1"
        fi
}

# The id of the newest run.
last_run_id() {
        "$HUTCH" ls --json | head -n 1 | jq -r .id
}

# A listing of a tree with content hashes, to compare trees exactly.
tree_digest() {
        (cd "$1" && find . -mindepth 1 \( -type f -printf '%p f %m ' -exec sha256sum {} \; \) -o \
                \( -type d -printf '%p d %m\n' \) -o \( -type l -printf '%p l %l\n' \) | sort)
}

# Run CMD... every tenth of a second until it succeeds, for up to
# $WAIT_TENTHS (default 50) tenths: wait for a state, never for a time.
# Fails (with CMD's last status) when the state never came.
wait_until() {
        local i st=0
        for ((i = 0; i < ${WAIT_TENTHS:-50}; i++)); do
                "$@" && return 0
                st=$?
                sleep 0.1
        done
        "$@" || { st=$?; return "$st"; }
}

# Every process under PID, as "pid:starttime" (the start time tells a
# process from a later one that reuses its pid). Take it while PID lives.
descendants() {
        local c
        for c in $(pgrep -P "$1"); do
                echo "$c:$(awk '{print $22}' "/proc/$c/stat" 2>/dev/null)"
                descendants "$c"
        done
}

# Succeeds, printing them, when any of the "pid:starttime" words given
# (as descendants prints them) is still the same live process.
any_alive() {
        local p alive=1
        for p in "$@"; do
                [ "$(awk '{print $22}' "/proc/${p%%:*}/stat" 2>/dev/null)" = "${p#*:}" ] || continue
                echo "${p%%:*} $(tr '\0' ' ' < "/proc/${p%%:*}/cmdline" 2>/dev/null)"
                alive=0
        done
        return "$alive"
}

# Whether process $1 has a file whose path ends in $2 open.
has_open() {
        local f
        for f in /proc/"$1"/fd/*; do
                [[ "$(readlink "$f" 2>/dev/null)" == *"$2" ]] && return 0
        done
        return 1
}

# gvisor_probe: GVISOR_SKIP (exported) says why a --runtime gvisor job
# cannot run here, or is empty when one ran; for setup_file.
gvisor_probe() {
        export GVISOR_SKIP=""
        if ! command -v runsc >/dev/null; then
                GVISOR_SKIP="runsc (gVisor) is not installed (apt-get install runsc)"
        else
                local out
                out=$(HUTCH_STATE_DIR="$BATS_FILE_TMPDIR/probe" "$HUTCH" run -q --runtime gvisor -- true 2>&1) ||
                        GVISOR_SKIP="runsc cannot run a job here: $(echo "$out" | tail -n 1)"
        fi
}
