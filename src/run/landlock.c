/* run/landlock.c - the run's isolation tier (see run/landlock.h).
 *
 * Never weaker than asked, never silently: `namespaces` (the default)
 * never falls back; `auto` takes the landlock tier only when the host
 * refused the namespace tier's first steps, says so on stderr, and the
 * report names the refusal; and the report lists, in words, what the
 * landlock tier does not give.
 */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "run/landlock.h"
#include "lib/log.h"
#include "limits/du.h"
#include "lib/util.h"
#include "sandbox/ns.h"
#include "sandbox/ns-probe.h"
#include "sandbox/seccomp.h"
#include "workspace/snapshot.h"

/* root's job when no uid of its own can be had (landlock-uid.h) */
#define SHARED_NOBODY_ID 65534
/* the workspace copy gets at least this long, like a snapshot */
#define COPY_MIN_MS 10000

/* What the landlock tier's disk limit is, and what it does not hold
 * (limits/du.h, supervise.h's disk_dir). */
#define DISK_NOT_HELD \
        "no scratch tmpfs, so no ENOSPC: each file is bounded by RLIMIT_FSIZE (at most --disk; SIGXFSZ or " \
        "EFBIG past it), and the total by a watch that walks the scratch every 50 ms (allocated blocks, so " \
        "sparse files count what they take, and every entry against limits.inodes, beyond the workspace " \
        "copy) and kills the job (status disk_limit) over it; it does not hold what the job writes between " \
        "two looks (a burst at the disk's speed), nor files it deleted while it still holds them open or " \
        "mapped, which the walk cannot see, nor what is in a directory the job made unreadable or " \
        "unsearchable (mode 000, 0400), which the walk cannot enter (as an unprivileged caller), nor " \
        "--rw paths (as in the namespace tier); the scratch's filesystem is the host's, so the host may " \
        "fill up first"

static int refuse(char **ret_error, const char *what)
{
        *ret_error = xasprintf("--isolation landlock: %s", what);
        return -EOPNOTSUPP;
}

static int check_landlock_config(const struct run_config *cfg, bool has_inputs, bool has_code, char **ret_error)
{
        if (cfg->runtime == RUNTIME_GVISOR)
                return refuse(ret_error, "runtime gvisor needs the namespace tier");
        if (cfg->root_layers)
                return refuse(ret_error, "an image root (filesystem.root) needs the namespace tier");
        if (cfg->tmpfs_paths)
                return refuse(ret_error, "filesystem.tmpfs mounts need the namespace tier");
        if (cfg->seccomp_allow_io_uring)
                return refuse(ret_error, "allow_io_uring: io_uring's socket op would pass by the tier's socket "
                                         "families filter");
        if (has_inputs)
                return refuse(ret_error, "--input needs the namespace tier (pass the path with --ro instead)");
        if (has_code)
                return refuse(ret_error, "--lang code needs the namespace tier (run the interpreter on a file "
                                         "in --workdir instead)");
        return 0;
}

int run_isolation_choose(const struct run_config *cfg, bool has_inputs, bool has_code, struct run_landlock *ll,
                         char **ret_error)
{
        *ll = (struct run_landlock){ 0 };
        if (cfg->isolation == ISOLATION_NAMESPACES)
                return 0;
        if (cfg->isolation == ISOLATION_AUTO) {
                const char *step = NULL;
                int r = ns_probe_userns(cfg->net == NET_HOST, &step);
                if (r == 0)
                        return 0;
                char why[256];
                const char *explained = ns_explain_refusal(r, step, cfg->net != NET_HOST, why, sizeof(why));
                ll->refusal = xasprintf("%s: %s", step, explained ? explained : strerror(-r));
                ll->by_auto = true;
        }
        ll->abi = landlock_abi();
        if (ll->abi < 1) {
                *ret_error = ll->by_auto
                        ? xasprintf("--isolation auto: user namespaces are refused here (%s) and this kernel "
                                    "has no Landlock either: nothing can isolate the job (see hutch doctor)",
                                    ll->refusal)
                        : xasprintf("--isolation landlock: this kernel has no Landlock (%s)",
                                    ll->abi == 0 ? "not built in, or not in the lsm= list" : strerror(-ll->abi));
                return -EOPNOTSUPP;
        }
        int r = check_landlock_config(cfg, has_inputs, has_code, ret_error);
        if (r < 0) {
                if (ll->by_auto) {
                        char *why = *ret_error;
                        *ret_error = xasprintf("--isolation auto: user namespaces are refused here (%s), and %s",
                                               ll->refusal, why);
                        free(why);
                }
                return r;
        }
        if (ll->by_auto)
                log_warning("run: --isolation auto: user namespaces are refused here (%s); the job runs in "
                            "the landlock tier, which isolates less (hutch-run(1), ISOLATION)", ll->refusal);
        ll->active = true;
        return 0;
}

