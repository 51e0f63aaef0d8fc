/* run/landlock-uid.h - a host uid of its own for each landlock-tier job
 * hutch runs as root (hutch-run(1) ISOLATION).
 *
 * The landlock tier has no user namespace, so root's job runs under a
 * real host uid, and its scratch (the copy of --workdir, $HOME, $TMPDIR)
 * is a host directory that uid owns. Had that uid been 65534, as the
 * namespace tier's mapping is, every other process of the host running
 * as nobody (daemons that drop to it, other root-started landlock jobs)
 * would own the scratch too: it could read root's copied files, change
 * what --apply writes back, and chmod another run's copy open for any
 * local user. Landlock binds only the job, not those.
 *
 * So each job gets a uid (and the same gid) from a range no account and
 * no user namespace mapping uses by convention, held for the run by a
 * lock under /run/hutch so that two runs on the host never share one.
 * What the job leaves under its uid outside the scratch - SysV shared
 * memory, message queues, semaphore sets, which outlive any process -
 * is removed when the uid is let go, and also when it is taken (a run
 * killed before it could clean up leaves them for the uid's next holder).
 */
#pragma once

#include <sys/types.h>

/* 0x7F000000 ... 0x7FFDFFFF: above the ranges systemd hands to
 * containers (up to 0x6FFFFFFF), below its "foreign" range (0x7FFE0000)
 * and below 2^31, which some tools still read as a signed number. */
#define LANDLOCK_UID_FIRST 0x7F000000u
#define LANDLOCK_UID_LAST 0x7FFDFFFFu
/* Where this user namespace does not map those (a container runtime's
 * 0-65535): systemd's range for dynamic users, which no account takes. */
#define LANDLOCK_UID_SMALL_FIRST 61184u
#define LANDLOCK_UID_SMALL_LAST 65519u

/* Where the reservations are: one file per uid in use, locked by its run. */
#define LANDLOCK_UID_LOCK_DIR "/run/hutch/landlock-uids"

struct landlock_uid {
        uid_t uid;
        int lock_fd;
        char *lock_path;        /* NULL: none held (a zeroed struct holds none) */
};

/* Take a free uid for this run (root only): from the first range above
 * that this user namespace maps as uid and gid, its lock held in *ret,
 * and no SysV IPC object of it left on the host. 0, or -errno: -ERANGE
 * when the namespace maps neither range, -EPERM when the lock dir is not
 * root's alone, -EBUSY when 64 tries found no free uid. */
int landlock_uid_reserve(struct landlock_uid *ret);

/* After the job's last process is gone: remove the SysV IPC objects the
 * uid owns or created, then let the uid go. NULL- and unheld-tolerant. */
void landlock_uid_release(struct landlock_uid *u);

/* Remove every SysV shared memory segment, message queue and semaphore
 * set of the host's IPC namespace that uid owns or created. Returns how
 * many were removed, or -errno when /proc/sysvipc cannot be read. */
int landlock_uid_remove_ipc(uid_t uid);
