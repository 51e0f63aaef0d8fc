#!/usr/bin/env bats
# Admission control ([admission] max_running, max_memory): a run over the
# node's cap waits (--queue-wait) or exits 75 with a retryable
# hutch.error/1; none is lost; a supervisor killed with SIGKILL holds no
# slot. Concurrency is checked from the records' start and end times.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
        CHECK="$TESTS_DIR/integration/check-schema.py"
}

# The most runs whose [started_at, finished_at] overlap, from ls --json
# on stdin.
max_overlap() {
        python3 -c '
import json, sys
from datetime import datetime
t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
ev = []
for line in sys.stdin:
    o = json.loads(line)
    ev.append((t(o["started_at"]), 1))
    ev.append((t(o["finished_at"]), -1))
n = most = 0
for _, d in sorted(ev):     # an end before a start at the same instant
    n += d
    most = max(most, n)
print(most)'
}

# A profile file with [admission] max_running = 2.
cap_profile() {
        local p="$BATS_TEST_TMPDIR/capped.ini"
        printf '[admission]\nmax_running = 2\n' > "$p"
        echo "$p"
}

@test "admission: with max_running = 2 and --queue-wait, 10 runs all run, never more than 2 at once" {
        local p i
        p=$(cap_profile)
        for i in $(seq 1 10); do
                "$HUTCH" run -p "$p" --queue-wait 120s --label t=queue --json -- sleep 1 \
                        > "$BATS_TEST_TMPDIR/out.$i" 2>&1 &
        done
        wait
        for i in $(seq 1 10); do
                "$CHECK" hutch.result/1 "$BATS_TEST_TMPDIR/out.$i"
        done
        run "$HUTCH" ls --label t=queue --json
        [ "$(echo "$output" | wc -l)" -eq 10 ]
        [ "$(echo "$output" | grep -c '"status":"success"')" -eq 10 ]
        [ "$(echo "$output" | max_overlap)" -le 2 ]
        # they did run two at a time, not one: the cap is a cap, not a lock
        [ "$(echo "$output" | max_overlap)" -eq 2 ]
}

@test "admission: without --queue-wait, runs over the cap exit 75 at once, retryable; none is lost" {
        local p i ran=0 refused=0
        p=$(cap_profile)
        for i in $(seq 1 10); do
                ( rc=0
                  "$HUTCH" run -p "$p" --label t=burst --json -- sleep 1 > "$BATS_TEST_TMPDIR/out.$i" 2>/dev/null ||
                        rc=$?
                  echo "$rc" > "$BATS_TEST_TMPDIR/rc.$i" ) &
        done
        wait
        for i in $(seq 1 10); do
                rc=$(cat "$BATS_TEST_TMPDIR/rc.$i")
                if [ "$rc" -eq 0 ]; then
                        "$CHECK" hutch.result/1 "$BATS_TEST_TMPDIR/out.$i"
                        ran=$((ran + 1))
                else
                        [ "$rc" -eq 75 ]
                        "$CHECK" hutch.error/1 "$BATS_TEST_TMPDIR/out.$i"
                        grep -q '"code":"admission_full","retryable":true' "$BATS_TEST_TMPDIR/out.$i"
                        grep -q 'max_running = 2' "$BATS_TEST_TMPDIR/out.$i"
                        refused=$((refused + 1))
                fi
        done
        # every request ran and was recorded, or was told to retry
        [ $((ran + refused)) -eq 10 ]
        [ "$refused" -ge 1 ]
        run "$HUTCH" ls --label t=burst --json
        [ "$(echo "$output" | grep -c .)" -eq "$ran" ]
        [ "$(echo "$output" | max_overlap)" -le 2 ]
}

@test "admission: a supervisor killed with SIGKILL does not hold its slot" {
        local id pid
        "$HUTCH" run --max-running 1 --label t=victim -- sleep 60 &
        pid=$!
        for ((i = 0; i < 100; i++)); do
                id=$("$HUTCH" ps --label t=victim --json | cut -c1-80 | grep -o '"id":"[0-9A-Z]*"' | head -1)
                [ -n "$id" ] && break
                sleep 0.1
        done
        [ -n "$id" ]
        # the slot is taken while it lives
        run "$HUTCH" run --max-running 1 -- true
        [ "$status" -eq 75 ]
        kill -KILL "$pid"
        wait "$pid" || true
        # and free once it is dead, without hutch gc
        run "$HUTCH" run --max-running 1 -- true
        [ "$status" -eq 0 ]
}

@test "admission: --queue-wait says queued on --events, then starts" {
        local p
        "$HUTCH" run --max-running 1 --label t=holder -- sleep 2 &
        for ((i = 0; i < 100; i++)); do
                [ -n "$("$HUTCH" ps --label t=holder --json)" ] && break
                sleep 0.1
        done
        run --separate-stderr "$HUTCH" run --max-running 1 --queue-wait 60s --events -- echo after
        wait
        [ "$status" -eq 0 ]
        echo "$output" | "$CHECK" hutch.event/1
        [[ "${lines[0]}" == *'"type":"queued"'*'"running":1,"max_running":1'* ]]
        [[ "${lines[1]}" == *'"type":"started"'* ]]
        # a wait that runs out is the same retryable refusal
        "$HUTCH" run --max-running 1 --label t=holder2 -- sleep 5 &
        for ((i = 0; i < 100; i++)); do
                [ -n "$("$HUTCH" ps --label t=holder2 --json)" ] && break
                sleep 0.1
        done
        run --separate-stderr "$HUTCH" run --max-running 1 --queue-wait 300ms --json -- true
        [ "$status" -eq 75 ]
        [[ "$output" == *'"code":"admission_full"'* ]]
        [[ "$stderr" == *"no slot within --queue-wait 300ms"* ]]
        # on --events, the one exit event of a refused run says the same
        run --separate-stderr "$HUTCH" run --max-running 1 --events -- true
        [ "$status" -eq 75 ]
        echo "$output" | "$CHECK" hutch.event/1
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *'"type":"exit"'*'"error_code":"admission_full","retryable":true'* ]]
        kill %2 2>/dev/null || true
        wait || true
}

@test "admission: auto and max_memory are worked out from the node and said" {
        # auto: from the node's cpus and memory, at least 1
        run "$HUTCH" run --max-running auto -- true
        [ "$status" -eq 0 ]
        run "$HUTCH" doctor
        [[ "$output" == *"admission: node: memory "*"max_running auto = "*": min(cpus "* ]]
        # max_memory: a 100M cap holds one 64M run, not two
        "$HUTCH" run --max-memory 100M --memory 64M --label t=mem -- sleep 5 &
        for ((i = 0; i < 100; i++)); do
                [ -n "$("$HUTCH" ps --label t=mem --json)" ] && break
                sleep 0.1
        done
        run --separate-stderr "$HUTCH" run --max-memory 100M --memory 64M -- true
        [ "$status" -eq 75 ]
        [[ "$stderr" == *"max_memory = 100M"* ]]
        run --separate-stderr "$HUTCH" run --max-memory 100M --memory 32M -- true
        [ "$status" -eq 0 ]
        kill %1 2>/dev/null || true
        wait || true
        # bad values are refused with the key's words
        run "$HUTCH" run --max-running 0 -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"max-running"* ]]
        run "$HUTCH" run --max-memory lots -- true
        [ "$status" -eq 2 ]
}
