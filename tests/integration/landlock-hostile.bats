#!/usr/bin/env bats
# The landlock tier (--isolation landlock) against a job that works on
# what the tier leaves it: its own workspace copy, the caller's state
# dir, the scratch left by a killed supervisor, the host's abstract unix
# namespace, and flags the tier cannot honour. Each test runs as root and
# as an unprivileged caller (unprivileged.sh); a test that only means
# something for one of them says so and skips.

load lib

bats_require_minimum_version 1.5.0

setup() { common_setup; }
teardown() {
        [ -z "${KILLED_PID:-}" ] || kill -9 "$KILLED_PID" 2>/dev/null || true
        host_dirs_cleanup
}

# A directory the job leaves unreadable (mode 000) in its workspace
# copy: as an unprivileged caller the supervisor is the job's uid and
# cannot look into it either. The landlock tier used to drop the whole
# change set (files [], files_error null) and --apply applied nothing,
# exit 0. Now it records what it can, the directory as skipped, and
# --apply refuses the partial change set, as the namespace tier does.
@test "an unreadable directory in the workspace copy is recorded as the namespace tier records it" {
        local d tier ll ns
        for tier in namespaces landlock; do
                d=$(host_dir)
                echo orig > "$d/f"
                run --separate-stderr "$HUTCH" run --json --isolation "$tier" --workdir "$d" --apply -- \
                        sh -c 'echo evil > f; echo new > g; mkdir d; echo x > d/x; chmod 000 d'
                echo "$tier: rc $status: $output"
                echo "$tier stderr: $stderr"
                printf -v "rc_$tier" %s "$status"
                printf -v "files_$tier" %s "$(echo "$output" | jq -c '[.files[] | [.path, .kind, (.skip // null)]] | sort')"
                printf -v "error_$tier" %s "$(echo "$output" | jq -c '.files_error')"
                printf -v "f_$tier" %s "$(cat "$d/f")"
        done
        # the tiers agree, whatever the caller
        [ "$rc_landlock" = "$rc_namespaces" ]
        [ "$files_landlock" = "$files_namespaces" ]
        [ "$error_landlock" = "$error_namespaces" ]
        [ "$f_landlock" = "$f_namespaces" ]
        # the change set is never empty: f, g and d at least
        echo "$files_landlock" | jq -e 'map(.[0]) | contains(["f", "g", "d"])'
        if [ "$(id -u)" -ne 0 ]; then
                # d is skipped, the rest is listed, nothing is applied
                echo "$files_landlock" | jq -e 'map(select(.[0] == "d"))[0][2] == "unreadable"'
                [ "$rc_landlock" -eq 1 ]
                [ "$f_landlock" = orig ]
        fi
}

# The same with a directory that can be listed but not searched (0400):
# its names are there, their types are not.
@test "a directory the job leaves listable but unsearchable does not hide the change set" {
        [ "$(id -u)" -ne 0 ] || skip "root's supervisor reads every directory"
        local d
        d=$(host_dir)
        echo orig > "$d/f"
        run --separate-stderr "$HUTCH" run --json --isolation landlock --workdir "$d" --apply -- \
                sh -c 'echo evil > f; mkdir d; echo x > d/x; chmod 0400 d'
        echo "$output"
        [ "$status" -eq 1 ]
        echo "$output" | jq -e '[.files[] | select(.path == "f" and .kind == "modified")] | length == 1'
        echo "$output" | jq -e '[.files[] | select(.path == "d" and .skip == "unreadable")] | length == 1'
        [ "$(cat "$d/f")" = orig ]
}

# The job can chmod the caller's own files, the state dir among them
# (hutch-run(1) says so). The record then cannot be completed, and the
# message must say why, not "no error".
@test "a record that cannot be completed says why" {
        [ "$(id -u)" -ne 0 ] || skip "root's state dir is not the job's uid's"
        local d
        d=$(host_dir)
        mkdir -p "$HUTCH_STATE_DIR"
        "$HUTCH" run --isolation landlock -- true
        run --separate-stderr "$HUTCH" run --isolation landlock --workdir "$d" -- \
                sh -c 'chmod 000 "$1"' sh "$HUTCH_STATE_DIR"
        chmod 700 "$HUTCH_STATE_DIR"
        echo "$stderr"
        [[ "$stderr" == *"cannot complete the record"* ]]
        [[ "$stderr" != *"no error"* ]]
        [[ "$stderr" == *"Permission denied"* ]]
}

