/* cgroup-run.c - one run's cgroup v2: creating it with its limits
 * (memory.max, cpu.max, pids.max, io.max, ...), killing what is left
 * in it and removing it (see cgroup.h for the lifecycle).
 *
 * Shape of the work: a handful of small text files per run. Limits are
 * written once before the sandbox exists; nothing here is hot, so
 * clarity beats cleverness. Metering the same cgroup is cgroup-stats.c.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "limits/cgroup.h"
#include "limits/cgroup-internal.h"
#include "lib/util.h"

#define CPU_PERIOD_USEC 100000ULL

int cgroup_cpus_to_max(double cpus, char *buf, size_t len)
{
        if (isnan(cpus) || cpus > 4096.0)
                return -ERANGE;
        if (cpus <= 0.0) {
                snprintf(buf, len, "max %llu", CPU_PERIOD_USEC);
                return 0;
        }
        uint64_t quota = (uint64_t)(cpus * (double)CPU_PERIOD_USEC + 0.5);
        if (quota < 1000)
                quota = 1000;
        snprintf(buf, len, "%llu %llu", (unsigned long long)quota, CPU_PERIOD_USEC);
        return 0;
}

/* ---- small file helpers -------------------------------------------------- */

int cgroup_read_at(int dirfd, const char *name, char **ret)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        size_t cap = 1024, len = 0;
        char *buf;

        if (fd < 0)
                return -errno;
        buf = xmalloc(cap);
        for (;;) {
                ssize_t n;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
                n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        int e = -errno;
                        if (e == -EINTR)
                                continue;
                        free(buf);
                        return e;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* cgroup files take one value per write(2): write it whole, once. */
static int write_at(int dirfd, const char *name, const char *text)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
        size_t n = strlen(text);
        ssize_t w;

        if (fd < 0)
                return -errno;
        do
                w = write(fd, text, n);
        while (w < 0 && errno == EINTR);
        if (w < 0)
                return -errno;
        return (size_t)w == n ? 0 : -EIO;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* ---- one run ------------------------------------------------------------- */

static int apply_limits(struct cgroup_run *cg, const struct cgroup_limits *lim)
{
        char buf[64];
        int r;

        if ((cg->usable & CGROUP_MEMORY) && lim->memory_max > 0) {
                uint64_t high = lim->memory_high ? lim->memory_high : lim->memory_max / 10 * 8;
                /* high first: a lower max than an old high is fine either way,
                 * but this keeps memory.high <= memory.max at every step */
                if (high < lim->memory_max) {
                        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)high);
                        r = write_at(cg->fd, "memory.high", buf);
                        if (r < 0)
                                return r;
                        cg->enforced |= CGROUP_LIMIT_MEMORY_HIGH;
                }
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->memory_max);
                r = write_at(cg->fd, "memory.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_MEMORY;
                /* absent when the kernel has no swap accounting: then
                 * there is no swap to escape to through this cgroup
                 * either way, but we do not claim it */
                r = write_at(cg->fd, "memory.swap.max", "0");
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_SWAP;
                else if (r != -ENOENT)
                        return r;
        } else if ((cg->usable & CGROUP_MEMORY) && lim->memory_high > 0) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->memory_high);
                r = write_at(cg->fd, "memory.high", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_MEMORY_HIGH;
        }
        if ((cg->usable & CGROUP_MEMORY) && lim->oom_group) {
                r = write_at(cg->fd, "memory.oom.group", "1");
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_OOM_GROUP;
                else if (r != -ENOENT)
                        return r;
        }
        if ((cg->usable & CGROUP_CPU) && lim->cpus > 0) {
                r = cgroup_cpus_to_max(lim->cpus, buf, sizeof(buf));
                if (r < 0)
                        return r;
                r = write_at(cg->fd, "cpu.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_CPUS;
        }
        if ((cg->usable & CGROUP_PIDS) && lim->pids_max > 0) {
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
                r = write_at(cg->fd, "pids.max", buf);
                if (r < 0)
                        return r;
                cg->enforced |= CGROUP_LIMIT_PIDS;
        }
        if ((cg->usable & CGROUP_IO) && lim->io_max && *lim->io_max) {
                /* A line the kernel refuses (a partition, a device
                 * without a queue) must not cost the run its other
                 * limits: io is left out of the enforced mask and the
                 * reason kept for the report. */
                _cleanup_free_ char *copy = xstrdup(lim->io_max);
                char *save = NULL;
                r = 0;
                for (char *line = strtok_r(copy, "\n", &save); line && r == 0;
                     line = strtok_r(NULL, "\n", &save)) {
                        r = write_at(cg->fd, "io.max", line);
                        if (r < 0)
                                cg->io_max_error = xasprintf("io.max refused \"%s\": %s", line, strerror(-r));
                }
                if (r == 0)
                        cg->enforced |= CGROUP_LIMIT_IO;
        }
        return 0;
}

