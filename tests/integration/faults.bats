#!/usr/bin/env bats
# faults.bats - the record under faults: a state dir that fills while a
# job runs, a damaged seccomp cache, damaged stored output, blobs and
# database pages, a database truncated to nothing, schema versions hutch
# never wrote, a read-only state dir, and messages that keep their
# reason. Full-disk cases run on a small tmpfs: mounted directly as
# root, and inside a user+mount namespace of its own otherwise.

load lib
bats_require_minimum_version 1.5.0

setup() {
        common_setup
        mkdir -p "$HUTCH_STATE_DIR"
}

teardown() {
        chmod -R u+w "$BATS_TEST_TMPDIR" 2>/dev/null || true
        host_dirs_cleanup
}

# Run the script $1 with a 2 MiB tmpfs mounted on $BATS_TEST_TMPDIR/small,
# as the caller's own uid (hutch refuses nothing it would do elsewhere).
with_small_tmpfs() {
        local small="$BATS_TEST_TMPDIR/small" script="$1"
        mkdir -p "$small"
        if [ "$(id -u)" -eq 0 ]; then
                unshare -m --propagation private sh -c \
                        "mount -t tmpfs -o size=2m,mode=0755 tmpfs '$small' && sh '$script'"
        else
                unshare -Urm sh -c "mount -t tmpfs -o size=2m,mode=0755 tmpfs '$small' && \
                        exec unshare -U --map-user=$(id -u) --map-group=$(id -g) sh '$script'" \
                        || skip "no user+mount namespace for a small tmpfs"
        fi
}

# python3 with the standard sqlite3 module: SQL on the store behind
# hutch's back, as damage would.
sql() {
        python3 - "$HUTCH_STATE_DIR/hutch.db" "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
for row in db.execute(sys.argv[2]):
    print(*row)
db.close()
EOF
}

@test "a state dir that fills during a run still records its outcome" {
        cat > "$BATS_TEST_TMPDIR/t.sh" <<EOF
set -u
export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/small/state"
for i in 1 2 3 4 5 6 7 8 9 10; do "$HUTCH" run -- true || exit 90; done
dd if=/dev/zero of="$BATS_TEST_TMPDIR/small/fill" bs=4k 2>/dev/null
"$HUTCH" run --json --capture 256K -- sh -c 'head -c 3000000 /dev/urandom; exit 3' \
        > "$BATS_TEST_TMPDIR/result.json" 2> "$BATS_TEST_TMPDIR/run.err"
echo "\$?" > "$BATS_TEST_TMPDIR/rc"
id=\$(jq -r .id "$BATS_TEST_TMPDIR/result.json")
"$HUTCH" show --json "\$id" > "$BATS_TEST_TMPDIR/show.json" || exit 91
"$HUTCH" gc > "$BATS_TEST_TMPDIR/gc.out" 2>&1 || exit 92
"$HUTCH" ls --status orphaned --json > "$BATS_TEST_TMPDIR/orphans.json" || exit 93
EOF
        with_small_tmpfs "$BATS_TEST_TMPDIR/t.sh"
        [ "$(cat "$BATS_TEST_TMPDIR/rc")" = 3 ]
        r="$BATS_TEST_TMPDIR/result.json" s="$BATS_TEST_TMPDIR/show.json"
        [ "$(jq -r .status "$r")" = failed ]
        [ "$(jq -r .exit_code "$r")" = 3 ]
        # the store says what --json said, and why the output is missing
        [ "$(jq -r .status "$s")" = failed ]
        [ "$(jq -r .exit_code "$s")" = 3 ]
        [ "$(jq -r .duration_ms "$s")" != null ]
        [ "$(jq -r .stdout_bytes "$s")" = 3000000 ]
        jq -r .output_lost "$s" | grep -q "No space left on device"
        [ "$(jq -r .output_lost "$r")" = "$(jq -r .output_lost "$s")" ]
        grep -q "recorded without its output" "$BATS_TEST_TMPDIR/run.err"
        run grep "cannot complete" "$BATS_TEST_TMPDIR/run.err"
        [ "$status" -eq 1 ]
        run grep orphaned "$BATS_TEST_TMPDIR/gc.out"
        [ "$status" -eq 1 ]
        [ ! -s "$BATS_TEST_TMPDIR/orphans.json" ]
}

# The cache entry of the default policy, after one run made it.
cache_entry() {
        "$HUTCH" run -- true
        ls "$HUTCH_STATE_DIR"/cache/seccomp-*.bpf
}

