/* cgroup.h - cgroup v2 limits and metering for one run.
 *
 * hutch needs a cgroup v2 subtree it may write to (a "delegated" subtree).
 * cgroup_base_prepare() finds one: $HUTCH_CGROUP when set, else the cgroup
 * hutch itself runs in (the `0::` line of /proc/self/cgroup). Each run then
 * gets its own child cgroup, made with cgroup_run_new() before the
 * sandbox is cloned; its directory fd goes to clone3() with
 * CLONE_INTO_CGROUP so the sandbox is born inside it and no process of
 * the run ever runs unlimited. After the job ends the supervisor reads
 * the counters (cgroup_run_stats), and cgroup_run_remove() kills what is
 * left and removes the directory.
 *
 * "No internal processes": cgroup v2 lets a non-root cgroup hand
 * controllers to its children only while it holds no processes itself.
 * When the base is the cgroup hutch runs in (and not the root cgroup), hutch
 * therefore first moves itself into a leaf child, BASE/hutch-supervisor,
 * and only if hutch is the only process there: it never moves processes
 * it did not start (the user's shell, say). The leaf is left behind
 * when hutch exits (a process cannot remove the cgroup it is in); the next
 * hutch reuses it, and a systemd scope removes it with the scope. With
 * $HUTCH_CGROUP hutch never moves itself: the directory named must hold no
 * processes, and the common ancestor of hutch's own cgroup and it must be
 * writable, since the kernel checks exactly that when the sandbox is
 * cloned into a run cgroup.
 *
 * Everything here returns 0 (or a positive value) on success and -errno
 * on failure, and nothing logs. The parsers at the end are pure
 * functions on file contents, public so the unit tests can feed them
 * fixtures.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Controllers hutch uses, as bits of a mask. */
enum {
        CGROUP_CPU = 1 << 0,    /* cpu.max, and the throttling counters in cpu.stat */
        CGROUP_MEMORY = 1 << 1, /* memory.max, memory.high, memory.swap.max, memory.peak */
        CGROUP_PIDS = 1 << 2,   /* pids.max */
        CGROUP_IO = 1 << 3,     /* io.max, io.stat */
};
#define CGROUP_ALL (CGROUP_CPU | CGROUP_MEMORY | CGROUP_PIDS | CGROUP_IO)
#define CGROUP_N_CONTROLLERS 4

/* Limits that cgroup_run_new() applied, as bits (the run's enforcement
 * report must not claim a limit that is not in this mask). */
enum {
        CGROUP_LIMIT_MEMORY = 1 << 0,      /* memory.max written */
        CGROUP_LIMIT_MEMORY_HIGH = 1 << 1, /* memory.high written */
        CGROUP_LIMIT_SWAP = 1 << 2,        /* memory.swap.max = 0 written */
        CGROUP_LIMIT_CPUS = 1 << 3,        /* cpu.max written */
        CGROUP_LIMIT_PIDS = 1 << 4,        /* pids.max written */
        CGROUP_LIMIT_IO = 1 << 5,          /* every io.max line written */
        CGROUP_LIMIT_OOM_GROUP = 1 << 6,   /* memory.oom.group = 1 written */
};

/* What one run may use. A zero field means "no limit" unless said
 * otherwise. */
struct cgroup_limits {
        uint64_t memory_max;    /* bytes */
        uint64_t memory_high;   /* bytes; 0 = 80 % of memory_max; >= memory_max:
                                 * not set (no throttling before the OOM kill) */
        double cpus;            /* cores, e.g. 0.5; becomes cpu.max "50000 100000" */
        uint64_t pids_max;
        const char *io_max;     /* io.max lines ("8:0 rbps=1048576 wbps=max"),
                                 * newline separated; NULL = none. Not copied. */
        bool oom_group;         /* on OOM kill the whole run, not one process */
};

