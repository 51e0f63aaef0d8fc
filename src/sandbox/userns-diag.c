/* sandbox/userns-diag.c - why user namespaces are refused here, and the
 * fix. See userns-diag.h for the order of the causes.
 *
 * The hosts: Ubuntu 24.04 and later set
 * kernel.apparmor_restrict_unprivileged_userns=1, under which an
 * unconfined program gets a user namespace with no capabilities in it
 * (the uid map, mounts, lo fail with EPERM) unless an AppArmor profile
 * with a `userns,` rule confines it; hutch ships such a profile
 * (contrib/apparmor/). Docker's, containerd's and Podman's default
 * seccomp profiles answer clone/unshare with CLONE_NEWUSER with EPERM
 * and clone3 with ENOSYS. Debian before 11 had
 * kernel.unprivileged_userns_clone=0; hardened hosts set
 * user.max_user_namespaces=0 (clone answers ENOSPC). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util.h"
#include "sandbox/userns-diag.h"

#define CAP_SYS_ADMIN_BIT 21

static int read_at(const char *root, const char *rel, char **ret)
{
        _cleanup_free_ char *path = xasprintf("%s/%s", root, rel);
        return read_file(path, ret, NULL);
}

static long read_long_at(const char *root, const char *rel)
{
        _cleanup_free_ char *text = NULL;
        if (read_at(root, rel, &text) < 0)
                return -1;
        char *end;
        long v = strtol(text, &end, 10);
        return end == text ? -1 : v;
}

/* "Seccomp:" and whether CapEff holds CAP_SYS_ADMIN, from status */
static void read_status(const char *proc, struct userns_facts *f, bool *ret_sys_admin)
{
        _cleanup_free_ char *text = NULL;
        *ret_sys_admin = false;
        if (read_at(proc, "self/status", &text) < 0)
                return;
        for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (startswith(line, "Seccomp:"))
                        f->seccomp = (int)strtol(line + 8, NULL, 10);
                else if (startswith(line, "CapEff:"))
                        *ret_sys_admin = (strtoull(line + 7, NULL, 16) >> CAP_SYS_ADMIN_BIT) & 1;
        }
}

/* in the initial user namespace: its uid map is the identity over all ids */
static bool initial_userns(const char *proc)
{
        _cleanup_free_ char *text = NULL;
        unsigned long inside, outside, count;
        if (read_at(proc, "self/uid_map", &text) < 0 ||
            sscanf(text, "%lu %lu %lu", &inside, &outside, &count) != 3)
                return false;
        return inside == 0 && outside == 0 && count == 4294967295UL;
}

/* Chrooted into a directory that is not a mount point: mountinfo lists
 * only the mounts reachable from the caller's root, so no mount is at
 * "/". The kernel refuses a user namespace to a process whose root is
 * not its mount namespace's (current_chrooted()), as chroot(8) into a
 * plain directory leaves it. A chroot onto a mount point looks like a
 * namespace's root from inside, and is not seen. */
static bool chrooted(const char *proc)
{
        _cleanup_free_ char *text = NULL;
        if (read_at(proc, "self/mountinfo", &text) < 0 || !*text)
                return false;
        for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ...: skip four fields */
                const char *p = line;
                for (int field = 0; field < 4 && p; field++) {
                        p = strpbrk(p, " \n");
                        p = p && *p == ' ' ? p + 1 : NULL;
                }
                if (p && p[0] == '/' && p[1] == ' ')
                        return false;
        }
        return true;
}

/* a profile hutch ships (hutch, hutch-static, or one doctor's fix
 * writes, hutch-local) is named at the start of line */
static bool hutch_profile_name(const char *line)
{
        return startswith(line, "hutch") && (line[5] == ' ' || line[5] == '-' || line[5] == '\0' || line[5] == '\n');
}

static bool profile_listed(const char *apparmorfs)
{
        _cleanup_free_ char *text = NULL;
        if (read_at(apparmorfs, "profiles", &text) < 0)
                return false;
        for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (hutch_profile_name(line))
                        return true;
        return false;
}

