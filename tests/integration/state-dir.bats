#!/usr/bin/env bats
# The state dir holds every run's argv, environment and output, and the
# blobs apply installs: hutch uses it only when it is the caller's own
# and nobody else may write in it, and keeps its files private.

bats_require_minimum_version 1.5.0
load lib

setup() { common_setup; }

@test "a state dir another user owns is refused, with the fix, and left untouched" {
        if [ "$(id -u)" -eq 0 ]; then
                d="$BATS_TEST_TMPDIR/theirs"
                mkdir -m 0755 "$d"
                chown 65534:65534 "$d"
                owner=65534
        else
                # root's, not writable by us: the check must come before
                # any attempt to write there
                d=/etc
                owner=0
        fi
        for verb in "run -- true" "ls" "show x"; do
                HUTCH_STATE_DIR="$d" run $HUTCH $verb
                [ "$status" -eq 125 ]
                [[ "$output" == *"state dir $d is owned by uid $owner, not you ($(id -u)): use a directory of your own (HUTCH_STATE_DIR)"* ]]
        done
        [ ! -e "$d/hutch.db" ] && [ ! -e "$d/hutch.db-open" ] && [ ! -e "$d/blobs" ]
}

@test "a state dir others may write in is refused" {
        d="$BATS_TEST_TMPDIR/shared"
        mkdir "$d"
        for mode in 0777 0770 1777; do
                chmod "$mode" "$d"
                HUTCH_STATE_DIR="$d" run "$HUTCH" run -- true
                [ "$status" -eq 125 ]
                [[ "$output" == *"state dir $d is writable by others (mode $mode): chmod go-w $d"* ]]
                [ ! -e "$d/hutch.db" ]
        done
        chmod 0755 "$d"
        HUTCH_STATE_DIR="$d" run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
}

@test "the store's files are private whatever the umask, and older 0644 ones are narrowed" {
        w="$BATS_TEST_TMPDIR/w"
        mkdir -p "$w"
        chmod 755 "$w"
        [ "$(id -u)" -ne 0 ] || chown 65534:65534 "$w"
        umask 000
        run "$HUTCH" run -q --workdir "$w" -- sh -c 'echo data > f.txt'
        [ "$status" -eq 0 ]
        st="$HUTCH_STATE_DIR"
        [ "$(stat -c %a "$st")" = 700 ]
        for f in hutch.db hutch.db-wal hutch.db-shm hutch.db-open hutch.db-reserve; do
                echo "$f $(stat -c %a "$st/$f")"
                [ "$(stat -c %a "$st/$f")" = 600 ]
        done
        n=0
        while read -r b; do
                echo "$b $(stat -c %a "$b")"
                [ "$(stat -c %a "$b")" = 400 ]
                n=$((n + 1))
        done < <(find "$st/blobs" -type f ! -name '.*')
        [ "$n" -ge 1 ]
        [ -z "$(find "$st" -type d -perm /077)" ]
        # a store an older hutch left world-readable
        chmod 0644 "$st"/hutch.db*
        run "$HUTCH" run -q -- true
        [ "$status" -eq 0 ]
        for f in hutch.db hutch.db-wal hutch.db-shm; do
                [ "$(stat -c %a "$st/$f")" = 600 ]
        done
}
