#!/usr/bin/env bats
# profile.bats - `sbx profile list` and `sbx profile show` against the
# shipped profiles ($SBX_PROFILE_PATH, set by make check), with a private
# $XDG_CONFIG_HOME so the user's own profiles stay out of it.

setup() {
        : "${SBX:?run through make check, or set SBX and SBX_PROFILE_PATH}"
        export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
        USER_DIR="$XDG_CONFIG_HOME/sbx/profiles"
        # show prints resolved paths (symlinks and .. gone)
        SHIPPED="$(realpath "$SBX_PROFILE_PATH")"
        mkdir -p "$USER_DIR"
        cd "$BATS_TEST_TMPDIR"
}

@test "profile list shows every shipped profile with its file and description" {
        run "$SBX" profile list
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" =~ ^NAME\ +FILE\ +DESCRIPTION$ ]]
        for p in bash ci default node python strict; do
                [[ "$output" =~ $'\n'"$p "+"$SBX_PROFILE_PATH/$p.ini "+[A-Z] ]]
        done
        [ "${#lines[@]}" -eq 7 ]
}

@test "profile list: a user profile shadows the shipped one of the same name" {
        printf 'description = mine\n' > "$USER_DIR/python.ini"
        run "$SBX" profile list
        [ "$status" -eq 0 ]
        [[ "$output" =~ python\ +$USER_DIR/python.ini\ +mine ]]
}

@test "profile show resolves extends and says where each value came from" {
        run "$SBX" profile show python
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "; profile python: $SHIPPED/python.ini" ]]
        [[ "${lines[1]}" == "; extends $SHIPPED/default.ini" ]]
        [[ "$output" =~ $'\n'"memory = 1G "+"; python.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"pids = 256 "+"; default.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"PYTHONUNBUFFERED = 1 "+"; python.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"mode = none "+"; default.ini:"[0-9]+$'\n' ]]
}

@test "profile show: command-line overrides win and are marked" {
        run "$SBX" profile show python --memory 2G --env EXTRA=1 --ro /srv
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"memory = 2G "+"; command line"$'\n' ]]
        [[ "$output" =~ $'\n'"EXTRA = 1 "+"; command line"$'\n' ]]
        [[ "$output" =~ $'\n'"ro = /srv "+"; command line"$'\n' ]]
}

@test "profile show with no name shows the default profile" {
        run "$SBX" profile show
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "; profile default: $SHIPPED/default.ini" ]]
        [[ "$output" =~ $'\n'"timeout = 30s " ]]
        [[ "$output" =~ $'\n'"memory = 512M " ]]
        [[ "$output" =~ $'\n'"cpus = 1 " ]]
        [[ "$output" =~ $'\n'"disk = 1G " ]]
        [[ "$output" =~ $'\n'"capture = 64K " ]]
}

@test "profile show --sha256 is the sha256 of --canonical, and the canonical text reads back" {
        run "$SBX" profile show --sha256 strict --cpus 0.25
        [ "$status" -eq 0 ]
        sha="$output"
        [[ "$sha" =~ ^[0-9a-f]{64}$ ]]
        "$SBX" profile show --canonical strict --cpus 0.25 > canonical.ini
        [ "$(sha256sum < canonical.ini | cut -d' ' -f1)" = "$sha" ]
        run "$SBX" profile show --sha256 canonical.ini
        [ "$status" -eq 0 ]
        [ "$output" = "$sha" ]
        grep -qx 'cpus = 0.25' canonical.ini
        ! grep -q extends canonical.ini
}

@test "profile show: a bad value is one line naming file:line, exit 125" {
        printf '[limits]\nmemory = lots\n' > bad.ini
        run "$SBX" profile show bad.ini
        [ "$status" -eq 125 ]
        [ "$output" = 'sbx: profile bad.ini:2: memory: expected a size like 512M or none, got "lots"' ]
}

@test "profile show: unknown section, unknown key, duplicate key" {
        printf '# x\n[limit]\n' > a.ini
        run "$SBX" profile show a.ini
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx: profile a.ini:2: unknown section [limit] "* ]]

        printf '[limits]\nmemroy = 1G\n' > b.ini
        run "$SBX" profile show b.ini
        [ "$status" -eq 125 ]
        [ "$output" = "sbx: profile b.ini:2: memroy: unknown key in [limits]" ]

        printf '[limits]\npids = 1\npids = 2\n' > c.ini
        run "$SBX" profile show c.ini
        [ "$status" -eq 125 ]
        [ "$output" = "sbx: profile c.ini:3: pids: duplicate key (first set on line 2)" ]
}

@test "profile show: missing extends target and cycles" {
        printf 'extends = nosuch\n' > "$USER_DIR/orphan.ini"
        run "$SBX" profile show orphan
        [ "$status" -eq 125 ]
        [[ "$output" == 'sbx: profile orphan.ini:1: extends: no profile named "nosuch" (looked in '* ]]

        printf 'extends = two\n' > "$USER_DIR/one.ini"
        printf 'extends = one\n' > "$USER_DIR/two.ini"
        run "$SBX" profile show one
        [ "$status" -eq 125 ]
        [ "$output" = "sbx: profile two.ini:1: extends: cycle: one -> two -> one" ]
}

@test "profile show: rw only from trusted directories" {
        printf '[filesystem]\nrw = /srv\n' > rw.ini
        run "$SBX" profile show rw.ini
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx: profile rw.ini:2: rw: writable binds are only honoured from profiles in trusted directories ("* ]]

        cp rw.ini "$USER_DIR/rw.ini"
        run "$SBX" profile show rw
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"rw = /srv "+"; rw.ini:2"$'\n' ]]
}

@test "profile show: a user profile can extend the shipped one of its own name" {
        printf 'extends = python\n[limits]\npids = 7\n' > "$USER_DIR/python.ini"
        run "$SBX" profile show python
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"pids = 7 "+"; python.ini:3"$'\n' ]]
        [[ "$output" =~ $'\n'"memory = 1G "+"; $SBX_PROFILE_PATH/python.ini:"[0-9]+$'\n' ]]
}

@test "profile show: bad command-line values and unknown profiles" {
        run "$SBX" profile show --memory lots
        [ "$status" -eq 125 ]
        [ "$output" = 'sbx: --memory: expected a size like 512M or none, got "lots"' ]

        run "$SBX" profile show nosuch
        [ "$status" -eq 125 ]
        [[ "$output" == 'sbx: profile "nosuch" not found (looked in '* ]]

        run "$SBX" profile show --no-such-flag
        [ "$status" -eq 2 ]

        run "$SBX" profile show a b
        [ "$status" -eq 2 ]
}

@test "profile --help, and the verb is listed by sbx --help" {
        run "$SBX" profile --help
        [ "$status" -eq 0 ]
        [[ "$output" =~ "sbx profile list" ]]
        [[ "$output" =~ "sbx profile show" ]]
        run "$SBX" profile show --help
        [ "$status" -eq 0 ]
        run "$SBX" profile frobnicate
        [ "$status" -eq 2 ]
        run "$SBX" --help
        [[ "$output" =~ "profile" ]]
}
