/* cli/doctor.c - `hutch doctor`: what this host supports, and how to fix
 * what it does not. Each check runs the real kernel operation in a
 * throwaway child rather than reading sysctls alone, because container
 * runtimes, LSMs and seccomp filters can refuse what the sysctls allow;
 * the sysctls are read afterwards to explain a failure. */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <linux/seccomp.h>

#include "limits/cgroup.h"
#include "limits/cgroup-systemd.h"
#include "limits/ipcns.h"
#include "limits/slurm.h"
#include "cli/cli.h"
#include "lib/build-kind.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "net/netns.h"
#include "sandbox/gvisor.h"
#include "sandbox/mount.h"
#include "sandbox/landlock.h"
#include "sandbox/ns.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "record/store.h"
#include "run/admission.h"
#include "sandbox/sandbox.h"
#include "sandbox/specials.h"
#include "sandbox/userns-diag.h"
#include "supervise/supervise.h"

enum check_result { CHECK_OK, CHECK_MISSING, CHECK_WARN };

#define STR_(x) #x
#define STR(x) STR_(x)

static void report(enum check_result r, const char *what, const char *detail, const char *fix)
{
        static const char *const tag[] = { "OK     ", "MISSING", "WARN   " };
        printf("%s %s%s%s\n", tag[r], what, detail && *detail ? ": " : "", detail ? detail : "");
        if (fix && *fix && r != CHECK_OK)
                printf("        fix: %s\n", fix);
}

static int read_sysctl(const char *path, long *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = read_file(path, &text, NULL);
        if (r < 0)
                return r;
        *ret = strtol(text, NULL, 10);
        return 0;
}

/* Run fn in a child that first enters new namespaces (flags); returns the
 * child's exit code, or -errno if the clone itself failed. */
