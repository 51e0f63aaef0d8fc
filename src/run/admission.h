/* run/admission.h - admission control: how many of this user's runs may
 * run at once on this node, and how much memory they may hold
 * (profile section [admission], hutch-profile(5)).
 *
 * The count is the store's: rows with status running whose supervisor
 * is alive (a supervisor killed with SIGKILL leaves a row that
 * run_record_is_orphan() sees through, so it holds no slot). Check and
 * insert are one step for every run that has a cap: the check is made
 * under an exclusive lock on <state dir>/admission.lock, which the run
 * keeps until its row is written (run/run.c releases it right after).
 *
 * Admission is the user's own discipline over bursts of their runs on a
 * node, not a boundary: a profile or a flag can lift it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct run_config;
struct store;

/* What the node gives runs: memory and cpus, and where each was read. */
struct node_resources {
        uint64_t memory_bytes;  /* MemTotal, or less when hutch's cgroup caps it */
        double cpus;            /* cpus hutch may run on, or less under a cgroup cpu.max */
        char memory_from[64];   /* "/proc/meminfo", "cgroup memory.max" */
        char cpus_from[64];     /* "sched_getaffinity", "cgroup cpu.max" */
};

/* Read the node's allocatable memory and cpus. 0 or -errno. */
int node_resources_read(struct node_resources *ret);

/* The caps for a run of cfg, "auto" resolved against node. 0 means no
 * cap. how: one line saying how each cap was found ("max_running = 2
 * (profile)", "max_running auto = 1: min(memory 23.4G x 0.8 / 512M =
 * 37, cpus 2 x 0.8 / 1 = 1)"), a new string, NULL when neither is set. */
struct admission_caps {
        uint64_t max_running;
        uint64_t max_memory;
        char *how;
};
void admission_caps_resolve(const struct run_config *cfg, const struct node_resources *node,
                            struct admission_caps *ret);
void admission_caps_done(struct admission_caps *c);

/* What the store says runs hold now: running rows with a live
 * supervisor, and the sum of their memory limits (a run without one
 * counts as max_memory: it may take all of it). 0 or -errno. */
int admission_usage(struct store *s, uint64_t max_memory, uint64_t *ret_running, uint64_t *ret_memory);

/* Whether a run with memory limit run_memory (0: none) fits beside
 * running runs holding memory. */
bool admission_fits(const struct admission_caps *c, uint64_t running, uint64_t memory, uint64_t run_memory);

/* Take the admission lock of the store at db_path (blocking), an fd to
 * close to release it, or -errno. */
int admission_lock(const char *db_path);