int cgroup_run_new(const char *base, const char *name, unsigned usable,
                   const struct cgroup_limits *lim, struct cgroup_run **ret)
{
        struct cgroup_run *cg;
        int r;

        if (!name || !*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        cg = xcalloc(1, sizeof(*cg));
        cg->fd = -1;
        cg->usable = usable;
        cg->path = xasprintf("%s/%s", base, name);
        if (mkdir(cg->path, 0755) < 0) {
                r = -errno;
                cg->removed = true;
                cgroup_run_free(cg);
                return r;
        }
        cg->fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg->fd < 0) {
                r = -errno;
                goto fail;
        }
        r = apply_limits(cg, lim);
        if (r < 0)
                goto fail;
        *ret = cg;
        return 0;
fail:
        cgroup_run_free(cg);
        return r;
}

int cgroup_run_open(const char *path, struct cgroup_run **ret)
{
        const char *base = strrchr(path, '/');
        struct statfs sfs;
        struct cgroup_run *cg;

        /* Safety: the path comes from the run store, which its owner can
         * edit; only ever touch a cgroup v2 directory hutch named itself */
        if (!base || !startswith(base + 1, "run-") || strstr(path, "/../"))
                return -EINVAL;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstatfs(fd, &sfs) < 0 || (uint64_t)sfs.f_type != CGROUP2_SUPER_MAGIC) {
                close(fd);
                return -EINVAL;
        }
        cg = xcalloc(1, sizeof(*cg));
        cg->fd = fd;
        cg->path = xstrdup(path);
        *ret = cg;
        return 0;
}

int cgroup_run_fd(const struct cgroup_run *cg)
{
        return cg->fd;
}

const char *cgroup_run_path(const struct cgroup_run *cg)
{
        return cg->path;
}

unsigned cgroup_run_enforced(const struct cgroup_run *cg)
{
        return cg->enforced;
}

/* SIGKILL each pid in dir/cgroup.procs and in every cgroup below dir.
 * Returns how many were signalled, or -errno. */
static int kill_procs_recursive(int dirfd)
{
        _cleanup_free_ char *text = NULL;
        int n = 0, r;

        r = cgroup_read_at(dirfd, "cgroup.procs", &text);
        if (r < 0)
                return r;
        for (char *s = text; *s; ) {
                char *end;
                long pid = strtol(s, &end, 10);
                if (end == s)
                        break;
                if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                        n++;
                s = end + strspn(end, "\n");
        }

        int dupfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dupfd < 0)
                return -errno;
        DIR *d = fdopendir(dupfd);
        if (!d) {
                close(dupfd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d)); ) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue;
                r = kill_procs_recursive(sub);
                if (r > 0)
                        n += r;
        }
        closedir(d);
        return n;
}

int cgroup_run_kill(struct cgroup_run *cg)
{
        int r;

        if (cg->fd < 0)
                return -EBADF;
        r = write_at(cg->fd, "cgroup.kill", "1");
        if (r != -ENOENT)
                return r;
        /* Before 5.14: signal pid by pid. A fork racing with us lands in
         * the cgroup after we read cgroup.procs, so go round until a pass
         * finds nobody (bounded: a fork bomb under pids.max cannot
         * outrun SIGKILL for long). */
        for (int round = 0; round < 100; round++) {
                r = kill_procs_recursive(cg->fd);
                if (r <= 0)
                        return r < 0 ? r : 0;
                sleep_ms(10);
        }
        return -EBUSY;
}

/* rmdir every cgroup below dir (depth first), then dir itself. */
static int rmdir_tree(const char *path)
{
        DIR *d = opendir(path);
        if (d) {
                for (struct dirent *de; (de = readdir(d)); ) {
                        if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        _cleanup_free_ char *sub = xasprintf("%s/%s", path, de->d_name);
                        (void)rmdir_tree(sub);
                }
                closedir(d);
        }
        if (rmdir(path) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 0;
}

int cgroup_run_remove(struct cgroup_run *cg, unsigned timeout_ms)
{
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        int r;

        if (cg->removed)
                return 0;
        for (;;) {
                (void)cgroup_run_kill(cg);
                r = rmdir_tree(cg->path);
                if (r == 0) {
                        cg->removed = true;
                        return 0;
                }
                if (r != -EBUSY)
                        return r;
                if (now_monotonic_ms() >= deadline)
                        return -EBUSY;
                sleep_ms(10);
        }
}

struct cgroup_run *cgroup_run_free(struct cgroup_run *cg)
{
        if (!cg)
                return NULL;
        if (!cg->removed)
                (void)cgroup_run_remove(cg, 1000);
        if (cg->fd >= 0)
                close(cg->fd);
        free(cg->path);
        free(cg->io_max_error);
        free(cg);
        return NULL;
}

const char *cgroup_run_io_max_error(const struct cgroup_run *cg)
{
        return cg->io_max_error;
}