static int in_child(unsigned long flags, int (*fn)(void *), void *arg)
{
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                uid_t uid = geteuid();
                gid_t gid = getegid();
                if (unshare((int)flags) < 0)
                        _exit(100 + (errno & 0x1f));
                if (flags & CLONE_NEWUSER) {
                        char map[64];
                        int fd;
                        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
                        if ((fd = open("/proc/self/setgroups", O_WRONLY)) >= 0) {
                                (void)!write(fd, "deny", 4);
                                close(fd);
                        }
                        if ((fd = open("/proc/self/uid_map", O_WRONLY)) < 0 ||
                            write(fd, map, strlen(map)) < 0)
                                _exit(99);
                        close(fd);
                        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
                        if ((fd = open("/proc/self/gid_map", O_WRONLY)) < 0 ||
                            write(fd, map, strlen(map)) < 0)
                                _exit(99);
                        close(fd);
                }
                _exit(fn ? fn(arg) : 0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
}

static int try_overlay(void *arg)
{
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
                return 1;
        if (mount("none", "/tmp", "tmpfs", 0, NULL) < 0)
                return 2;
        if (mkdir("/tmp/l", 0755) < 0 || mkdir("/tmp/u", 0755) < 0 ||
            mkdir("/tmp/w", 0755) < 0 || mkdir("/tmp/m", 0755) < 0)
                return 3;
        if (mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr") < 0)
                return 4;
        return 0;
}

/* Can an overlay upper dir on tmpfs mark opaque directories? (user.*
 * xattrs on tmpfs: Linux 6.6+) */
static int try_tmpfs_xattr(void *arg)
{
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
                return 1;
        if (mount("none", "/tmp", "tmpfs", 0, NULL) < 0)
                return 2;
        return mount_tmpfs_user_xattr("/tmp") == 1 ? 0 : 3;
}

static int try_proc(void *arg)
{
        /* a fresh /proc needs a pid namespace of our own: fork into it */
        pid_t pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0 ||
                    mount("none", "/tmp", "tmpfs", 0, NULL) < 0 ||
                    mkdir("/tmp/p", 0755) < 0)
                        _exit(2);
                _exit(mount("proc", "/tmp/p", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? 3 : 0);
        }
        int status;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

/* Says what refuses user namespaces and how to fix it, in the words the
 * run's setup error uses (sandbox/userns-diag.c). r is in_child()'s:
 * 100 + errno when unshare() failed, 99 when writing the id maps did. */
static void explain_userns(int r)
{
        const char *zero = ns_limit_at_zero(true);
        if (zero && !streq(zero, "user")) {
                /* another kind's limit: clone would refuse that one */
                _cleanup_free_ char *what = xasprintf("user.max_%s_namespaces = 0", zero);
                _cleanup_free_ char *fix = xasprintf("sysctl -w user.max_%s_namespaces=15000", zero);
                report(CHECK_MISSING, "unprivileged user namespaces", what, fix);
                return;
        }
        struct userns_facts f;
        char text[512], fix[1024];
        userns_facts_gather(&f, r >= 100 ? r - 100 : EPERM, r >= 100, NULL);
        enum userns_cause c = userns_classify(&f);
        if (userns_cause_text(c, &f, text, sizeof(text)))
                report(CHECK_MISSING, "unprivileged user namespaces", text,
                       userns_cause_fix(c, &f, fix, sizeof(fix)));
        else
                report(CHECK_MISSING, "unprivileged user namespaces",
                       "creating them is refused (inside a container? a seccomp filter or LSM may block unshare)",
                       "run hutch on the host, or start the container with user namespaces allowed "
                       "(e.g. a seccomp profile permitting unshare/clone with CLONE_NEWUSER)");
}

static bool check_userns(void)
{
        int r = in_child(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                         CLONE_NEWIPC | CLONE_NEWUTS, NULL, NULL);
        if (r == 0) {
                struct userns_facts f;
                userns_facts_gather(&f, 0, false, NULL);
                report(CHECK_OK, "unprivileged user namespaces",
                       f.restrict_userns == 1 && !f.privileged
                       ? "AppArmor restricts them, and hutch's AppArmor profile allows them" : NULL, NULL);
                return true;
        }
        explain_userns(r);
        return false;
}

/* The landlock tier (--isolation landlock|auto): whether this kernel
 * can hold a job without namespaces, and what to run where the namespace
 * tier is refused. Never a failure of its own: the namespace tier is the
 * default, and this is its fallback. */
static void check_landlock(bool userns)
{
        const char *what = "landlock tier (--isolation landlock|auto)";
        int abi = landlock_abi();
        if (abi < 1) {
                report(CHECK_WARN, what, abi == 0 ? "this kernel has no Landlock (not built in, or not in lsm=)"
                                                  : strerror(-abi),
                       userns ? NULL : "nothing can isolate a job here: fix the user namespaces (above)");
                return;
        }
        _cleanup_free_ char *detail = userns
                ? xasprintf("Landlock ABI %d; not needed here: the namespace tier works", abi)
                : xasprintf("Landlock ABI %d: `hutch run --isolation auto` runs jobs here without namespaces, "
                            "isolated less (hutch-run(1), ISOLATION)", abi);
        report(userns ? CHECK_OK : CHECK_WARN, what, detail, NULL);
}

/* How hutch was linked: hutch-static carries its own copy of glibc and
 * the libraries (configure.ac says why it exists), which the system's
 * updates do not reach, and it cannot ask systemd for a scope. */
static void check_build(void)
{
        _cleanup_free_ char *detail =
                build_is_static()
                        ? xasprintf("static (hutch-static): glibc %s and the libraries inside, so their fixes "
                                    "reach it only when it is built again; it does not ask systemd for a "
                                    "delegated scope", gnu_get_libc_version())
                        : xasprintf("dynamic: the system's glibc %s and libraries, updated with the system",
                                    gnu_get_libc_version());
        report(CHECK_OK, "build", detail, NULL);
}

static bool check_proc(void)
{
        int r = in_child(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, try_proc, NULL);
        if (r == 0) {
                report(CHECK_OK, "fresh /proc in a pid namespace", NULL, NULL);
                return true;
        }
        report(CHECK_MISSING, "fresh /proc in a pid namespace",
               "mounting proc is refused (a container that masks parts of /proc does this)",
               "run hutch on the host, or give the container an unmasked /proc (e.g. --security-opt systempaths=unconfined)");
        return false;
}

static void check_overlay(void)
{
        int r = in_child(CLONE_NEWUSER | CLONE_NEWNS, try_overlay, NULL);
        if (r == 0)
                report(CHECK_OK, "overlayfs in a user namespace", NULL, NULL);
        else
                report(CHECK_MISSING, "overlayfs in a user namespace",
                       "needed for --workdir, sessions and image roots (Linux >= 5.11)",
                       "use a kernel >= 5.11 with CONFIG_OVERLAY_FS");
        if (r != 0)
                return;
        if (in_child(CLONE_NEWUSER | CLONE_NEWNS, try_tmpfs_xattr, NULL) == 0)
                report(CHECK_OK, "user xattrs on tmpfs (overlay workspaces)", NULL, NULL);
        else
                report(CHECK_MISSING, "user xattrs on tmpfs (overlay workspaces)",
                       "without them an overlay cannot record a directory that was removed and made "
                       "again, so --workdir, --session and image roots are refused",
                       "use Linux >= 6.6 (Debian 12's 6.1 lacks them)");
}

/* network = allow: in a fresh user+net namespace, bring lo up, route
 * everything to it and open the capture sockets, as the sandbox does
 * (net/netns.c). Writes what failed to the pipe in arg. */
static int try_egress(void *arg)
{
        int out = *(int *)arg, pair[2];
        const char *step = "loopback up";
        int r = ns_loopback_up();
        if (r == 0) {
                step = "socketpair";
                r = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0 ? -errno : 0;
        }
        if (r == 0)
                r = netns_capture_setup(pair[0], (const uint16_t[]){ 443 }, 1, &step);
        if (r == 0)
                return 0;
        dprintf(out, "%s: %s", step, strerror(-r));
        return 1;
}

static void check_egress(void)
{
        static const char what[] = "network = allow (egress rules)";
        char why[256] = "";
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0) {
                report(CHECK_WARN, what, strerror(errno), NULL);
                return;
        }
        int r = in_child(CLONE_NEWUSER | CLONE_NEWNET, try_egress, &p[1]);
        close(p[1]);
        ssize_t n = read(p[0], why, sizeof(why) - 1);
        close(p[0]);
        why[n > 0 ? n : 0] = '\0';
        if (r == 0)
                report(CHECK_OK, what, "every destination routes to lo; capture listeners and the DNS stub open",
                       NULL);
        else
                report(CHECK_WARN, what, why[0] ? why : "cannot build the capture in a network namespace",
                       "--allow runs fail with setup_error (125) here; the sandbox's network namespace must "
                       "take a local route on lo and listeners on the rules' ports");
}

/* The SysV IPC limits of a job's IPC namespace (limits/ipcns.c). As
 * real root they are written the way a run does it, into a throwaway
 * IPC namespace, and read back from inside it; rootless nobody may
 * write them, and the report says partial. */
static void check_ipc_limits(void)
{
        static const char what[] = "SysV IPC without a memory cgroup";
        static const char fix[] = "a delegated cgroup v2 memory controller (see above) holds it all";
        if (!ns_real_root()) {
                report(CHECK_WARN, what,
                       "SysV shm no process maps and memfds in flight are not counted: the sandbox cannot "
                       "lower its IPC namespace's kernel.shm* limits (only its user namespace's uid 0 may, "
                       "and a rootless sandbox maps none; as root hutch sets them), so the report says partial",
                       fix);
                return;
        }
        struct ipcns_limits l;
        int sp[2] = { -1, -1 }, r, status = 0;
        const char *step = "start a child";
        ipcns_limits_for(64u << 20, sysconf(_SC_PAGESIZE), &l);
        r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ? -errno : 0;
        pid_t pid = r < 0 ? -1 : fork();
        if (r >= 0 && pid < 0)
                r = -errno;
        if (pid == 0) {
                char c = 0;
                long shmall = -1;
                close(sp[0]);
                /* a namespace of its own, then wait for the parent's writes */
                if (unshare(CLONE_NEWIPC) < 0 || write(sp[1], &c, 1) != 1 || read(sp[1], &c, 1) != 1)
                        _exit(2);
                _exit(read_sysctl("/proc/sys/kernel/shmall", &shmall) == 0 &&
                      (unsigned long long)shmall == (unsigned long long)l.shmall ? 0 : 1);
        }
        if (pid > 0) {
                char c = 0;
                int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                close(sp[1]);
                if (pidfd < 0)
                        r = -errno;
                else if (read(sp[0], &c, 1) != 1)
                        r = -EIO, step = "unshare an IPC namespace";
                else
                        r = ipcns_apply(pidfd, 0, 0, &l, &step);
                /* the child may be gone (unshare refused): no SIGPIPE */
                (void)!send(sp[0], &c, 1, MSG_NOSIGNAL);
                close(sp[0]);
                if (pidfd >= 0)
                        close(pidfd);
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                if (r >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                        r = -EIO;
                        step = "read kernel.shmall back in the namespace";
                }
        } else if (sp[0] >= 0) {
                close(sp[0]);
                close(sp[1]);
        }
        if (r >= 0) {
                report(CHECK_WARN, what,
                       "as root without a memory cgroup, hutch lowers the job's IPC namespace's kernel.shm*, "
                       "msg* and sem limits from --memory, so SysV shm and queues are held; memfds in flight and kernel memory are "
                       "still not counted, so the report says partial", fix);
                return;
        }
        _cleanup_free_ char *detail = xasprintf("as root hutch sets the job's IPC namespace's limits, but "
                                                "here it cannot (%s: %s): SysV shm no process maps is not "
                                                "counted", step, strerror(-r));
        report(CHECK_WARN, what, detail, fix);
}

/* Root only: a --workdir root owns is shown through an idmapped mount
 * (host uid 0 as the sandbox user's 65534). Tried on the filesystem of
 * the current directory, where a checkout usually is; the detached
 * clone is dropped at once, nothing is mounted. */
static void check_idmap(void)
{
        struct statfs sfs;
        char fs[32] = "?";
        if (statfs(".", &sfs) == 0)
                snprintf(fs, sizeof(fs), "0x%lx", (unsigned long)sfs.f_type);
        _cleanup_close_ int userns = ns_idmap_userns(0, 0, ns_host_uid(), ns_host_gid());
        int r = userns < 0 ? userns : mount_clone_lower_idmapped(".", userns);
        if (r >= 0) {
                close(r);
                report(CHECK_OK, "idmapped --workdir (root)",
                       "root's files in a --workdir on this filesystem are the sandbox user's", NULL);
                return;
        }
        _cleanup_free_ char *detail = xasprintf("the current directory's filesystem (magic %s) cannot be "
                                                "idmapped: %s; root's files in a --workdir there stay "
                                                "read-only to the job", fs, strerror(-r));
        report(CHECK_WARN, "idmapped --workdir (root)", detail,
               "keep checkouts on a filesystem that supports idmapped mounts (ext4, xfs, btrfs; tmpfs "
               "from Linux 6.3), or chown the directory to 65534:65534");
}

static void check_seccomp(void)
{
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
                report(CHECK_MISSING, "seccomp filters", strerror(errno), "use a kernel with CONFIG_SECCOMP_FILTER");
                return;
        }
        _cleanup_free_ char *actions = NULL;
        if (read_file("/proc/sys/kernel/seccomp/actions_avail", &actions, NULL) < 0) {
                report(CHECK_WARN, "seccomp filters", "actions_avail not readable", NULL);
                return;
        }
        actions[strcspn(actions, "\n")] = '\0';
        report(CHECK_OK, "seccomp filters", actions, NULL);
}

