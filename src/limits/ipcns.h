/* ipcns.h - System V IPC limits of the job's own IPC namespace.
 *
 * Without a memory cgroup, SysV shm segments no process has attached,
 * message queues and semaphore arrays hold memory no process maps: the
 * watchdog cannot see it. Each IPC namespace has its own kernel.shm*,
 * kernel.msg* and kernel.sem, and a new namespace starts with the
 * kernel's defaults (shmall: nearly unlimited). ipcns_apply() lowers
 * them from --memory before the job runs. Only real root can (ipcns.c
 * has the argument); rootless, ipcns_apply() is never called and the
 * enforcement report says the holes are open.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct ipcns_limits {
        uint64_t shmmax;        /* kernel.shmmax: bytes of one segment */
        uint64_t shmall;        /* kernel.shmall: pages of all segments */
        unsigned shmmni;        /* kernel.shmmni: segments */
        unsigned msgmax;        /* kernel.msgmax: bytes of one message */
        unsigned msgmnb;        /* kernel.msgmnb: bytes of one queue */
        unsigned msgmni;        /* kernel.msgmni: queues */
        unsigned semmsl, semmns, semopm, semmni;        /* kernel.sem, in its order */
};

/* The limits for a job of memory_bytes (> 0): SysV shm in all at most
 * memory_bytes; message queues and semaphores each at most about a
 * quarter of it (never below one queue of the kernel's default size). */
void ipcns_limits_for(uint64_t memory_bytes, long page_size, struct ipcns_limits *ret);

/* Write l into the IPC namespace of the process that pidfd refers to
 * (or of the namespace an nsfd of /proc/PID/ns/ipc names), from a
 * short-lived helper process, as host uid as_uid / gid as_gid (0, or
 * the host id that the namespace's uid 0 maps to). The caller is never
 * in that namespace. Returns 0, or -errno with *ret_what naming the
 * step or the sysctl that failed (a static string). */
int ipcns_apply(int fd, uid_t as_uid, gid_t as_gid, const struct ipcns_limits *l, const char **ret_what);
