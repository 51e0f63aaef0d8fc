#!/usr/bin/env bats
# Protected paths: a job that writes a git hook or sets core.fsmonitor in
# a real repository used as --workdir must not get them installed in the
# user's checkout by hutch apply / run --apply (git would run them as the
# user at the next commit or status). hutch diff marks them first.

bats_require_minimum_version 1.5.0
load lib

teardown() { host_dirs_cleanup; }

# git as the test user on a tree it may not own (root's trees are 65534's)
hgit() { git -c safe.directory='*' -C "$R" "$@"; }

setup() {
        common_setup
        command -v git >/dev/null || skip "git is not installed"
        R="$(host_dir)/repo"
        mkdir -p "$R"
        hgit init -q
        echo hello > "$R/a.txt"
        hgit add a.txt
        hgit -c user.name=t -c user.email=t@example.invalid commit -qm init
        make_tree "$R"
}

# the attack, plus two harmless changes
JOB='printf "#!/bin/sh\ntouch \"\$HOME/pwned\"\n" > .git/hooks/pre-commit &&
chmod 755 .git/hooks/pre-commit &&
git -c safe.directory="*" config core.fsmonitor "touch pwned" &&
echo more >> a.txt && echo new > b.txt'

job() {
        run "$HUTCH" run -q --workdir "$R" "$@" -- sh -c "$JOB"
        [ "$status" -eq 0 ]
        id=$(last_run_id)
}

repo_untouched() {
        [ "$(tree_digest "$R")" = "$before" ]
        [ ! -e "$R/.git/hooks/pre-commit" ]
        run hgit config --get core.fsmonitor
        [ "$status" -eq 1 ]
        [ -z "$output" ]
}

@test "hutch apply refuses a job's git hook and core.fsmonitor, names both, applies nothing" {
        job
        before=$(tree_digest "$R")
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  .git/config: git runs"* ]]
        [[ "$output" == *"protected  .git/hooks/pre-commit: git runs"* ]]
        [[ "$output" == *"nothing was applied"* ]]
        repo_untouched
        # not even the harmless changes
        [ "$(cat "$R/a.txt")" = hello ]
        [ ! -e "$R/b.txt" ]
        [ -z "$(hgit status --porcelain)" ]
}

@test "hutch apply --skip-protected applies the rest only" {
        job
        before=$(tree_digest "$R")
        run "$HUTCH" apply --skip-protected "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"left out 2 protected paths"* ]]
        [ ! -e "$R/.git/hooks/pre-commit" ]
        run hgit config --get core.fsmonitor
        [ "$status" -eq 1 ]
        [ "$(printf '%s\n' hello more)" = "$(cat "$R/a.txt")" ]
        [ "$(cat "$R/b.txt")" = new ]
}

@test "hutch apply --allow-protected applies them too" {
        job
        run "$HUTCH" apply --allow-protected "$id"
        [ "$status" -eq 0 ]
        [ -x "$R/.git/hooks/pre-commit" ]
        [ "$(hgit config --get core.fsmonitor)" = "touch pwned" ]
        [ "$(cat "$R/b.txt")" = new ]
        run "$HUTCH" apply --allow-protected --skip-protected "$id"
        [ "$status" -eq 2 ]
}

@test "run --apply refuses protected paths as well" {
        before=$(tree_digest "$R")
        run "$HUTCH" run -q --workdir "$R" --apply -- sh -c "$JOB"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  .git/hooks/pre-commit"* ]]
        repo_untouched
}

@test "run --apply --skip-protected applies the rest only" {
        run "$HUTCH" run --workdir "$R" --apply --skip-protected -- sh -c "$JOB"
        [ "$status" -eq 1 ]
        [[ "$output" == *"left out 2 protected paths"* ]]
        [ ! -e "$R/.git/hooks/pre-commit" ]
        [ "$(cat "$R/b.txt")" = new ]
}

@test "run --apply --allow-protected applies them too; either flag needs --apply" {
        run "$HUTCH" run -q --workdir "$R" --apply --allow-protected -- sh -c "$JOB"
        [ "$status" -eq 0 ]
        [ -x "$R/.git/hooks/pre-commit" ]
        [ "$(hgit config --get core.fsmonitor)" = "touch pwned" ]
        run "$HUTCH" run -q --workdir "$R" --skip-protected -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"--skip-protected only goes with --apply"* ]]
}