@test "a damaged seccomp cache body is compiled again, never loaded" {
        entry=$(cache_entry)
        size=$(stat -c %s "$entry")
        cp "$entry" "$BATS_TEST_TMPDIR/good"
        # flip bits all over the filter body, past the 120-byte header
        for off in 200 $((size / 3)) $((size / 2)) $((size - 9)); do
                printf '\x55' | dd of="$entry" bs=1 seek="$off" conv=notrunc 2>/dev/null
        done
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
        cmp "$entry" "$BATS_TEST_TMPDIR/good"   # rewritten as compiled
        [ "$(stat -c %a "$entry")" = 600 ]
        # the policy still holds: nested user namespaces are denied
        run "$HUTCH" run -- unshare -U true
        [ "$status" -ne 0 ]
        # and the debug log names the file
        printf '\x55' | dd of="$entry" bs=1 seek=300 conv=notrunc 2>/dev/null
        run "$HUTCH" run -vv -- true
        [ "$status" -eq 0 ]
        [[ "$output" == *"seccomp cache $entry"* ]]
}

@test "an edited seccomp cache header does not change what the record claims" {
        entry=$(cache_entry)
        want=$("$HUTCH" show --json "$(last_run_id)" | jq -c '.enforcement.seccomp')
        # claim 3 syscalls: 12 bytes in; in the text header older builds
        # wrote ("hutch-bpf SYSCALLS RULES"), its first number
        if [ "$(head -c 10 "$entry")" = "hutch-bpf " ]; then
                python3 -c "
import re, sys
d = open(sys.argv[1], 'rb').read()
open(sys.argv[1], 'wb').write(re.sub(rb'^hutch-bpf [0-9]+', b'hutch-bpf 3', d, count=1))
" "$entry"
        else
                printf '\x03\x00\x00\x00' | dd of="$entry" bs=1 seek=12 conv=notrunc 2>/dev/null
        fi
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
        [ "$("$HUTCH" show --json "$(last_run_id)" | jq -c '.enforcement.seccomp')" = "$want" ]
        # a header from an older hutch is a miss as well
        printf 'hutch-bpf 1 1\n' > "$entry"
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
        [ "$("$HUTCH" show --json "$(last_run_id)" | jq -c '.enforcement.seccomp')" = "$want" ]
}

@test "gc prunes seccomp cache entries no profile uses" {
        entry=$(cache_entry)
        stale="$HUTCH_STATE_DIR/cache/seccomp-$(printf '0%.0s' $(seq 64)).bpf"
        cp "$entry" "$stale"
        run "$HUTCH" gc --dry-run
        [ "$status" -eq 0 ]
        [[ "$output" == *"would delete 1 unused seccomp cache entry"* ]]
        [ -e "$stale" ]
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        [[ "$output" == *"deleted 1 unused seccomp cache entry"* ]]
        [ ! -e "$stale" ]
        [ -e "$entry" ]
}

@test "logs and show refuse stored output that does not match its checksum" {
        "$HUTCH" run -- sh -c 'echo the real output' > /dev/null
        id=$(last_run_id)
        sql "UPDATE runs SET stdout = CAST('the fake output' || char(10) AS BLOB) WHERE id = '$id'"
        for verb in logs show; do
                run "$HUTCH" "$verb" "$id"
                [ "$status" -eq 3 ]
                [[ "$output" == *"stored stdout does not match its checksum"* ]]
                [[ "$output" != *"fake"* ]]
        done
        run "$HUTCH" ls
        [ "$status" -eq 0 ]
}

@test "cp refuses an artifact whose blob was changed" {
        run "$HUTCH" run -- sh -c 'mkdir -p output && echo artifact > output/a.txt'
        [ "$status" -eq 0 ]
        id=$(last_run_id)
        blob=$(find "$HUTCH_STATE_DIR/blobs" -type f ! -name '.*' | head -n 1)
        [ -n "$blob" ]
        chmod u+w "$blob"
        echo tampered > "$blob"
        run "$HUTCH" cp "$id:a.txt" -
        [ "$status" -eq 3 ]
        [[ "$output" == *"does not match its checksum"* ]]
        [[ "$output" != *tampered* ]]
        run "$HUTCH" cp "$id:a.txt" "$BATS_TEST_TMPDIR/a.txt"
        [ "$status" -eq 3 ]
        [ ! -e "$BATS_TEST_TMPDIR/a.txt" ]
}