/* Flags in struct cgroup_stats.have: which fields were read. */
enum {
        CGROUP_HAVE_MEMORY_PEAK = 1 << 0,    /* from memory.peak */
        CGROUP_HAVE_MEMORY_SAMPLED = 1 << 1, /* peak is the max of sampled memory.current */
        CGROUP_HAVE_MEMORY_EVENTS = 1 << 2,
        CGROUP_HAVE_PIDS_EVENTS = 1 << 3,
        CGROUP_HAVE_PIDS_PEAK = 1 << 4,      /* from pids.peak, else sampled pids.current */
        CGROUP_HAVE_CPU_STAT = 1 << 5,
        CGROUP_HAVE_CPU_THROTTLE = 1 << 6,   /* nr_throttled/throttled_usec present */
        CGROUP_HAVE_IO_STAT = 1 << 7,
};

struct cgroup_cpu_stat {
        uint64_t usage_usec, user_usec, system_usec;
        uint64_t nr_periods, nr_throttled, throttled_usec;
        bool has_throttle;      /* the cpu controller's fields were present */
};

struct cgroup_memory_events {
        uint64_t low, high, max, oom, oom_kill, oom_group_kill;
};

struct cgroup_io_stat {
        uint64_t rbytes, wbytes, rios, wios, dbytes, dios;  /* summed over devices */
};

struct cgroup_stats {
        unsigned have;                  /* CGROUP_HAVE_* */
        uint64_t memory_peak;           /* bytes */
        uint64_t memory_current;        /* bytes, at the time of reading */
        struct cgroup_memory_events memory_events;
        uint64_t pids_max_events;       /* forks refused by pids.max ("max" in pids.events) */
        uint64_t pids_peak;
        struct cgroup_cpu_stat cpu;
        struct cgroup_io_stat io;
};

/* One run's cgroup: opaque. */
struct cgroup_run;

/* Find the delegated base and get it ready for runs: move hutch into the
 * BASE/hutch-supervisor leaf when the base is hutch's own cgroup, and enable
 * the controllers of `want` (CGROUP_* mask) that the base offers in its
 * cgroup.subtree_control. On success returns 0, *ret_base (allocated) is
 * the base directory and *ret_usable the controllers runs will have (a
 * subset of want, maybe empty: then nothing can be limited). On failure
 * returns -errno and, if ret_reason is not NULL, an allocated sentence
 * saying why ("cgroup v2 not mounted", "… not writable by uid 1000 …").
 * Not thread-safe (it may move the calling process). */
int cgroup_base_prepare(unsigned want, char **ret_base, unsigned *ret_usable, char **ret_reason);
/* The same, from the text of /proc/self/cgroup the caller read (NULL:
 * read it here). Only text read since hutch last moved itself: after a
 * systemd scope, say, it is stale. */
int cgroup_base_prepare_from(const char *self_cgroup_text, unsigned want, char **ret_base,
                             unsigned *ret_usable, char **ret_reason);

/* Create BASE/NAME for one run and write the limits in lim whose
 * controller is in `usable`; limits with no usable controller are left
 * out of the enforced mask, not reported as errors. NAME must be a
 * single path component. Returns 0 and *ret, -EEXIST when the name is
 * taken, or -errno of the first failing write (the half-made cgroup is
 * removed again). */
int cgroup_run_new(const char *base, const char *name, unsigned usable,
                   const struct cgroup_limits *lim, struct cgroup_run **ret);

/* Take hold of an existing run cgroup at path (one a dead supervisor
 * left behind, named in its run's record) to kill and remove it. The
 * path must be a cgroup v2 directory named run-*. Returns 0 and *ret,
 * -ENOENT when it is gone already, -EINVAL when it is not a run cgroup,
 * or another -errno. */
int cgroup_run_open(const char *path, struct cgroup_run **ret);

/* An O_RDONLY|O_DIRECTORY fd of the run's cgroup for clone3()'s
 * cgroup field with CLONE_INTO_CGROUP. Owned by the run: do not close;
 * it stays valid until cgroup_run_free(). */
int cgroup_run_fd(const struct cgroup_run *cg);
/* The run cgroup's directory (owned by the run). */
const char *cgroup_run_path(const struct cgroup_run *cg);
/* Why the io_max lines were not written (the kernel refused one), or
 * NULL. Owned by the run. */
const char *cgroup_run_io_max_error(const struct cgroup_run *cg);

/* CGROUP_LIMIT_* mask of limits actually written. */
unsigned cgroup_run_enforced(const struct cgroup_run *cg);

