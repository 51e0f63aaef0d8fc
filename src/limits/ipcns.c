/* ipcns.c - lower the SysV IPC limits of the job's IPC namespace from
 * --memory (ipcns.h).
 *
 * Who may write them. The ipc sysctls are per IPC namespace: current
 * kernels give each namespace its own sysctl set (ipc/ipc_sysctl.c:
 * set_lookup() picks current->nsproxy->ipc_ns's set when /proc/sys is
 * walked); older ones resolve the writer's namespace at write time in
 * get_ipc() and check the table's 0644 against global root only. Either
 * way it is the writer's namespace that counts. On current kernels
 * ipc_permissions() gives the owner's bits of their 0644 to
 * the namespace's "root", which ipc_set_ownership() takes as uid 0 of
 * the IPC namespace's owning user namespace, make_kuid(ns->user_ns, 0),
 * or global root when that uid 0 is not mapped; everyone else reads
 * only. The sandbox's user namespace maps only the job's uid. Rootless,
 * its uid 0 is unmapped and the caller is not global root, so nobody
 * can write them: that is why only real root calls this. As real root
 * the sandbox user is host uid 65534, inside uid 0 is unmapped (unless
 * the profile's uid is 0, then it is 65534: as_uid below), and global
 * root owns them.
 *
 * Why this is safe:
 * - the fd is the pidfd clone3(CLONE_PIDFD) returned for the sandbox's
 *   init, which was created with CLONE_NEWIPC in the same call: it names
 *   that process, not a pid that could be reused, and setns(pidfd,
 *   CLONE_NEWIPC) enters exactly the namespace the job will inherit
 *   (init is hutch's code and never leaves it);
 * - a forked helper enters the namespace, never the supervisor: the
 *   helper runs nothing of the job's, execs nothing, reads nothing from
 *   the sandbox, writes numbers computed before the fork, and exits; the
 *   caller waits for it;
 * - what it writes is the host's /proc (the helper stays in the host's
 *   mount namespace), /proc/sys/kernel/{shm*,msg*,sem}, opened after
 *   setns() with O_NOFOLLOW, so the kernel resolves them in the job's
 *   IPC namespace and in no other (no host-wide limit is touched);
 * - it happens before sandbox_start(): no instruction of the job has
 *   run, so no segment exists that the new limits would miss, and the
 *   helper is gone before the job exists;
 * - the job cannot raise them again: its /proc/sys is a read-only bind
 *   (mount.c), it has no capabilities and no mount syscalls (seccomp),
 *   and it is not the sysctls' owner (with a profile uid of 0 it is, and
 *   the read-only /proc/sys is then the barrier).
 *
 * As the helper only lowers limits inside a namespace hutch created for
 * this run, a failure changes nothing on the host: the caller reports
 * the holes as open.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "limits/ipcns.h"
#include "lib/util.h"

/* the kernel's own caps (include/uapi/linux/msg.h, sem.h): never raise */
#define KERNEL_MSGMNB 16384u
#define KERNEL_MSGMAX 8192u
#define KERNEL_MSGMNI 32000u
#define KERNEL_SEMMSL 32000u
#define KERNEL_SEMMNS 1024000000u
#define KERNEL_SEMOPM 500u
#define KERNEL_SEMMNI 32000u
#define KERNEL_SHMMNI 4096u
/* a semaphore's kernel memory (struct sem is cache-line aligned) */
#define SEM_BYTES 64u

void ipcns_limits_for(uint64_t memory_bytes, long page_size, struct ipcns_limits *ret)
{
        uint64_t page = page_size > 0 ? (uint64_t)page_size : 4096;
        uint64_t quarter = memory_bytes / 4;

        *ret = (struct ipcns_limits){ 0 };
        ret->shmmax = memory_bytes;
        ret->shmall = MAX((memory_bytes + page - 1) / page, 1);
        /* a segment is at least a page: more ids than pages buy nothing
         * but kernel objects */
        ret->shmmni = (unsigned)MIN(ret->shmall, KERNEL_SHMMNI);
        ret->msgmnb = KERNEL_MSGMNB;
        ret->msgmax = KERNEL_MSGMAX;
        ret->msgmni = (unsigned)MIN(MAX(quarter / KERNEL_MSGMNB, 1), KERNEL_MSGMNI);
        ret->semmns = (unsigned)MIN(MAX(quarter / SEM_BYTES, 1), KERNEL_SEMMNS);
        ret->semmsl = MIN(ret->semmns, KERNEL_SEMMSL);
        ret->semopm = KERNEL_SEMOPM;
        ret->semmni = MIN(ret->semmns, KERNEL_SEMMNI);
}

