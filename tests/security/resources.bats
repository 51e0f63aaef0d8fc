#!/usr/bin/env bats
# resources.bats - resource abuse that must not hurt the host: a fork
# bomb (bounded, host still responsive, nothing left), a memory hog
# (killed as oom), a disk fill (ENOSPC inside, host /tmp untouched) and
# an output flood (hutch's own memory stays small).

load lib

setup() {
        # before require_sandbox: teardown runs after a skipped setup too
        M=$(marker)
        SECS=$(unique_secs)
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
}

teardown() {
        kill_matching "$SECS"
        rm -f /tmp/"$M"* 2>/dev/null
        true
}

# Host responsiveness: 20 fork+execs of true take under $1 seconds.
host_responsive() {
        local start end
        start=$(date +%s%N)
        for ((i = 0; i < 20; i++)); do
                /bin/true || return 1
        done
        end=$(date +%s%N)
        [ $(((end - start) / 1000000)) -lt $(($1 * 1000)) ]
}

@test "resources: a fork bomb is bounded by --pids and leaves nothing behind" {
        # a count nobody else forks, to find leftovers by
        n=$((3000 + RANDOM % 1000))
        sandboxed --pids 64 -- "$PROBE" forkbomb "$n"
        [[ "$output" =~ forked\ ([0-9]+)\ of ]] || { echo "$output" >&2; false; }
        [ "${BASH_REMATCH[1]}" -lt 64 ] || { echo "forked ${BASH_REMATCH[1]} with --pids 64" >&2; false; }
        wait_gone "forkbomb $n"
        host_responsive 5
}

@test "resources: a shell fork bomb keeps the host responsive and ends with the run" {
        skip_in_selftest "unconfined, a real fork bomb would take the host down"
        cmd=$(sandbox_cmd --pids 128 --timeout 3s --grace 200ms -- bash -c \
                ": $SECS; b() { b | b & }; b; sleep $SECS")
        bash -c "exec $cmd" >/dev/null 2>&1 &
        local hutch=$!
        sleep 1
        host_responsive 5 || { kill -9 "$hutch"; false; }
        # the host's own process count is not eaten up: we can still fork
        run bash -c 'for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done; wait; echo forked'
        [ "$output" = forked ]
        wait "$hutch" || true
        wait_gone "$SECS" 50
}

@test "resources: a memory hog is killed as oom" {
        sandboxed --memory 64M -- "$PROBE" memhog 1G
        [ "$status" -eq 137 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *allocated* ]]
        wait_gone "memhog 1G" 10
}

@test "resources: a memory hog in forked children is killed as oom" {
        sandboxed --memory 64M -- sh -c "for i in 1 2 3 4 5 6 7 8; do $PROBE memhog 24M 3 & done; wait; echo survived"
        [ "$status" -eq 137 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *survived* ]]
}

@test "resources: a memfd hog (written, never mapped) is killed as oom" {
        # smaps shows no mapping for it: the watchdog must count the fd
        sandboxed --memory 64M -- "$PROBE" memfd 512M 3
        [ "$status" -eq 137 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *held* ]]
}

@test "resources: memfds within the limit are not counted against it twice" {
        gvisor_skip "under gVisor a memfd is the sentry's memory, counted once with runsc's tree, whose sentry alone idles at ~50 MiB: 64M cannot hold it and 32M of memfds (the memory limit itself holds: the memhog case)"
        sandboxed --memory 64M -- sh -c "$PROBE memfd 16M 1 & $PROBE memfd 16M 1 & wait"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
}

@test "resources: filling the disk gives ENOSPC inside and leaves host /tmp untouched" {
        landlock_skip "no scratch tmpfs, so no ENOSPC: each file is bounded by RLIMIT_FSIZE (SIGXFSZ or EFBIG), the total by a watch of the scratch that ends the job (status disk_limit), which landlock.bats checks"
        local before after try
        for try in 1 2; do
                before=$(df -Pk /tmp | awk 'NR == 2 { print $4 }')
                sandboxed --disk 16M -- sh -c "
                        for d in /tmp /var/tmp /workspace /dev/shm \$HOME; do
                                dd if=/dev/zero of=\$d/$M-fill bs=1M count=64 2>&1 | grep -o 'No space left' | head -1
                                rm -f \$d/$M-fill
                        done"
                [ "$status" -eq 0 ]
                [ "$(echo "$output" | grep -c 'No space left')" -eq 5 ] || { echo "$output" >&2; false; }
                [ ! -e "/tmp/$M-fill" ]
                after=$(df -Pk /tmp | awk 'NR == 2 { print $4 }')
                # under gvisor the run takes seconds, in which other work on
                # a shared host may use /tmp too: one more try, since a fill
                # that landed on the host would land there again
                under_gvisor && [ "$try" -eq 1 ] && [ $((before - after)) -ge 8192 ] || break
        done
        # nothing the size of the fill landed on the host's /tmp
        [ $((before - after)) -lt 8192 ]
}

@test "resources: a 64 MB output flood does not grow hutch's own memory" {
        [ -x /usr/bin/time ] || skip "/usr/bin/time (GNU time) is not installed"
        local limit_kb=${HUTCH_SEC_MAX_RSS_KB:-32768}
        cmd=$(sandbox_cmd -- "$PROBE" spew 64M)
        run /usr/bin/time -f 'maxrss=%M' -o "$BATS_TEST_TMPDIR/time" bash -c "exec $cmd >/dev/null"
        [ "$status" -eq 0 ]
        rss=$(sed -n 's/^maxrss=//p' "$BATS_TEST_TMPDIR/time")
        [ -n "$rss" ] && [ "$rss" -lt "$limit_kb" ] || { echo "hutch peak RSS ${rss} KB (limit ${limit_kb} KB)" >&2; false; }
}

@test "resources: a 64 MB stderr flood on a pty (-t) does not grow hutch's own memory" {
        [ -x /usr/bin/time ] || skip "/usr/bin/time (GNU time) is not installed"
        command -v script >/dev/null || skip "script(1) is not installed"
        local limit_kb=${HUTCH_SEC_MAX_RSS_KB:-32768}
        cmd=$(sandbox_cmd -t -- sh -c "$PROBE spew 64M >&2")
        run /usr/bin/time -f 'maxrss=%M' -o "$BATS_TEST_TMPDIR/time" \
                script -qec "$cmd" /dev/null </dev/null >/dev/null
        rss=$(sed -n 's/^maxrss=//p' "$BATS_TEST_TMPDIR/time")
        [ -n "$rss" ] && [ "$rss" -lt "$limit_kb" ] || { echo "hutch peak RSS ${rss} KB (limit ${limit_kb} KB)" >&2; false; }
}
