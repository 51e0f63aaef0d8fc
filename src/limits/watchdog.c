/* watchdog.c - sums memory and cpu over a sandbox's processes (watchdog.h).
 *
 * Memory is counted as *proportional* anonymous and shmem memory: after a
 * fork, parent and child share their pages copy-on-write, and summing RSS
 * would count those twice and kill a job (say, make -j with a large
 * parent) that is well under its limit. File-backed pages are left out:
 * they are page cache the kernel can drop, not memory the job holds.
 *
 * Memory also counts memfds held open by the tree's processes (see
 * memfd_bytes()): pages written to a memfd through write() are in no
 * process's smaps until someone maps them.
 *
 * CPU is utime+stime of each live process plus cutime+cstime, which holds
 * everything the children it waited for used; init waits for every
 * orphan. A parent that ignores SIGCHLD does not wait: its children's
 * time would vanish with them, and cpu-ledger.c carries what they had
 * used when last seen. Only what such a child uses after its last sample
 * (or a whole child that lives between two) is missed.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/util.h"
#include "limits/cpu-ledger.h"
#include "limits/watchdog.h"

static long clock_ticks(void)
{
        static long ticks;
        if (!ticks)
                ticks = sysconf(_SC_CLK_TCK);
        return ticks > 0 ? ticks : 100;
}

static int read_small(const char *path, char *buf, size_t len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read_full(fd, buf, len - 1);
        if (n < 0)
                return (int)n;
        buf[n] = '\0';
        return (int)n;
}

static uint64_t field_kb(const char *text, const char *key)
{
        const char *p = strstr(text, key);
        if (!p)
                return UINT64_MAX;
        return strtoull(p + strlen(key), NULL, 10) * 1024;
}

int watchdog_process_memory(pid_t pid, uint64_t *ret_bytes)
{
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
        if (read_small(path, buf, sizeof(buf)) >= 0) {
                uint64_t anon = field_kb(buf, "\nPss_Anon:");
                uint64_t shmem = field_kb(buf, "\nPss_Shmem:");
                if (anon != UINT64_MAX) {
                        *ret_bytes = anon + (shmem == UINT64_MAX ? 0 : shmem);
                        return 0;
                }
        }
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        int r = read_small(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        uint64_t anon = field_kb(buf, "\nRssAnon:");
        uint64_t shmem = field_kb(buf, "\nRssShmem:");
        *ret_bytes = (anon == UINT64_MAX ? 0 : anon) + (shmem == UINT64_MAX ? 0 : shmem);
        return 0;
}

struct process_cpu {
        pid_t ppid;
        uint64_t start;         /* in clock ticks since boot */
        uint64_t own_ms;        /* utime+stime */
        uint64_t kids_ms;       /* cutime+cstime: the children it waited for */
};

/* The cpu figures of one process. */
static int process_cpu(pid_t pid, struct process_cpu *ret)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        int r = read_small(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        /* comm may hold spaces and parens: fields resume after the last ')' */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        unsigned long long v[4], start;
        int ppid;
        /* after ')': state(3) ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime(14) stime cutime cstime priority
         * nice num_threads itrealvalue starttime(22) */
        if (sscanf(p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %*d %*d %llu",
                   &ppid, &v[0], &v[1], &v[2], &v[3], &start) != 6)
                return -EIO;
        uint64_t ticks = (uint64_t)clock_ticks();
        *ret = (struct process_cpu) { .ppid = ppid, .start = start, .own_ms = (v[0] + v[1]) * 1000 / ticks,
                                      .kids_ms = (v[2] + v[3]) * 1000 / ticks };
        return 0;
}

/* cpu_ledger_read: a process's start time and its children's cpu, now. */
static int ledger_read(pid_t pid, uint64_t *ret_start, uint64_t *ret_kids_ms, void *userdata)
{
        struct process_cpu pc;
        (void)userdata;
        int r = process_cpu(pid, &pc);
        if (r < 0)
                return r;
        *ret_start = pc.start;
        *ret_kids_ms = pc.kids_ms;
        return 0;
}

/* The memfd inodes already counted in one round: an open-addressing
 * hash set, so a round costs O(fds), not O(fds^2) (240k memfds took a
 * quadratic walk 17 s, past a 3 s --timeout). */
