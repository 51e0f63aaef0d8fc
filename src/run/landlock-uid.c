/* run/landlock-uid.c - a host uid of its own for root's landlock-tier
 * job (see run/landlock-uid.h for why).
 *
 * The reservation is a file per uid under a root-only directory, held
 * with flock() for the run: the lock goes with the process, so a run
 * that is killed frees its uid without leaving anything to clean up but
 * the file, which the next holder reuses. A file is unlinked while its
 * lock is held, so a taker that opened it just before checks, once it
 * has the lock, that the name still leads to the inode it locked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/landlock-uid.h"
#include "lib/log.h"
#include "lib/util.h"

#define RESERVE_TRIES 64

/* The lock dir and its parent must be root's alone: anyone else who
 * could write there could hold a uid's file open and locked, or swap
 * the directory, and hand two runs the same uid. */
static int ensure_private_dir(const char *path)
{
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0022))
                return -EPERM;
        return 0;
}

struct id_range {
        uint64_t first, last;
};

#define MAX_RANGES 64

/* The ids this user namespace maps (uid_map or gid_map): a container
 * runtime often maps only 0-65535, and an id outside the map cannot own
 * a file here (chown: EINVAL). */
static int mapped_ranges(const char *path, struct id_range *out, size_t *ret_n)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        unsigned long long inside, outside, count;
        size_t n = 0;
        while (n < MAX_RANGES && fscanf(f, "%llu %llu %llu", &inside, &outside, &count) == 3)
                if (count > 0)
                        out[n++] = (struct id_range){ inside, inside + count - 1 };
        *ret_n = n;
        return 0;
}

static size_t intersect(const struct id_range *a, size_t na, const struct id_range *b, size_t nb,
                        struct id_range *out)
{
        size_t n = 0;
        for (size_t i = 0; i < na; i++)
                for (size_t j = 0; j < nb && n < MAX_RANGES; j++) {
                        uint64_t lo = MAX(a[i].first, b[j].first), hi = MIN(a[i].last, b[j].last);
                        if (lo <= hi)
                                out[n++] = (struct id_range){ lo, hi };
                }
        return n;
}

/* Where the job's uid may come from here: the first of the preferred
 * ranges that this namespace maps as uid and as gid, cut to what it
 * maps. 0 with *ret_n == 0 when it maps none of them. */
static int candidate_ranges(struct id_range *out, size_t *ret_n)
{
        static const struct id_range preferred[] = {
                { LANDLOCK_UID_FIRST, LANDLOCK_UID_LAST },
                { LANDLOCK_UID_SMALL_FIRST, LANDLOCK_UID_SMALL_LAST },
        };
        struct id_range uids[MAX_RANGES], gids[MAX_RANGES], both[MAX_RANGES];
        size_t nu, ng;
        int r = mapped_ranges("/proc/self/uid_map", uids, &nu);
        if (r >= 0)
                r = mapped_ranges("/proc/self/gid_map", gids, &ng);
        if (r < 0)
                return r;
        size_t nb = intersect(uids, nu, gids, ng, both);
        for (size_t p = 0; p < ELEMENTSOF(preferred); p++) {
                size_t n = intersect(&preferred[p], 1, both, nb, out);
                if (n > 0) {
                        *ret_n = n;
                        return 0;
                }
        }
        *ret_n = 0;
        return 0;
}

static int random_uid(const struct id_range *ranges, size_t n, uid_t *ret)
{
        uint64_t total = 0, v;
        for (size_t i = 0; i < n; i++)
                total += ranges[i].last - ranges[i].first + 1;
        if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
                return -errno ?: -EIO;
        v %= total;
        for (size_t i = 0; i < n; i++) {
                uint64_t len = ranges[i].last - ranges[i].first + 1;
                if (v < len) {
                        *ret = (uid_t)(ranges[i].first + v);
                        return 0;
                }
                v -= len;
        }
        return -ERANGE;
}

/* The lock on path, if it is free and path still names the inode
 * locked: the fd, -EAGAIN to try another, or -errno. */
static int try_lock(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        struct stat held, named;
        if (fstat(fd, &held) < 0)
                return -errno;
        if (stat(path, &named) < 0 || held.st_ino != named.st_ino || held.st_dev != named.st_dev)
                return -EAGAIN; /* released and unlinked under us */
        return TAKE_FD(fd);
}

