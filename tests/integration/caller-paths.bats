#!/usr/bin/env bats
# What a run names is opened with the caller's own access (a private
# 0700 dir, like root's home, works), while the job's uid is still held
# to the file modes; --lang code lives outside the workspace; usage
# errors name the verb.

load lib

setup() {
        common_setup
        # bats' own temp dir is private (0700): as root, the sandbox's
        # uid (65534) could not pass it on its own
        PRIV="$BATS_TEST_TMPDIR/private"
        mkdir -p "$PRIV"
        chmod 700 "$BATS_TEST_TMPDIR" "$PRIV"
}

teardown() { host_dirs_cleanup; }

@test "--ro, -i and --workdir under a 0700 dir of the caller's work" {
        echo secret-ok > "$PRIV/data.txt"
        chmod 644 "$PRIV/data.txt"
        mkdir -p "$PRIV/tree"
        echo tree-ok > "$PRIV/tree/f"
        make_tree "$PRIV/tree"
        run "$HUTCH" run --ro "$PRIV/data.txt" -- cat "$PRIV/data.txt"
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        [ "$output" = secret-ok ]
        run "$HUTCH" run -i "$PRIV/data.txt" -- cat input/data.txt
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        [ "$output" = secret-ok ]
        run "$HUTCH" run -i "$PRIV/data.txt:sub/b.txt" -- cat input/sub/b.txt
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        [ "$output" = secret-ok ]
        run "$HUTCH" run -w "$PRIV/tree" -- cat f
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        [ "$output" = tree-ok ]
}

@test "the job is still held to the file modes inside a named path" {
        echo nope > "$PRIV/closed"
        chmod 000 "$PRIV/closed"
        run "$HUTCH" run --ro "$PRIV" -- cat "$PRIV/closed"
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
        [[ "$output" != *nope* ]]
}

@test "-i NAME must stay under input/" {
        echo x > "$PRIV/a"
        run "$HUTCH" run -i "$PRIV/a:../escape" -- true
        [ "$status" -eq 2 ] || [ "$status" -eq 125 ]
        [[ "$output" == *"--input"* ]]
}

@test "--lang code is outside the workspace: twice in a session, and beside a main.py" {
        command -v python3 >/dev/null || skip "python3 not installed"
        run "$HUTCH" run -q --session s --lang python -c 'print(1)'
        [ "$status" -eq 0 ] && [ "$output" = 1 ]
        run "$HUTCH" run -q --session s --lang python -c 'import os; print(sorted(os.listdir(".")))'
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        # only the (empty) artifacts dir every run gets
        [ "$output" = "['output']" ]
        d=$(host_dir)
        echo 'print("the repo own")' > "$d/main.py"
        make_tree "$d"
        run "$HUTCH" run -q --workdir "$d" --apply --lang python -c 'print(open("main.py").read().strip())'
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        [ "$output" = 'print("the repo own")' ]
        [ "$(cat "$d/main.py")" = 'print("the repo own")' ]
        run "$HUTCH" show --json "$(last_run_id)"
        [ "$(echo "$output" | jq -r .code)" = 'print(open("main.py").read().strip())' ]
        [ "$(echo "$output" | jq -r '.files | length')" = 0 ]
}

@test "usage errors: one 'hutch: VERB:' line with the nearest option, exit 2" {
        run "$HUTCH" ls --jsn
        [ "$status" -eq 2 ]
        [ "$output" = "hutch: ls: unknown option '--jsn' (did you mean --json? see hutch ls --help)" ]
        run "$HUTCH" show --bogus x
        [ "$status" -eq 2 ]
        [[ "$output" == "hutch: show: unknown option '--bogus'"* ]]
        run "$HUTCH" run --pids 0 -- true
        [ "$status" -eq 2 ]
        [[ "$output" == "hutch: run: --pids: "* ]]
}