int run_landlock_prepare(const struct run_config *cfg, int lower_fd, uint16_t proxy_port, struct run_landlock *ll,
                         char **ret_error)
{
        uid_t uid = getuid();
        gid_t gid = getgid();
        const char *base = getenv("TMPDIR");
        int r;

        /* root's job gets a uid no other process has (landlock-uid.h):
         * not nobody, whom the host's other nobody processes share */
        if (geteuid() == 0) {
                r = landlock_uid_reserve(&ll->job_uid);
                if (r == -ERANGE) {
                        /* a namespace that maps so few ids that neither
                         * range is in it: nobody, said where it is read */
                        log_warning("run: the landlock tier: this user namespace maps no uid of hutch's ranges "
                                    "(%u-%u, %u-%u), so root's job runs as uid %u, which the host's other "
                                    "nobody processes share (hutch-run(1), ISOLATION)", LANDLOCK_UID_FIRST,
                                    LANDLOCK_UID_LAST, LANDLOCK_UID_SMALL_FIRST, LANDLOCK_UID_SMALL_LAST,
                                    SHARED_NOBODY_ID);
                        ll->shared_uid = true;
                        uid = SHARED_NOBODY_ID;
                        gid = SHARED_NOBODY_ID;
                } else if (r < 0) {
                        *ret_error = xasprintf("the landlock tier cannot reserve a uid of its own for the job "
                                               "under %s: %s", LANDLOCK_UID_LOCK_DIR,
                                               r == -EPERM ? "not a directory of root's alone"
                                               : r == -EBUSY ? "no free uid found" : strerror(-r));
                        return r;
                } else {
                        uid = ll->job_uid.uid;
                        gid = (gid_t)ll->job_uid.uid;
                }
        }
        if (!base || base[0] != '/')
                base = "/tmp";
        r = scratch_create(base, uid, gid, &ll->scratch);
        if (r < 0) {
                *ret_error = xasprintf("the landlock tier's scratch under %s: %s", base, strerror(-r));
                return r;
        }
        ll->have_scratch = true;
        struct timespec deadline;
        (void)clock_gettime(CLOCK_MONOTONIC, &deadline);
        uint64_t ms = MAX(cfg->timeout_ms, (uint64_t)COPY_MIN_MS);
        deadline.tv_sec += (time_t)(ms / 1000);
        struct snapshot_limits lim = { .max_bytes = cfg->disk_bytes, .max_entries = cfg->inodes,
                                       .deadline = deadline };
        struct snapshot_stats st = { 0 };
        _cleanup_free_ char *at = NULL;
        r = scratch_fill(&ll->scratch, lower_fd, &lim, &st, &at);
        if (r < 0) {
                const char *why = r == -ENOSPC ? "more than --disk" : r == -EMLINK ? "more entries than limits.inodes"
                                : r == -ELOOP ? "nested too deep" : r == -ETIME ? "it took too long"
                                : r == -EAGAIN ? "it kept changing while it was copied" : strerror(-r);
                *ret_error = xasprintf("cannot copy the workspace into the landlock tier's scratch%s%s: %s",
                                       at ? " at " : "", at ? at : "", why);
                return r;
        }
        /* The artifacts dir exists when the job starts, as the namespace
         * tier makes it (sandbox/mount.c): in the copy, the job's, unless
         * the workspace has one already. Made before the baseline and
         * never part of a change set (run/runfiles.c leaves it out). */
        size_t wl = strlen(cfg->workdir_inside);
        if (cfg->artifacts_dir && strncmp(cfg->artifacts_dir, cfg->workdir_inside, wl) == 0 &&
            cfg->artifacts_dir[wl] == '/' && cfg->artifacts_dir[wl + 1] && !strchr(cfg->artifacts_dir + wl + 1, '/')) {
                _cleanup_free_ char *out = xasprintf("%s/%s", ll->scratch.workspace, cfg->artifacts_dir + wl + 1);
                if (mkdir(out, 0755) == 0 && lchown(out, uid, gid) < 0)
                        log_debug("landlock tier: cannot give %s to the job: %m", out);
        }
        /* the disk watch's baseline: the job may add --disk to it */
        struct du *du = NULL;
        struct du_sample used = { 0 };
        r = du_new(ll->scratch.dir, &du);
        if (r >= 0) {
                r = du_step(du, UINT64_MAX, &used);
                du_free(du);
        }
        if (r < 0) {
                *ret_error = xasprintf("the landlock tier's scratch %s: cannot measure it: %s", ll->scratch.dir,
                                       strerror(-r));
                return r;
        }
        ll->disk_base_bytes = used.bytes;
        ll->disk_base_entries = used.entries;
        ll->write_paths[0] = ll->scratch.workspace;
        ll->write_paths[1] = ll->scratch.home;
        ll->write_paths[2] = ll->scratch.tmp;
        ll->write_paths[3] = NULL;
        /* --rw paths are the caller's explicit choice: writable here too */
        _cleanup_strv_ char **writable = NULL;
        for (char **p = ll->write_paths; *p; p++)
                writable = strv_append(writable, *p);
        for (char **p = cfg->rw_paths; p && *p; p++)
                writable = strv_append(writable, *p);
        struct landlock_request req = {
                .read_dirs = cfg->ro_binds, .read_paths = cfg->ro_paths, .write_paths = writable,
                /* network allow too: the job connects nothing itself,
                 * its init connects the proxy for it (connect-notify.h) */
                .masks = cfg->masks, .net = cfg->net == NET_HOST ? LANDLOCK_NET_HOST : LANDLOCK_NET_NONE,
                .tty = cfg->tty,
        };
        const char *failed = NULL;
        r = landlock_plan_build(&req, ll->abi, &ll->plan, &failed);
        if (r < 0) {
                *ret_error = xasprintf("the landlock tier's rules: %s: %s", failed ? failed : "?", strerror(-r));
                return r;
        }
        ll->job = (struct landlock_job){
                .workspace = ll->scratch.workspace, .home = ll->scratch.home, .tmpdir = ll->scratch.tmp,
                .uid = uid, .gid = gid,
                .sockets = cfg->net == NET_HOST ? SECCOMP_SOCKETS_ALL_INET
                           : cfg->net == NET_ALLOW ? SECCOMP_SOCKETS_TCP : SECCOMP_SOCKETS_NONE,
                .proxy_port = cfg->net == NET_ALLOW ? proxy_port : 0,
                .plan = &ll->plan,
        };
        log_debug("landlock tier: ABI %d, %zu rules, scratch %s, job uid %u", ll->plan.abi, ll->plan.n_rules,
                  ll->scratch.dir, (unsigned)uid);
        return 0;
}

