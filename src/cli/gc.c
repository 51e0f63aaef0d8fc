/* cli/gc.c - `hutch gc`: the history's retention policy. It first records
 * runs whose supervisor died (a running row with a dead supervisor pid
 * becomes status orphaned, finished_at unknown), removes the landlock
 * tier's scratches that runs no longer running left, then deletes finished
 * runs that started longer ago than --older-than (default 30 days).
 * Rows still running are never deleted. An orphaned run's cgroup, which
 * its killed supervisor could not remove, is removed with it. Then
 * --session workspaces unused for longer than session_ttl are removed,
 * then the blobs no remaining file record refers to, and last the cached
 * seccomp filters no current profile uses, and the --snapshot copies
 * a killed supervisor left behind. Before all that it runs
 * SQLite's quick_check, and changes nothing in a damaged store. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "limits/cgroup.h"
#include "cli/cli.h"
#include "cli/run-internal.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "record/blobstore.h"
#include "record/exchange.h"
#include "lib/log.h"
#include "run/runfiles.h"
#include "record/store.h"
#include "record/ulid.h"
#include "lib/fsutil.h"

#define DEFAULT_RETENTION "30d"

static void help(void)
{
        printf("Usage: hutch gc [--dry-run] [--older-than DURATION]\n"
               "\n"
               "Mark runs whose supervisor died as orphaned (and remove the cgroup each\n"
               "left behind) and remove the --isolation landlock scratches killed runs\n"
               "left, then delete finished runs started more than DURATION ago\n"
               "(default " DEFAULT_RETENTION "), remove sessions unused for longer than the\n"
               "profile key session_ttl, delete blobs no run refers to any more, the\n"
               "--snapshot copies killed runs left, and compiled seccomp filters no\n"
               "current profile uses. A damaged store (SQLite's\n"
               "quick_check) is reported and left alone (exit 3).\n"
               "\n"
               "  --older-than DURATION  retention (30s, 12h, 30d, ...)\n"
               "  --dry-run              say what would be done, change nothing\n"
               "  -h, --help             this text\n");
}

/* The run cgroup an orphaned run left behind (its supervisor was killed
 * before it could remove it): kill what may be left and remove it. The
 * processes died with the supervisor (init has PDEATHSIG), so this is
 * an empty directory in practice. Returns a line to print, or NULL. */
static char *remove_orphan_cgroup(struct store *s, const char *id, bool dry_run)
{
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_cgroup_run_ struct cgroup_run *cg = NULL;
        json_t *e;
        char *line = NULL;
        int r;

        if (store_run_get(s, id, &rec, NULL) < 0 || !rec->enforcement_json)
                return NULL;
        e = json_loads(rec->enforcement_json, 0, NULL);
        const char *path = json_string_value(json_object_get(json_object_get(e, "cgroup"), "path"));
        if (path && dry_run) {
                if (access(path, F_OK) == 0)
                        line = xasprintf("would remove cgroup %s of run %s", path, id);
        } else if (path) {
                r = cgroup_run_open(path, &cg);
                if (r == 0) {
                        r = cgroup_run_remove(cg, 1000);
                        line = r < 0 ? xasprintf("cannot remove cgroup %s of run %s: %s", path, id, strerror(-r))
                                     : xasprintf("removed cgroup %s of run %s", path, id);
                } else if (r != -ENOENT)
                        line = xasprintf("cannot remove cgroup %s of run %s: %s", path, id, strerror(-r));
        }
        json_decref(e);
        return line;
}

/* The seccomp cache entries the current profiles use, by file name
 * (a NULL-terminated vector; profiles that do not load keep nothing). */
static char **seccomp_entries_in_use(void)
{
        _cleanup_strv_ char **names = NULL, **paths = NULL;
        char **keep = NULL;

        (void)profile_list(&names, &paths);
        names = strv_append(names, "default");  /* also when only built in */
        for (char **n = names; n && *n; n++) {
                _cleanup_free_ char *err = NULL, *entry = NULL;
                struct run_config cfg;
                run_config_init(&cfg);
                if (profile_load(&cfg, *n, &err) == 0)
                        entry = run_seccomp_cache_entry(&cfg);
                run_config_done(&cfg);
                if (entry)
                        keep = strv_append(keep, strrchr(entry, '/') + 1);
        }
        return keep;
}