/* No delegated cgroup where hutch runs, but a systemd manager that can
 * hand out delegated scopes: say what runs will get from it. Returns
 * false when it cannot, for the plain report to follow. */
static bool check_systemd_scope(struct cgroup_probe *p)
{
        _cleanup_free_ char *detail = NULL, *why = NULL, *line = NULL;
        unsigned controllers = 0;

        if (cgroup_systemd_probe(&detail, &controllers, &why) < 0) {
                char *both = xasprintf("%s; %s", p->reason ? p->reason : "no delegated cgroup", why);
                free(p->reason);
                p->reason = both;
                return false;
        }
        controllers &= CGROUP_MEMORY | CGROUP_CPU | CGROUP_PIDS;
        if (!controllers) {
                char *both = xasprintf("%s; %s offers no cpu, memory or pids controller to delegate",
                                       p->reason ? p->reason : "no delegated cgroup", detail);
                free(p->reason);
                p->reason = both;
                return false;
        }
        line = xasprintf("each run gets a transient scope hutch-ID.scope with Delegate=yes from %s, "
                         "controllers:", detail);
        for (unsigned bit = 1; bit <= CGROUP_PIDS; bit <<= 1)
                if (controllers & bit) {
                        char *d = xasprintf("%s %s", line, cgroup_controller_name(bit));
                        free(line);
                        line = d;
                }
        report(CHECK_OK, "cgroup v2 delegation", line, NULL);
        for (unsigned bit = 1; bit <= CGROUP_PIDS; bit <<= 1)
                if (!(controllers & bit)) {
                        _cleanup_free_ char *what = xasprintf("cgroup v2 controller %s", cgroup_controller_name(bit));
                        report(CHECK_WARN, what, "not in the systemd manager's cgroup",
                               "delegate it to the user manager (systemctl edit user@.service: "
                               "[Service] Delegate=cpu memory pids)");
                }
        cgroup_probe_done(p);
        return true;
}

