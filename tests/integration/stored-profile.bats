#!/usr/bin/env bats
# The profile a run stores is its resolved settings, frozen: its text and
# sha256 are what `hutch profile show` prints for the same profile and
# flags, whatever the run learned on its way (gVisor's uid, a language,
# a workspace, the egress proxy's variables).

bats_require_minimum_version 1.5.0
load lib

setup_file() { gvisor_probe; }

setup() { common_setup; }
teardown() { host_dirs_cleanup; }

# The profile text stored with run $1, read from the store itself.
stored_text() {
        python3 - "$HUTCH_STATE_DIR/hutch.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(text,) = db.execute("SELECT profile_text FROM runs WHERE id = ?", (sys.argv[2],)).fetchone()
sys.stdout.write(text)
PY
}

# PROFILE_SHOW_ARGS...: the last run stored exactly what `hutch profile
# show` resolves with those arguments, text and sha256.
stored_is() {
        local id stored want
        id=$(last_run_id)
        [ -n "$id" ] && [ "$id" != null ]
        stored=$("$HUTCH" show --json "$id" | jq -r .profile_sha256)
        want=$("$HUTCH" profile show --sha256 "$@")
        if [ "$stored" != "$want" ]; then
                diff <(stored_text "$id") <("$HUTCH" profile show --canonical "$@") || true
                echo "run $id stored $stored; profile show $* says $want"
                return 1
        fi
        [ "${#stored}" -eq 64 ]
        # the text too, byte for byte
        [ "$(stored_text "$id"; echo .)" = "$("$HUTCH" profile show --canonical "$@"; echo .)" ]
}

@test "a gVisor run as uid 0 stores uid 0, as profile show resolves it" {
        [ -z "$GVISOR_SKIP" ] || skip "$GVISOR_SKIP"
        run "$HUTCH" run -q --runtime gvisor --uid 0 -- id -u
        [ "$status" -eq 0 ]
        [ "$output" = 0 ]
        stored_is --runtime gvisor --uid 0
        [[ "$(stored_text "$(last_run_id)")" == *"uid = 0"* ]]
}

@test "a --lang python run stores the language's profile" {
        command -v python3 >/dev/null || skip "python3 not installed on this host"
        run "$HUTCH" run -q --lang python -c 'print(6*7)'
        [ "$status" -eq 0 ]
        [ "$output" = 42 ]
        stored_is python
}

@test "a run with -p untrusted stores that profile" {
        run "$HUTCH" run -q -p untrusted -- true
        [ "$status" -eq 0 ]
        stored_is untrusted
}

@test "a --session run stores the profile of its flags" {
        run "$HUTCH" run -q --session s --memory 300M -- sh -c 'echo x > f'
        [ "$status" -eq 0 ]
        stored_is --memory 300M
}

@test "a --workdir run as uid 0 stores the profile of its flags" {
        local dir
        dir=$(host_dir)
        run "$HUTCH" run -q --workdir "$dir" --uid 0 -- sh -c 'echo x > f'
        [ "$status" -eq 0 ]
        stored_is --uid 0
}

@test "a run with allow rules stores network allow without the proxy's variables" {
        run "$HUTCH" run -q --allow 127.0.0.1:9 -- sh -c 'echo "$http_proxy"'
        [ "$status" -eq 0 ]
        [ -n "$output" ]
        stored_is --allow 127.0.0.1:9
        local text
        text=$(stored_text "$(last_run_id)")
        [[ "$text" == *"mode = allow"* ]]
        [[ "$text" != *"http_proxy"* ]]
}
