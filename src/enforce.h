/* enforce.h - the run's enforcement report: what was actually in force
 * (namespaces, uid map, seccomp, capabilities, and per limit the
 * mechanism that held it or why nothing did). sbx never claims a limit it
 * did not enforce. */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "run-config.h"

struct seccomp_report;

/* The report for a run with cfg on this host, as a new JSON object.
 * seccomp may be NULL (no filter). */
json_t *enforcement_build(const struct run_config *cfg, const struct seccomp_report *seccomp,
                          uid_t host_uid, gid_t host_gid);

/* The limits of cfg as a JSON object of plain numbers (0 = none). */
json_t *limits_build(const struct run_config *cfg);

/* Check cfg->require against a report from enforcement_build(). 0, or
 * -EOPNOTSUPP with one line in *ret_error naming what cannot be held. */
int enforcement_check_required(const struct run_config *cfg, json_t *report, char **ret_error);
