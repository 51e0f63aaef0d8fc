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
#include "lib/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

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

/* The static build (hutch-static, HUTCH_STATIC_BUILD) has the C
 * library inside: a dlopen()ed libsystemd would bring the system's
 * second copy of it into the process, so that build does not ask
 * systemd. It still says where it would have asked, so the enforcement
 * report and `hutch doctor` name the reason and the way round it. */
#if !defined(HAVE_SD_BUS) || defined(HUTCH_STATIC_BUILD)

bool cgroup_systemd_built(void)
{
        return false;
}

bool cgroup_systemd_available(void)
{
        return unified_hierarchy() && socket_present();
}

int cgroup_systemd_scope(const char *run_id, unsigned timeout_ms, char **ret_unit, char **ret_reason)
{
#ifdef HUTCH_STATIC_BUILD
        *ret_reason = xstrdup("hutch-static, the static build, does not load libsystemd, so it cannot ask "
                              "systemd for a delegated scope: use the dynamic hutch, or start it in a scope "
                              "(systemd-run --user --scope -p Delegate=yes hutch-static run ...)");
#else
        *ret_reason = xstrdup("this hutch was built without sd-bus (libsystemd-dev), so it cannot ask "
                              "systemd for a delegated scope");
#endif
        return -EOPNOTSUPP;
}

int cgroup_systemd_probe(char **ret_detail, unsigned *ret_controllers, char **ret_reason)
{
        *ret_controllers = 0;
        return cgroup_systemd_scope(NULL, 0, NULL, ret_reason);
}

#else /* HAVE_SD_BUS && !HUTCH_STATIC_BUILD */

bool cgroup_systemd_built(void)
{
        return true;
}

bool cgroup_systemd_available(void)
{
        return unified_hierarchy() && socket_present();
}

#include <dlfcn.h>
#include <systemd/sd-bus.h>

/* The part of sd-bus we use, resolved from libsystemd.so.0. typeof keeps
 * each pointer's type the header's, so a mismatch does not compile. */
#define SDBUS_FUNCTIONS(X)                                                     \
        X(sd_bus_new) X(sd_bus_set_address) X(sd_bus_start)                    \
        X(sd_bus_set_bus_client) X(sd_bus_open_system) X(sd_bus_flush_close_unref) \
        X(sd_bus_message_new_method_call) X(sd_bus_message_append)             \
        X(sd_bus_call) X(sd_bus_message_read) X(sd_bus_message_unref)          \
        X(sd_bus_match_signal) X(sd_bus_slot_unref) X(sd_bus_process)          \
        X(sd_bus_wait) X(sd_bus_error_free) X(sd_bus_get_property_string)

struct sdbus {
        void *dl;
#define SDBUS_MEMBER(f) __typeof__(f) *f;
        SDBUS_FUNCTIONS(SDBUS_MEMBER)
#undef SDBUS_MEMBER
};

static int sdbus_load(struct sdbus *api, char **ret_reason)
{
        memset(api, 0, sizeof(*api));
        /* RTLD_LOCAL: its symbols stay out of ours; NODELETE: sd-bus
         * keeps per-thread state we must not unmap under it */
        api->dl = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!api->dl) {
                *ret_reason = xasprintf("cannot load libsystemd.so.0 to talk to systemd: %s", dlerror());
                return -ENOENT;
        }
#define SDBUS_RESOLVE(f)                                                                        \
        if (!(api->f = (__typeof__(f) *)dlsym(api->dl, #f))) {                                  \
                *ret_reason = xstrdup("libsystemd.so.0 lacks " #f " (systemd older than 246?)"); \
                return -EOPNOTSUPP;                                                             \
        }
        SDBUS_FUNCTIONS(SDBUS_RESOLVE)
#undef SDBUS_RESOLVE
        return 0;
}

/* A D-Bus address's value must escape all but [-0-9A-Za-z_/.\*]. */
static char *dbus_unix_address(const char *path)
{
        size_t len = strlen(path);
        char *ret = xmalloc(strlen("unix:path=") + 3 * len + 1), *o = ret;
        o += sprintf(o, "unix:path=");
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char)*p;
                if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    strchr("-_/.\\*", c))
                        *o++ = (char)c;
                else
                        o += sprintf(o, "%%%02x", c);
        }
        *o = '\0';
        return ret;
}

