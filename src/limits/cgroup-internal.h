/* cgroup-internal.h - internal to the cgroup module (cgroup-base.c,
 * cgroup-run.c, cgroup-stats.c); the API is cgroup.h, and nothing
 * outside those files includes this.
 *
 * Why it exists: the run cgroup is made and torn down in one file and
 * metered in another, and both need its fields and the one file reader.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct cgroup_run {
        char *path;
        int fd;
        unsigned usable;        /* controllers enabled for it */
        unsigned enforced;      /* CGROUP_LIMIT_* */
        uint64_t sampled_memory;
        uint64_t sampled_pids;
        char *io_max_error;     /* why io.max was not written, or NULL */
        bool removed;
};

/* Read dirfd/name whole into *ret (NUL-terminated, caller frees).
 * Returns 0 or -errno. */
int cgroup_read_at(int dirfd, const char *name, char **ret);
