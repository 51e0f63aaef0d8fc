/* store.h - the run history: one SQLite database per user (DESIGN §4).
 *
 * `hutch run` inserts a row (status running) before the job starts, updates
 * its heartbeat while it runs, and completes it in one transaction at the
 * end; the history verbs (ls, show, logs, gc) read it. A supervisor that
 * dies leaves a running row whose pid is gone: that run is "orphaned",
 * which ls shows and gc records. Many hutch processes use the database at
 * once: it is in WAL mode, writes take the lock up front (BEGIN
 * IMMEDIATE) and every connection waits for a busy lock instead of
 * failing.
 *
 * Errors are negative errno values; functions that talk to SQLite also
 * leave a message for store_error().
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/digest.h"
#include "record/status.h"
#include "record/ulid.h"

/* enum run_status, run_status_to_string() ("unknown" for an invalid
 * value) and run_status_from_string() come from status.h: the status is
 * what the record stores; the supervisor (supervise/) decides it. */

/* Value of an unknown number in a record (stored as NULL, shown as null
 * or "-"). */
#define RUN_UNSET UINT64_MAX

/* What was kept of one output stream. */
struct run_output {
        char *data;             /* stored bytes (head, marker, tail); owned */
        size_t len;
        uint64_t total_bytes;   /* bytes the job wrote */
        uint64_t lines;         /* lines the job wrote */
        bool truncated;         /* data leaves bytes out */
        bool damaged;           /* read back: data does not match its stored sha256 */
};

/* One row of the `runs` table. Strings and vectors are owned by the
 * record (run_record_free() frees them); any of them may be NULL. */
struct run_record {
        char id[ULID_LEN + 1];
        char **argv;            /* NULL-terminated; stored as a JSON array */
        char *cwd;              /* host directory hutch was started in */
        char *profile;          /* profile name */
        enum run_status status;
        int exit_code;          /* what `hutch run` exited with: the job's code,
                                 * 124, 125, 126, 127, 128+N, ... (exit-codes.h);
                                 * -1 while running and when orphaned */
        int signal;             /* signal that ended the job; 0: none */
        int job_exit_code;      /* the code the job itself exited with, also when a
                                 * cancel or deadline ended it (a job that traps
                                 * SIGTERM and exits 7: cancelled, exit_code 143,
                                 * job_exit_code 7); -1: it did not exit (a signal
                                 * killed it, it never ran) or it is not known */
        char *message;          /* why it ended, in words; may be NULL */
        uint64_t started_at_ms; /* ms since the epoch */
        uint64_t finished_at_ms;/* RUN_UNSET while running or when orphaned */
        uint64_t duration_ms;   /* the rest: RUN_UNSET when unknown */
        uint64_t cpu_user_ms;
        uint64_t cpu_sys_ms;
        uint64_t peak_memory_bytes;
        struct run_output out;  /* stdout */
        struct run_output err;  /* stderr */
        char *limits_json;      /* JSON object text, or NULL */
        char *enforcement_json; /* JSON object text, or NULL */
        pid_t supervisor_pid;   /* 0: unknown */
        uint64_t supervisor_start; /* field 22 of /proc/PID/stat (clock ticks since boot) */
        uint64_t heartbeat_at_ms;
        /* schema version 2 */
        char *session;
        char *idempotency_key;  /* unique among runs when set */
        char *rerun_of;         /* id of the run this one repeats */
        char *profile_text;     /* the resolved profile, as INI text */
        char *profile_sha256;   /* hex sha256 of profile_text */
        /* schema version 3 */
        char *lang;             /* --lang of the run, or NULL */
        char *code;             /* its code (bytes, NUL-terminated for convenience) */
        size_t code_len;
        /* schema version 6 */
        char *output_lost;      /* why out/err are not stored (the final update
                                 * did not fit), or NULL */
        /* Written with the final update (store_run_finish()), in its
         * transaction, and never read back into a record: how far
         * recording the run's files got (store_files_summary_get() reads
         * it back). files_summary false: no summary to write. */
        bool files_summary;
        char *files_error;
        uint64_t files_unlisted;
        int committed;          /* a session run: 1 its change set was committed
                                 * to the session, 0 not; -1 no session */
};

/* A new empty record: status running, every number RUN_UNSET (exit_code
 * -1, signal 0, pids 0). Never NULL. */
