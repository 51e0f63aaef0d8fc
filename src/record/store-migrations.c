/* store-migrations.c - the schema's history (see store-internal.h):
 * migrations[i] takes a database from version i to i+1. Migrations are
 * only ever appended, and each must be idempotent when run statement by
 * statement (store.c's run_migration(): CREATEs say IF NOT EXISTS, an
 * ADD COLUMN already there is skipped). store.c's schema_columns names
 * the columns the last of them leaves.
 */
#include "config.h"

#include "record/store.h"
#include "record/store-internal.h"
#include "lib/util.h"

static const char *const migrations[] = {
        /* 0 -> 1: the initial schema */
        "CREATE TABLE IF NOT EXISTS runs (\n"
        "        id TEXT PRIMARY KEY NOT NULL,\n"
        "        argv TEXT NOT NULL,\n"
        "        cwd TEXT,\n"
        "        profile TEXT,\n"
        "        status TEXT NOT NULL,\n"
        "        exit_code INTEGER,\n"
        "        signal INTEGER,\n"
        "        message TEXT,\n"
        "        started_at INTEGER NOT NULL,\n"
        "        finished_at INTEGER,\n"
        "        duration_ms INTEGER,\n"
        "        cpu_user_ms INTEGER,\n"
        "        cpu_sys_ms INTEGER,\n"
        "        peak_memory_bytes INTEGER,\n"
        "        stdout BLOB,\n"
        "        stderr BLOB,\n"
        "        stdout_bytes INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_bytes INTEGER NOT NULL DEFAULT 0,\n"
        "        stdout_lines INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_lines INTEGER NOT NULL DEFAULT 0,\n"
        "        stdout_truncated INTEGER NOT NULL DEFAULT 0,\n"
        "        stderr_truncated INTEGER NOT NULL DEFAULT 0,\n"
        "        limits TEXT,\n"
        "        enforcement TEXT,\n"
        "        supervisor_pid INTEGER,\n"
        "        supervisor_start INTEGER,\n"
        "        heartbeat_at INTEGER\n"
        ");\n"
        "CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at, id);\n",

        /* 1 -> 2: what sessions, idempotency, rerun and profile provenance
         * need, and an index for `ls --status` */
        "ALTER TABLE runs ADD COLUMN session TEXT;\n"
        "ALTER TABLE runs ADD COLUMN idempotency_key TEXT;\n"
        "ALTER TABLE runs ADD COLUMN rerun_of TEXT;\n"
        "ALTER TABLE runs ADD COLUMN profile_text TEXT;\n"
        "ALTER TABLE runs ADD COLUMN profile_sha256 TEXT;\n"
        "CREATE UNIQUE INDEX IF NOT EXISTS runs_idempotency_key ON runs(idempotency_key)\n"
        "        WHERE idempotency_key IS NOT NULL;\n"
        "CREATE INDEX IF NOT EXISTS runs_session ON runs(session, started_at) WHERE session IS NOT NULL;\n"
        "CREATE INDEX IF NOT EXISTS runs_status ON runs(status, started_at);\n",

        /* 2 -> 3: the code of a --lang run, so `hutch rerun` can repeat it */
        "ALTER TABLE runs ADD COLUMN lang TEXT;\n"
        "ALTER TABLE runs ADD COLUMN code BLOB;\n",

        /* 3 -> 4: what a run changed and left behind (workspace change
         * sets, artifacts) and where its workspace came from; rows go
         * with their run */
        "CREATE TABLE IF NOT EXISTS files (\n"
        "        run_id TEXT NOT NULL,\n"
        "        path TEXT NOT NULL,\n"
        "        kind TEXT NOT NULL,\n"
        "        size INTEGER,\n"
        "        mode INTEGER,\n"
        "        sha256 TEXT,\n"
        "        old_mode INTEGER,\n"
        "        old_sha256 TEXT,\n"
        "        link_target TEXT,\n"
        "        skip TEXT,\n"
        "        mime TEXT,\n"
        "        PRIMARY KEY (run_id, kind, path)\n"
        ");\n"
        "CREATE INDEX IF NOT EXISTS files_sha256 ON files(sha256) WHERE sha256 IS NOT NULL;\n"
        "CREATE TABLE IF NOT EXISTS run_workspace (\n"
        "        run_id TEXT PRIMARY KEY NOT NULL,\n"
        "        workdir TEXT,\n"
        "        session TEXT\n"
        ");\n"
        "CREATE TRIGGER IF NOT EXISTS runs_delete_files AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM files WHERE run_id = old.id;\n"
        "        DELETE FROM run_workspace WHERE run_id = old.id;\n"
        "END;\n",

        /* 4 -> 5: whether a run's files were recorded in full: the error
         * that stopped their collection, and how many were skipped
         * without a row of their own (over the caps), so a record never
         * claims more than happened */
        "CREATE TABLE IF NOT EXISTS run_files_summary (\n"
        "        run_id TEXT PRIMARY KEY NOT NULL,\n"
        "        error TEXT,\n"
        "        unlisted INTEGER NOT NULL DEFAULT 0\n"
        ");\n"
        "CREATE TRIGGER IF NOT EXISTS runs_delete_files_summary AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM run_files_summary WHERE run_id = old.id;\n"
        "END;\n",

        /* 5 -> 6: a record that tells on itself. output_lost says why a
         * run's output is not stored (the final update did not fit, see
         * store_run_finish()); the sha256 of each stored output stream
         * lets a reader tell stored bytes from damaged ones. NULL on
         * older rows: nothing to check. */
        "ALTER TABLE runs ADD COLUMN output_lost TEXT;\n"
        "ALTER TABLE runs ADD COLUMN stdout_sha256 TEXT;\n"
        "ALTER TABLE runs ADD COLUMN stderr_sha256 TEXT;\n",

        /* 6 -> 7: the egress decisions of `network = allow` runs (one
         * row per connection or DNS answer); rows go with their run */
        "CREATE TABLE IF NOT EXISTS connections (\n"
        "        run_id TEXT NOT NULL,\n"
        "        seq INTEGER NOT NULL,\n"
        "        time INTEGER,\n"
        "        proto TEXT NOT NULL,\n"
        "        pid INTEGER,\n"
        "        dest TEXT,\n"
        "        sni TEXT,\n"
        "        host TEXT,\n"
        "        name TEXT,\n"
        "        resolved TEXT,\n"
        "        decision TEXT,\n"
        "        rule TEXT,\n"
        "        reason TEXT,\n"
        "        bytes_out INTEGER,\n"
        "        bytes_in INTEGER,\n"
        "        duration_ms INTEGER,\n"
        "        end_reason TEXT,\n"
        "        dropped INTEGER,\n"
        "        PRIMARY KEY (run_id, seq)\n"
        ");\n"
        "CREATE TRIGGER IF NOT EXISTS runs_delete_connections AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM connections WHERE run_id = old.id;\n"
        "END;\n",

        /* 7 -> 8: a run's labels (--label K=V), for `ls --label`, ps and
         * stats; one row per key, gone with their run */
        "CREATE TABLE IF NOT EXISTS run_labels (\n"
        "        run_id TEXT NOT NULL,\n"
        "        key TEXT NOT NULL,\n"
        "        value TEXT NOT NULL,\n"
        "        PRIMARY KEY (run_id, key)\n"
        ");\n"
        "CREATE INDEX IF NOT EXISTS run_labels_kv ON run_labels(key, value);\n"
        "CREATE TRIGGER IF NOT EXISTS runs_delete_labels AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM run_labels WHERE run_id = old.id;\n"
        "END;\n",

        /* 8 -> 9: a change whose lower (host) version changed while the job
         * ran, so what it started from is not known and apply refuses it
         * unless told to overwrite */
        "ALTER TABLE files ADD COLUMN lower_changed INTEGER NOT NULL DEFAULT 0;\n",

        /* 9 -> 10: where an imported run came from (`hutch import`): the
         * node that ran it and when it was imported. A run without a row
         * ran here; rows go with their run */
        "CREATE TABLE IF NOT EXISTS run_origin (\n"
        "        run_id TEXT PRIMARY KEY NOT NULL,\n"
        "        node TEXT NOT NULL,\n"
        "        imported_at INTEGER NOT NULL\n"
        ");\n"
        "CREATE INDEX IF NOT EXISTS run_origin_node ON run_origin(node);\n"
        "CREATE TRIGGER IF NOT EXISTS runs_delete_origin AFTER DELETE ON runs BEGIN\n"
        "        DELETE FROM run_origin WHERE run_id = old.id;\n"
        "END;\n",

        /* 10 -> 11: no triggers. Every connection parses the whole schema
         * on its first statement, and the five triggers above were about
         * 95,000 of the 2.7 million instructions of a `hutch run -- true`
         * supervisor, for a cascade only `hutch gc` needs. gc deletes a
         * run's rows in the other tables itself, in the transaction that
         * deletes the run, and sweeps rows whose run is gone
         * (store_delete_older_than(), store-runs.c). */
        "DROP TRIGGER IF EXISTS runs_delete_files;\n"
        "DROP TRIGGER IF EXISTS runs_delete_files_summary;\n"
        "DROP TRIGGER IF EXISTS runs_delete_connections;\n"
        "DROP TRIGGER IF EXISTS runs_delete_labels;\n"
        "DROP TRIGGER IF EXISTS runs_delete_origin;\n",

        /* 11 -> 12: whether a session run's change set was committed to
         * its session (--commit success|always|never); NULL for a run
         * without a session and for older rows */
        "ALTER TABLE run_files_summary ADD COLUMN committed INTEGER;\n",

        /* 12 -> 13: the code the job itself exited with, beside exit_code
         * (hutch's: 143 for a cancelled run whatever the job did when
         * told to stop); NULL when it did not exit and for older rows */
        "ALTER TABLE runs ADD COLUMN job_exit_code INTEGER;\n",
};

int store_current_schema_version(void)
{
        return (int)ELEMENTSOF(migrations);
}

const char *store_migration(int version)
{
        if (version < 0 || version >= store_current_schema_version())
                return NULL;
        return migrations[version];
}
