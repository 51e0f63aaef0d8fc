/* mount-internal.h - internal to the mount module: the scratch layout
 * and the helpers that mount.c (the root build), mount-kernel.c (/proc
 * and /dev), mount-layers.c (the overlays: workspace, image root,
 * --lang code) and mount-detach.c (the old root's detach) share. Not an API:
 * nothing outside those files includes it; sandbox/mount.h is the API.
 */
#pragma once

#include <linux/mount.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/mount.h"

#define SCRATCH "/tmp"
#define NEWROOT SCRATCH "/root"
#define RW SCRATCH "/rw"
/* the sources of every mask and of the identity files: a dir on the
 * scratch that is sealed (bound onto itself read-only, nosuid, nodev,
 * noexec) before anything is bound from it, so every bind of it is born
 * with those attributes (see seal_masks()) */
#define MASKS RW "/masks"
#define EMPTY_FILE MASKS "/empty-file"
#define EMPTY_DIR MASKS "/empty-dir"

/* mount-detach.c: the old root's detach, in the background, after
 * pivot_root(".", "."). Start it: 0 with *ret_fd to wait on, or -errno
 * when it could not start (then the caller detaches it itself). */
int mount_detach_in_background(int *ret_fd);
/* Wait for it in this process (*fd >= 0), then *fd = -1: 0 once the old
 * root is gone, or -errno (the umount's, or -EIO for a thread that died
 * before it said). 0 at once when *fd < 0. */
int mount_detach_wait(int *fd);
/* dir (absolute), opened O_PATH beneath /, so that no "..", absolute or
 * magic symlink reaches above it, where the old root is still stacked
 * while the detach runs. The fd, or -errno for a path that cannot be. */
int mount_open_beneath_root(const char *dir);

static inline int sys_open_tree(int dfd, const char *path, unsigned flags)
{
        return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
        return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

static inline int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
        return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}


int fail_with(struct setup_failure *fail, int r, const char *step, const char *path);
/* Attach a copy of host `src` at `dst` with attributes `attrs` applied to
 * the whole copied tree before it becomes visible. */
int bind_with_attrs(const char *src, const char *dst, bool recursive, uint64_t attrs);
/* A writable, nosuid, nodev bind of `backing` (on the scratch) at
 * `inside` (a path in the new root). */
int bind_rw(const char *backing, const char *inside, struct setup_failure *fail);
/* mkdir(path), or the missing parents too; an existing one is fine */
int ensure_dir(const char *path);
/* A directory (dir) or an empty file to mount on at path; an existing
 * one is used as it is. 0 or -errno. */
int make_mountpoint(const char *path, bool dir);
/* Hide `inside` (a path in the new root, without the NEWROOT prefix)
 * behind a sealed empty object of its kind; absent paths and links are
 * left alone. */
int mask_one(const char *inside, struct setup_failure *fail);

/* mount-kernel.c */
/* A fresh /proc in the new root: masked and read-only where it shows the
 * host's kernel, whole (for runsc's gofer) when whole is set. */
int setup_proc(bool whole, struct setup_failure *fail);
/* A tmpfs /dev in the new root: six device nodes, the usual links, a
 * private devpts and /dev/shm; read-only once built. */
int setup_dev(struct setup_failure *fail);

/* mount-layers.c */
int setup_overlay_workspace(int lower_clone, struct setup_failure *fail);
int setup_code(int code_fd, const char *name, struct setup_failure *fail);
int setup_image_root(int *clones, size_t n, struct setup_failure *fail);