# Wait until exactly one new hutch-XXXXXX scratch is under $1; print it.
wait_for_scratch() {
        local i s
        for ((i = 0; i < 100; i++)); do
                s=$(find "$1" -mindepth 1 -maxdepth 1 -name 'hutch-??????' 2>/dev/null)
                [ -n "$s" ] && [ -e "$s/stamp" ] && { echo "$s"; return 0; }
                sleep 0.1
        done
        return 1
}

# A supervisor killed with SIGKILL cannot remove its scratch (a copy of
# the workdir); hutch gc removes it once the run is no longer running,
# and only what that run's record names and looks like hutch's.
@test "hutch gc removes the scratch of a killed landlock run, and nothing else" {
        local base w s decoy target
        base=$(host_dir)
        w=$(host_dir)
        echo data > "$w/f"
        TMPDIR="$base" "$HUTCH" run --isolation landlock --workdir "$w" -- sleep 60 >/dev/null 2>&1 &
        KILLED_PID=$!
        s=$(wait_for_scratch "$base")
        [ -n "$s" ]
        [ -e "$s/workspace/f" ]
        # while the run lives, gc keeps its scratch
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [ -d "$s" ]
        kill -9 "$KILLED_PID"
        wait "$KILLED_PID" 2>/dev/null || true
        KILLED_PID=
        # a look-alike no record names, and one that is a symlink to a
        # directory with a stamp: neither is touched
        decoy="$base/hutch-AAAAAA"
        mkdir "$decoy" && : > "$decoy/stamp"
        target=$(host_dir)
        : > "$target/stamp"
        [ -d "$s" ]
        run "$HUTCH" gc --dry-run
        [ "$status" -eq 0 ]
        [[ "$output" == *"would remove scratch $s"* ]]
        [ -d "$s" ]
        run "$HUTCH" gc
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"removed 1 scratch"* ]]
        [ ! -e "$s" ]
        [ -d "$decoy" ] && [ -e "$decoy/stamp" ]
        # the record's path now a symlink to another stamped dir: followed never
        ln -s "$target" "$s"
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [ -L "$s" ] && [ -e "$target/stamp" ]
}

# Landlock (ABI 6) scopes connecting to abstract unix names, not binding
# them: a socketpair end bound to a name held it in the host's abstract
# namespace, where a host service binding the same name failed. With no
# socket of its own to bind (network none), bind(2) is refused.
@test "a socketpair cannot squat a name in the host's abstract unix namespace" {
        local name
        name=$(unique)
        run --separate-stderr "$HUTCH" run --isolation landlock -- python3 -c "
import socket, sys, time
a, b = socket.socketpair()
try:
    a.bind(b'\0$name'); print('bound'); sys.stdout.flush(); time.sleep(2)
except OSError as e:
    print(e.errno)"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$output" = 13 ]
        run --separate-stderr "$HUTCH" run --json --isolation landlock -- true
        echo "$output" | jq -e '[.enforcement.isolation.not_held[] | select(test("bind"))] | length >= 1'
}

# --uid, --gid and --hostname cannot be honoured without a user or UTS
# namespace: said on stderr, one line each, not silently dropped
@test "--uid, --gid and --hostname are not ignored silently in the landlock tier" {
        run --separate-stderr "$HUTCH" run --json --isolation landlock --uid 0 --gid 0 --hostname evil -- id -u
        [ "$status" -eq 0 ]
        echo "$stderr"
        [ "$(echo "$stderr" | grep -c -e '--uid.*landlock tier')" -eq 1 ]
        [ "$(echo "$stderr" | grep -c -e '--gid.*landlock tier')" -eq 1 ]
        [ "$(echo "$stderr" | grep -c -e '--hostname.*landlock tier')" -eq 1 ]
        [ "$(echo "$output" | jq -r .stdout)" != 0 ]
        echo "$output" | jq -e '[.enforcement.isolation.not_held[] | select(test("hostname is not applied"))] | length == 1'
        # and nothing is said when they are not given
        run --separate-stderr "$HUTCH" run --isolation landlock -- true
        [ "$status" -eq 0 ]
        [[ "$stderr" != *"--uid"* && "$stderr" != *"--hostname"* ]]
}

# A run ended by --cpu-time records the cpu its killed processes used,
# in both tiers
@test "a run killed by --cpu-time records the cpu it used" {
        local tier
        for tier in namespaces landlock; do
                run --separate-stderr "$HUTCH" run --json --isolation "$tier" --cpu-time 1s --timeout 30s -- \
                        sh -c 'while :; do :; done'
                echo "$tier: $(echo "$output" | jq -c '{status, cpu_ms}')"
                [ "$status" -eq 124 ]
                echo "$output" | jq -e '.status == "cpu_timeout"'
                echo "$output" | jq -e '.cpu_ms >= 800'
        done
}