/* What cgroup_probe() finds, without changing anything: the base hutch
 * run would use and which of the controllers it uses (cpu, memory,
 * pids) runs would get, or why not and how to get them. */
static void check_cgroup(void)
{
        static const struct { unsigned bit; const char *limits; } used[] = {
                { CGROUP_MEMORY, "memory (memory.max; else the watchdog) and memory_high (else not enforced)" },
                { CGROUP_CPU, "cpus (cpu.max; else not enforced)" },
                { CGROUP_PIDS, "pids (pids.max; else RLIMIT_NPROC)" },
        };
        struct cgroup_probe p;
        struct statfs sfs;
        const char *env = getenv("HUTCH_CGROUP");

        if (env && streq(env, "none")) {
                report(CHECK_WARN, "cgroup v2 delegation", "turned off by HUTCH_CGROUP=none",
                       "unset HUTCH_CGROUP to let hutch run use a delegated cgroup");
                return;
        }
        (void)cgroup_probe(&p);
        unsigned usable = p.usable & (CGROUP_MEMORY | CGROUP_CPU | CGROUP_PIDS);
        if (!usable && !(env && *env) && cgroup_systemd_available() && check_systemd_scope(&p))
                return;
        if (!usable) {
                bool hybrid = statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type != CGROUP2_SUPER_MAGIC;
                report(CHECK_MISSING, "cgroup v2 delegation", p.reason ? p.reason : "no controller usable",
                       hybrid ? "boot with systemd.unified_cgroup_hierarchy=1 (cgroups are a v1/v2 "
                                "hybrid here); until then memory and cpu_time are held by the watchdog, "
                                "pids by RLIMIT_NPROC, and cpus and memory_high are not enforced "
                                "(hutch show lists which)"
                       : "set HUTCH_CGROUP to a delegated cgroup v2 directory that holds no "
                         "processes, or have a systemd manager for this user (user@UID.service, "
                         "started by a PAM login or `loginctl enable-linger`): hutch then asks it "
                         "for a delegated scope per run (by hand: systemd-run --user --scope "
                         "-p Delegate=yes hutch run ...); until then "
                         "memory and cpu_time are held by the watchdog, pids by RLIMIT_NPROC, "
                         "and cpus and memory_high are not enforced");
                cgroup_probe_done(&p);
                return;
        }
        _cleanup_free_ char *detail = NULL;
        detail = xasprintf("%s%s, controllers:", p.base, getenv("HUTCH_CGROUP") ? " ($HUTCH_CGROUP)" : "");
        for (size_t i = 0; i < ELEMENTSOF(used); i++)
                if (usable & used[i].bit) {
                        char *d = xasprintf("%s %s", detail, cgroup_controller_name(used[i].bit));
                        free(detail);
                        detail = d;
                }
        report(CHECK_OK, "cgroup v2 delegation", detail, NULL);
        for (size_t i = 0; i < ELEMENTSOF(used); i++) {
                if (usable & used[i].bit)
                        continue;
                _cleanup_free_ char *what = xasprintf("cgroup v2 controller %s", cgroup_controller_name(used[i].bit));
                _cleanup_free_ char *fix = xasprintf("enable it in the parent's cgroup.subtree_control "
                                                     "(systemd: Delegate=yes); until then %s", used[i].limits);
                unsigned idx = 0;
                while ((1U << idx) != used[i].bit)
                        idx++;
                report(CHECK_WARN, what, p.why_not[idx] ? p.why_not[idx] : "not usable", fix);
        }
        cgroup_probe_done(&p);
}