struct run_record *run_record_new(void);
/* Free rec and everything it owns; NULL is fine. Returns NULL. */
struct run_record *run_record_free(struct run_record *rec);
static inline void run_record_freep(struct run_record **rec) { run_record_free(*rec); }
#define _cleanup_run_record_ __attribute__((cleanup(run_record_freep)))
/* Free an array of n records and the array. */
void run_record_free_many(struct run_record **recs, size_t n);

/* Start a run record for this process: a fresh id (ulid_new()),
 * started_at = now, supervisor_pid = getpid() and its start time
 * (RUN_UNSET if /proc cannot tell), the heartbeat = now, status running.
 * argv/cwd/profile are copied (any may be NULL). 0 or -errno (no
 * randomness). */
int run_record_begin(struct run_record *rec, char *const *argv, const char *cwd,
                     const char *profile);

/* Start time of a process (field 22 of /proc/PID/stat, in clock ticks
 * since boot). 0, -ESRCH if the process does not exist or is a zombie, or
 * -errno. */
int proc_start_time(pid_t pid, uint64_t *ret);

/* Whether rec is a running row whose supervisor is gone: its pid does not
 * exist, is a zombie, or is now a different process (start time differs).
 * False for every other status. */
bool run_record_is_orphan(const struct run_record *rec);

/* The stable error code of a run that ended with st (hutch-json(7)):
 * the status's name, "setup_refused" for setup_error; NULL while
 * running and for success. */
const char *run_status_error_code(enum run_status st);

/* The JSON view of a run (schema "hutch.result/1"): the fields id, status,
 * exit_code, signal, message, error_code, retryable, argv, cwd, started_at, finished_at (ISO-8601
 * UTC with ms, or null), duration_ms, cpu_user_ms, cpu_sys_ms, cpu_ms,
 * peak_memory_mb, stdout, stderr (only when with_output: sanitised text,
 * see sanitize.h), stdout_bytes, stderr_bytes, stdout_lines,
 * stderr_lines, stdout_truncated, stderr_truncated, limits, enforcement
 * (objects, or null), profile. Unknown numbers are null. Returns a new
 * reference; never NULL. */
json_t *run_record_to_json(const struct run_record *rec, bool with_output);
/* The same, dumped compactly on one line (no trailing newline) with the
 * precision hutch uses for reals. Caller frees. Never NULL. */
char *run_record_to_json_string(const struct run_record *rec, bool with_output);

/* ms since the epoch -> "2026-11-29T13:41:39.123Z" (buf >= 32 bytes). */
const char *format_iso8601_ms(uint64_t ms, char *buf, size_t len);

struct store;

/* The database path: $HUTCH_STATE_DIR/hutch.db, else
 * ${XDG_STATE_HOME:-$HOME/.local/state}/hutch/hutch.db. Empty variables count
 * as unset. 0, or -ENOENT when neither XDG_STATE_HOME nor HOME is set. */
int store_default_path(char **ret);

/* Open (creating it and its directory, mode 0700, if needed) the database
 * at path, set WAL mode, synchronous=NORMAL and a busy timeout, and
 * migrate its schema to the current version. On success *ret owns the
 * connection. On failure returns -errno (-EBADMSG: not a database or
 * corrupt; -EPROTONOSUPPORT: written by a newer hutch; -EACCES, -EIO, ...)
 * and, if ret_error is not NULL, a new string "PATH: what went wrong"
 * for the caller to print (it exits 125). */
int store_open(const char *path, struct store **ret, char **ret_error);
/* For a process whose threads each open the store (never sharing a
 * connection): SQLite's process-wide state then takes its mutexes.
 * Call it before the process's first open; -EBUSY when SQLite is in use
 * already (single-threaded: starting threads would then be unsafe). */
int store_library_threads(void);
/* More refusals of store_open(), each with its line in *ret_error:
 * -ENODATA: the database is missing or empty while the history beside
 * it (blobs, a non-empty WAL) remains; -EPROTO: a user_version no hutch
 * writes (negative), or tables that do not match the version they
 * claim; -EBADMSG also when the last writer died with the store open
 * and PRAGMA quick_check finds damage (hutch does not write into a
 * damaged database). Migrations are idempotent: a user_version set
 * back re-runs them harmlessly. */

/* Open the database at path for reading only, as the history verbs do:
 * nothing is created or written, so a read-only state dir works (when
 * even the -wal/-shm files cannot be made, the database is opened
 * immutable, which is safe because nobody can write there either). A
 * database with an older schema is upgraded through store_open() when
 * that is possible, and refused with a line saying so when not. Returns
 * 0 and *ret, or -errno (-ENOENT: no database at path) and *ret_error
 * as store_open(). Writes on the connection fail with -EROFS. */