/* Cheap poll for the supervisor's heartbeat: the run's total cpu time so
 * far (usage_usec of cpu.stat), and it samples memory.current and
 * pids.current to keep a peak where the kernel has no memory.peak or
 * pids.peak. 0 or -errno. */
int cgroup_run_sample(struct cgroup_run *cg, uint64_t *ret_cpu_usec);

/* Read every counter into *ret (zeroed first; see ret->have for what
 * was found). Returns 0, or -errno if the cgroup cannot be read at all. */
int cgroup_run_stats(struct cgroup_run *cg, struct cgroup_stats *ret);

/* SIGKILL every process in the run cgroup and its descendants: via
 * cgroup.kill, or where the kernel has none (before 5.14) by signalling
 * each pid in cgroup.procs, recursively, until they are empty or about
 * a second has passed. Does not wait for them to be reaped. 0 or -errno. */
int cgroup_run_kill(struct cgroup_run *cg);

/* Kill what is left and remove the run cgroup (and any cgroups the job
 * made below it), retrying for up to timeout_ms while processes are
 * still leaving. The supervisor must have reaped its own child first: a
 * zombie keeps the cgroup busy. Returns 0 (also if already removed),
 * -EBUSY after the timeout, or another -errno. */
int cgroup_run_remove(struct cgroup_run *cg, unsigned timeout_ms);

/* Free the handle; a run not yet removed is killed and removed (best
 * effort, short timeout) first. Accepts NULL; returns NULL. */
struct cgroup_run *cgroup_run_free(struct cgroup_run *cg);
static inline void cgroup_run_freep(struct cgroup_run **cg) { cgroup_run_free(*cg); }
#define _cleanup_cgroup_run_ _cleanup_(cgroup_run_freep)

/* For `hutch doctor`: what cgroup_base_prepare(CGROUP_ALL) would find,
 * without changing anything. */
struct cgroup_probe {
        char *mount;            /* cgroup2 mount point, or NULL */
        char *base;             /* the base that would be used, or NULL */
        unsigned usable;        /* controllers runs would get */
        char *reason;           /* when usable == 0: why (never NULL then) */
        char *why_not[CGROUP_N_CONTROLLERS]; /* per controller not usable: why */
};
/* Fill *ret. Returns 0 (the findings, good or bad, are in *ret). */
int cgroup_probe(struct cgroup_probe *ret);
void cgroup_probe_done(struct cgroup_probe *p);

/* Name of one CGROUP_* bit ("cpu", "memory", "pids", "io"), or NULL. */
const char *cgroup_controller_name(unsigned bit);

/* ---- parsers (pure; exposed for the unit tests) ------------------------- */

/* The value of KEY in a flat-keyed file ("key value" lines, as
 * memory.events, pids.events, cpu.stat). 0, -ENOENT if absent, -EINVAL
 * if the value is not a number ("max" is UINT64_MAX). */
int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret);
/* cpu.stat; usage_usec is required, everything else optional. */
int cgroup_parse_cpu_stat(const char *text, struct cgroup_cpu_stat *ret);
/* memory.events; missing keys are 0. -EINVAL when no key is known. */
int cgroup_parse_memory_events(const char *text, struct cgroup_memory_events *ret);
/* pids.events: the "max" count. */
int cgroup_parse_pids_events(const char *text, uint64_t *ret_max);
/* io.stat, summed over all devices. Empty text is fine (all zero). */
int cgroup_parse_io_stat(const char *text, struct cgroup_io_stat *ret);
/* A space-separated controller list (cgroup.controllers,
 * cgroup.subtree_control) as a CGROUP_* mask; unknown names ignored. */
unsigned cgroup_parse_controllers(const char *text);
/* The cgroup v2 path in /proc/PID/cgroup text (the "0::/path" line).
 * 0 and an allocated *ret, or -ENOENT without such a line. */
int cgroup_parse_proc_cgroup(const char *text, char **ret);
/* cpus (> 0) as cpu.max text "QUOTA 100000"; cpus <= 0 gives
 * "max 100000". Quota is rounded and at least 1000 (the kernel's
 * minimum). Returns 0, or -ERANGE when cpus is not finite or absurd. */
int cgroup_cpus_to_max(double cpus, char *buf, size_t len);