/* Inside a Slurm job: the step, the allocation hutch keeps runs in, and
 * what holds the limits there. Outside one, a line saying what would
 * happen under srun or sbatch. */
static void check_slurm(void)
{
        struct slurm_step st;
        struct cgroup_probe p;
        char mem[512] = "unknown", cpus[512] = "unknown";

        if (getenv("HUTCH_SLURM") && streq(getenv("HUTCH_SLURM"), "off")) {
                report(CHECK_WARN, "Slurm", "HUTCH_SLURM=off: runs are not kept inside a Slurm allocation",
                       "unset HUTCH_SLURM");
                return;
        }
        slurm_detect(&st);
        if (!st.found) {
                report(CHECK_OK, "Slurm", "not in a Slurm job (under srun or sbatch, runs are capped to "
                       "the allocation's memory and cpus and labelled slurm.job_id, slurm.node, ...)", NULL);
                slurm_step_done(&st);
                return;
        }
        if (st.memory_bytes)
                snprintf(mem, sizeof(mem), "%llu MiB (%s)", (unsigned long long)(st.memory_bytes >> 20),
                         st.memory_from);
        if (st.cpus > 0)
                snprintf(cpus, sizeof(cpus), "%.3g (%s)", st.cpus, st.cpus_from);
        _cleanup_free_ char *array = st.array_job_id
                ? xasprintf(" (array %s task %s)", st.array_job_id, st.array_task_id ? st.array_task_id : "?")
                : xstrdup("");
        _cleanup_free_ char *detail = xasprintf(
                "job %s%s on node %s, cgroup %s; allocation: memory %s, cpus %s; each run's limits "
                "are the smaller of the profile's and these (the SLURM_* variables only ever lower them)",
                st.job_id ? st.job_id : "?", array, st.node ? st.node : "?",
                st.cgroup ? st.cgroup : "not Slurm's", mem, cpus);
        report(CHECK_OK, "Slurm job step", detail, NULL);

        (void)cgroup_probe(&p);
        if (!(p.usable & (CGROUP_MEMORY | CGROUP_CPU)))
                report(CHECK_WARN, "Slurm's cgroup", st.cgroup
                       ? "not delegated to this user: the run cannot get a cgroup of its own inside it"
                       : "none found for this step, and no other cgroup is delegated here",
                       "nothing to do for the allocation, which Slurm's cgroup (task/cgroup) holds as a "
                       "whole; inside it each run's memory is held by hutch's watchdog and cpus are not "
                       "enforced (the enforcement report of each run says so); for per-run cgroups run "
                       "hutch where a cgroup v2 subtree is delegated (HUTCH_CGROUP)");
        cgroup_probe_done(&p);
        slurm_step_done(&st);
}

