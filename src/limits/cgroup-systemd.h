/* cgroup-systemd.h - a delegated cgroup v2 from systemd.
 *
 * A user logged in over ssh runs in a session scope that root owns, so
 * hutch finds no cgroup it may write to. systemd can hand one out: asked
 * over D-Bus for a transient scope with Delegate=yes holding hutch's own
 * pid, the user's manager (the system manager for root) moves hutch into
 * a new cgroup it owns and delegates to it. After that the ordinary
 * search (cgroup_base_prepare) finds hutch's own cgroup usable, and each
 * run gets its run cgroup below it as usual. The scope is named after
 * the run, hutch-<ID>.scope, and systemd removes it, cgroups and all, as
 * soon as hutch has exited and it is empty.
 *
 * The manager is reached on its private socket when there is one
 * ($XDG_RUNTIME_DIR/systemd/private for a user, /run/systemd/private
 * for root: no bus daemon in between), else on the user (system) bus.
 * libsystemd's sd-bus does the talking; it is loaded with dlopen() only
 * when this code runs, so the runs that have a delegated cgroup (or no
 * systemd) never pay for loading it.
 *
 * Functions return 0 or -errno and set an allocated one-line reason on
 * failure; nothing here logs.
 */
#pragma once

#include <stdbool.h>

/* Whether this hutch can ask systemd at all: built with sd-bus and not
 * the static build (hutch-static loads no libsystemd; there
 * cgroup_systemd_scope() and cgroup_systemd_probe() fail with a reason
 * that says so and how to get a scope by hand). */
bool cgroup_systemd_built(void);

/* Whether asking systemd makes sense here: cgroup v2 is the unified
 * hierarchy at /sys/fs/cgroup and a manager socket for this user
 * exists. Cheap (two stat calls); no connection is made. */
bool cgroup_systemd_available(void);

/* Ask the manager for the transient scope "hutch-<run_id>.scope" with
 * Delegate=yes holding this process, and wait (at most timeout_ms) until
 * the job that starts it is done and we are in the scope's cgroup. On
 * success *ret_unit is the unit's name (allocated). */
int cgroup_systemd_scope(const char *run_id, unsigned timeout_ms, char **ret_unit, char **ret_reason);

/* For `hutch doctor`: connect and describe the manager that would hand
 * out scopes ("systemd 252 user manager on unix:path=…"), and the
 * controllers (CGROUP_* mask) its cgroup has, which a delegated scope
 * below it can use. Changes nothing. */
int cgroup_systemd_probe(char **ret_detail, unsigned *ret_controllers, char **ret_reason);
