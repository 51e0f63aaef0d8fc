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
 * everything its reaped children used; init reaps all orphans, so nothing
 * that ever ran in the sandbox is missed or counted twice.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/util.h"
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

/* utime+stime+cutime+cstime of one process, in ms. */
static int process_cpu_ms(pid_t pid, uint64_t *ret)
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
        unsigned long long v[4];
        /* after ')': state(3) ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime(14) stime cutime cstime */
        if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
                   &v[0], &v[1], &v[2], &v[3]) != 4)
                return -EIO;
        *ret = (v[0] + v[1] + v[2] + v[3]) * 1000 / (uint64_t)clock_ticks();
        return 0;
}

/* The memfd inodes already counted in one sample. */
struct inode_set {
        struct { dev_t dev; ino_t ino; } *v;
        size_t n, cap;
};

static bool inode_set_add(struct inode_set *set, dev_t dev, ino_t ino)
{
        for (size_t i = 0; i < set->n; i++)
                if (set->v[i].dev == dev && set->v[i].ino == ino)
                        return false;
        if (set->n == set->cap)
                set->v = xrealloc(set->v, (set->cap = set->cap ? set->cap * 2 : 16) * sizeof(*set->v));
        set->v[set->n].dev = dev;
        set->v[set->n].ino = ino;
        set->n++;
        return true;
}

/* Bytes allocated to memfds that `pid` holds open and that no earlier
 * process of this sample held.
 *
 * Safety argument: smaps counts mapped pages only, so without this a job
 * could fill a memfd with write() and never map it, holding any amount
 * of host RAM outside --memory (tests/security/resources.bats: `probe
 * memfd 512M` under --memory 64M ran to the end). Each inode counts once
 * per sample, by its allocated blocks, however many fds or processes
 * hold it. A memfd that is also mapped counts twice (here and in
 * Pss_Shmem): an overestimate, which errs toward stopping the job, never
 * toward letting it hold more than the limit. Not covered, and left to a
 * memory cgroup: a memfd whose only reference is in flight in a unix
 * socket queue, and System V segments that no process maps. */
static uint64_t memfd_bytes(pid_t pid, struct inode_set *seen)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return 0;
        uint64_t total = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char fd_path[96], target[32];
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(fd_path, sizeof(fd_path), "/proc/%d/fd/%s", (int)pid, de->d_name);
                ssize_t n = readlink(fd_path, target, sizeof(target) - 1);
                if (n < 0)
                        continue;
                target[n] = '\0';
                if (!startswith(target, "/memfd:") || stat(fd_path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (inode_set_add(seen, st.st_dev, st.st_ino))
                        total += (uint64_t)st.st_blocks * 512;
        }
        closedir(d);
        return total;
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

int watchdog_sample(pid_t root, struct tree_sample *ret)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d", (int)root);
        if (access(path, F_OK) < 0)
                return -errno;
        struct tree_sample s = { 0 };
        struct inode_set memfds = { 0 };
        size_t len = 0, cap = 0;
        pid_t *queue = NULL;
        /* a children list holds at most pids-limit entries of 8 bytes */
        size_t buflen = 64 * 1024;
        char *buf = xmalloc(buflen);

        queue_children(root, &queue, &len, &cap, buf, buflen);
        for (size_t i = 0; i <= len; i++) {
                pid_t pid = i == 0 ? root : queue[i - 1];
                uint64_t v;
                if (i > 0)
                        queue_children(pid, &queue, &len, &cap, buf, buflen);
                s.processes++;
                if (watchdog_process_memory(pid, &v) == 0)
                        s.memory_bytes += v;
                s.memory_bytes += memfd_bytes(pid, &memfds);
                if (process_cpu_ms(pid, &v) == 0)
                        s.cpu_ms += v;
                if (len > 1000000)
                        break;
        }
        free(queue);
        free(buf);
        free(memfds.v);
        *ret = s;
        return 0;
}