/* Cached seccomp filters no current profile uses (profiles changed or
 * went away, hutch or libseccomp was upgraded, a run used CLI
 * overrides): each is a few KiB that nothing will read again. Also
 * temporaries a killed writer left, once an hour old. */
static int gc_seccomp_cache(bool dry_run)
{
        _cleanup_free_ char *dir = run_seccomp_cache_dir();
        _cleanup_strv_ char **keep = NULL;
        uint64_t now = now_realtime_ms();
        int count = 0;
        DIR *d;

        if (!dir || !(d = opendir(dir)))
                return EXIT_OK;
        keep = seccomp_entries_in_use();
        for (struct dirent *de; (de = readdir(d));) {
                const char *name = de->d_name;
                size_t len = strlen(name);
                struct stat st;
                if (strncmp(name, "seccomp-", 8) != 0 || fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                bool entry = len > 4 && streq(name + len - 4, ".bpf");
                bool stale_tmp = len > 4 && streq(name + len - 4, ".tmp") &&
                                 (uint64_t)st.st_mtime * 1000 + 3600 * 1000 < now;
                if (!(entry && !strv_contains(keep, name)) && !stale_tmp)
                        continue;
                if (dry_run || unlinkat(dirfd(d), name, 0) == 0)
                        count++;
        }
        closedir(d);
        printf("%s %d unused seccomp cache entr%s\n", dry_run ? "would delete" : "deleted", count,
               count == 1 ? "y" : "ies");
        return EXIT_OK;
}

/* Blobs no recorded file refers to any more (their runs were deleted). */
static int gc_blobs(struct store *s, bool dry_run)
{
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        int r = runfiles_open_blobs(s, &bs);
        if (r >= 0)
                r = runfiles_gc_blobs(s, bs, dry_run);
        if (r < 0) {
                log_error_errno(r, "gc: blob store: %m");
                return EXIT_SETUP;
        }
        if (!dry_run)
                printf("deleted %d unreferenced blob%s\n", r, r == 1 ? "" : "s");
        return EXIT_OK;
}

/* The --snapshot copies (<state>/snapshots/RUN_ID, run-workspace.c)
 * whose run is no longer running: a supervisor removes its own at the
 * end, so these are what a killed one left. A run's row is written
 * before its copy is made, so a copy whose run is still running (after
 * store_mark_orphans(), a live supervisor) is kept. Names that are not
 * run ids are not ours to judge and stay. Removal never follows a
 * symlink (fs_remove_tree_at()). */
static int gc_snapshots(struct store *s, bool dry_run)
{
        const char *db = store_path(s);
        DIR *d = NULL;
        struct dirent *de;
        unsigned removed = 0;

        /* beside the database: "hutch.db" is shorter than "snapshots",
         * so the name is built anew, never written over the path */
        const char *slash = strrchr(db, '/');
        if (!slash)
                return EXIT_OK;
        _cleanup_free_ char *dir = xasprintf("%.*s/snapshots", (int)(slash - db), db);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return EXIT_OK;         /* no snapshot was ever taken */
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return EXIT_OK;
        }
        while ((de = readdir(d))) {
                _cleanup_run_record_ struct run_record *rec = NULL;
                if (!ulid_valid(de->d_name))
                        continue;
                if (store_run_get(s, de->d_name, &rec, NULL) == 0 && rec->status == RUN_RUNNING &&
                    !run_record_is_orphan(rec))
                        continue;
                if (dry_run) {
                        printf("would remove snapshot %s/%s\n", dir, de->d_name);
                        continue;
                }
                int r = fs_remove_tree_at(dirfd(d), de->d_name);
                if (r < 0 && r != -ENOENT)
                        printf("cannot remove snapshot %s/%s: %s\n", dir, de->d_name, strerror(-r));
                else
                        removed++;
        }
        closedir(d);
        if (removed)
                printf("removed %u snapshot%s a killed run left\n", removed, removed == 1 ? "" : "s");
        return EXIT_OK;
}