void userns_facts_gather(struct userns_facts *f, int error, bool at_clone, const struct userns_roots *roots)
{
        const char *proc = roots && roots->proc ? roots->proc : "/proc";
        const char *aafs = roots && roots->apparmorfs ? roots->apparmorfs : "/sys/kernel/security/apparmor";
        const char *aad = roots && roots->apparmor_d ? roots->apparmor_d : "/etc/apparmor.d";

        *f = (struct userns_facts){ .error = error, .at_clone = at_clone, .seccomp = -1 };
        bool sys_admin;
        read_status(proc, f, &sys_admin);
        f->privileged = sys_admin && initial_userns(proc);
        f->chrooted = chrooted(proc);
        f->restrict_userns = read_long_at(proc, "sys/kernel/apparmor_restrict_unprivileged_userns");
        f->userns_clone = read_long_at(proc, "sys/kernel/unprivileged_userns_clone");
        f->max_user_ns = read_long_at(proc, "sys/user/max_user_namespaces");
        f->apparmor_active = access(aafs, F_OK) == 0;
        f->profile_loaded = profile_listed(aafs);
        _cleanup_free_ char *file = xasprintf("%s/hutch", aad);
        f->profile_file = access(file, F_OK) == 0;

        /* AppArmor's own file first: with another LSM stacked, attr/current is that one's */
        _cleanup_free_ char *label = NULL;
        if (read_at(proc, "self/attr/apparmor/current", &label) == 0 || read_at(proc, "self/attr/current", &label) == 0) {
                label[strcspn(label, "\n")] = '\0';
                snprintf(f->label, sizeof(f->label), "%s", label);
        }
        _cleanup_free_ char *exe_link = xasprintf("%s/self/exe", proc);
        ssize_t n = readlink(exe_link, f->exe, sizeof(f->exe) - 1);
        f->exe[n > 0 ? n : 0] = '\0';
}

enum userns_cause userns_classify(const struct userns_facts *f)
{
        if (f->error == 0)
                return USERNS_CAUSE_NONE;
        if (f->error == ENOSPC)
                return f->max_user_ns == 0 ? USERNS_CAUSE_MAX_ZERO : USERNS_CAUSE_USED_UP;
        /* clone3 answers ENOSYS only on kernels before 5.3 or under a
         * filter that says so (Docker's, because it cannot read clone3's
         * flags) */
        if (f->error == ENOSYS)
                return f->at_clone && f->seccomp == 2 ? USERNS_CAUSE_SECCOMP : USERNS_CAUSE_NONE;
        if (f->error != EPERM && f->error != EACCES)
                return USERNS_CAUSE_NONE;
        if (f->at_clone && f->seccomp == 2)
                return USERNS_CAUSE_SECCOMP;
        if (f->at_clone && f->error == EPERM && f->chrooted)
                return USERNS_CAUSE_CHROOT;
        if (f->privileged)
                return USERNS_CAUSE_NONE;
        if (f->at_clone && f->userns_clone == 0)
                return USERNS_CAUSE_CLONE_KNOB;
        if (f->restrict_userns == 1 && !hutch_profile_name(f->label))
                return f->profile_loaded ? USERNS_CAUSE_APPARMOR_UNATTACHED : USERNS_CAUSE_APPARMOR;
        return USERNS_CAUSE_NONE;
}

const char *userns_cause_text(enum userns_cause c, const struct userns_facts *f, char *buf, size_t len)
{
        switch (c) {
        case USERNS_CAUSE_SECCOMP:
                snprintf(buf, len, "a seccomp filter refuses them (%s; Seccomp: 2 in /proc/self/status: "
                         "a container runtime's default profile does this)",
                         f->error == ENOSYS ? "clone3 answers ENOSYS" : "clone and unshare answer EPERM");
                break;
        case USERNS_CAUSE_CHROOT:
                snprintf(buf, len, "hutch runs chrooted, and the kernel refuses a user namespace to a process "
                         "whose root is not its mount namespace's");
                break;
        case USERNS_CAUSE_CLONE_KNOB:
                snprintf(buf, len, "the kernel switch kernel.unprivileged_userns_clone is 0");
                break;
        case USERNS_CAUSE_MAX_ZERO:
                snprintf(buf, len, "the limit user.max_user_namespaces is 0");
                break;
        case USERNS_CAUSE_USED_UP:
                snprintf(buf, len, "the limit user.max_user_namespaces (%ld) is used up", f->max_user_ns);
                break;
        case USERNS_CAUSE_APPARMOR:
                snprintf(buf, len, "AppArmor restricts unprivileged user namespaces "
                         "(kernel.apparmor_restrict_unprivileged_userns=1) and no AppArmor profile for hutch is loaded");
                break;
        case USERNS_CAUSE_APPARMOR_UNATTACHED:
                snprintf(buf, len, "AppArmor restricts unprivileged user namespaces "
                         "(kernel.apparmor_restrict_unprivileged_userns=1) and this hutch (%s) runs outside "
                         "the loaded hutch profile (label '%s'): the profile names another path",
                         f->exe[0] ? f->exe : "?", f->label[0] ? f->label : "?");
                break;
        default:
                return NULL;
        }
        return buf;
}

