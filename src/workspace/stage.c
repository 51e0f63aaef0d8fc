/* stage.c - a request's files staged privately (see stage.h).
 *
 * Every directory is made 0700 and every file opened 0600 from the
 * start, never widened: a file that is briefly 0644 can be opened by
 * another user in that instant and read later.
 */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/fsutil.h"
#include "lib/util.h"
#include "workspace/stage.h"

/* Write one request file under dirfd at relative path rel (checked by
 * the reader: no "..", no leading '/'), making its parent dirs. */
static int stage_one(int dirfd, const struct request_file *f, uid_t uid, gid_t gid)
{
        _cleanup_free_ char *copy = xstrdup(f->path);
        _cleanup_close_ int dir = dup(dirfd);
        char *name = copy, *slash;
        int r;

        if (dir < 0)
                return -errno;
        while ((slash = strchr(name, '/'))) {
                *slash = '\0';
                if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
                        return -errno;
                int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                /* best effort, as before: the job may then only read it */
                if (uid != (uid_t)-1 && fchown(next, uid, gid) < 0)
                        log_debug("stage: cannot chown a directory of the request's files: %m");
                close(dir);
                dir = next;
                name = slash + 1;
        }
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* the umask can only narrow 0600; a file that existed (a path
         * given twice) keeps the mode it was made with */
        if (f->host_path) {
                /* the caller's own file, read with the caller's rights */
                _cleanup_close_ int in = open(f->host_path, O_RDONLY | O_CLOEXEC);
                if (in < 0)
                        return -errno;
                int64_t n = fs_copy_digest(in, fd, NULL, 0);
                if (n < 0)
                        return (int)n;
        } else {
                r = write_all(fd, f->data, f->len);
                if (r < 0)
                        return r;
        }
        if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
                return -errno;
        return 0;
}

/* Where to make the directory. $XDG_RUNTIME_DIR is private to its user
 * (0700, on tmpfs); it is taken only when it is ours and only when the
 * sandbox maps us: as real root the job runs as another id, which could
 * not search it. */
static const char *stage_base(uid_t uid)
{
        const char *xdg = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR");
        struct stat st;

        if (uid == (uid_t)-1 && xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
            st.st_uid == geteuid() && (st.st_mode & 077) == 0)
                return xdg;
        return tmp && *tmp ? tmp : "/tmp";
}

int stage_request_files(const struct request *req, uid_t uid, gid_t gid, char **ret_dir,
                        char **ret_pointer, char **ret_error)
{
        _cleanup_free_ char *dir = xasprintf("%s/hutch-request-XXXXXX", stage_base(uid));
        int r;

        /* mkdtemp makes it 0700 */
        if (!mkdtemp(dir)) {
                r = -errno;
                *ret_pointer = xstrdup("/files");
                *ret_error = xasprintf("request: /files: cannot make a directory for them: %s: %s",
                                       dir, strerror(-r));
                return r;
        }
        *ret_dir = xstrdup(dir);
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0 || fchmod(dirfd, 0700) < 0 || (uid != (uid_t)-1 && fchown(dirfd, uid, gid) < 0)) {
                r = -errno;
                *ret_pointer = xstrdup("/files");
                *ret_error = xasprintf("request: /files: %s: %s", dir, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < req->n_files; i++) {
                r = stage_one(dirfd, &req->files[i], uid, gid);
                if (r < 0) {
                        *ret_pointer = xasprintf("/files/%s", req->files[i].path);
                        *ret_error = xasprintf("request: /files/%s: %s%s%s", req->files[i].path,
                                               req->files[i].host_path ? req->files[i].host_path : "",
                                               req->files[i].host_path ? ": " : "", strerror(-r));
                        return r;
                }
        }
        return 0;
}