/* A run's landlock-tier scratch, as its record names it. */
struct scratch_ref {
        char id[ULID_LEN + 1];
        char *path;
        uid_t job_uid;
};

struct scratch_list {
        struct scratch_ref *refs;
        size_t n;
};

/* hutch-XXXXXX, as mkdtemp(3) fills it (workspace/scratch.c) */
static bool scratch_name(const char *name)
{
        if (strncmp(name, "hutch-", 6) != 0 || strlen(name) != 12)
                return false;
        for (const char *p = name + 6; *p; p++)
                if (!isalnum((unsigned char)*p))
                        return false;
        return true;
}

static int scratch_collect(struct run_record *rec, void *userdata)
{
        struct scratch_list *l = userdata;
        json_t *e = rec->enforcement_json ? json_loads(rec->enforcement_json, 0, NULL) : NULL;
        json_t *iso = json_object_get(e, "isolation");
        const char *path = json_string_value(json_object_get(iso, "scratch"));
        json_t *uid = json_object_get(iso, "uid");
        /* a running run's scratch is its own; dry_run did not mark the dead */
        bool live = rec->status == RUN_RUNNING && !run_record_is_orphan(rec);
        if (!live && path && path[0] == '/' && json_is_integer(uid) && json_integer_value(uid) >= 0 &&
            json_integer_value(uid) < (json_int_t)UINT32_MAX &&
            streq(json_string_value(json_object_get(iso, "tier")) ?: "", "landlock")) {
                l->refs = xrealloc(l->refs, (l->n + 1) * sizeof(*l->refs));
                struct scratch_ref *ref = &l->refs[l->n++];
                snprintf(ref->id, sizeof(ref->id), "%s", rec->id);
                ref->path = xstrdup(path);
                ref->job_uid = (uid_t)json_integer_value(uid);
        }
        json_decref(e);
        run_record_free(rec);
        return 0;
}

/* Is parent_fd/name a scratch hutch made for a run whose job ran as
 * job_uid? A directory, not a symlink, owned by us (the supervisor made
 * it) or by the job's uid (root's job owns its scratch), holding the
 * stamp the supervisor writes (a regular file, not a symlink, owned by
 * either). 0 yes, -ENOENT gone, else -errno or -EPERM (not ours). */
