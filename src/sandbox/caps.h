/* caps.h - strips a process of every privilege before it becomes the job. */
#pragma once

#include <sys/types.h>

/* Drop every capability from the bounding, ambient, inheritable,
 * permitted and effective sets, lock the securebits so a uid 0 job
 * cannot regain any at execve, and set no_new_privs so setuid binaries
 * and file capabilities give nothing. 0 or -errno. */
int caps_drop_all(void);

/* Restore the effective set from the permitted set (after a uid change
 * with PR_SET_KEEPCAPS). 0 or -errno. */
int caps_raise_effective(void);

/* The landlock tier's job has no user namespace: its capabilities would
 * be the host's. Become uid/gid with no supplementary group, no
 * capability in any set and no_new_privs:
 *  - as root (a container's root): drop the bounding set and the ambient
 *    set, lock securebits so uid 0 gains nothing at execve, setgroups
 *    to none, then setresgid/setresuid to the unprivileged ids, which
 *    clears the permitted and effective sets (no KEEPCAPS: the lock
 *    keeps it off);
 *  - as anyone else: uid and gid must already be ours; the ambient set
 *    is cleared.
 * The bounding set and securebits take CAP_SETPCAP (a container may not
 * grant it): without it they stay as they are, which gives nothing back:
 * no_new_privs keeps execve from adding capabilities, and the job's uid
 * is not 0.
 * Then every set is checked empty: -EPERM if anything is left. 0 or
 * -errno. */
int caps_become_unprivileged(uid_t uid, gid_t gid);
