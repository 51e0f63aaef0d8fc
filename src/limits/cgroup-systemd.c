/* cgroup-systemd.c - a delegated cgroup v2 from systemd (see
 * cgroup-systemd.h).
 *
 * Why a transient scope and not a service: a scope adopts a process
 * that already runs (PIDs=[us]); hutch keeps its terminal, environment
 * and exit status, and the scope ends by itself when we do.
 *
 * Why this is safe: we ask only for what a user may ask of their own
 * manager (`systemd-run --user --scope -p Delegate=yes` does the
 * same); systemd checks that the pid is ours, and what it delegates is
 * a subtree below its own, so hutch gains no access beyond what the user
 * already has. The scope holds hutch and, below it, the run cgroups; the
 * sandbox cannot reach the scope's files (it sees only its own cgroup
 * namespace, rooted at its run cgroup, and cannot write there).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "limits/cgroup-systemd.h"
#include "limits/cgroup.h"
#include "limits/dbus.h"
#include "lib/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
/* how long `hutch doctor` waits for the manager to answer */
#define SYSTEMD_PROBE_TIMEOUT_MS 5000

/* This user's runtime directory: $XDG_RUNTIME_DIR when it is ours (one
 * left over by sudo or su is not: its manager would refuse us anyway),
 * else /run/user/UID. Allocated. */
static char *runtime_dir(void)
{
        const char *rt = getenv("XDG_RUNTIME_DIR");
        struct stat st;
        if (rt && rt[0] == '/' && stat(rt, &st) == 0 && st.st_uid == geteuid())
                return xstrdup(rt);
        return xasprintf("/run/user/%u", (unsigned)geteuid());
}

/* Where the manager listens privately: root's is the system manager. */
static char *private_socket(void)
{
        if (geteuid() == 0)
                return xstrdup("/run/systemd/private");
        _cleanup_free_ char *rt = runtime_dir();
        return xasprintf("%s/systemd/private", rt);
}