struct inode_set {
        struct inode_key { dev_t dev; ino_t ino; bool used; } *v;
        size_t n, cap;          /* cap: a power of two, or 0 */
};

static size_t inode_hash(dev_t dev, ino_t ino)
{
        uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)dev * 0xc2b2ae3d27d4eb4fULL);
        return (size_t)(h ^ (h >> 29));
}

static void inode_set_grow(struct inode_set *set)
{
        struct inode_set bigger = { .cap = set->cap ? set->cap * 2 : 64 };

        bigger.v = xcalloc(bigger.cap, sizeof(*bigger.v));
        for (size_t i = 0; i < set->cap; i++)
                if (set->v[i].used) {
                        size_t j = inode_hash(set->v[i].dev, set->v[i].ino) & (bigger.cap - 1);
                        while (bigger.v[j].used)
                                j = (j + 1) & (bigger.cap - 1);
                        bigger.v[j] = set->v[i];
                }
        bigger.n = set->n;
        free(set->v);
        *set = bigger;
}

/* true when (dev, ino) was not in the set (and now is) */
static bool inode_set_add(struct inode_set *set, dev_t dev, ino_t ino)
{
        size_t i;

        if (2 * (set->n + 1) > set->cap)
                inode_set_grow(set);
        for (i = inode_hash(dev, ino) & (set->cap - 1); set->v[i].used; i = (i + 1) & (set->cap - 1))
                if (set->v[i].dev == dev && set->v[i].ino == ino)
                        return false;
        set->v[i] = (struct inode_key){ .dev = dev, .ino = ino, .used = true };
        set->n++;
        return true;
}

static void inode_set_clear(struct inode_set *set)
{
        if (set->v)
                memset(set->v, 0, set->cap * sizeof(*set->v));
        set->n = 0;
}

/* Bytes allocated to the memfd behind fd entry `name` of /proc/PID/fd
 * (dir fd dfd), if no earlier process of this round held it.
 *
 * Safety argument: smaps counts mapped pages only, so without this a job
 * could fill a memfd with write() and never map it, holding any amount
 * of host RAM outside --memory (tests/security/resources.bats: `probe
 * memfd 512M` under --memory 64M ran to the end). Each inode counts once
 * per round, by its allocated blocks, however many fds or processes
 * hold it. A memfd that is also mapped counts twice (here and in
 * Pss_Shmem): an overestimate, which errs toward stopping the job, never
 * toward letting it hold more than the limit. Not covered, and left to a
 * memory cgroup: a memfd whose only reference is in flight in a unix
 * socket queue (their number is bounded by RLIMIT_NOFILE: the kernel
 * refuses SCM_RIGHTS past that many fds in flight per user), and System
 * V segments that no process maps (the sandbox cannot lower its IPC
 * namespace's kernel.shm* limits: only uid 0 of its user namespace may
 * write them, and the sandbox's user namespace maps no uid 0). */
static uint64_t memfd_bytes_at(int dfd, const char *name, struct inode_set *seen)
{
        char target[32];
        struct stat st;
        ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);

        if (n < 0)
                return 0;
        target[n] = '\0';
        if (!startswith(target, "/memfd:") || fstatat(dfd, name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                return 0;
        return inode_set_add(seen, st.st_dev, st.st_ino) ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Append the children of every thread of `pid` to the queue. */
static void queue_children(pid_t pid, pid_t **queue, size_t *len, size_t *cap, char *buf, size_t buflen)
{
        char path[96];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, de->d_name);
                if (read_small(path, buf, buflen) <= 0)
                        continue;
                char *save = NULL;
                for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
                        if (*len == *cap)
                                *queue = xrealloc(*queue, (*cap = *cap ? *cap * 2 : 64) * sizeof(pid_t));
                        (*queue)[(*len)++] = (pid_t)atoi(tok);
                }
        }
        closedir(d);
}

/* One round walks the tree breadth-first: queue[0] is init, then the
 * children as they are found. Within a process, its fds are read from
 * fd_dir; that is the only part whose size the job chooses freely (up
 * to RLIMIT_NOFILE per process), so the budget is checked between fds. */
