/* slurm.h - hutch inside a Slurm job (DESIGN §9): finding the job step
 * hutch runs in, and keeping the run's limits inside its allocation.
 *
 * Two kinds of evidence. Slurm's environment (SLURM_JOB_ID,
 * SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_STEP_ID,
 * SLURMD_NODENAME, SLURM_MEM_PER_NODE, SLURM_MEM_PER_CPU,
 * SLURM_CPUS_ON_NODE, SLURM_CPUS_PER_TASK) is set by whoever started
 * hutch, so it is a hint: it may only ever lower a limit, never raise
 * one, and its values are taken only when they are well-formed. The
 * kernel's view (the cgroup in /proc/self/cgroup, the memory limits of
 * that cgroup and its ancestors, the cpus of hutch's affinity mask)
 * cannot be set by the caller, and lowers limits the same way. A limit
 * is the smallest of the profile's value and every figure found; a
 * profile without a limit (0) takes the allocation's.
 *
 * Everything here is pure or reads files; nothing logs.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* What slurm_cap() lowered, as bits. */
enum {
        SLURM_CAPPED_MEMORY = 1 << 0,   /* memory limit lowered to the allocation */
        SLURM_CAPPED_CPUS = 1 << 1,     /* cpus lowered to the allocation */
};

struct slurm_step {
        bool found;             /* in a Slurm job: its environment, or a cgroup Slurm made */
        char *job_id;           /* SLURM_JOB_ID, or NULL */
        char *array_job_id;     /* SLURM_ARRAY_JOB_ID, or NULL */
        char *array_task_id;    /* SLURM_ARRAY_TASK_ID, or NULL */
        char *step_id;          /* SLURM_STEP_ID, or NULL */
        char *node;             /* SLURMD_NODENAME, or NULL */
        char *cgroup;           /* hutch's cgroup when its path names a Slurm job, or NULL */
        uint64_t memory_bytes;  /* the allocation's memory; 0: unknown */
        char *memory_from;      /* where that figure came from */
        double cpus;            /* the allocation's cpus; 0: unknown */
        char *cpus_from;
};

/* Where slurm_detect_at() looks: for the unit tests, a fake root of
 * /proc/self/cgroup and /sys/fs/cgroup and an environment lookup. */
struct slurm_sources {
        const char *(*getenv)(const char *name);
        const char *proc_self_cgroup;   /* path of /proc/self/cgroup */
        const char *self_cgroup_text;   /* its text, if the caller read it already (else NULL) */
        const char *cgroup_root;        /* where cgroup v2 (or v1 hierarchies) are mounted */
        int affinity_cpus;              /* cpus hutch may run on; 0: unknown */
};

/* Fill *ret (zeroed first; free with slurm_step_done()) from this
 * process's environment, /proc/self/cgroup, /sys/fs/cgroup and its cpu
 * affinity. Always 0: what cannot be read is unknown. */
int slurm_detect(struct slurm_step *ret);
/* The same, from the text of /proc/self/cgroup the caller read (NULL:
 * read it here), so `hutch run` reads the file once for this and for
 * its cgroup. */
int slurm_detect_from(const char *self_cgroup_text, struct slurm_step *ret);
int slurm_detect_at(const struct slurm_sources *src, struct slurm_step *ret);
void slurm_step_done(struct slurm_step *s);

/* Lower *memory_bytes and *cpus (0: no limit) to the allocation's
 * figures when step was found and they are smaller (or the limit is
 * unset). Returns the SLURM_CAPPED_* bits of what changed. */
unsigned slurm_cap(const struct slurm_step *step, uint64_t *memory_bytes, double *cpus);

/* The run's labels from the step ("slurm.job_id=…", "slurm.array_job_id=…",
 * "slurm.array_task_id=…", "slurm.step_id=…", "slurm.node=…"), a new
 * NULL-terminated vector (NULL when none). */
char **slurm_labels(const struct slurm_step *step);

/* The "slurm" object of the enforcement report: the step, the
 * allocation's figures and their sources, what was capped, and what
 * holds the limits inside the allocation (have_cgroup: the run got a
 * cgroup of its own; otherwise Slurm's cgroup is not delegated to the
 * user and hutch's fallbacks hold them). A new reference. */
json_t *slurm_report(const struct slurm_step *step, unsigned capped, bool have_cgroup);
