/* named.c - opening what the user named with the caller's credentials
 * (see named.h).
 *
 * Why: when hutch runs as root, the sandbox user is host uid 65534, and
 * the sandbox builds its root after taking that uid. A path under a
 * 0700 dir of root's (a checkout in /root, root's data) was then
 * unreachable, although root named it. So the paths a run names are
 * resolved and cloned here instead: by the supervisor before clone when
 * it is real root (with root's own access, CAP_DAC_OVERRIDE included),
 * else in the new namespaces before the uid change, where the process
 * is still the caller's host uid with the caller's groups, so it has
 * exactly the caller's access (an unprivileged caller has no host
 * capabilities to lose or gain).
 *
 * Safety argument: this gives the job the named paths and nothing more.
 *  - Each clone is of one named path: OPEN_TREE_CLONE copies the mount
 *    subtree at that path only, never its parents; nothing above it or
 *    beside it becomes reachable. The layers and the lower dir are not
 *    even recursive: no submount comes along.
 *  - The attributes are set on the detached tree before it is attached
 *    anywhere: read-only (except --rw, which the user asked to be
 *    writable), nosuid and nodev, recursively, so there is no moment
 *    with a writable or set-id-honouring view.
 *  - Only the traversal to the path used the caller's credentials. The
 *    files inside are still checked against the job's uid on every
 *    access: a file the modes deny to uid 65534 stays unreadable to the
 *    job (tests/integration/caller-paths.bats checks this).
 *  - The job cannot change the mounts: it has no capabilities in any
 *    set (caps.c) and seccomp denies the mount family, so it can neither
 *    remount a clone writable nor unmount a submount to see what lies
 *    under it; setup code, which has capabilities in the sandbox's user
 *    namespace, only attaches the clones.
 *  - The fds are CLOEXEC and closed before init runs the job (mount.c
 *    consumes them), so the job never holds a handle on a host tree.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/named.h"
#include "lib/util.h"

static int clone_path(const char *path, bool recursive, uint64_t attrs)
{
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
        int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, flags);
        if (fd < 0)
                return -errno;
        struct mount_attr attr = { .attr_set = attrs };
        if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
                    &attr, sizeof(attr)) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        return fd;
}

static int *fd_array(size_t n)
{
        int *a = xcalloc(n ? n : 1, sizeof(int));
        for (size_t i = 0; i < n; i++)
                a[i] = -1;
        return a;
}

static int fail_with(struct setup_failure *fail, int r, const char *step, const char *path)
{
        fail->step = step;
        snprintf(fail->path, sizeof(fail->path), "%s", path ? path : "");
        return r;
}

/* "SRC" or "SRC:DEST": the host part. */
static char *spec_source(const char *spec)
{
        char *src = xstrdup(spec);
        char *colon = strchr(src, ':');
        if (colon)
                *colon = '\0';
        return src;
}

static int open_list(char **specs, bool input, uint64_t attrs, int *fds, struct setup_failure *fail)
{
        size_t i = 0;
        for (char **p = specs; p && *p; p++, i++) {
                _cleanup_free_ char *host = NULL;
                if (input) {
                        /* "HOST:NAME", HOST canonical: NAME follows the last colon */
                        host = xstrdup(*p);
                        char *colon = strrchr(host, ':');
                        if (!colon)
                                return fail_with(fail, -EINVAL, "input", *p);
                        *colon = '\0';
                } else
                        host = spec_source(*p);
                fds[i] = clone_path(host, true, attrs);
                if (fds[i] < 0)
                        return fail_with(fail, fds[i], "bind", host);
        }
        return 0;
}

int named_open(const struct run_config *cfg, char **inputs, const char *lower,
               struct named_clones *ret, struct setup_failure *fail)
{
        const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        struct named_clones n = {
                .n_ro = strv_length(cfg->ro_paths), .n_rw = strv_length(cfg->rw_paths),
                .n_inputs = strv_length(inputs), .n_layers = strv_length(cfg->root_layers),
                .lower = -1,
        };
        int r;

        n.ro = fd_array(n.n_ro);
        n.rw = fd_array(n.n_rw);
        n.inputs = fd_array(n.n_inputs);
        n.layers = fd_array(n.n_layers);
        r = open_list(cfg->ro_paths, false, ro, n.ro, fail);
        if (r >= 0)
                r = open_list(cfg->rw_paths, false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, n.rw, fail);
        if (r >= 0)
                r = open_list(inputs, true, ro, n.inputs, fail);
        for (size_t i = 0; r >= 0 && i < n.n_layers; i++) {
                n.layers[i] = clone_path(cfg->root_layers[i], false, ro);
                if (n.layers[i] < 0)
                        r = fail_with(fail, n.layers[i], "root layer", cfg->root_layers[i]);
        }
        if (r >= 0 && lower) {
                n.lower = clone_path(lower, false, ro);
                if (n.lower < 0)
                        r = fail_with(fail, n.lower, "workdir", lower);
        }
        if (r < 0) {
                named_close(&n);
                return r;
        }
        n.opened = true;
        *ret = n;
        return 0;
}

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; fds && i < n; i++)
                if (fds[i] >= 0) {
                        close(fds[i]);
                        fds[i] = -1;
                }
}

void named_close(struct named_clones *n)
{
        close_all(n->ro, n->n_ro);
        close_all(n->rw, n->n_rw);
        close_all(n->inputs, n->n_inputs);
        close_all(n->layers, n->n_layers);
        free(n->ro);
        free(n->rw);
        free(n->inputs);
        free(n->layers);
        if (n->lower >= 0)
                close(n->lower);
        *n = (struct named_clones) { .lower = -1 };
}

static int add_fds(const int *fds, size_t n, int *keep, size_t *n_keep, size_t max)
{
        for (size_t i = 0; fds && i < n; i++) {
                if (fds[i] < 0)
                        continue;
                if (*n_keep >= max)
                        return -ENOBUFS;
                keep[(*n_keep)++] = fds[i];
        }
        return 0;
}

int named_fds(const struct named_clones *n, int *keep, size_t *n_keep, size_t max)
{
        int r = add_fds(n->ro, n->n_ro, keep, n_keep, max);
        if (r >= 0)
                r = add_fds(n->rw, n->n_rw, keep, n_keep, max);
        if (r >= 0)
                r = add_fds(n->inputs, n->n_inputs, keep, n_keep, max);
        if (r >= 0)
                r = add_fds(n->layers, n->n_layers, keep, n_keep, max);
        if (r >= 0)
                r = add_fds(&n->lower, 1, keep, n_keep, max);
        return r;
}