/* A profile for exactly this binary, written and loaded: the narrowest
 * thing that lifts the restriction, for hutch alone. */
static void apparmor_fix(const struct userns_facts *f, char *buf, size_t len)
{
        const char *exe = f->exe[0] ? f->exe : "/usr/bin/hutch";
        if (f->profile_file && !f->profile_loaded) {
                snprintf(buf, len, "load hutch's installed profile: sudo apparmor_parser -r /etc/apparmor.d/hutch");
                return;
        }
        /* a second file when the installed one names another path, so
         * that install keeps working */
        const char *name = f->profile_file ? "hutch-local" : "hutch";
        snprintf(buf, len, "install and load an AppArmor profile for %s: "
                 "printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile %s %s flags=(unconfined) {\\n"
                 "  userns,\\n  include if exists <local/%s>\\n}\\n' | sudo tee /etc/apparmor.d/%s >/dev/null && "
                 "sudo apparmor_parser -r /etc/apparmor.d/%s (hutch's package and `make install` ship it; "
                 "reinstalling the package loads it)",
                 exe, name, exe, name, name, name);
}

const char *userns_cause_fix(enum userns_cause c, const struct userns_facts *f, char *buf, size_t len)
{
        switch (c) {
        case USERNS_CAUSE_SECCOMP:
                snprintf(buf, len, "run hutch outside the container, or start the container with a seccomp profile "
                         "that allows clone, clone3 and unshare with CLONE_NEWUSER "
                         "(docker run --security-opt seccomp=PROFILE.json ...)");
                break;
        case USERNS_CAUSE_CHROOT:
                snprintf(buf, len, "run hutch outside the chroot, or make the directory the root of a mount namespace "
                         "instead (unshare --mount, then pivot_root; systemd-nspawn and container runtimes do)");
                break;
        case USERNS_CAUSE_CLONE_KNOB:
                snprintf(buf, len, "sudo sysctl -w kernel.unprivileged_userns_clone=1 && "
                         "echo kernel.unprivileged_userns_clone=1 | sudo tee /etc/sysctl.d/50-userns.conf");
                break;
        case USERNS_CAUSE_MAX_ZERO:
        case USERNS_CAUSE_USED_UP:
                snprintf(buf, len, "sudo sysctl -w user.max_user_namespaces=15000 && "
                         "echo user.max_user_namespaces=15000 | sudo tee /etc/sysctl.d/50-userns.conf");
                break;
        case USERNS_CAUSE_APPARMOR:
        case USERNS_CAUSE_APPARMOR_UNATTACHED:
                apparmor_fix(f, buf, len);
                break;
        default:
                return NULL;
        }
        return buf;
}

const char *userns_explain(int error, const char *step, char *buf, size_t len)
{
        struct userns_facts f;
        char cause[512];
        userns_facts_gather(&f, error, step && streq(step, "clone namespaces"), NULL);
        const char *text = userns_cause_text(userns_classify(&f), &f, cause, sizeof(cause));
        if (!text)
                return NULL;
        /* the run's message adds its pointer to doctor for the errnos
         * that usually mean a refusal (EPERM, EACCES), not for ENOSYS */
        snprintf(buf, len, "user namespaces are refused: %s%s", text, error == ENOSYS ? "; see 'hutch doctor'" : "");
        return buf;
}
