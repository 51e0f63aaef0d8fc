/* mount.h - builds the sandbox's filesystem view (DESIGN §2): a fresh
 * tmpfs root with read-only binds of host system dirs, masks, /proc,
 * a minimal /dev, and writable /tmp, $HOME and /workspace, all backed by
 * one size-capped scratch tmpfs. Runs inside the new user+mount
 * namespaces, with the sandbox uid and full capabilities there. */
#pragma once

#include "config/run-config.h"

/* The most image layers one root overlay can stack: its option string,
 * which the kernel copies as one page, holds that many. */
#define MOUNT_MAX_LAYERS 128

/* Where the failing step went wrong, for the supervisor's one-line
 * report: "hutch: setup: <step> <path>: <reason>". */
struct setup_failure {
        const char *step;
        char path[416];
};

/* What the run's workspace is made of, besides the configuration. */
struct mount_workspace {
        int lower_clone;        /* mount_clone_lower() of the host dir shown at
                                 * the workspace through overlay(lower, upper on
                                 * the scratch), or -1 for a plain scratch
                                 * workspace; consumed */
        int *root_clones;       /* root = DIR[:DIR...]: mount_clone_lower() of
                                 * each layer, top first; consumed */
        size_t n_root_clones;   /* 0: the default root (host system dirs) */
        char **inputs;          /* "HOST_PATH:NAME": bound read-only at
                                 * <workspace>/input/NAME; may be NULL */
        /* named_open() clones of cfg->ro_paths, cfg->rw_paths and inputs,
         * one per entry, taken by the caller's credentials; attached as
         * they are (entries are set to -1 when consumed). NULL: none */
        int *ro_clones, *rw_clones, *input_clones;
        /* --lang: the code (an fd to read from the start) written to
         * LANG_CODE_DIR/code_name on the scratch and shown read-only;
         * -1 for none */
        int code_fd;
        const char *code_name;
        /* out: O_DIRECTORY fds, opened before pivot_root (after it the
         * scratch is unreachable by path); -1 when there is none */
        int ret_upper_fd;       /* the overlay upper dir (with lower only) */
        int ret_workspace_fd;   /* the workspace as the job sees it */
        /* out: the old root is being detached in the background; this
         * pipe yields the umount's errno (0: gone), and nothing of the
         * job may run before it did (job_set_detach_fd()); -1 when it
         * was detached before mount_build_root() returned */
        int ret_detach_fd;
};

/* Build the root and pivot into it; on return the process's / and cwd
 * are the sandbox root. ws may be NULL (plain workspace, no fds wanted).
 * 0 or -errno with *fail filled in; on success the caller owns the fds
 * in ws. */
int mount_build_root(const struct run_config *cfg, struct mount_workspace *ws,
                     struct setup_failure *fail);

/* Clone host directory path as a detached, read-only, nosuid, nodev
 * mount (open_tree), for mount_workspace.lower_clone. Called in the new
 * namespaces *before* the sandbox takes its uid: the path is resolved
 * with the credentials of the user who started hutch (its owner), so a
 * directory in the user's private state dir can be the lower layer
 * even when the sandbox user maps to another host uid. Returns the fd
 * or -errno. */
int mount_clone_lower(const char *path);

/* The same clone, idmapped through userns_fd (ns_idmap_userns()), made
 * by the supervisor on the host: only real root may idmap a host
 * filesystem's mount. Root's sandbox user is host uid 65534, so a
 * checkout root owns would be read-only to the job; through the idmap
 * its files are the sandbox user's. Fails (-EINVAL, -EPERM) where the
 * filesystem or kernel cannot idmap; the caller then falls back to
 * mount_clone_lower(). Returns the fd or -errno. */
int mount_clone_lower_idmapped(const char *path, int userns_fd);

/* Whether a tmpfs here takes user.* extended attributes (Linux 6.6+),
 * which an overlay upper dir on tmpfs needs in a user namespace to mark
 * opaque directories. path is a writable directory on a tmpfs. 1 yes,
 * 0 no, -errno if it could not be tested. */
int mount_tmpfs_user_xattr(const char *path);