static void set_limit(json_t *limits, const char *name, const char *mechanism, const char *reason, bool partial)
{
        json_t *l = json_object_get(limits, name);
        if (!l)
                return;
        json_object_set_new(l, "mechanism", json_string(mechanism));
        json_object_set_new(l, "reason", json_string(reason));
        if (partial)
                json_object_set_new(l, "partial", json_true());
}

/* What the landlock tier does not give, in words (hutch-run(1)
 * ISOLATION repeats them). */
static json_t *not_held(const struct run_config *cfg, const struct run_landlock *ll)
{
        json_t *a = json_array();
#define ADD(...) json_array_append_new(a, json_string(__VA_ARGS__))
#define ADDF(...) do { char *_s = xasprintf(__VA_ARGS__); ADD(_s); free(_s); } while (0)
        ADD("no pid namespace: the job sees the host's processes in /proc (read-only)");
        ADD("no uts namespace: the job sees the host's hostname; the profile's hostname is not applied");
        ADDF("no mount namespace: no private /tmp, home or workspace at their usual paths; $TMPDIR, $HOME and "
             "the working directory are in the run's scratch (%s), and a program that writes to /tmp itself "
             "is refused", ll->scratch.dir ? ll->scratch.dir : "");
        ADD("no private /etc/passwd, /etc/group, /etc/hosts or /etc/hostname: the host's are read");
        ADD("masked paths are hidden as they were when the run started (Landlock can only allow, so a "
            "directory holding one is allowed entry by entry)");
        if (cfg->net == NET_HOST)
                ADD("no network namespace: network host is the host's network, as in the namespace tier");
        else if (cfg->net == NET_ALLOW) {
                ADD("network allow reaches the allow-list only through hutch's proxy (the proxy variables): "
                    "the job's connect() is answered by hutch, which connects the proxy for it when the job "
                    "asked for the proxy's address and refuses any other (EACCES); a client that ignores the "
                    "proxy variables reaches nothing, where the namespace tier catches it transparently");
                ADD("network allow: no DNS for the job (no UDP socket): names are resolved by the proxy, so a "
                    "client that looks a name up itself before it connects fails");
                ADD("network allow: socket options a program sets before connect() (TCP_NODELAY, "
                    "SO_KEEPALIVE) are not kept on the proxy's socket that replaces its own");
                ADD("no network namespace: UDP, ICMP and raw sockets are held only by the seccomp filter's "
                    "socket families (TCP only), TCP also by Landlock (no bind or connect of the job's own)");
        } else
                ADD("no network namespace: UDP, ICMP and raw sockets are held only by the seccomp filter's "
                    "socket families (none at all with network none), TCP also by Landlock");
        ADD("no unix sockets: Landlock does not hold connecting to one by its path (the caller's session "
            "bus, the docker socket), so socket(AF_UNIX) is refused; socketpair() works for stream and seqpacket pairs (a datagram "
            "pair's socket could send to any path)");
        if (cfg->net == NET_HOST)
                ADD("network host: bind(2) is allowed (seccomp cannot tell a socketpair end from an inet socket), "
                    "so the job can bind a socketpair end to an abstract unix name and hold it in the host's "
                    "abstract namespace for the run, as in the namespace tier with network host");
        else
                ADD("no bind(2): a socketpair end bound to an abstract unix name would hold that name in the "
                    "host's abstract namespace (Landlock scopes connecting to one, not binding it)");
        ADD("no ipc namespace: the host's SysV IPC objects and POSIX message queues of the job's uid are "
            "reachable");
        if (cfg->disk_bytes)
                ADD(DISK_NOT_HELD);
        ADD("without a cgroup the pids limit is RLIMIT_NPROC over every task of the job's uid on the host "
            "(those at the start plus pids): partial");
        if (ll->job.uid == getuid()) {
                ADD("the job runs as the caller's own uid: the caller's other processes are its peers (signals "
                    "are scoped only from Landlock ABI 6), and it keeps the host's capability bounding set "
                    "(dropping it needs CAP_SETPCAP; no_new_privs keeps every capability out of reach)");
                ADD("the job can change the metadata (mode, times, extended attributes) of the caller's own "
                    "files anywhere it can name them: Landlock holds content, not metadata; as root the job "
                    "runs under a uid of its own and owns nothing of the host's");
                ADD("SysV IPC objects the job makes (shared memory, message queues, semaphores) stay after "
                    "the run under the caller's uid, and its memory limit does not count shared memory no "
                    "process has attached; as root they are removed with the job's own uid at the end");
        }
        if (ll->shared_uid)
                ADD("root's job runs as uid 65534, not a uid of its own (this user namespace maps none of "
                    "hutch's ranges): the host's other nobody processes own its scratch too, and SysV IPC "
                    "objects it makes stay after the run");
        for (char **m = ll->plan.missing; m && *m; m++)
                ADD(*m);
#undef ADD
#undef ADDF
        return a;
}