int landlock_uid_reserve(struct landlock_uid *ret)
{
        int r;

        *ret = (struct landlock_uid){ .lock_fd = -1 };
        struct id_range ranges[MAX_RANGES];
        size_t n;
        r = candidate_ranges(ranges, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ERANGE;
        r = ensure_private_dir("/run/hutch");
        if (r >= 0)
                r = ensure_private_dir(LANDLOCK_UID_LOCK_DIR);
        if (r < 0)
                return r;
        for (int i = 0; i < RESERVE_TRIES; i++) {
                uid_t uid = 0;
                r = random_uid(ranges, n, &uid);
                if (r < 0)
                        return r;
                char *path = xasprintf("%s/%u", LANDLOCK_UID_LOCK_DIR, (unsigned)uid);
                int fd = try_lock(path);
                if (fd == -EAGAIN) {
                        free(path);
                        continue;
                }
                if (fd < 0) {
                        free(path);
                        return fd;
                }
                *ret = (struct landlock_uid){ .uid = uid, .lock_fd = fd, .lock_path = path };
                /* whatever an earlier holder's job left under it, which
                 * this run's job could otherwise attach to */
                r = landlock_uid_remove_ipc(uid);
                if (r < 0)
                        log_debug("landlock tier: cannot look for uid %u's IPC objects: %s", (unsigned)uid,
                                  strerror(-r));
                return 0;
        }
        return -EBUSY;
}

/* The header's column named name, counted from 0; -1 if none. */
static int column_of(const char *header, const char *name)
{
        _cleanup_free_ char *copy = xstrdup(header);
        char *save = NULL;
        int i = 0;
        for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save), i++)
                if (streq(t, name))
                        return i;
        return -1;
}

enum ipc_kind { IPC_SHM, IPC_MSG, IPC_SEM };

static int remove_one(enum ipc_kind kind, int id)
{
        int k = kind == IPC_SHM ? shmctl(id, IPC_RMID, NULL)
                : kind == IPC_MSG ? msgctl(id, IPC_RMID, NULL)
                                  : semctl(id, 0, IPC_RMID);
        return k < 0 ? -errno : 0;
}

static int remove_kind(enum ipc_kind kind, uid_t uid)
{
        static const char *const files[] = { "/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem" };
        static const char *const ids[] = { "shmid", "msqid", "semid" };
        _cleanup_fclose_ FILE *f = fopen(files[kind], "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno; /* a kernel without SysV IPC */
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        if (getline(&line, &cap, f) < 0)
                return 0;
        int c_id = column_of(line, ids[kind]), c_uid = column_of(line, "uid"), c_cuid = column_of(line, "cuid");
        if (c_id < 0 || c_uid < 0 || c_cuid < 0)
                return -EBADMSG;
        int removed = 0;
        while (getline(&line, &cap, f) >= 0) {
                long long id = -1, owner = -1, creator = -1;
                char *save = NULL;
                int i = 0;
                for (char *t = strtok_r(line, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save), i++) {
                        if (i == c_id)
                                id = strtoll(t, NULL, 10);
                        else if (i == c_uid)
                                owner = strtoll(t, NULL, 10);
                        else if (i == c_cuid)
                                creator = strtoll(t, NULL, 10);
                }
                if (id < 0 || (owner != (long long)uid && creator != (long long)uid))
                        continue;
                int k = remove_one(kind, (int)id);
                if (k < 0 && k != -EINVAL && k != -EIDRM)
                        log_debug("landlock tier: cannot remove SysV IPC object %lld of uid %u: %s", id,
                                  (unsigned)uid, strerror(-k));
                else if (k == 0)
                        removed++;
        }
        return removed;
}

int landlock_uid_remove_ipc(uid_t uid)
{
        int total = 0;
        for (enum ipc_kind k = IPC_SHM; k <= IPC_SEM; k++) {
                int r = remove_kind(k, uid);
                if (r < 0)
                        return r;
                total += r;
        }
        return total;
}

void landlock_uid_release(struct landlock_uid *u)
{
        if (!u || !u->lock_path)
                return;
        int r = landlock_uid_remove_ipc(u->uid);
        if (r < 0)
                log_warning("run: cannot remove the SysV IPC objects of the landlock job's uid %u: %s",
                            (unsigned)u->uid, strerror(-r));
        else if (r > 0)
                log_debug("landlock tier: removed %d SysV IPC objects the job left", r);
        /* unlinked while held: see try_lock() */
        (void)unlink(u->lock_path);
        close(u->lock_fd);
        free(u->lock_path);
        *u = (struct landlock_uid){ .lock_fd = -1 };
}