static bool unified_hierarchy(void)
{
        struct statfs sfs;
        return statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

/* A manager socket (private, or the bus it is on) we could connect to. */
static bool socket_present(void)
{
        _cleanup_free_ char *priv = private_socket();
        struct stat st;
        if (stat(priv, &st) == 0 && S_ISSOCK(st.st_mode))
                return true;
        if (geteuid() == 0)
                return access("/run/dbus/system_bus_socket", F_OK) == 0;
        if (getenv("DBUS_SESSION_BUS_ADDRESS"))
                return true;
        _cleanup_free_ char *rt = runtime_dir();
        _cleanup_free_ char *bus = xasprintf("%s/bus", rt);
        return stat(bus, &st) == 0 && S_ISSOCK(st.st_mode);
}

bool cgroup_systemd_available(void)
{
        return unified_hierarchy() && socket_present();
}

/* The bus the manager is also on, as a D-Bus address: for root the
 * system bus, for a user their user bus, at the address the
 * environment names or else in the runtime dir we trust (see
 * runtime_dir()). Allocated. */
static char *bus_address(void)
{
        const char *env = getenv(geteuid() == 0 ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS");
        if (env && *env)
                return xstrdup(env);
        if (geteuid() == 0)
                return dbus_unix_address("/run/dbus/system_bus_socket");
        _cleanup_free_ char *rt = runtime_dir();
        _cleanup_free_ char *path = xasprintf("%s/bus", rt);
        return dbus_unix_address(path);
}

/* Connect to the manager: its private socket (a peer-to-peer
 * connection, no bus daemon in between), else the bus. *ret_where
 * names it, for messages. */
static int manager_connect(const char *priv, const char *bus_address, uint64_t deadline_ms, struct dbus_conn **ret,
                           bool *ret_bus, char **ret_where, char **ret_reason)
{
        _cleanup_free_ char *why_priv = NULL, *why_bus = NULL;
        struct stat st;
        int r;

        if (priv && stat(priv, &st) == 0 && S_ISSOCK(st.st_mode)) {
                if (dbus_conn_open_path(priv, false, deadline_ms, ret, &why_priv) >= 0) {
                        *ret_bus = false;
                        *ret_where = xstrdup(priv);
                        return 0;
                }
                /* on to the bus: the private socket may be stale, or
                 * refuse us */
        }
        const char *kind = geteuid() == 0 ? "system" : "user";
        r = dbus_conn_open_address(bus_address, true, deadline_ms, ret, &why_bus);
        if (r < 0) {
                *ret_reason = xasprintf("no systemd %s manager to ask for a delegated scope: %s: %s; "
                                        "the %s bus (%s): %s", kind, priv ? priv : "no private socket",
                                        why_priv ? why_priv : "no such socket", kind, bus_address, why_bus);
                return r;
        }
        *ret_bus = true;
        *ret_where = xasprintf("the %s bus (%s)", kind, bus_address);
        return 0;
}

struct job_wait {
        const char *unit;
        char *job;              /* object path of our job, once known */
        char *removed_job;      /* a JobRemoved for our unit: its job, */
        char result[32];        /* and how it ended */
};

/* JobRemoved(u id, o job, s unit, s result) from the manager, for our
 * unit. Who sent it is not checked here: anyone on a bus can send us a
 * signal that looks like it, so the scope is believed only once our
 * own cgroup says we are in it (in_unit()). Returns 1 once our job is
 * done. */
static int on_job_removed(const struct dbus_message *m, void *userdata)
{
        struct job_wait *w = userdata;
        struct dbus_reader r;
        const char *job, *unit, *result;
        uint32_t id;

        if (!m->member || !streq(m->member, "JobRemoved") || !m->interface ||
            !streq(m->interface, SYSTEMD_MANAGER) || dbus_body_reader(m, "uoss", &r) < 0 ||
            dbus_get_u32(&r, &id) < 0 || dbus_get_string(&r, &job) < 0 || dbus_get_string(&r, &unit) < 0 ||
            dbus_get_string(&r, &result) < 0 || !streq(unit, w->unit))
                return 0;
        free(w->removed_job);
        w->removed_job = xstrdup(job);
        snprintf(w->result, sizeof(w->result), "%s", result);
        return w->job && streq(w->job, job);
}

/* Our own cgroup's last component is the unit: the move happened. */
static bool in_unit(const char *unit)
{
        _cleanup_free_ char *text = NULL, *path = NULL;
        if (read_file("/proc/self/cgroup", &text, NULL) < 0 || cgroup_parse_proc_cgroup(text, &path) < 0)
                return false;
        const char *last = strrchr(path, '/');
        return last && streq(last + 1, unit);
}

/* StartTransientUnit's arguments: the unit, mode "fail" (never replace
 * a job someone else queued), its properties, no auxiliary units. The
 * scope holds this process, is delegated to us, and is collected even
 * if it fails, so nothing piles up. */
void cgroup_systemd_scope_args(struct dbus_writer *w, const char *unit, const char *desc, uint32_t pid)
{
        dbus_put_string(w, unit);
        dbus_put_string(w, "fail");
        struct dbus_array props = dbus_array_open(w, 8);
        dbus_put_struct(w);
        dbus_put_string(w, "Description");
        dbus_put_variant(w, "s");
        dbus_put_string(w, desc);
        dbus_put_struct(w);
        dbus_put_string(w, "PIDs");
        dbus_put_variant(w, "au");
        struct dbus_array pids = dbus_array_open(w, 4);
        dbus_put_u32(w, pid);
        dbus_array_close(w, pids);
        dbus_put_struct(w);
        dbus_put_string(w, "Delegate");
        dbus_put_variant(w, "b");
        dbus_put_bool(w, true);
        dbus_put_struct(w);
        dbus_put_string(w, "CollectMode");
        dbus_put_variant(w, "s");
        dbus_put_string(w, "inactive-or-failed");
        dbus_array_close(w, props);
        struct dbus_array aux = dbus_array_open(w, 8);
        dbus_array_close(w, aux);
}

int cgroup_systemd_scope_at(const char *priv, const char *bus_address, const char *run_id, unsigned timeout_ms,
                            char **ret_unit, char **ret_reason)
{
        _cleanup_free_ char *unit = xasprintf("hutch-%s.scope", run_id);
        _cleanup_free_ char *desc = xasprintf("hutch run %s", run_id);
        _cleanup_free_ char *where = NULL, *why = NULL, *rule = NULL;
        _cleanup_dbus_conn_ struct dbus_conn *c = NULL;
        struct dbus_writer body = { 0 };
        struct dbus_message reply = { 0 };
        struct job_wait w = { .unit = unit };
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        struct dbus_reader rd;
        const char *job;
        bool bus;
        int r;

        r = manager_connect(priv, bus_address, deadline, &c, &bus, &where, ret_reason);
        if (r < 0)
                return r;

        /* Listen before asking: the job may be done before its reply is
         * read. On a private socket systemd sends every signal; on a bus
         * the daemon forwards what matches. */
        if (bus) {
                struct dbus_message ok;
                rule = xasprintf("type='signal',sender='%s',path='%s',interface='%s',member='JobRemoved'",
                                 SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER);
                dbus_put_string(&body, rule);
                r = dbus_conn_call(c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "AddMatch", "s", &body, deadline, NULL, NULL, &ok, &why);
                if (r < 0) {
                        *ret_reason = xasprintf("systemd on %s: cannot watch for JobRemoved: %s", where, why);
                        goto out;
                }
                dbus_message_done(&ok);
                body.len = 0;
        }
        cgroup_systemd_scope_args(&body, unit, desc, (uint32_t)getpid());
        r = dbus_conn_call(c, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StartTransientUnit",
                           "ssa(sv)a(sa(sv))", &body, deadline, on_job_removed, &w, &reply, &why);
        if (r < 0) {
                *ret_reason = r == -EREMOTEIO ? xasprintf("systemd on %s refused %s: %s", where, unit, why)
                              : r == -ETIMEDOUT ? xasprintf("systemd on %s did not answer for %s within %u ms",
                                                            where, unit, timeout_ms)
                              : xasprintf("systemd on %s: asking for %s: %s", where, unit, why);
                goto out;
        }
        if (dbus_body_reader(&reply, "o", &rd) < 0 || dbus_get_string(&rd, &job) < 0) {
                r = -EBADMSG;
                *ret_reason = xasprintf("systemd on %s: unexpected reply to StartTransientUnit", where);
                goto out;
        }
        w.job = xstrdup(job);
        if (!w.removed_job || !streq(w.removed_job, w.job)) {
                r = dbus_conn_wait(c, deadline, on_job_removed, &w, &why);
                if (r < 0) {
                        *ret_reason = r == -ETIMEDOUT
                                ? xasprintf("systemd on %s did not start %s within %u ms", where, unit, timeout_ms)
                                : xasprintf("systemd on %s: connection lost waiting for %s: %s", where, unit, why);
                        goto out;
                }
        }
        if (!streq(w.result, "done")) {
                r = -EIO;
                *ret_reason = xasprintf("systemd on %s could not start %s: job %s", where, unit, w.result);
                goto out;
        }
        if (!in_unit(unit)) {
                r = -ESRCH;
                *ret_reason = xasprintf("systemd on %s started %s but hutch is not in its cgroup", where, unit);
                goto out;
        }
        *ret_unit = TAKE_PTR(unit);
        r = 0;
out:
        free(w.job);
        free(w.removed_job);
        dbus_message_done(&reply);
        dbus_writer_done(&body);
        return r;
}

/* A string property of the manager, with Properties.Get. */
static int manager_property(struct dbus_conn *c, const char *name, uint64_t deadline, char **ret, char **ret_reason)
{
        struct dbus_writer body = { 0 };
        struct dbus_message reply;
        struct dbus_reader rd;
        const char *value;

        dbus_put_string(&body, SYSTEMD_MANAGER);
        dbus_put_string(&body, name);
        int r = dbus_conn_call(c, SYSTEMD_DEST, SYSTEMD_PATH, "org.freedesktop.DBus.Properties", "Get", "ss", &body,
                               deadline, NULL, NULL, &reply, ret_reason);
        dbus_writer_done(&body);
        if (r < 0)
                return r;
        r = dbus_body_reader(&reply, "v", &rd);
        if (r >= 0)
                r = dbus_get_variant_string(&rd, &value);
        if (r >= 0)
                *ret = xstrdup(value);
        else
                *ret_reason = xasprintf("%s: not a string", name);
        dbus_message_done(&reply);
        return r;
}

int cgroup_systemd_probe_at(const char *priv, const char *bus_address, char **ret_detail, unsigned *ret_controllers,
                            char **ret_reason)
{
        _cleanup_free_ char *where = NULL, *file = NULL, *text = NULL, *version = NULL, *cgpath = NULL,
                               *why = NULL;
        _cleanup_dbus_conn_ struct dbus_conn *c = NULL;
        uint64_t deadline = now_monotonic_ms() + SYSTEMD_PROBE_TIMEOUT_MS;
        bool bus;
        int r;

        *ret_controllers = 0;
        r = manager_connect(priv, bus_address, deadline, &c, &bus, &where, ret_reason);
        if (r < 0)
                return r;
        r = manager_property(c, "Version", deadline, &version, &why);
        if (r >= 0)
                r = manager_property(c, "ControlGroup", deadline, &cgpath, &why);
        if (r < 0) {
                *ret_reason = xasprintf("systemd on %s does not answer: %s", where, why);
                return r;
        }
        /* the controllers the manager's cgroup has are the ones a
         * delegated scope below it can be given */
        file = xasprintf("/sys/fs/cgroup%s/cgroup.controllers", cgpath);
        if (read_file(file, &text, NULL) == 0)
                *ret_controllers = cgroup_parse_controllers(text);
        *ret_detail = xasprintf("systemd %s %s manager on %s (cgroup %s)", version,
                                geteuid() == 0 ? "system" : "user", where, *cgpath ? cgpath : "/");
        return 0;
}

int cgroup_systemd_scope(const char *run_id, unsigned timeout_ms, char **ret_unit, char **ret_reason)
{
        _cleanup_free_ char *priv = private_socket(), *bus = bus_address();
        return cgroup_systemd_scope_at(priv, bus, run_id, timeout_ms, ret_unit, ret_reason);
}

int cgroup_systemd_probe(char **ret_detail, unsigned *ret_controllers, char **ret_reason)
{
        *ret_controllers = 0;
        if (!unified_hierarchy()) {
                *ret_reason = xstrdup("cgroup v2 is not the unified hierarchy at /sys/fs/cgroup");
                return -EOPNOTSUPP;
        }
        _cleanup_free_ char *priv = private_socket(), *bus = bus_address();
        return cgroup_systemd_probe_at(priv, bus, ret_detail, ret_controllers, ret_reason);
}
