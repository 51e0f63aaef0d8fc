#!/usr/bin/env bats
# profile.bats - `hutch profile list` and `hutch profile show` against the
# shipped profiles ($HUTCH_PROFILE_PATH, set by make check), with a private
# $XDG_CONFIG_HOME so the user's own profiles stay out of it.

setup() {
        : "${HUTCH:?run through make check, or set HUTCH and HUTCH_PROFILE_PATH}"
        export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
        USER_DIR="$XDG_CONFIG_HOME/hutch/profiles"
        # show prints resolved paths (symlinks and .. gone)
        SHIPPED="$(realpath "$HUTCH_PROFILE_PATH")"
        mkdir -p "$USER_DIR"
        cd "$BATS_TEST_TMPDIR"
}

@test "profile list shows every shipped profile with its file and description" {
        run "$HUTCH" profile list
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" =~ ^NAME\ +FILE\ +DESCRIPTION$ ]]
        for p in bash ci default node python strict untrusted; do
                [[ "$output" =~ $'\n'"$p "+"$HUTCH_PROFILE_PATH/$p.ini "+[A-Z] ]]
        done
        [ "${#lines[@]}" -eq 8 ]
}

@test "profile list: a user profile shadows the shipped one of the same name" {
        printf 'description = mine\n' > "$USER_DIR/python.ini"
        run "$HUTCH" profile list
        [ "$status" -eq 0 ]
        [[ "$output" =~ python\ +$USER_DIR/python.ini\ +mine ]]
}

@test "profile show resolves extends and says where each value came from" {
        run "$HUTCH" profile show python
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "; profile python: $SHIPPED/python.ini" ]]
        [[ "${lines[1]}" == "; extends $SHIPPED/default.ini" ]]
        [[ "$output" =~ $'\n'"memory = 1G "+"; python.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"pids = 256 "+"; default.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"PYTHONUNBUFFERED = 1 "+"; python.ini:"[0-9]+$'\n' ]]
        [[ "$output" =~ $'\n'"mode = none "+"; default.ini:"[0-9]+$'\n' ]]
}

@test "profile show: command-line overrides win and are marked" {
        run "$HUTCH" profile show python --memory 2G --env EXTRA=1 --ro /srv
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"memory = 2G "+"; command line"$'\n' ]]
        [[ "$output" =~ $'\n'"EXTRA = 1 "+"; command line"$'\n' ]]
        [[ "$output" =~ $'\n'"ro = /srv "+"; command line"$'\n' ]]
}

@test "profile show with no name shows the default profile" {
        run "$HUTCH" profile show
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "; profile default: $SHIPPED/default.ini" ]]
        [[ "$output" =~ $'\n'"timeout = 30s " ]]
        [[ "$output" =~ $'\n'"memory = 512M " ]]
        [[ "$output" =~ $'\n'"cpus = 1 " ]]
        [[ "$output" =~ $'\n'"disk = 1G " ]]
        [[ "$output" =~ $'\n'"capture = 64K " ]]
}

@test "profile show --sha256 is the sha256 of --canonical, and the canonical text reads back" {
        run "$HUTCH" profile show --sha256 strict --cpus 0.25
        [ "$status" -eq 0 ]
        sha="$output"
        [[ "$sha" =~ ^[0-9a-f]{64}$ ]]
        "$HUTCH" profile show --canonical strict --cpus 0.25 > canonical.ini
        [ "$(sha256sum < canonical.ini | cut -d' ' -f1)" = "$sha" ]
        run "$HUTCH" profile show --sha256 canonical.ini
        [ "$status" -eq 0 ]
        [ "$output" = "$sha" ]
        grep -qx 'cpus = 0.25' canonical.ini
        ! grep -q extends canonical.ini
}

@test "profile show: a bad value is one line naming file:line, exit 125" {
        printf '[limits]\nmemory = lots\n' > bad.ini
        run "$HUTCH" profile show bad.ini
        [ "$status" -eq 125 ]
        [ "$output" = 'hutch: profile bad.ini:2: memory: expected a size like 512M or none, got "lots"' ]
}

@test "profile show: unknown section, unknown key, duplicate key" {
        printf '# x\n[limit]\n' > a.ini
        run "$HUTCH" profile show a.ini
        [ "$status" -eq 125 ]
        [[ "$output" == "hutch: profile a.ini:2: unknown section [limit] "* ]]

        printf '[limits]\nmemroy = 1G\n' > b.ini
        run "$HUTCH" profile show b.ini
        [ "$status" -eq 125 ]
        [ "$output" = "hutch: profile b.ini:2: memroy: unknown key in [limits]" ]

        printf '[limits]\npids = 1\npids = 2\n' > c.ini
        run "$HUTCH" profile show c.ini
        [ "$status" -eq 125 ]
        [ "$output" = "hutch: profile c.ini:3: pids: duplicate key (first set on line 2)" ]
}

@test "profile show: missing extends target and cycles" {
        printf 'extends = nosuch\n' > "$USER_DIR/orphan.ini"
        run "$HUTCH" profile show orphan
        [ "$status" -eq 125 ]
        [[ "$output" == 'hutch: profile orphan.ini:1: extends: no profile named "nosuch" (looked in '* ]]

        printf 'extends = two\n' > "$USER_DIR/one.ini"
        printf 'extends = one\n' > "$USER_DIR/two.ini"
        run "$HUTCH" profile show one
        [ "$status" -eq 125 ]
        [ "$output" = "hutch: profile two.ini:1: extends: cycle: one -> two -> one" ]
}

@test "profile show: rw only from trusted directories" {
        printf '[filesystem]\nrw = /srv\n' > rw.ini
        run "$HUTCH" profile show rw.ini
        [ "$status" -eq 125 ]
        [[ "$output" == "hutch: profile rw.ini:2: rw: writable binds: refused from a profile outside the trusted directories ("* ]]

        cp rw.ini "$USER_DIR/rw.ini"
        run "$HUTCH" profile show rw
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"rw = /srv "+"; rw.ini:2"$'\n' ]]
}

@test "profile show: a user profile can extend the shipped one of its own name" {
        printf 'extends = python\n[limits]\npids = 7\n' > "$USER_DIR/python.ini"
        run "$HUTCH" profile show python
        [ "$status" -eq 0 ]
        [[ "$output" =~ $'\n'"pids = 7 "+"; python.ini:3"$'\n' ]]
        [[ "$output" =~ $'\n'"memory = 1G "+"; $HUTCH_PROFILE_PATH/python.ini:"[0-9]+$'\n' ]]
}

@test "profile show: bad command-line values and unknown profiles" {
        run "$HUTCH" profile show --memory lots
        [ "$status" -eq 125 ]
        [ "$output" = 'hutch: --memory: expected a size like 512M or none, got "lots"' ]

        run "$HUTCH" profile show nosuch
        [ "$status" -eq 125 ]
        [[ "$output" == 'hutch: profile "nosuch" not found (looked in '* ]]

        run "$HUTCH" profile show --no-such-flag
        [ "$status" -eq 2 ]

        run "$HUTCH" profile show a b
        [ "$status" -eq 2 ]
}

@test "profile --help, and the verb is listed by hutch --help" {
        run "$HUTCH" profile --help
        [ "$status" -eq 0 ]
        [[ "$output" =~ "hutch profile list" ]]
        [[ "$output" =~ "hutch profile show" ]]
        run "$HUTCH" profile show --help
        [ "$status" -eq 0 ]
        run "$HUTCH" profile frobnicate
        [ "$status" -eq 2 ]
        run "$HUTCH" --help
        [[ "$output" =~ "profile" ]]
}
