#!/usr/bin/env bats
# Root's landlock-tier job runs under a host uid of its own, so that no
# other process of the host (nobody's daemons, another run's job) owns
# its scratch, and what it leaves under that uid beyond the scratch (SysV
# IPC objects) goes with the run. An unprivileged caller's job keeps the
# caller's uid: these are root's cases.

load lib

bats_require_minimum_version 1.5.0

setup() {
        common_setup
        [ "$(id -u)" -eq 0 ] || skip "root's case: an unprivileged caller's job keeps the caller's own uid"
        run "$HUTCH" run --isolation landlock -- true
        [ "$status" -eq 0 ] || skip "no landlock tier here: $output"
}
teardown() { host_dirs_cleanup; }

@test "root's landlock job: a uid of its own, a new one each run, and never nobody's" {
        run "$HUTCH" run --json --isolation landlock -- id -u
        [ "$status" -eq 0 ]
        local a b
        a=$(echo "$output" | jq -r .enforcement.isolation.uid)
        [ "$(echo "$output" | jq -r .stdout)" = "$a" ]
        [ "$a" -ne 65534 ] && [ "$a" -ne 0 ]
        # the documented range (hutch-run(1) ISOLATION)
        [ "$a" -ge 2130706432 ] && [ "$a" -le 2147352575 ]
        [ "$(echo "$output" | jq -r .enforcement.isolation.gid)" = "$a" ]
        run "$HUTCH" run --json --isolation landlock -- true
        b=$(echo "$output" | jq -r .enforcement.isolation.uid)
        [ "$b" -ne "$a" ]
        # nothing of it is held after the run
        [ ! -e "/run/hutch/landlock-uids/$a" ]
}

@test "root's landlock job: another nobody process of the host cannot read or change its copy of the workdir" {
        local d out
        d=$(host_dir)
        mkdir "$d/wd"
        echo ROOT-ONLY > "$d/wd/key"
        echo 'echo legit' > "$d/wd/build.sh"
        chmod 600 "$d/wd/key"
        chmod 700 "$d/wd"
        out=$d/out
        "$HUTCH" run --isolation landlock --workdir "$d/wd" -- \
                sh -c 'echo "$PWD"; cat key >/dev/null; sleep 4; cat build.sh' > "$out" 2>&1 &
        local pid=$! i ws=""
        for i in $(seq 100); do
                ws=$(head -1 "$out" 2>/dev/null || true)
                [ -n "$ws" ] && break
                sleep 0.05
        done
        [ -n "$ws" ]
        [ -f "$ws/key" ]
        # nobody (what root's job was before) reaches none of it
        run runuser -u nobody -- cat "$ws/key"
        [ "$status" -ne 0 ]
        run runuser -u nobody -- sh -c "echo planted >> '$ws/build.sh'"
        [ "$status" -ne 0 ]
        local rc=0
        wait "$pid" || rc=$?
        [ "$rc" -eq 0 ]
        run cat "$out"
        [[ "$output" != *planted* ]]
        [[ "$output" == *"echo legit"* ]]
}

@test "root's landlock job: SysV IPC objects it leaves are removed with its uid" {
        command -v ipcmk >/dev/null || skip "ipcmk (util-linux) is missing"
        run "$HUTCH" run --json --isolation landlock -- sh -c 'ipcmk -M 65536 && ipcmk -Q && ipcmk -S 1'
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r .status)" = success ]
        [[ "$(echo "$output" | jq -r .stdout)" == *"Shared memory id"* ]]
        local uid
        uid=$(echo "$output" | jq -r .enforcement.isolation.uid)
        # none left owned or created by it
        run awk -v u="$uid" 'NR > 1 && ($8 == u || $10 == u)' /proc/sysvipc/shm
        [ -z "$output" ]
        run awk -v u="$uid" 'NR > 1 && ($8 == u || $10 == u)' /proc/sysvipc/msg
        [ -z "$output" ]
        run awk -v u="$uid" 'NR > 1 && ($5 == u || $7 == u)' /proc/sysvipc/sem
        [ -z "$output" ]
}

@test "root's landlock job: two runs at once never share a uid, so one cannot open the other's copy" {
        local d
        d=$(host_dir)
        "$HUTCH" run --isolation landlock -- sh -c 'echo "$PWD"; sleep 3' > "$d/a.out" &
        local pa=$!
        local i wsa=""
        for i in $(seq 100); do
                wsa=$(head -1 "$d/a.out" 2>/dev/null || true)
                [ -n "$wsa" ] && break
                sleep 0.05
        done
        [ -d "$wsa" ]
        # the second job knows where the first's scratch is (a command
        # line shows it, inotify on /tmp names it) and tries to open it up
        run "$HUTCH" run --json --isolation landlock -- sh -c \
                'chmod 0777 "$1" "$1/.." && echo opened; true' sh "$wsa"
        [ "$status" -eq 0 ]
        [[ "$(echo "$output" | jq -r .stdout)" != *opened* ]]
        [ "$(stat -c %a "$wsa/..")" = 700 ]
        local rc=0
        wait "$pa" || rc=$?
        [ "$rc" -eq 0 ]
}