int store_open_readonly(const char *path, struct store **ret, char **ret_error);

/* SQLite's PRAGMA quick_check on s: 0 when it finds nothing, -EBADMSG
 * and (if ret_problem is not NULL) its first findings as one line to
 * free, or another -errno when the check itself fails. Reads the whole
 * database: for doctor and gc, not for every run. */
int store_quick_check(struct store *s, char **ret_problem);

/* Give back the space the store keeps for final updates (see
 * store_run_finish()). 0, or -ENOENT when there was none to give. */
int store_release_reserve(struct store *s);
/* A checkpoint copies the WAL into the database and waits for the disk
 * twice; by default the commit that makes the WAL long enough does it.
 * store_defer_checkpoints() stops that on this connection, so that a
 * commit on someone's critical path (the run's row, written while the
 * job starts) never waits for the disk; store_checkpoint_if_due() then
 * does the due checkpoint where waiting is harmless. */
void store_defer_checkpoints(struct store *s);
void store_checkpoint_if_due(struct store *s);
/* Close s; NULL is fine. Returns NULL. */
struct store *store_close(struct store *s);
static inline void store_closep(struct store **s) { store_close(*s); }
#define _cleanup_store_ __attribute__((cleanup(store_closep)))

/* The message of the last failed call on s ("PATH: sqlite's words"). */
const char *store_error(const struct store *s);
/* The database's schema version (PRAGMA user_version), or -errno. */
int store_schema_version(struct store *s);
/* The schema version this hutch writes. */
int store_current_schema_version(void);
/* The path s was opened with. */
const char *store_path(const struct store *s);

/* How long a statement on s waits for a lock another connection holds
 * before it fails (-EBUSY); 0: it fails at once. store_open() sets
 * STORE_BUSY_TIMEOUT_MS; a caller that must not wait that long (a live
 * sandbox's supervisor, serving other execs) lowers it around its
 * writes and sets it back. */
#define STORE_BUSY_TIMEOUT_MS 30000
void store_set_busy_timeout(struct store *s, int ms);

/* Make the writes that follow, up to store_batch_end(), one write
 * transaction: one lock and one commit instead of one each (the write
 * lock is taken here, waiting up to the busy timeout). A write that
 * fails inside the batch returns its error as usual, and every later
 * write of the batch returns -ECANCELED. -EBUSY if a batch is already
 * open, or the error of BEGIN. Not for store_open() or checkpoints,
 * which keep their own transactions. */
int store_batch_begin(struct store *s);
/* End the batch: commit it when commit is true and none of its writes
 * failed, else roll all of it back (-ECANCELED when commit was asked
 * for; 0 when it was not). A store closed with a batch open rolls it
 * back as well. 0 when no batch is open. */
int store_batch_end(struct store *s, bool commit);

/* Insert rec as a new row (any status; `hutch run` inserts it running,
 * before the job starts). -EEXIST if the id or idempotency key is taken. */
int store_run_insert(struct store *s, const struct run_record *rec);
/* Delete run id, still running, with its rows in the other tables: a
 * row inserted before a request that was then refused before anything
 * ran (a kernel call a busy sandbox turned away), which is recorded
 * nowhere, as such a refusal is. -ENOENT when no running row has id. */
int store_run_withdraw(struct store *s, const char *id);
/* Set the heartbeat of run id to now_ms. -ENOENT if there is no such row. */
int store_run_heartbeat(struct store *s, const char *id, uint64_t now_ms);
/* Write the outcome of rec (status, exit code, signal, message, times,
 * metrics, outputs with their sha256 and counts, limits, enforcement,
 * heartbeat) to its row, in one transaction. When that fails (a full
 * disk), the outcome is written without the output, rec->output_lost
 * (and the row's) says why, and 1 is returned; the space the store
 * reserved at open is given up for it if need be. 0 when all was
 * stored; -ENOENT if the row is gone; -errno if not even the outcome
 * could be written. Durable: when it returns 0 or 1 the update (and
 * every commit before it) is on disk, synced, so it outlives an OS crash
 * or a power loss, not only a crash of hutch; the other writes before
 * it, the row's insert included, are not synced on their own. */
