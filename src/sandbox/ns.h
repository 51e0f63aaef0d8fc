/* ns.h - namespace plumbing around the sandbox: the uid/gid maps the
 * supervisor writes for it, and the bits of namespace state the sandbox
 * sets up for itself (hostname, loopback). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The host uid/gid the sandbox user maps to. For an ordinary user that is
 * the user itself; for real root it is an unprivileged id (65534), so no
 * process in the sandbox is ever host root. */
uid_t ns_host_uid(void);
/* uid 0 of the initial user namespace (not root of a user namespace). */
bool ns_real_root(void);
gid_t ns_host_gid(void);

/* Write a one-id map "inside -> host" for process pid, denying setgroups
 * first (required for an unprivileged gid map, and it keeps the job from
 * dropping supplementary groups to dodge group-deny permissions). */
int ns_write_id_maps(pid_t pid, uid_t inside_uid, gid_t inside_gid, uid_t host_uid, gid_t host_gid);

/* Inside the new uts and net namespaces. */
/* A user namespace whose only mapping is from_uid -> to_uid (and the
 * same for gids), as an fd for an idmapped mount (MOUNT_ATTR_IDMAP):
 * through such a mount a file owned by from_uid on disk is seen as
 * to_uid. Made with a short-lived helper process. fd or -errno. */
int ns_idmap_userns(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid);

int ns_set_hostname(const char *name);
int ns_loopback_up(void);

/* The sandbox's network namespace, built beside the rest of its setup.
 * Creating one (setup_net(): loopback, sysctls, every protocol's
 * per-namespace state) is the larger part of what clone3() costs with
 * CLONE_NEWNET, and it does not depend on anything else the sandbox
 * builds. So a helper task makes it, from inside the sandbox's user
 * namespace, which then owns it, and brings lo up, while the sandbox
 * builds its root on another CPU. _begin starts the helper; _join waits
 * for it and moves the caller into the new namespace, or says why not
 * (step names what failed). The caller must not run anything of the
 * job before _join returned 0: until then it is in the network
 * namespace it was cloned in. */
struct netns_build {
        pid_t pid;
        void *stack;
        int netns_fd;
        int error;              /* positive errno of what failed */
        const char *step;
};
int ns_netns_begin(struct netns_build *b);
int ns_netns_join(struct netns_build *b);

/* The kind of namespace ("net" for user.max_net_namespaces) whose
 * count limit in the caller's user namespace is 0, among those a
 * sandbox needs (the network's only when net), or NULL when none is. */
const char *ns_limit_at_zero(bool net);

/* Words for a refusal at setup `step` whose errno alone misleads, with
 * the fix, in buf: ENOSPC making the namespaces ("clone namespaces",
 * "network namespace"; ENOSPC is "No space left on device") names the
 * limit that refused; EPERM dropping root's supplementary groups where
 * setgroups is denied says so; EPERM, EACCES and ENOSYS name what
 * refuses user namespaces here when userns_explain() finds it (AppArmor,
 * a container's seccomp filter, Debian's switch). NULL when strerror()
 * says it well enough. r is
 * -errno; net: the sandbox has a network namespace of its own. */
const char *ns_explain_refusal(int r, const char *step, bool net, char *buf, size_t len);