@test "damaged database pages are found by gc and doctor" {
        for i in $(seq 30); do "$HUTCH" run -- sh -c 'seq 1 2000' > /dev/null; done
        sql "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
        size=$(stat -c %s "$HUTCH_STATE_DIR/hutch.db")
        # junk over every page but the schema's (page 1, and the pages its
        # b-tree spread to once it outgrew one)
        keep=$(sql "SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'" | tr '\n' ' ')
        python3 -c "
import sys
keep = {1} | {int(p) for p in sys.argv[2].split()}
with open(sys.argv[1], 'r+b') as f:
    for off in range(4096, $size, 4096):
        if off // 4096 + 1 not in keep:
            f.seek(off); f.write(b'\x5a' * 4096)
" "$HUTCH_STATE_DIR/hutch.db" "$keep"
        run "$HUTCH" gc
        [ "$status" -eq 3 ]
        [[ "$output" == *"is damaged (quick_check:"* ]]
        [[ "$output" == *"nothing was changed"* ]]
        run "$HUTCH" doctor
        [[ "$output" == *"run store"*"damaged (quick_check:"* ]]
}

@test "after an unclean shutdown a damaged store is not written into" {
        for i in $(seq 30); do "$HUTCH" run -- sh -c 'seq 1 2000' > /dev/null; done
        sql "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
        python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(8192); f.write(b'\x5a' * 8192)
" "$HUTCH_STATE_DIR/hutch.db"
        # as a supervisor killed with the store open leaves it
        printf 1 > "$HUTCH_STATE_DIR/hutch.db-open"
        before=$(sha256sum < "$HUTCH_STATE_DIR/hutch.db")
        run "$HUTCH" run -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"the database is damaged (quick_check:"* ]]
        [ "$(sha256sum < "$HUTCH_STATE_DIR/hutch.db")" = "$before" ]
}

@test "the job runs only once its row is written, though its process was set up before" {
        command -v python3 >/dev/null || skip "python3 not installed"
        # the job's process is made and set up while the supervisor writes
        # the record, then waits for "start": with the store's write lock
        # held elsewhere for a while, the job must not run until it is let go
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run -- true
        python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").write("held")
time.sleep(1.5)
t = time.time()
c.execute("ROLLBACK")
open(sys.argv[3], "w").write("%.6f" % t)
' "$HUTCH_STATE_DIR/hutch.db" "$BATS_TEST_TMPDIR/held" "$BATS_TEST_TMPDIR/released" &
        locker=$!
        for i in $(seq 100); do [ -e "$BATS_TEST_TMPDIR/held" ] && break; sleep 0.05; done
        [ -e "$BATS_TEST_TMPDIR/held" ]
        run "$HUTCH" run --rw "$d" -- sh -c "date +%s.%N > $d/ran"
        wait "$locker"
        [ "$status" -eq 0 ]
        python3 -c 'import sys; ran, rel = (float(open(p).read()) for p in sys.argv[1:]); sys.exit(0 if ran > rel else 1)' \
                "$d/ran" "$BATS_TEST_TMPDIR/released"
}

@test "a run that cannot be recorded never runs its job" {
        d=$(host_dir)
        chmod 777 "$d"
        "$HUTCH" run -- true
        printf 'this is not a database, just some bytes that look like none%.0s' $(seq 200) \
                > "$HUTCH_STATE_DIR/hutch.db"
        rm -f "$HUTCH_STATE_DIR/hutch.db-wal" "$HUTCH_STATE_DIR/hutch.db-shm"
        run "$HUTCH" run --rw "$d" -- sh -c "echo ran > $d/marker"
        [ "$status" -eq 125 ]
        [ ! -e "$d/marker" ]
}

@test "a broken WAL loses at most what was not checkpointed, and the store stays usable" {
        for i in $(seq 10); do "$HUTCH" run -- true; done
        sql "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
        for i in 1 2 3; do "$HUTCH" run -- true; done
        wal="$HUTCH_STATE_DIR/hutch.db-wal"
        [ -s "$wal" ]
        # junk over the frames after the WAL header
        python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(32 + 24); f.write(b'\x5a' * 4096)
" "$wal"
        run "$HUTCH" ls --json
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -ge 10 ]
        run "$HUTCH" gc
        [ "$status" -eq 0 ]
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
}