int store_run_finish(struct store *s, struct run_record *rec);
/* Compile store_run_finish()'s statement now, while the job runs and
 * the supervisor has nothing else to do, so that the end of the run
 * only binds and steps it, and sync the clean-shutdown marker that its
 * durable commit needs first (one fdatasync, overlapping the job). A
 * failure is left for the final update to meet (and report) again. */
void store_run_prepare_finish(struct store *s);

/* Fill rec's lang and code (a --lang run's; NULL when none) from the
 * store, for a record read without its details (store_run_foreach()).
 * 0 or -errno (-ENOENT: no such run). */
int store_run_code_get(struct store *s, struct run_record *rec);

/* Find a run by full id or by a unique prefix of at least 4 characters
 * (case-insensitive). *ret gets the whole record, outputs included;
 * -EBADMSG when a stored output does not match its checksum.
 * -ENOENT: nothing matches; -EINVAL: prefix too short or not base32;
 * -ENOTUNIQ: several runs match, and *ret_candidates (if not NULL) gets
 * the ids of up to 10 of them (a NULL-terminated vector to free). */
int store_run_get(struct store *s, const char *id_or_prefix, struct run_record **ret,
                  char ***ret_candidates);
/* The run with this idempotency key, whatever its status (a running
 * row may be an orphan: see run_record_is_orphan()): 0 and *ret (the
 * whole record), or -ENOENT. */
int store_run_get_by_key(struct store *s, const char *key, struct run_record **ret);

struct store_filter {
        int status;             /* an enum run_status, or -1 for any */
        uint64_t since_ms;      /* only runs started at or after; 0: any */
        size_t limit;           /* at most this many; 0: no limit */
        size_t argv_max;        /* argv of at most this many items, the last
                                 * then "…" (for display); 0: whole */
        const char *session;    /* only runs of this session; NULL: any */
        const char *label;      /* only runs labelled "KEY=VALUE"; NULL: any */
        const char *node;       /* only runs of this node (exchange.h); NULL: any */
        const char *local_node; /* with node: the name of this host, whose runs
                                 * have no origin row */
};
#define STORE_FILTER_ALL ((struct store_filter) { .status = -1 })

/* The runs matching f, newest first (by start time, then id), without
 * their output bytes (data is NULL; counts are set). A running row whose
 * supervisor is gone matches RUN_ORPHANED, not RUN_RUNNING (its status
 * field still says running; see run_record_is_orphan()). *ret is an
 * array of *ret_n records (free with run_record_free_many()). */
int store_run_list(struct store *s, const struct store_filter *f,
                   struct run_record ***ret, size_t *ret_n);

/* The same rows as store_run_list(), one at a time, for histories too
 * big to hold: cb gets each record (and owns it: it must free it with
 * run_record_free()); a negative return from cb stops the walk and is
 * returned. 0 or -errno. */
int store_run_foreach(struct store *s, const struct store_filter *f,
                      int (*cb)(struct run_record *rec, void *userdata), void *userdata);

/* Mark every orphaned running row (run_record_is_orphan()) as status
 * orphaned with finished_at NULL and a message naming the dead pid; with
 * dry_run only find them. *ret_ids (may be NULL) gets the ids as a
 * NULL-terminated vector. Returns how many, or -errno. */
int store_mark_orphans(struct store *s, bool dry_run, char ***ret_ids);

/* Delete finished runs (any status but running) that started before
 * before_ms; with dry_run only count them. Returns how many, or -errno. */
int store_delete_older_than(struct store *s, uint64_t before_ms, bool dry_run);

/* One row of the `files` table (schema version 4): a path a run changed
 * in its workspace (kind "added", "modified", "deleted") or left in its
 * output dir ("output"). Strings are owned except kind (static). */
struct file_record {
        char *path;             /* relative to the workspace / output dir */
        const char *kind;       /* "output", "added", "modified", "deleted" */
        uint64_t size;          /* new size (RUN_UNSET: unknown) */
        mode_t mode;            /* new st_mode; 0 if deleted */
        char sha256[DIGEST_HEX_SIZE];     /* new content's blob, "" if none */
        mode_t old_mode;        /* lower version's st_mode, 0 if none */
        char old_sha256[DIGEST_HEX_SIZE]; /* lower version's blob, "" if none */
        char *link_target;      /* symlink target, or NULL */
        char *skip;             /* why it was not carried / collected, or NULL */
        char *mime;             /* outputs: guessed type, else NULL */
        bool lower_changed;     /* the host's version changed during the run */
};

