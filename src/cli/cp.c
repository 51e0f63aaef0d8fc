/* cli/cp.c - `hutch cp ID:PATH DEST`: one recorded file of a run (an
 * artifact, or the new version of a workspace file) copied out of the
 * blob store, byte for byte, after checking its sha256 again; or, with
 * `ID:output/` (or `ID:output/DIR/`), every artifact under that dir into
 * directory DEST, keeping their relative paths. */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "record/blobstore.h"
#include "cli/cli.h"
#include "lib/digest.h"
#include "lib/exit-codes.h"
#include "lib/fsutil.h"
#include "lib/log.h"
#include "run/runfiles.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch cp ID:PATH DEST\n"
               "       hutch cp ID:output/[DIR/] DESTDIR\n"
               "\n"
               "Copy a file recorded by run ID to DEST (a file name, an existing\n"
               "directory, or - for standard output). PATH is an artifact's path\n"
               "in the output dir (\"report.pdf\" or \"output/report.pdf\") or a\n"
               "workspace path the run added or modified. A PATH ending in '/' names\n"
               "a directory of artifacts (output/ for all of them): each is copied\n"
               "under DESTDIR (created if missing) at its path below that directory.\n"
               "\n"
               "  -h, --help  this text\n");
}

static const struct file_record *find(const struct file_record *f, size_t n, const char *path)
{
        const char *out = startswith(path, "output/") ? path + strlen("output/") : NULL;
        for (int pass = 0; pass < 3; pass++)
                for (size_t i = 0; i < n; i++) {
                        bool output = streq(f[i].kind, "output");
                        if ((pass == 0 && output && streq(f[i].path, path)) ||
                            (pass == 1 && !output && !streq(f[i].kind, "deleted") && streq(f[i].path, path)) ||
                            (pass == 2 && output && out && streq(f[i].path, out)))
                                return &f[i];
                }
        return NULL;
}

/* Copy blob fd to a new file in dirfd named name: written under a
 * temporary name (O_EXCL: never a planted file or symlink), fsync'ed,
 * checked against the recorded hash, then renamed over name. */