/* The run store, read-only: SQLite's quick_check over every page. */
static void check_store(void)
{
        _cleanup_free_ char *path = NULL, *error = NULL, *problem = NULL;
        struct store *s = NULL;
        int r;

        if (store_default_path(&path) < 0)
                return;
        r = store_open_readonly(path, &s, &error);
        if (r == -ENOENT) {
                report(CHECK_OK, "run store", "none yet", NULL);
                return;
        }
        if (r == 0)
                r = store_quick_check(s, &problem);
        store_close(s);
        if (r == 0) {
                _cleanup_free_ char *detail = xasprintf("%s, quick_check ok", path);
                report(CHECK_OK, "run store", detail, NULL);
                return;
        }
        _cleanup_free_ char *detail = problem ? xasprintf("%s: damaged (quick_check: %s)", path, problem)
                                              : xstrdup(error ? error : strerror(-r));
        _cleanup_free_ char *fix = xasprintf("save what can be read (sqlite3 %s .recover) and move it away", path);
        report(CHECK_WARN, "run store", detail, fix);
}

/* Admission (run/admission.h): the node's allocatable resources, and
 * what the default profile's caps come to, "auto" worked out. */
static void check_admission(void)
{
        struct node_resources node;
        struct admission_caps caps;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;
        char mem[32];

        if (node_resources_read(&node) < 0) {
                report(CHECK_WARN, "admission", "cannot read the node's memory (/proc/meminfo)",
                       "max_running = auto and max_memory = auto need /proc");
                return;
        }
        run_config_init(&cfg);
        if (profile_load(&cfg, "default", &err) < 0)
                log_debug("doctor: default profile: %s", err);
        admission_caps_resolve(&cfg, &node, &caps);
        /* what auto would give, even when the profile sets no cap */
        struct run_config as_auto = cfg;
        struct admission_caps autos;
        as_auto.admission_max_running = (char *)"auto";
        as_auto.admission_max_memory = (char *)"auto";
        admission_caps_resolve(&as_auto, &node, &autos);
        _cleanup_free_ char *detail = xasprintf(
                "node: memory %s (%s), cpus %g (%s); default profile: %s; with auto and its limits: %s",
                format_size(node.memory_bytes, mem, sizeof(mem)), node.memory_from, node.cpus, node.cpus_from,
                caps.how ? caps.how : "no cap ([admission] max_running = none, max_memory = none)", autos.how);
        report(CHECK_OK, "admission", detail, NULL);
        admission_caps_done(&caps);
        admission_caps_done(&autos);
        run_config_done(&cfg);
}