struct sysctl_text {
        const char *path;
        char value[64];
};

struct helper_answer {
        int error;      /* 0 or errno */
        int step;       /* which step failed: -1 setns, -2 ids, else index */
};

/* In the forked helper: only system calls, no allocation (the caller
 * may have other threads). */
static _Noreturn void helper(int fd, uid_t as_uid, gid_t as_gid, const struct sysctl_text *t, size_t n,
                             int answer_fd)
{
        struct helper_answer a = { 0, 0 };

        if (setns(fd, CLONE_NEWIPC) < 0) {
                a = (struct helper_answer){ errno, -1 };
                goto out;
        }
        if (as_uid != 0 || as_gid != 0) {
                if (setgroups(0, NULL) < 0 || setresgid(as_gid, as_gid, as_gid) < 0 ||
                    setresuid(as_uid, as_uid, as_uid) < 0) {
                        a = (struct helper_answer){ errno, -2 };
                        goto out;
                }
        }
        for (size_t i = 0; i < n; i++) {
                int s = open(t[i].path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
                size_t len = strlen(t[i].value);
                if (s < 0 || write(s, t[i].value, len) != (ssize_t)len) {
                        a = (struct helper_answer){ errno ? errno : EIO, (int)i };
                        if (s >= 0)
                                close(s);
                        goto out;
                }
                close(s);
        }
out:
        (void)!write(answer_fd, &a, sizeof(a));
        _exit(a.error ? 1 : 0);
}

int ipcns_apply(int fd, uid_t as_uid, gid_t as_gid, const struct ipcns_limits *l, const char **ret_what)
{
        struct sysctl_text t[] = {
                { "/proc/sys/kernel/shmmni", "" }, { "/proc/sys/kernel/shmmax", "" },
                { "/proc/sys/kernel/shmall", "" }, { "/proc/sys/kernel/msgmnb", "" },
                { "/proc/sys/kernel/msgmax", "" }, { "/proc/sys/kernel/msgmni", "" },
                { "/proc/sys/kernel/sem", "" },
        };
        struct helper_answer a = { EIO, -3 };
        int pipefd[2], status;
        pid_t pid;

        snprintf(t[0].value, sizeof(t[0].value), "%u", l->shmmni);
        snprintf(t[1].value, sizeof(t[1].value), "%llu", (unsigned long long)l->shmmax);
        snprintf(t[2].value, sizeof(t[2].value), "%llu", (unsigned long long)l->shmall);
        snprintf(t[3].value, sizeof(t[3].value), "%u", l->msgmnb);
        snprintf(t[4].value, sizeof(t[4].value), "%u", l->msgmax);
        snprintf(t[5].value, sizeof(t[5].value), "%u", l->msgmni);
        snprintf(t[6].value, sizeof(t[6].value), "%u %u %u %u", l->semmsl, l->semmns, l->semopm, l->semmni);

        *ret_what = "start the helper";
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int e = errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return -e;
        }
        if (pid == 0) {
                close(pipefd[0]);
                helper(fd, as_uid, as_gid, t, ELEMENTSOF(t), pipefd[1]);
        }
        close(pipefd[1]);
        ssize_t got;
        do
                got = read(pipefd[0], &a, sizeof(a));
        while (got < 0 && errno == EINTR);
        close(pipefd[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (got != (ssize_t)sizeof(a))
                a = (struct helper_answer){ EIO, -3 };
        if (!a.error)
                return 0;
        *ret_what = a.step == -1 ? "enter the job's IPC namespace"
                  : a.step == -2 ? "take the namespace owner's uid"
                  : a.step >= 0 && (size_t)a.step < ELEMENTSOF(t) ? t[a.step].path + strlen("/proc/sys/")
                  : "the helper";
        return -a.error;
}