@test "hutch diff lists protected paths first and marks them; the JSON says which" {
        job
        run "$HUTCH" diff --stat "$id"
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "PROTECTED: this run changes 2 paths"* ]]
        [[ "$output" == *".git/config  PROTECTED"* ]]
        [[ "$output" != *"a.txt  PROTECTED"* ]]
        run "$HUTCH" diff "$id"
        [[ "${lines[0]}" == "PROTECTED:"* ]]
        run "$HUTCH" diff --json "$id"
        echo "$output" | python3 "$TESTS_DIR/integration/check-schema.py" hutch.diff/1
        [ "$(echo "$output" | jq -r .protected)" = 2 ]
        [[ "$(echo "$output" | jq -r '.changes[] | select(.path == ".git/hooks/pre-commit") | .protected')" == "git runs"* ]]
        [ "$(echo "$output" | jq -r '.changes[] | select(.path == "a.txt") | .protected')" = null ]
        run "$HUTCH" show --json "$id"
        [[ "$(echo "$output" | jq -r '.files[] | select(.path == ".git/config") | .protected')" == "git runs"* ]]
        [ "$(echo "$output" | jq -r '.files[] | select(.path == "b.txt") | has("protected")')" = false ]
}

@test "case does not hide a protected path, and a symlink into .git counts" {
        run "$HUTCH" run -q --workdir "$R" -- sh -c \
                'mkdir .VSCode && echo "{}" > .VSCode/tasks.json && ln -s ../.git/hooks docs-hooks-x && mkdir d && ln -s ../.git/hooks d/h && echo ok > ok.txt'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  .VSCode/tasks.json: VS Code"* ]]
        [[ "$output" == *"protected  d/h: symlink to a protected path"* ]]
        [ ! -e "$R/ok.txt" ] && [ ! -e "$R/.VSCode" ]
}

@test "a git repository under another name counts as .git: one the job lays out, and one already there" {
        # a bare repository the job builds in docs/: git runs its
        # core.pager as the user at the next git log in docs/
        run "$HUTCH" run -q --workdir "$R" -- sh -c 'mkdir -p docs/objects docs/refs/heads &&
                echo "ref: refs/heads/main" > docs/HEAD && touch docs/refs/heads/.keep docs/objects/.keep &&
                printf "[core]\n\tbare = true\n\tpager = touch pwned\n" > docs/config && echo ok > ok.txt'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  docs/config: a git repository without the name .git"* ]]
        [ ! -e "$R/ok.txt" ] && [ ! -e "$R/docs" ]
        # and the diff a reviewer reads says so first
        run "$HUTCH" diff "$id"
        [[ "${lines[0]}" == "PROTECTED: "* ]]
        # one the directory has already: only its config changes
        git init -q --bare "$R/vendor/fixture"
        make_tree "$R"
        run "$HUTCH" run -q --workdir "$R" -- sh -c 'printf "[core]\n\tfsmonitor = touch pwned\n" >> vendor/fixture/config'
        [ "$status" -eq 0 ]
        run "$HUTCH" apply "$(last_run_id)"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  vendor/fixture/config: a git repository without the name .git"* ]]
        # a config/ and a refs/ of a project are not a repository
        run "$HUTCH" run -q --workdir "$R" -- sh -c 'mkdir -p site/refs && echo x > site/config && echo y > site/refs/r'
        [ "$status" -eq 0 ]
        run "$HUTCH" apply "$(last_run_id)"
        [ "$status" -eq 0 ]
        [ -e "$R/site/config" ]
}

@test "hook directories core.hooksPath points at, and home start files beyond the shells', are protected" {
        local f
        for f in .husky/pre-commit .githooks/pre-commit lefthook.yml .bash_aliases .config/git/config \
                .config/fish/config.fish .config/autostart/x.desktop .aws/config .docker/config.json .cargo/config.toml; do
                run "$HUTCH" run -q --workdir "$R" -- sh -c "mkdir -p \"\$(dirname $f)\" && echo x > $f"
                [ "$status" -eq 0 ]
                run "$HUTCH" apply "$(last_run_id)"
                [ "$status" -eq 1 ]
                [[ "$output" == *"protected  $f: "* ]]
                [ ! -e "$R/$f" ]
        done
}

@test "a profile's [apply] protect adds paths; it cannot be emptied by a profile outside the trusted dirs" {
        p="$BATS_TEST_TMPDIR/prot.ini"
        printf '[apply]\nprotect = deploy/*.sh\n' > "$p"
        run "$HUTCH" run -q -p "$p" --workdir "$R" -- sh -c 'mkdir deploy && echo x > deploy/go.sh && echo ok > ok.txt'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        run "$HUTCH" apply "$id"
        [ "$status" -eq 1 ]
        [[ "$output" == *"protected  deploy/go.sh: matches [apply] protect"* ]]
        [ ! -e "$R/ok.txt" ]
        printf '[apply]\nprotect = secret\n' > "$BATS_TEST_TMPDIR/base.ini"
        printf 'extends = %s\n[apply]\nprotect =\n' "$BATS_TEST_TMPDIR/base.ini" > "$p"
        run "$HUTCH" run -q -p "$p" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"removing apply protections"* ]]
}
