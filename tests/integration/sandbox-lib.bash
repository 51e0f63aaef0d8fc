# sandbox-lib.bash - helpers of the live-sandbox tests (sandbox-*.bats),
# loaded after lib.bash.

# Stop every live sandbox of this test's state dir; a supervisor that no
# longer answers (the bug a test would have caught) is killed instead.
stop_sandboxes() {
        local s pid
        for s in $("$HUTCH" sandbox ls --json 2>/dev/null | jq -r .name); do
                pid=$(jq -r .supervisor_pid "$HUTCH_STATE_DIR/sandboxes/$s.json" 2>/dev/null || true)
                timeout 20 "$HUTCH" sandbox stop "$s" || { [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true; }
        done
}

# A field of sandbox $1's state file (sandbox ls --json reads the same).
state() { jq -r ".$2" "$HUTCH_STATE_DIR/sandboxes/$1.json"; }

listed() { "$HUTCH" sandbox ls --json | jq -r 'select(.init_pid > 0) | .name' | grep -qx -- "$1"; }
not_listed() { ! listed "$1"; }

# Start sandbox $1 with the options after it, and wait until ls lists it.
# Its stdout is its name alone (warnings go to stderr, kept apart).
start_sandbox() {
        run --separate-stderr "$HUTCH" sandbox start "$@"
        [ "$status" -eq 0 ]
        [ "$output" = "$1" ]
        wait_until listed "$1"
}

# Every process of sandbox $1 on the host, init first, as pid:starttime.
sandbox_processes() {
        local init
        init=$(state "$1" init_pid)
        echo "$init:$(awk '{print $22}' "/proc/$init/stat")"
        descendants "$init"
}