void run_isolation_report(json_t *report, const struct run_config *cfg, const struct run_landlock *ll,
                          bool pids_in_cgroup)
{
        json_t *o = json_object();
        json_object_set_new(o, "tier", json_string(ll->active ? "landlock" : "namespaces"));
        json_object_set_new(o, "requested", json_string(cfg->isolation == ISOLATION_AUTO ? "auto"
                                                        : cfg->isolation == ISOLATION_LANDLOCK ? "landlock"
                                                                                               : "namespaces"));
        if (ll->refusal)
                json_object_set_new(o, "namespaces_refused", json_string(ll->refusal));
        if (!ll->active) {
                json_object_set_new(report, "isolation", o);
                return;
        }
        json_object_set_new(o, "landlock_abi", json_integer(ll->abi));
        json_object_set_new(o, "landlock_abi_used", json_integer(ll->plan.abi));
        json_object_set_new(o, "landlock_rules", json_integer((json_int_t)ll->plan.n_rules));
        json_object_set_new(o, "uid", json_integer((json_int_t)ll->job.uid));
        json_object_set_new(o, "gid", json_integer((json_int_t)ll->job.gid));
        json_object_set_new(o, "scratch", json_string(ll->scratch.dir));
        json_object_set_new(o, "subreaper", json_true());
        json_object_set_new(o, "not_held", not_held(cfg, ll));
        json_object_set_new(report, "isolation", o);

        json_object_set_new(report, "namespaces", json_array());
        json_object_set_new(report, "uid_map", json_string("none (no user namespace)"));
        json_object_set_new(report, "gid_map", json_string("none (no user namespace)"));
        json_object_set_new(report, "capabilities",
                            json_string(geteuid() == 0 ? "none (root's job runs under a uid of its own, every set empty)"
                                                       : "none (the caller's uid, every set empty)"));
        if (cfg->net == NET_ALLOW) {
                _cleanup_free_ char *net = xasprintf(
                        "allow, through hutch's proxy only (127.0.0.1:%u, the proxy variables; seccomp: TCP sockets "
                        "only, no bind, listen or TCP Fast Open, and every connect() answered by hutch, which "
                        "connects the proxy for the job and refuses any other address; Landlock: no TCP bind or "
                        "connect of the job's own)", (unsigned)ll->job.proxy_port);
                json_object_set_new(report, "network", json_string(net));
        } else
                json_object_set_new(report, "network",
                                    json_string(cfg->net == NET_HOST ? "host"
                                                                     : "none (seccomp: no socket but socketpair, "
                                                                       "no bind; Landlock: no TCP bind or connect)"));
        json_t *limits = json_object_get(report, "limits");
        if (cfg->disk_bytes)
                set_limit(limits, "disk", "watch", DISK_NOT_HELD, true);
        if (cfg->pids && !pids_in_cgroup)
                set_limit(limits, "pids", "rlimit",
                          "no cgroup, and no user namespace: RLIMIT_NPROC counts every task of the job's uid on "
                          "the host, so it is set to those at the start plus pids, a bound that moves with that "
                          "uid's other processes", true);
}

void run_landlock_settle(const struct run_landlock *ll)
{
        if (ll->active && ll->have_scratch)
                scratch_settle(&ll->scratch);
}

int run_landlock_upper(struct run_landlock *ll, int lower_fd, int *ret_upper_fd)
{
        if (!ll->active || !ll->have_scratch)
                return -EINVAL;
        return scratch_build_upper(&ll->scratch, lower_fd, ret_upper_fd);
}

void run_landlock_done(struct run_landlock *ll)
{
        if (!ll)
                return;
        if (ll->have_scratch) {
                int r = scratch_remove(&ll->scratch);
                if (r < 0 && r != -ENOENT)
                        log_warning("run: cannot remove the landlock tier's scratch: %s", strerror(-r));
        }
        /* the job's processes are all gone by now: what its uid still
         * holds is only what outlives processes */
        landlock_uid_release(&ll->job_uid);
        landlock_plan_done(&ll->plan);
        free(ll->refusal);
        *ll = (struct run_landlock){ 0 };
}