static int scratch_check(int parent_fd, const char *name, uid_t job_uid)
{
        struct stat st, dst, sst;
        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != job_uid))
                return -EPERM;
        _cleanup_close_ int dfd = openat(parent_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fstat(dfd, &dst) < 0)
                return -errno;
        if (dst.st_dev != st.st_dev || dst.st_ino != st.st_ino)
                return -EPERM;          /* swapped since we looked */
        if (fstatat(dfd, "stamp", &sst, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? -EPERM : -errno;
        if (!S_ISREG(sst.st_mode) || (sst.st_uid != geteuid() && sst.st_uid != job_uid))
                return -EPERM;
        return 0;
}

/* The landlock tier's scratches (hutch-run(1) ISOLATION: a copy of the
 * workdir, $HOME and $TMPDIR under $TMPDIR or /tmp) whose run is no
 * longer running: a supervisor removes its own at the end, so these are
 * what a killed one left. gc finds one only through its run's record
 * (enforcement.isolation.scratch and .uid), never by scanning /tmp: a
 * directory no run of this store names, or a run imported from another
 * node names, is not ours to judge. scratch_check() decides the rest;
 * removal never follows a symlink (fs_remove_tree_at()). */
static int gc_scratches(struct store *s, bool dry_run)
{
        struct scratch_list l = { 0 };
        unsigned removed = 0;

        int r = store_run_foreach(s, &STORE_FILTER_ALL, scratch_collect, &l);
        if (r < 0)
                log_warning("gc: run store: %s: scratches not looked for", store_error(s));
        for (size_t i = 0; r >= 0 && i < l.n; i++) {
                struct scratch_ref *ref = &l.refs[i];
                _cleanup_free_ char *dir = xstrdup(ref->path);
                char *slash = strrchr(dir, '/');
                const char *name = slash + 1;
                *slash = '\0';
                if (!scratch_name(name) || store_origin_get(s, ref->id, NULL, NULL) == 0)
                        continue;
                _cleanup_close_ int pfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int k = pfd < 0 ? -errno : scratch_check(pfd, name, ref->job_uid);
                if (k == -ENOENT)
                        continue;       /* removed by its run, as it should be */
                if (k < 0) {
                        printf("left scratch %s of run %s: %s\n", ref->path, ref->id,
                               k == -EPERM ? "not a hutch scratch (owner or stamp)" : strerror(-k));
                        continue;
                }
                if (dry_run) {
                        printf("would remove scratch %s of run %s\n", ref->path, ref->id);
                        continue;
                }
                k = fs_remove_tree_at(pfd, name);
                if (k < 0 && k != -ENOENT)
                        printf("cannot remove scratch %s of run %s: %s\n", ref->path, ref->id, strerror(-k));
                else
                        removed++;
        }
        for (size_t i = 0; i < l.n; i++)
                free(l.refs[i].path);
        free(l.refs);
        if (removed)
                printf("removed %u scratch%s a killed run left\n", removed, removed == 1 ? "" : "es");
        return EXIT_OK;
}

int verb_gc(int argc, char **argv)
{
        static const struct option options[] = {
                { "dry-run",    no_argument,       NULL, 'n' },
                { "older-than", required_argument, NULL, 'o' },
                { "help",       no_argument,       NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_strv_ char **orphans = NULL;
        const char *older_than = DEFAULT_RETENTION;
        bool dry_run = false;
        uint64_t retention_ms, now, cutoff;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'n':
                        dry_run = true;
                        break;
                case 'o':
                        older_than = optarg;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("gc", argv, options);
                }
        r = cli_no_operands("gc", argc, argv, optind);
        if (r != EXIT_OK)
                return r;
        if (parse_duration_ms(older_than, &retention_ms) < 0)
                return cli_bad_value("gc", "older-than", older_than,
                                     "expected a duration like 12h or 30d");

        r = dry_run ? cli_open_store_readonly("gc", &s) : cli_open_store("gc", &s);
        if (r != EXIT_OK)
                return r;
        /* gc rewrites and deletes rows: never in a damaged database */
        _cleanup_free_ char *problem = NULL;
        r = store_quick_check(s, &problem);
        if (r == -EBADMSG) {
                log_error("gc: run store %s is damaged (quick_check: %s); nothing was changed: save what "
                          "can be read (sqlite3 %s .recover) and move it away",
                          store_path(s), problem, store_path(s));
                return EXIT_DAMAGED;
        }
        if (r < 0) {
                log_error("gc: run store: %s", store_error(s));
                return EXIT_SETUP;
        }

        r = store_mark_orphans(s, dry_run, &orphans);
        if (r < 0) {
                log_error("gc: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        for (char **id = orphans; id && *id; id++) {
                printf("%s %s: supervisor died\n", dry_run ? "would mark orphaned" : "marked orphaned", *id);
                _cleanup_free_ char *line = remove_orphan_cgroup(s, *id, dry_run);
                if (line)
                        printf("%s\n", line);
        }

        /* before old runs go: their records name the scratches */
        r = gc_scratches(s, dry_run);
        if (r != EXIT_OK)
                return r;
        now = now_realtime_ms();
        cutoff = retention_ms < now ? now - retention_ms : 0;
        r = store_delete_older_than(s, cutoff, dry_run);
        if (r < 0) {
                log_error("gc: run store: %s", store_error(s));
                return EXIT_SETUP;
        }
        printf("%s %d run%s older than %s\n", dry_run ? "would delete" : "deleted",
               r, r == 1 ? "" : "s", older_than);
        r = cli_session_gc(s, dry_run);
        if (r != EXIT_OK)
                return r;
        r = gc_blobs(s, dry_run);
        if (r != EXIT_OK)
                return r;
        r = gc_snapshots(s, dry_run);
        if (r != EXIT_OK)
                return r;
        r = cli_image_gc(dry_run);
        if (r != EXIT_OK)
                return r;
        return gc_seccomp_cache(dry_run);
}