@test "a store truncated to nothing is reported, not silently replaced" {
        for i in 1 2 3; do "$HUTCH" run -- true; done
        [ -s "$HUTCH_STATE_DIR/hutch.db-wal" ]
        : > "$HUTCH_STATE_DIR/hutch.db"
        for verb in ls "run -- true"; do
                run "$HUTCH" $verb
                [ "$status" -eq 125 ]
                [[ "$output" == *"the database is empty"*"the history was lost or truncated"* ]]
        done
        [ ! -s "$HUTCH_STATE_DIR/hutch.db" ]
}

@test "schema versions hutch never wrote get one line with the version and what to do" {
        "$HUTCH" run -- true
        sql "PRAGMA user_version = -3"
        run "$HUTCH" ls
        [ "$status" -eq 125 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"schema version -3"*"restore the database from a backup or move it away"* ]]
        sql "PRAGMA user_version = 99"
        run "$HUTCH" run -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"schema version 99 is newer"*"upgrade hutch"* ]]
        # set back to an older version: migrating again is harmless
        sql "PRAGMA user_version = 1"
        run "$HUTCH" run -- true
        [ "$status" -eq 0 ]
        [ "$("$HUTCH" ls --json | wc -l)" -eq 2 ]
}

# Make the state dir read-only: a read-only bind mount as root (root
# writes through modes), the modes otherwise. Then run script $1.
readonly_state() {
        local st="$HUTCH_STATE_DIR" script="$1"
        if [ "$(id -u)" -eq 0 ]; then
                unshare -m --propagation private sh -c \
                        "mount --bind '$st' '$st' && mount -o remount,bind,ro '$st' && sh '$script'"
        else
                chmod -R a-w "$st"
                sh "$script"
        fi
}

@test "a read-only state dir can still be read" {
        "$HUTCH" run -- sh -c 'echo kept; mkdir -p output; echo art > output/a.txt' > /dev/null
        id=$(last_run_id)
        for wal in keep drop; do
                if [ "$wal" = drop ]; then
                        # fold the WAL in: no -wal or -shm left, and none can be made
                        sql "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
                        rm -f "$HUTCH_STATE_DIR/hutch.db-wal" "$HUTCH_STATE_DIR/hutch.db-shm"
                fi
                cat > "$BATS_TEST_TMPDIR/ro.sh" <<EOF
set -e
"$HUTCH" ls | grep -q "${id:0:12}"
"$HUTCH" show "$id" | grep -q kept
"$HUTCH" logs "$id" | grep -q kept
"$HUTCH" cp "$id:a.txt" - | grep -q art
"$HUTCH" gc --dry-run > /dev/null
"$HUTCH" stats --json | grep -q '"runs"'
"$HUTCH" ps > /dev/null
echo all-read
EOF
                run readonly_state "$BATS_TEST_TMPDIR/ro.sh"
                echo "$output"
                [ "$status" -eq 0 ]
                [[ "$output" == *all-read* ]]
                [[ "$output" != *"readonly database"* ]]
                chmod -R u+w "$HUTCH_STATE_DIR"
        done
}

@test "a long state-dir path does not cut the reason off a message" {
        long="$BATS_TEST_TMPDIR/$(printf 'd%.0s' $(seq 200))"
        deep="$long/$(printf 'e%.0s' $(seq 200))/$(printf 'f%.0s' $(seq 200))/$(printf 'g%.0s' $(seq 200))"
        deep="$deep/$(printf 'h%.0s' $(seq 200))/$(printf 'i%.0s' $(seq 200))/$(printf 'j%.0s' $(seq 200))"
        deep="$deep/$(printf 'k%.0s' $(seq 200))/$(printf 'l%.0s' $(seq 200))/$(printf 'm%.0s' $(seq 200))"
        deep="$deep/$(printf 'n%.0s' $(seq 200))"
        mkdir -p "$deep"
        printf 'junk' > "$deep/hutch.db"
        HUTCH_STATE_DIR="$deep" run "$HUTCH" ls
        [ "$status" -eq 125 ]
        # the path alone is longer than the old 2048-byte cut; the
        # reason still ends the line
        [ "${#output}" -gt 2048 ]
        [[ "$output" == *"$deep/hutch.db: unable to open database file" ]]
}

@test "job-controlled bytes in messages are escaped" {
        run -127 "$HUTCH" run -- $'no\nsuch\x1b[2Jcommand'
        [ "$status" -eq 127 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" != *$'\x1b'* ]]
        [[ "$output" == *'no\nsuch\x1b[2Jcommand'* ]]
}
