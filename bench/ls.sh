#!/bin/sh
# bench/ls.sh - how fast `hutch ls` is over a large history.
#
# Fills a fresh store with N runs (default 100000) straight through
# sqlite3 (the schema comes from hutch itself: `hutch ls` creates and migrates
# the database first), then times `hutch ls --limit 20` and `hutch ls --json`
# (all rows, JSON lines) over it, best and median of R rounds.
#
# Usage: bench/ls.sh [N] [ROUNDS]     HUTCH=path/to/hutch (default src/hutch)
set -eu

N=${1:-100000}
ROUNDS=${2:-5}
HUTCH=${HUTCH:-$(dirname "$0")/../src/hutch}
command -v sqlite3 >/dev/null || { echo "bench/ls.sh: needs the sqlite3 command (apt-get install sqlite3)" >&2; exit 1; }

HUTCH_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-ls.XXXXXX")
export HUTCH_STATE_DIR
trap 'rm -rf "$HUTCH_STATE_DIR"' EXIT INT TERM
DB=$HUTCH_STATE_DIR/hutch.db

"$HUTCH" ls >/dev/null
now_ms=$(($(date +%s) * 1000))
# ids: "01J" + 7 + 16 digits = 26 Crockford characters, increasing with i;
# one run every 10 s going back from now; a mix of statuses and outputs
sqlite3 "$DB" <<SQL
PRAGMA synchronous = OFF;
BEGIN;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < $N)
INSERT INTO runs (id, argv, cwd, profile, status, exit_code, message, started_at,
                  finished_at, duration_ms, cpu_user_ms, cpu_sys_ms, peak_memory_bytes,
                  stdout, stderr, stdout_bytes, stderr_bytes, stdout_lines, stderr_lines,
                  limits, enforcement, supervisor_pid, supervisor_start, heartbeat_at)
SELECT printf('01J%07d%016d', n, n),
       '["python3","-c","print(' || n || ')"]', '/home/bench/project', 'python',
       CASE n % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'timeout' ELSE 'success' END,
       CASE n % 10 WHEN 0 THEN 1 WHEN 1 THEN NULL ELSE 0 END,
       NULL,
       $now_ms - ($N - n) * 10000, $now_ms - ($N - n) * 10000 + 120, 120, 80, 10, 12582912,
       CAST(printf('%d' || char(10), n) AS BLOB), NULL, length(printf('%d', n)) + 1, 0, 1, 0,
       '{"timeout_ms":30000,"memory_bytes":536870912}', '{"memory":"cgroup"}',
       1, 1, $now_ms - ($N - n) * 10000 + 120
FROM i;
COMMIT;
SQL

median_and_best() {
        sort -n | awk '{ v[NR] = $1 } END { printf "median %.1f ms, best %.1f ms\n", v[int((NR + 1) / 2)], v[1] }'
}
time_cmd() {
        i=0
        while [ $i -lt "$ROUNDS" ]; do
                s=$(date +%s%N)
                "$@" >/dev/null
                e=$(date +%s%N)
                echo "$(( (e - s) / 1000 ))" | awk '{ print $1 / 1000 }'
                i=$((i + 1))
        done | median_and_best
}

echo "store: $N runs, $(du -h "$DB" | cut -f1)"
printf 'hutch ls --limit 20:  '; time_cmd "$HUTCH" ls --limit 20
printf 'hutch ls --json:      '; time_cmd "$HUTCH" ls --json
printf 'hutch ls --status failed --limit 20:  '; time_cmd "$HUTCH" ls --status failed --limit 20
echo "json lines: $("$HUTCH" ls --json | wc -l)"