/* The bus the manager is also on, as a D-Bus address, or NULL for the
 * system bus (sd-bus knows where that is). */
static char *bus_address(void)
{
        if (geteuid() == 0)
                return NULL;
        const char *env = getenv("DBUS_SESSION_BUS_ADDRESS");
        if (env && *env)
                return xstrdup(env);
        _cleanup_free_ char *rt = runtime_dir();
        _cleanup_free_ char *path = xasprintf("%s/bus", rt);
        return dbus_unix_address(path);
}

/* A started connection to one D-Bus address: a peer-to-peer one to a
 * private socket, or (bus_client) one that says Hello to a bus. */
static int connect_to(struct sdbus *api, const char *address, bool bus_client, sd_bus **ret)
{
        sd_bus *bus = NULL;
        int r = api->sd_bus_new(&bus);
        if (r >= 0)
                r = api->sd_bus_set_address(bus, address);
        if (r >= 0 && bus_client)
                r = api->sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = api->sd_bus_start(bus);
        if (r < 0) {
                if (bus)
                        api->sd_bus_flush_close_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

/* Connect to the manager: its private socket, else the bus. *ret_where
 * says which, for messages. */
static int manager_connect(struct sdbus *api, sd_bus **ret, char **ret_where, char **ret_reason)
{
        _cleanup_free_ char *priv = private_socket();
        struct stat st;
        int r;

        if (stat(priv, &st) == 0 && S_ISSOCK(st.st_mode)) {
                _cleanup_free_ char *addr = dbus_unix_address(priv);
                if (connect_to(api, addr, false, ret) >= 0) {
                        *ret_where = xstrdup(priv);
                        return 0;
                }
                /* on to the bus: the private socket may be stale, or
                 * refuse us */
        }
        bool system = geteuid() == 0;
        _cleanup_free_ char *addr = bus_address();
        /* for a user, the address sd_bus_open_user() would take, but from
         * the runtime dir we trust (see runtime_dir()) */
        r = system ? api->sd_bus_open_system(ret) : connect_to(api, addr, true, ret);
        if (r < 0) {
                *ret_reason = xasprintf("no systemd %s manager to ask for a delegated scope: %s: %s; "
                                        "the %s bus: %s", system ? "system" : "user", priv,
                                        access(priv, F_OK) == 0 ? "cannot connect" : "no such socket",
                                        system ? "system" : "user", strerror(-r));
                return r;
        }
        *ret_where = system ? xstrdup("the system bus") : xasprintf("the user bus (%s)", addr);
        return 0;
}

/* libsystemd loaded and a connection to the manager made. */
static int manager_open(struct sdbus *api, sd_bus **ret, char **ret_where, char **ret_reason)
{
        int r = sdbus_load(api, ret_reason);
        if (r < 0)
                return r;
        return manager_connect(api, ret, ret_where, ret_reason);
}

struct job_wait {
        struct sdbus *api;
        const char *job;        /* object path of our job, once known */
        bool done;
        char result[32];
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        struct job_wait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (w->api->sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->job && streq(path, w->job)) {
                w->done = true;
                snprintf(w->result, sizeof(w->result), "%s", result);
        }
        return 0;
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

int cgroup_systemd_scope(const char *run_id, unsigned timeout_ms, char **ret_unit, char **ret_reason)
{
        _cleanup_free_ char *unit = xasprintf("hutch-%s.scope", run_id);
        _cleanup_free_ char *desc = xasprintf("hutch run %s", run_id);
        _cleanup_free_ char *where = NULL;
        struct sdbus api;
        sd_bus *bus = NULL;
        sd_bus_slot *slot = NULL;
        sd_bus_message *call = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        struct job_wait w = { .api = &api };
        uint64_t deadline = now_monotonic_ms() + timeout_ms;
        const char *job;
        int r;

        r = manager_open(&api, &bus, &where, ret_reason);
        if (r < 0)
                return r;

        /* Listen before asking: the job may be done before the reply is
         * read (on a private socket systemd sends every signal; on a bus
         * the requester of a job always gets its JobRemoved). */
        r = api.sd_bus_match_signal(bus, &slot, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                    "JobRemoved", on_job_removed, &w);
        if (r < 0) {
                *ret_reason = xasprintf("systemd on %s: cannot watch for JobRemoved: %s", where, strerror(-r));
                goto out;
        }
        r = api.sd_bus_message_new_method_call(bus, &call, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                               "StartTransientUnit");
        /* mode "fail": never replace a job someone else queued. The scope
         * is collected even if it fails, so nothing piles up. */
        if (r >= 0)
                r = api.sd_bus_message_append(call, "ssa(sv)a(sa(sv))", unit, "fail", 4,
                                              "Description", "s", desc,
                                              "PIDs", "au", 1, (uint32_t)getpid(),
                                              "Delegate", "b", 1,
                                              "CollectMode", "s", "inactive-or-failed",
                                              0);
        if (r < 0) {
                *ret_reason = xasprintf("building the StartTransientUnit call: %s", strerror(-r));
                goto out;
        }
        r = api.sd_bus_call(bus, call, (uint64_t)timeout_ms * 1000, &error, &reply);
        if (r < 0) {
                *ret_reason = xasprintf("systemd on %s refused %s: %s", where, unit,
                                        error.message ? error.message : strerror(-r));
                goto out;
        }
        r = api.sd_bus_message_read(reply, "o", &job);
        if (r < 0) {
                *ret_reason = xasprintf("systemd on %s: unexpected reply to StartTransientUnit", where);
                goto out;
        }
        w.job = job;
        while (!w.done) {
                uint64_t now = now_monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        *ret_reason = xasprintf("systemd on %s did not start %s within %u ms", where, unit,
                                                timeout_ms);
                        goto out;
                }
                r = api.sd_bus_process(bus, NULL);
                if (r > 0)
                        continue;
                if (r == 0)
                        r = api.sd_bus_wait(bus, (deadline - now) * 1000);
                if (r < 0) {
                        *ret_reason = xasprintf("systemd on %s: connection lost waiting for %s: %s", where,
                                                unit, strerror(-r));
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
        api.sd_bus_error_free(&error);
        if (reply)
                api.sd_bus_message_unref(reply);
        if (call)
                api.sd_bus_message_unref(call);
        if (slot)
                api.sd_bus_slot_unref(slot);
        api.sd_bus_flush_close_unref(bus);
        return r;
}

int cgroup_systemd_probe(char **ret_detail, unsigned *ret_controllers, char **ret_reason)
{
        _cleanup_free_ char *where = NULL, *file = NULL, *text = NULL;
        char *version = NULL, *cgpath = NULL;
        struct sdbus api;
        sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        *ret_controllers = 0;
        if (!unified_hierarchy()) {
                *ret_reason = xstrdup("cgroup v2 is not the unified hierarchy at /sys/fs/cgroup");
                return -EOPNOTSUPP;
        }
        r = manager_open(&api, &bus, &where, ret_reason);
        if (r < 0)
                return r;
        r = api.sd_bus_get_property_string(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "Version",
                                           &error, &version);
        if (r >= 0)
                r = api.sd_bus_get_property_string(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                                   "ControlGroup", &error, &cgpath);
        if (r < 0) {
                *ret_reason = xasprintf("systemd on %s does not answer: %s", where,
                                        error.message ? error.message : strerror(-r));
                goto out;
        }
        /* the controllers the manager's cgroup has are the ones a
         * delegated scope below it can be given */
        file = xasprintf("/sys/fs/cgroup%s/cgroup.controllers", cgpath);
        if (read_file(file, &text, NULL) == 0)
                *ret_controllers = cgroup_parse_controllers(text);
        *ret_detail = xasprintf("systemd %s %s manager on %s (cgroup %s)", version,
                                geteuid() == 0 ? "system" : "user", where, *cgpath ? cgpath : "/");
        r = 0;
out:
        free(version);
        free(cgpath);
        api.sd_bus_error_free(&error);
        api.sd_bus_flush_close_unref(bus);
        return r;
}

#endif /* HAVE_SD_BUS && !HUTCH_STATIC_BUILD */