/* Run `argv` in a real sandbox (under runsc when gv is set) with its
 * output discarded; 0 and *out filled, or -errno. */
static int run_probe(char **argv, const struct gvisor_info *gv, struct run_outcome *out)
{
        struct run_config cfg;
        struct sandbox sb;
        sigset_t set, old;

        run_config_init(&cfg);
        for (char **a = argv; *a; a++)
                cfg.argv = strv_append(cfg.argv, *a);
        cfg.timeout_ms = 10000;
        cfg.runtime = gv ? RUNTIME_GVISOR : RUNTIME_NATIVE;
        sandbox_signal_set(&set);
        sigprocmask(SIG_BLOCK, &set, &old);
        struct sandbox_inputs in = { .code_fd = -1, .argv = cfg.argv, .gvisor = gv };
        int r = sandbox_spawn(&cfg, &in, NULL, &sb);
        if (r >= 0)
                r = sandbox_start(&sb, NULL, 0);
        if (r >= 0) {
                r = supervise(&cfg, &sb, NULL, out);
                sandbox_close(&sb);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        run_config_done(&cfg);
        return r;
}

/* Whether runsc is installed and runs a job here, unprivileged as hutch
 * runs it (inside hutch's own sandbox). Only a warning when it does not:
 * the native runtime does not need it. */
static void check_gvisor(void)
{
        struct gvisor_info gv;
        struct run_outcome out = { 0 };
        _cleanup_free_ char *err = NULL, *detail = NULL;
        const char *what = "gVisor runtime (runsc, for --runtime gvisor and -p untrusted)";

        if (gvisor_probe(&gv, &err) < 0) {
                report(CHECK_WARN, what, err, "apt-get install runsc (Debian/Ubuntu), or see https://gvisor.dev/docs/user_guide/install/");
                return;
        }
        int r = run_probe((char *[]){ "true", NULL }, &gv, &out);
        if (r < 0 || out.status != RUN_SUCCESS) {
                detail = xasprintf("%s %s is installed but cannot run a job here: %s", gv.path, gv.version,
                                   r < 0 ? strerror(-r) : out.message);
                report(CHECK_WARN, what, detail, "run `hutch run --runtime gvisor -- true` to see runsc's own message");
                return;
        }
        detail = xasprintf("%s version %s, platform %s, rootless", gv.path, gv.version, gv.platform);
        report(CHECK_OK, what, detail, NULL);
        /* Old runsc (before 2023) refuses statx(AT_NO_AUTOMOUNT), which
         * coreutils' ls and stat use: say so, the failure inside is
         * only "Invalid argument". */
        memset(&out, 0, sizeof(out));
        r = run_probe((char *[]){ "sh", "-c", "ls / >/dev/null 2>&1", NULL }, &gv, &out);
        if (r >= 0 && out.status != RUN_SUCCESS)
                report(CHECK_WARN, "gVisor: coreutils ls/stat inside", "this runsc rejects statx(AT_NO_AUTOMOUNT): they fail with Invalid argument",
                       "a newer runsc (https://gvisor.dev/docs/user_guide/install/); busybox ls works meanwhile");
}

static bool check_sandbox(void)
{
        struct run_outcome out = { 0 };
        int saved_stdout = dup(STDOUT_FILENO);
        bool ok = false;

        int r = run_probe((char *[]){ "true", NULL }, NULL, &out);
        if (saved_stdout >= 0)
                close(saved_stdout);
        if (r < 0)
                report(CHECK_MISSING, "a real sandbox runs `true`", strerror(-r), "see the lines above");
        else if (out.status != RUN_SUCCESS)
                report(CHECK_MISSING, "a real sandbox runs `true`", out.message, "see the lines above");
        else {
                report(CHECK_OK, "a real sandbox runs `true`", NULL, NULL);
                ok = true;
        }
        return ok;
}

int verb_doctor(int argc, char **argv)
{
        static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, {} };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                if (c == 'h') {
                        printf("Usage: hutch doctor\n\n"
                               "Say how this hutch was built (static, with glibc inside, or\n"
                               "linked against the system's), then check what this host\n"
                               "supports (user namespaces, naming what refuses them: AppArmor's\n"
                               "restriction, a container's seccomp filter, a kernel switch\n"
                               "or limit; /proc in a pid\n"
                               "namespace, overlayfs in a user namespace, for root idmapped\n"
                               "workdirs, seccomp, cgroup v2 delegation or a systemd manager\n"
                               "that hands out delegated scopes, a Slurm job step and its\n"
                               "allocation, the egress capture of\n"
                               "network = allow, gVisor's runsc for --runtime gvisor) and say\n"
                               "how to fix what is missing. Exits 0 when `hutch run` can\n"
                               "work, 1 when it cannot (runsc is optional).\n");
                        return EXIT_OK;
                }
                return cli_usage_error("doctor", argv, opts);
        }

        printf("hutch %s, running as uid %u%s\n", PACKAGE_VERSION, (unsigned)geteuid(),
               geteuid() == 0 ? " (the sandbox user maps to unprivileged uid 65534)" : "");
        check_build();
        bool userns = check_userns();
        check_landlock(userns);
        bool proc = userns && check_proc();
        if (userns)
                check_overlay();
        if (userns && ns_real_root())
                check_idmap();
        check_seccomp();
        check_cgroup();
        check_slurm();
        check_admission();
        check_store();
        _cleanup_free_ char *images = cli_image_usage();
        report(CHECK_OK, "image store (hutch image)", images, NULL);
        if (userns)
                check_egress();
        report(CHECK_OK, "host sockets and FIFOs under -i, --ro and --rw",
               "masked at setup; more than " STR(SPECIALS_MAX_ENTRIES) " entries or "
               STR(SPECIALS_MAX_DEPTH) " levels in those trees is a setup error", NULL);
        check_ipc_limits();
        bool sandbox = userns && proc && check_sandbox();
        if (sandbox)
                check_gvisor();
        fflush(stdout);
        if (!sandbox) {
                printf("hutch run cannot work on this host until the MISSING items above are fixed.\n");
                return EXIT_FAILURE_GENERIC;
        }
        printf("hutch run works on this host.\n");
        return EXIT_OK;
}
