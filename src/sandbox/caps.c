/* caps.c - capability and securebits handling for the job process.
 *
 * Safety argument: the job must hold no capability in any namespace. We
 * drop the bounding set first (needs CAP_SETPCAP, still held), clear the
 * ambient set, lock securebits so that execve by uid 0 does not grant the
 * bounding set back (and it is empty anyway), then zero the remaining
 * sets and set no_new_privs. The order matters: once CAP_SETPCAP is gone
 * the bounding set can no longer be changed.
 */
#include "config.h"

#include <linux/securebits.h>
#include <sys/capability.h>
#include <grp.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/caps.h"
#include "lib/util.h"

static int last_cap(void)
{
        /* cap_max_bits() reads the running kernel's limit */
        return (int)cap_max_bits() - 1;
}

int caps_drop_all(void)
{
        int top = last_cap();

        for (int c = 0; c <= top; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        if (prctl(PR_SET_SECUREBITS,
                  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
                  SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                  SECBIT_KEEP_CAPS_LOCKED |
                  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                  0, 0, 0) < 0)
                return -errno;

        cap_t none = cap_init();        /* all sets empty */
        if (!none)
                return -ENOMEM;
        int r = cap_set_proc(none) < 0 ? -errno : 0;
        cap_free(none);
        if (r < 0)
                return r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

int caps_raise_effective(void)
{
        cap_t caps = cap_get_proc();
        if (!caps)
                return -errno;
        int r = 0;
        for (int c = 0; c <= last_cap(); c++) {
                cap_flag_value_t v;
                cap_value_t cv = c;
                if (cap_get_flag(caps, cv, CAP_PERMITTED, &v) == 0 && v == CAP_SET)
                        cap_set_flag(caps, CAP_EFFECTIVE, 1, &cv, CAP_SET);
        }
        if (cap_set_proc(caps) < 0)
                r = -errno;
        cap_free(caps);
        return r;
}

int caps_become_unprivileged(uid_t uid, gid_t gid)
{
        int top = last_cap();
        bool privileged = geteuid() == 0;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        for (int c = 0; c <= top; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
                        return -errno;
        if (privileged) {
                /* not NO_SETUID_FIXUP: the uid change below must clear
                 * the permitted and effective sets */
                if (prctl(PR_SET_SECUREBITS,
                          SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                          SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                          0, 0, 0) < 0 && errno != EPERM)
                        return -errno;
                if (setgroups(0, NULL) < 0)
                        return -errno;
        }
        if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        if (uid == 0 || getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid)
                return -EPERM;

        cap_t none = cap_init();
        if (!none)
                return -ENOMEM;
        int r = cap_set_proc(none) < 0 ? -errno : 0;
        cap_free(none);
        if (r < 0)
                return r;
        /* nothing may be left in any set */
        cap_t now = cap_get_proc();
        if (!now)
                return -errno;
        cap_t empty = cap_init();
        r = empty && cap_compare(now, empty) == 0 ? 0 : -EPERM;
        cap_free(now);
        cap_free(empty);
        for (int c = 0; r == 0 && c <= top; c++)
                if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) > 0)
                        r = -EPERM;
        return r;
}
