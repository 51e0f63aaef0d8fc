/* run/enforce.h - the run's enforcement report: what was actually in force
 * (namespaces, uid map, seccomp, capabilities, and per limit the
 * mechanism that held it or why nothing did). hutch never claims a limit it
 * did not enforce. */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "config/run-config.h"

struct seccomp_report;

/* What the run's cgroup holds (cgroup.h). */
struct enforce_cgroup {
        const char *path;       /* the run cgroup; NULL: the run has none */
        unsigned enforced;      /* CGROUP_LIMIT_* mask actually written */
        const char *reason;     /* with path NULL: why there is no cgroup (may be NULL) */
        const char *systemd_unit; /* the scope systemd delegated for this run, or NULL */
        const char *io_max_error; /* why io.max was not written, or NULL */
};

/* The report for a run with cfg on this host, as a new JSON object.
 * seccomp may be NULL (no filter); cg may be NULL (no cgroup, no reason
 * known). A limit is named "cgroup" only when its bit is in
 * cg->enforced. */
json_t *enforcement_build(const struct run_config *cfg, const struct seccomp_report *seccomp,
                          const struct enforce_cgroup *cg, uid_t host_uid, gid_t host_gid);

/* The job's IPC namespace limits (ipcns.h) as ipcns_apply() wrote them,
 * or NULL with why_not: add them to the memory entry ("ipc") and, without
 * a memory cgroup, say in its reason what holds SysV IPC or that nothing
 * does. No-op without a memory limit. */
struct ipcns_limits;
void enforcement_note_ipc(json_t *report, const struct run_config *cfg, const struct enforce_cgroup *cg,
                          const struct ipcns_limits *ipc, const char *why_not);

/* The limits of cfg as a JSON object of plain numbers (0 = none). */
json_t *limits_build(const struct run_config *cfg);

/* Check cfg->require against a report from enforcement_build(). 0, or
 * -EOPNOTSUPP with one line in *ret_error naming what cannot be held. */
int enforcement_check_required(const struct run_config *cfg, json_t *report, char **ret_error);