struct watchdog {
        pid_t root;
        pid_t *queue;
        size_t len, cap, pos;   /* pos: the process being looked at */
        DIR *fd_dir;            /* its /proc/PID/fd, once its own figures are in */
        struct inode_set memfds;
        struct tree_sample sum; /* this round so far */
        struct cpu_ledger *ledger;
        char *buf;
        size_t buflen;
};

/* a children list holds at most pids-limit entries of 8 bytes */
#define CHILDREN_BUF (64 * 1024)
#define MAX_QUEUE 1000000
#define CHECK_EVERY 64          /* fds between two looks at the clock */

int watchdog_new(pid_t root, struct watchdog **ret)
{
        struct watchdog *w = xcalloc(1, sizeof(*w));

        w->root = root;
        w->buflen = CHILDREN_BUF;
        w->buf = xmalloc(w->buflen);
        w->ledger = cpu_ledger_new();
        *ret = w;
        return 0;
}

static void round_reset(struct watchdog *w)
{
        if (w->fd_dir)
                closedir(w->fd_dir);
        w->fd_dir = NULL;
        w->len = w->pos = 0;
        inode_set_clear(&w->memfds);
        w->sum = (struct tree_sample){ 0 };
}

struct watchdog *watchdog_free(struct watchdog *w)
{
        if (!w)
                return NULL;
        round_reset(w);
        free(w->queue);
        free(w->memfds.v);
        free(w->buf);
        cpu_ledger_free(w->ledger);
        free(w);
        return NULL;
}

static uint64_t now_ns(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

int watchdog_step(struct watchdog *w, uint64_t budget_ns, struct tree_sample *ret)
{
        uint64_t until = budget_ns == UINT64_MAX ? UINT64_MAX : now_ns() + budget_ns;
        char path[64];

        if (w->pos == 0 && !w->fd_dir) {
                /* a new round */
                snprintf(path, sizeof(path), "/proc/%d", (int)w->root);
                if (access(path, F_OK) < 0)
                        return -errno;
                round_reset(w);
        }
        for (bool first = true;; first = false) {
                pid_t pid;

                if (w->pos > w->len || w->pos > MAX_QUEUE) {
                        *ret = w->sum;
                        ret->cpu_ms += cpu_ledger_round_end(w->ledger, w->root, ledger_read, NULL);
                        round_reset(w);
                        return 1;
                }
                pid = w->pos == 0 ? w->root : w->queue[w->pos - 1];
                if (!w->fd_dir) {
                        uint64_t v;
                        /* one process per call at least, so rounds end */
                        if (!first && now_ns() >= until) {
                                *ret = w->sum;
                                ret->cpu_ms += cpu_ledger_carried(w->ledger);
                                return 0;
                        }
                        queue_children(pid, &w->queue, &w->len, &w->cap, w->buf, w->buflen);
                        w->sum.processes++;
                        if (watchdog_process_memory(pid, &v) == 0)
                                w->sum.memory_bytes += v;
                        struct process_cpu pc;
                        if (process_cpu(pid, &pc) == 0) {
                                w->sum.cpu_ms += pc.own_ms + pc.kids_ms;
                                cpu_ledger_note(w->ledger, pid, pc.start, pc.ppid, pc.own_ms, pc.kids_ms);
                        }
                        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
                        w->fd_dir = opendir(path);
                        if (!w->fd_dir) {
                                w->pos++;
                                continue;
                        }
                }
                for (unsigned k = 0;; k++) {
                        struct dirent *de;

                        if (k % CHECK_EVERY == CHECK_EVERY - 1 && now_ns() >= until) {
                                *ret = w->sum;
                                ret->cpu_ms += cpu_ledger_carried(w->ledger);
                                return 0;       /* go on from here next time */
                        }
                        de = readdir(w->fd_dir);
                        if (!de)
                                break;
                        if (de->d_name[0] != '.')
                                w->sum.memory_bytes += memfd_bytes_at(dirfd(w->fd_dir), de->d_name,
                                                                      &w->memfds);
                }
                closedir(w->fd_dir);
                w->fd_dir = NULL;
                w->pos++;
        }
}

int watchdog_sample(pid_t root, struct tree_sample *ret)
{
        struct watchdog *w = NULL;
        int r = watchdog_new(root, &w);

        if (r < 0)
                return r;
        r = watchdog_step(w, UINT64_MAX, ret);
        watchdog_free(w);
        return r < 0 ? r : 0;
}