static int copy_out(int blob, int dirfd, const char *name, mode_t mode, const char *sha256)
{
        char tmp[128], hex[DIGEST_HEX_SIZE];
        struct digest d;
        int r;

        int fd = fs_create_unique(dirfd, ".hutch-cp-", 'f', mode, NULL, tmp, sizeof(tmp));
        if (fd < 0)
                return fd;
        digest_init(&d);
        int64_t n = fs_copy_digest(blob, fd, &d, 0);
        r = n < 0 ? (int)n : 0;
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        close(fd);
        digest_final_hex(&d, hex);
        if (r == 0 && !streq(hex, sha256))
                r = -EBADMSG;
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

/* Open (creating it if missing) directory name under dirfd, never
 * following a symlink: DEST's tree is the user's, but the names come
 * from the run. */
static int open_subdir(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
                        return -errno;
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        return fd < 0 ? -errno : fd;
}

/* One artifact at relative path rel under destfd. */
static int copy_artifact(struct blobstore *bs, int destfd, const struct file_record *f, const char *rel)
{
        _cleanup_free_ char *copy = xstrdup(rel);
        _cleanup_close_ int blob = -1;
        int dirfd = dup(destfd), r;
        char *name = copy, *slash;

        if (dirfd < 0)
                return -errno;
        /* the job chose these names: walk them one part at a time and
         * refuse anything that could step outside DEST */
        while ((slash = strchr(name, '/'))) {
                *slash = '\0';
                if (!*name || streq(name, ".") || streq(name, "..")) {
                        close(dirfd);
                        return -EINVAL;
                }
                int next = open_subdir(dirfd, name);
                close(dirfd);
                if (next < 0)
                        return next;
                dirfd = next;
                name = slash + 1;
        }
        if (!*name || streq(name, ".") || streq(name, "..")) {
                close(dirfd);
                return -EINVAL;
        }
        blob = blobstore_open_blob(bs, f->sha256);
        r = blob < 0 ? blob : copy_out(blob, dirfd, name, f->mode & 0755, f->sha256);
        close(dirfd);
        return r;
}

/* ID:output/[DIR/] DESTDIR. Returns an exit code. */
static int copy_dir(struct store *s, const struct run_record *rec, const struct file_record *f, size_t n,
                    const char *path, const char *dest)
{
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        _cleanup_close_ int destfd = -1;
        const char *prefix = startswith(path, "output/") ? path + strlen("output/") : path;
        size_t copied = 0, failed = 0, plen = strlen(prefix);
        int r;

        if (mkdir(dest, 0755) < 0 && errno != EEXIST) {
                log_error_errno(-errno, "cp: %s: %m", dest);
                return EXIT_FAILURE_GENERIC;
        }
        destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (destfd < 0) {
                log_error_errno(-errno, "cp: %s: %m", dest);
                return EXIT_FAILURE_GENERIC;
        }
        r = runfiles_open_blobs(s, &bs);
        if (r < 0) {
                log_error_errno(r, "cp: blob store: %m");
                return EXIT_SETUP;
        }
        for (size_t i = 0; i < n; i++) {
                if (!streq(f[i].kind, "output") || strncmp(f[i].path, prefix, plen) != 0)
                        continue;
                if (!S_ISREG(f[i].mode) || !f[i].sha256[0]) {
                        /* a dir's own row, or what was left out: say so only for the latter */
                        if (f[i].skip || S_ISLNK(f[i].mode)) {
                                log_warning("cp: %s:output/%s was not stored (%s)", rec->id, f[i].path,
                                            f[i].skip ? f[i].skip : "a symlink");
                                failed++;
                        }
                        continue;
                }
                r = copy_artifact(bs, destfd, &f[i], f[i].path + plen);
                if (r < 0) {
                        log_error_errno(r, "cp: %s/%s: %m", dest, f[i].path + plen);
                        failed++;
                } else
                        copied++;
        }
        if (copied == 0 && failed == 0) {
                log_error("cp: run %s recorded no artifact under '%s' (see hutch show %s)", rec->id, path, rec->id);
                return EXIT_FAILURE_GENERIC;
        }
        log_info("cp: %zu file%s copied to %s", copied, copied == 1 ? "" : "s", dest);
        return failed ? EXIT_FAILURE_GENERIC : EXIT_OK;
}

int verb_cp(int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        _cleanup_blobstore_ struct blobstore *bs = NULL;
        struct file_record *f = NULL;
        _cleanup_free_ char *d1 = NULL, *d2 = NULL, *p1 = NULL;
        _cleanup_close_ int blob = -1, dirfd = -1;
        struct stat st;
        size_t n = 0;
        int c, r, code = EXIT_FAILURE_GENERIC;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("cp", argv, options);
                }
        if (argc - optind != 2 || !strchr(argv[optind], ':')) {
                log_error("cp: expected ID:PATH DEST (see hutch cp --help)");
                return EXIT_USAGE;
        }
        _cleanup_free_ char *id = xstrdup(argv[optind]);
        char *path = strchr(id, ':');
        *path++ = '\0';
        const char *dest = argv[optind + 1];

        r = cli_open_store_readonly("cp", &s);
        if (r != EXIT_OK)
                return r;
        r = cli_find_run("cp", s, id, &rec);
        if (r != EXIT_OK)
                return r;
        r = store_files_list(s, rec->id, NULL, &f, &n);
        if (r < 0) {
                log_error("cp: run store %s: %s", store_path(s), store_error(s));
                return EXIT_SETUP;
        }
        if (streq(path, "output") || (*path && path[strlen(path) - 1] == '/')) {
                code = copy_dir(s, rec, f, n, path, dest);
                goto out;
        }
        const struct file_record *hit = find(f, n, path);
        if (!hit) {
                log_error("cp: run %s recorded no file '%s' (see hutch show %s)", rec->id, path, rec->id);
                goto out;
        }
        if (!S_ISREG(hit->mode) || !hit->sha256[0]) {
                log_error("cp: %s:%s was not stored (%s)", rec->id, path,
                          hit->skip ? hit->skip : S_ISLNK(hit->mode) ? "a symlink" : "not a regular file");
                goto out;
        }
        r = runfiles_open_blobs(s, &bs);
        if (r < 0) {
                log_error_errno(r, "cp: blob store: %m");
                code = EXIT_SETUP;
                goto out;
        }
        blob = blobstore_open_verified(bs, hit->sha256);
        if (blob == -EBADMSG) {
                log_error("cp: %s:%s: its stored blob %s does not match its checksum: the blob store is damaged",
                          rec->id, path, hit->sha256);
                code = EXIT_DAMAGED;
                goto out;
        }
        if (blob < 0) {
                log_error_errno(blob, "cp: blob %s of %s: %m", hit->sha256, path);
                goto out;
        }
        if (streq(dest, "-")) {
                struct digest d;
                char hex[DIGEST_HEX_SIZE];
                fflush(stdout);
                digest_init(&d);
                int64_t w = fs_copy_digest(blob, STDOUT_FILENO, &d, 0);
                digest_final_hex(&d, hex);
                if (w < 0 || !streq(hex, hit->sha256)) {
                        log_error_errno(w < 0 ? (int)w : -EBADMSG, "cp: %s: %m", path);
                        goto out;
                }
                code = EXIT_OK;
                goto out;
        }
        /* DEST is the user's: an existing directory takes the file under
         * its own name, anything else is the file name to (re)place. */
        d1 = xstrdup(dest);
        d2 = xstrdup(dest);
        p1 = xstrdup(hit->path);
        const char *dir = dirname(d1), *name = basename(d2);
        if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
                dir = dest;
                name = basename(p1);
        }
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                log_error_errno(-errno, "cp: %s: %m", dir);
                goto out;
        }
        r = copy_out(blob, dirfd, name, hit->mode & 0755, hit->sha256);
        if (r < 0) {
                log_error_errno(r, "cp: %s/%s: %m", dir, name);
                goto out;
        }
        code = EXIT_OK;
out:
        file_records_free(f, n);
        return code;
}
