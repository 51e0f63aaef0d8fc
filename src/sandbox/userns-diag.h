/* userns-diag.h - why this host refuses the user namespaces a sandbox
 * needs, in words, with the commands that fix it. Shared by `hutch
 * doctor` and the run's setup error, so both name the same cause.
 *
 * Gathering reads files only (sysctls, /proc/self/status, AppArmor's
 * securityfs and /etc/apparmor.d), under roots the caller names, so the
 * unit tests point it at a fake tree; classifying is a pure function of
 * what was gathered. */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

enum userns_cause {
        USERNS_CAUSE_NONE,              /* nothing gathered explains the refusal */
        USERNS_CAUSE_SECCOMP,           /* a seccomp filter (a container runtime's default profile) */
        USERNS_CAUSE_CHROOT,            /* the caller is chrooted: the kernel refuses it a user namespace */
        USERNS_CAUSE_CLONE_KNOB,        /* kernel.unprivileged_userns_clone = 0 (Debian's older switch) */
        USERNS_CAUSE_MAX_ZERO,          /* user.max_user_namespaces = 0 */
        USERNS_CAUSE_USED_UP,           /* user.max_user_namespaces reached (ENOSPC, limit above 0) */
        USERNS_CAUSE_APPARMOR,          /* AppArmor's restriction, and no hutch profile is loaded */
        USERNS_CAUSE_APPARMOR_UNATTACHED, /* a hutch profile is loaded, but this binary runs outside it */
        _USERNS_CAUSE_MAX,
        _USERNS_CAUSE_INVALID = -EINVAL,
};

/* Where gathering reads; NULL members mean the live system's paths
 * ("/proc", "/sys/kernel/security/apparmor", "/etc/apparmor.d"). */
struct userns_roots {
        const char *proc;
        const char *apparmorfs;
        const char *apparmor_d;
};

struct userns_facts {
        int error;              /* positive errno of the refusal; 0: none */
        bool at_clone;          /* clone3()/unshare() itself refused, not a later step */
        bool privileged;        /* CAP_SYS_ADMIN in the initial user namespace (AppArmor exempts it) */
        bool chrooted;          /* chroot(8) into a directory: no mount is at "/" in mountinfo */
        int seccomp;            /* "Seccomp:" of /proc/self/status: 0, 1, 2; -1 unknown */
        long restrict_userns;   /* kernel.apparmor_restrict_unprivileged_userns; -1 absent */
        long userns_clone;      /* kernel.unprivileged_userns_clone; -1 absent */
        long max_user_ns;       /* user.max_user_namespaces; -1 unreadable */
        bool apparmor_active;   /* AppArmor's securityfs directory exists */
        bool profile_loaded;    /* a profile named hutch* is in its profiles list */
        bool profile_file;      /* /etc/apparmor.d/hutch exists */
        char label[128];        /* this process's AppArmor label ("unconfined"); "" unknown */
        char exe[PATH_MAX];     /* the running binary, for the profile's attachment path */
};

/* Fill f for a refusal with positive errno `error` (0: no refusal, the
 * facts alone), at_clone when clone3()/unshare() returned it. Never
 * fails: what cannot be read is left at "unknown". */
void userns_facts_gather(struct userns_facts *f, int error, bool at_clone, const struct userns_roots *roots);

/* The cause of f's refusal, or USERNS_CAUSE_NONE. Order matters, and
 * follows the kernel's: a seccomp filter answers before clone() reaches
 * any namespace code; the count limit, a chroot and Debian's switch
 * refuse in clone() itself; AppArmor's restriction lets the namespace be made
 * (for an unconfined caller) and strips its capabilities, so it shows
 * as EPERM at any later step, and spares a caller that is confined by
 * hutch's own profile, whose `userns,` rule allows them, and a
 * privileged caller. */
enum userns_cause userns_classify(const struct userns_facts *f);

/* One line for the cause ("AppArmor restricts unprivileged user
 * namespaces (...) and no AppArmor profile for hutch is loaded"), in
 * buf; NULL for USERNS_CAUSE_NONE. */
const char *userns_cause_text(enum userns_cause c, const struct userns_facts *f, char *buf, size_t len);

/* The exact commands that fix c on this host, in buf (the narrowest
 * fix first: for AppArmor hutch's profile, never the host-wide sysctl);
 * NULL for USERNS_CAUSE_NONE. */
const char *userns_cause_fix(enum userns_cause c, const struct userns_facts *f, char *buf, size_t len);

/* Gather on the live system and say it in one line: "user namespaces
 * are refused: <cause>", or NULL when nothing explains error at step
 * (step "clone namespaces" is clone3's). For the run's setup error. */
const char *userns_explain(int error, const char *step, char *buf, size_t len);
