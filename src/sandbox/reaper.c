/* reaper.c - ending a process tree without a pid namespace (see reaper.h).
 *
 * Why the loop ends: each round kills every child it saw; a killed
 * process can fork no more, so what a round can leave behind is only
 * what was forked before its kill landed, and that re-parents to us and
 * is seen by the next round. Every round waits for at least one child to
 * be reaped, so a tree that is already gone ends the loop at once (ECHILD).
 * Zombies are listed in children files too; killing one is harmless and
 * the wait reaps it.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sandbox/reaper.h"
#include "lib/util.h"

#define CHILDREN_BATCH 256

int reaper_become(void)
{
        return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ? -errno : 0;
}

int reaper_children(pid_t *pids, size_t max)
{
        DIR *d = opendir("/proc/self/task");
        if (!d)
                return -errno;
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[64];
                snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
                FILE *f = fopen(path, "re");
                if (!f)
                        continue;       /* the thread ended meanwhile */
                long pid;
                while (fscanf(f, "%ld", &pid) == 1) {
                        if (n < max)
                                pids[n] = (pid_t)pid;
                        n++;
                }
                fclose(f);
        }
        closedir(d);
        return (int)MIN(n, (size_t)INT_MAX);
}

long reaper_count_tasks(uid_t uid)
{
        struct stat self_ns;
        if (stat("/proc/self/ns/user", &self_ns) < 0)
                return -errno;
        DIR *d = opendir("/proc");
        if (!d)
                return -errno;
        int dfd = dirfd(d);
        long n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                char path[64];
                struct stat st, ns;
                /* one lookup per process: /proc/PID belongs to its euid;
                 * only a match costs two more */
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != uid)
                        continue;
                /* only our user namespace's: a namespace tier's sandbox
                 * shows its mapped uid here, but its tasks are charged to
                 * its creator's count, not to uid's */
                snprintf(path, sizeof(path), "%s/ns/user", de->d_name);
                if (fstatat(dfd, path, &ns, 0) == 0 && (ns.st_ino != self_ns.st_ino || ns.st_dev != self_ns.st_dev))
                        continue;
                /* the task dir's links: 2 + one per thread */
                snprintf(path, sizeof(path), "%s/task", de->d_name);
                if (fstatat(dfd, path, &st, 0) < 0)
                        continue;       /* gone meanwhile */
                n += st.st_nlink > 2 ? (long)st.st_nlink - 2 : 1;
        }
        closedir(d);
        return n;
}

static bool kept(pid_t pid, const pid_t *keep, size_t n_keep)
{
        for (size_t i = 0; i < n_keep; i++)
                if (keep[i] == pid)
                        return true;
        return false;
}

int reaper_end_children(const pid_t *keep, size_t n_keep)
{
        int reaped = 0;
        for (;;) {
                pid_t pids[CHILDREN_BATCH];
                int n = reaper_children(pids, ELEMENTSOF(pids));
                if (n < 0)
                        return n;
                size_t targets = 0;
                for (size_t i = 0; i < MIN((size_t)n, ELEMENTSOF(pids)); i++)
                        if (!kept(pids[i], keep, n_keep)) {
                                (void)kill(pids[i], SIGKILL);
                                targets++;
                        }
                if (targets == 0 && (size_t)n <= ELEMENTSOF(pids))
                        return reaped;
                /* wait for those (not the kept ones): one blocking wait
                 * per target, then whatever else is ready */
                for (size_t i = 0; i < MIN((size_t)n, ELEMENTSOF(pids)); i++) {
                        if (kept(pids[i], keep, n_keep))
                                continue;
                        while (waitpid(pids[i], NULL, __WALL) < 0 && errno == EINTR)
                                ;
                        reaped++;
                }
        }
}
