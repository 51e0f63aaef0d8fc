/* run/landlock.h - the run's isolation tier: which one runs, and what
 * the landlock tier needs from the run (DESIGN §10; hutch-run(1)
 * ISOLATION).
 *
 * Order in a run: run_isolation_choose() after the config is resolved
 * (it may probe the host); run_landlock_prepare() once the workspace's
 * lower dir is known (it makes the scratch, copies the workspace into it
 * and builds the Landlock plan); the sandbox then gets ll->job through
 * sandbox_inputs.landlock; run_isolation_report() adds the `isolation`
 * object to the enforcement report; after the job, run_landlock_upper()
 * gives the change set its upper dir; run_landlock_done() removes the
 * scratch and, for root, the SysV IPC objects of the job's own uid
 * (run/landlock-uid.h), and lets that uid go.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "config/run-config.h"
#include "sandbox/landlock.h"
#include "run/landlock-uid.h"
#include "sandbox/sandbox.h"
#include "workspace/scratch.h"

struct run_landlock {
        bool active;            /* the landlock tier runs this job */
        bool by_auto;           /* ... because --isolation auto found namespaces refused */
        char *refusal;          /* what refused them (auto), for stderr and the report */
        int abi;                /* the kernel's Landlock ABI (0: none) */
        bool have_scratch;
        struct landlock_uid job_uid;    /* root's job: its own uid, held for the run */
        bool shared_uid;        /* ... none could be had: 65534, reported */
        struct scratch scratch;
        struct landlock_plan plan;
        struct landlock_job job;
        char *write_paths[4];   /* the scratch's workspace, home, tmp: the plan's */
        uint64_t disk_base_bytes;       /* what the scratch held before the job (the */
        uint64_t disk_base_entries;     /* workspace copy): the disk watch's baseline */
};

/* Decide the tier for cfg->isolation: namespaces (nothing more to do),
 * landlock, or auto (probes the host: ns_probe_userns()). Also refuses,
 * with a one-line reason, what the landlock tier cannot do (network
 * gVisor, an image root, extra tmpfs mounts, --input, --lang),
 * and a kernel without Landlock. 0, or -errno with *ret_error. */
int run_isolation_choose(const struct run_config *cfg, bool has_inputs, bool has_code, struct run_landlock *ll,
                         char **ret_error);

/* The landlock tier's scratch, workspace copy (lower_fd, or -1 for an
 * empty workspace) and plan; proxy_port is the egress proxy's with
 * network allow (run/egress.c), else 0. 0, or -errno with *ret_error. */
int run_landlock_prepare(const struct run_config *cfg, int lower_fd, uint16_t proxy_port, struct run_landlock *ll,
                         char **ret_error);

/* Add the `isolation` object to the enforcement report (both tiers),
 * and, in the landlock tier, say what holds each thing the namespace
 * tier's report claims (no namespaces, the job's real uid, the disk
 * bound per file, the pids limit). pids_in_cgroup: pids.max holds it. */
void run_isolation_report(json_t *report, const struct run_config *cfg, const struct run_landlock *ll,
                          bool pids_in_cgroup);

/* Just before the job may start: see scratch_settle(). */
void run_landlock_settle(const struct run_landlock *ll);

/* After the job: the upper dir of the workspace copy against lower_fd,
 * in *ret_upper_fd. 0 or -errno. */
int run_landlock_upper(struct run_landlock *ll, int lower_fd, int *ret_upper_fd);

/* Remove the scratch and free ll. NULL-tolerant. */
void run_landlock_done(struct run_landlock *ll);
