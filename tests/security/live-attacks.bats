#!/usr/bin/env bats
# live-attacks.bats - attacks on the live-sandbox surfaces from inside
# (a job, or what an earlier exec left running) and what they must not
# reach. Each case names the attack; the checks look at what the victim
# saw and what the attacker got.

load lib

setup() {
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        unset HUTCH_CGROUP
        under_landlock && skip "live sandboxes run in the namespace tier here"
        under_gvisor && skip "live sandboxes do not take runtime gvisor"
        true
}

teardown() {
        local s
        [ -n "${HUTCH_STATE_DIR:-}" ] || return 0
        for s in $("$HUTCH" sandbox ls --json 2>/dev/null | jq -r .name); do
                [ -n "$s" ] && "$HUTCH" sandbox stop "$s" >/dev/null 2>&1
        done
        true
}

@test "live-attacks: symlinks and FIFOs an earlier MCP call plants in /tmp get no later call's stdin or env, nor run its code" {
        run python3 "$BATS_TEST_DIRNAME/../integration/mcp-live.py" planted
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"ok planted"* ]]
}

@test "live-attacks: a newline in a process's command line or name adds no entry to MCP list_processes" {
        run python3 "$BATS_TEST_DIRNAME/../integration/mcp-live.py" forged_ps
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"ok forged_ps"* ]]
}