/* Free n records and the array; NULL is fine. */
void file_records_free(struct file_record *f, size_t n);

/* Record f[0..n) for run run_id in one transaction (a row with the same
 * run, kind and path is replaced), synced to disk before it returns (it
 * outlives a power loss, like store_run_finish()). 0 or -errno. */
int store_files_add(struct store *s, const char *run_id, const struct file_record *f, size_t n);

/* The files of run run_id (only those of kind, unless kind is NULL):
 * workspace changes first, then outputs, each by path. *ret (free with
 * file_records_free) and *ret_n. 0 or -errno. */
int store_files_list(struct store *s, const char *run_id, const char *kind,
                     struct file_record **ret, size_t *ret_n);

/* Every blob hash any files row refers to (new and old versions), as a
 * NULL-terminated vector (NULL when there are none). 0 or -errno. */
int store_files_all_blobs(struct store *s, char ***ret);

/* How far recording run run_id's files got, as the final update wrote
 * it (run_record.files_summary): *ret_error a new string or NULL (all
 * that the caps allowed was recorded), *ret_unlisted the changes and
 * artifacts skipped without a row of their own; -ENOENT when the run has
 * no summary (nothing to collect, or a run from before they existed).
 * *ret_committed (may be NULL): run_record.committed as written (-1 also
 * for a summary from before schema 12). */
int store_files_summary_get(struct store *s, const char *run_id, char **ret_error, uint64_t *ret_unlisted,
                            int *ret_committed);

/* Where run run_id's workspace came from: the host --workdir DIR and/or
 * the session name (either may be NULL). 0 or -errno. */
int store_workspace_set(struct store *s, const char *run_id, const char *workdir, const char *session);
/* The same back: new strings (NULL when unset), or -ENOENT when the run
 * had a plain workspace. */
int store_workspace_get(struct store *s, const char *run_id, char **ret_workdir, char **ret_session);

/* The `connections` table: every egress decision of a `network = allow`
 * run (one JSON object per decision, the shape of the "connections"
 * array in hutch.result/1; see hutch-run(1)), and the connections to a
 * live sandbox's published ports. Add them in one transaction, after
 * the rows the run has already; fields missing from an object are
 * stored as NULL.
 * 0 or -errno. */
int store_connections_add(struct store *s, const char *run_id, json_t *connections);
/* The same back, in the order they were added: a new JSON array (empty
 * when there are none or the table is unreadable). Never NULL. */
json_t *store_connections_json(struct store *s, const char *run_id);

/* Labels of a run (schema version 8): "KEY=VALUE" strings, at most one
 * per KEY. Record labels (a NULL-terminated vector; NULL or empty is a
 * no-op) for run run_id in one transaction; a KEY given again replaces
 * its value. 0 or -errno. */
int store_labels_set(struct store *s, const char *run_id, char *const *labels);
/* The labels of run run_id, sorted by key, as a new NULL-terminated
 * vector ("KEY=VALUE"; NULL when there are none). 0 or -errno. */
int store_labels_get(struct store *s, const char *run_id, char ***ret);
/* The same as a JSON object { KEY: VALUE } (empty when there are none or
 * the store failed). Returns a new reference; never NULL. */
json_t *store_labels_json(struct store *s, const char *run_id);

/* Runs per language among those matching f (its since_ms and label
 * only), most first: "LANG=COUNT" strings in a new vector (NULL when
 * none). 0 or -errno. */
int store_lang_counts(struct store *s, const struct store_filter *f, char ***ret);

/* For `hutch stats --openmetrics` (store-metrics.c). Egress decisions
 * of the runs matching f (its since_ms and label only), by verdict:
 * "DECISION=COUNT" strings ("allowed", "denied"; "unknown" for a row
 * without one) in a new vector, NULL when none. 0 or -errno. */
int store_decision_counts(struct store *s, const struct store_filter *f, char ***ret);
/* The value of label key of every run that has it, as a new JSON
 * object { RUN_ID: VALUE } (values that are not valid UTF-8 are left
 * out). 0 or -errno. */
int store_label_values(struct store *s, const char *key, json_t **ret);
/* Bytes the store takes on disk: the database with its -wal and -shm
 * files, and the blobs beside it (regular files' sizes; no symlink is
 * followed). 0 or -errno. */
int store_disk_bytes(struct store *s, uint64_t *ret);
