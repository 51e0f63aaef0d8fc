/* sandbox.c - clone the sandbox and take it from "new namespaces" to
 * "init is running" (see sandbox.h). The child builds itself while the
 * supervisor records the run, and starts the job only on "start".
 *
 * Order, and why:
 *  1. supervisor: pipes and the sync socketpair, then clone3() with
 *     every namespace flag at once and CLONE_PIDFD, so the child exists
 *     only inside its namespaces and we hold a race-free handle on it.
 *     The network namespace is the exception while the host has CPUs to
 *     spare: the child has a helper build it beside the root and joins
 *     it before anything of the job exists (net_beside(), ns.h);
 *  2. supervisor: writes setgroups=deny and the one-id uid/gid maps
 *     (it must be the supervisor: when hutch runs as root, only a process
 *     in the parent namespace may map the sandbox to an unprivileged id);
 *  3. supervisor: sends "go"; between clone and "go" it moves the child
 *     off its own CPU for the setup, so the two run side by side
 *     (cpu-steer.h). An unprivileged user's child could write its own
 *     maps and not wait, but that measured no faster: it is then moved
 *     while it runs, not while it sleeps;
 *  4. child: takes the sandbox uid/gid, keeping its capabilities in the
 *     new user namespace, arms PR_SET_PDEATHSIG (after the uid change,
 *     which would clear it), starts its network namespace's helper,
 *     builds the root (mount.c), sets the hostname, joins the network
 *     namespace (or brings its loopback up), opens the pty, takes back
 *     hutch's whole CPU mask, and becomes init;
 *  5. supervisor: sends the job's filter as soon as it is built; init
 *     sets the job process up to its exec under it;
 *  6. supervisor: records the run, then sends "start": the job execs.
 * Any failure in 4 goes back as (errno, step, path) and the child exits.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pty.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/syscall.h>

#include "sandbox/caps.h"
#include "sandbox/cpu-steer.h"
#include "limits/cgroup.h"
#include "lib/exit-codes.h"
#include "sandbox/init.h"
#include "lib/log.h"
#include "sandbox/job.h"
#include "sandbox/mount.h"
#include "sandbox/named.h"
#include "net/netns.h"
#include "sandbox/ns.h"
#include "sandbox/reaper.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox-internal.h"
#include "sandbox/sync.h"
#include "lib/util.h"

void sandbox_signal_set(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGINT);
        sigaddset(set, SIGTERM);
        sigaddset(set, SIGHUP);
        sigaddset(set, SIGQUIT);
        sigaddset(set, SIGUSR1);
        sigaddset(set, SIGUSR2);
        sigaddset(set, SIGWINCH);
        sigaddset(set, SIGCHLD);
        sigaddset(set, SIGPIPE);
}

/* Whether the child builds its network namespace beside its root
 * (ns_netns_begin()) rather than being cloned into one: while the host
 * has CPUs to spare (cpu-steer.h), that takes the namespace's creation,
 * the larger part of clone3(), off the path both sides wait on; with
 * other runs at once a third task only measured slower, and clone3()
 * makes it as before. Both sides ask, the child on its copy of steer. */
static bool net_beside(const struct run_config *cfg, const struct cpu_steer *steer)
{
        return cfg->net != NET_HOST && steer->active;
}

_Noreturn void sandbox_setup_failed(int sync_fd, int r, const char *step, const char *path)
{
        init_report(sync_fd, SYNC_SETUP_ERROR, -r, 0, 0, step, path);
        _exit(EXIT_SETUP);
}

static int open_pty(const struct winsize *ws, int *ret_master, int *ret_slave)
{
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return -errno;
        if (unlockpt(master) < 0) {
                int e = -errno;
                close(master);
                return e;
        }
        int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0) {
                int e = -errno;
                close(master);
                return e;
        }
        if (ws)
                (void)ioctl(slave, TIOCSWINSZ, ws);
        *ret_master = master;
        *ret_slave = slave;
        return 0;
}

/* Hand the workspace dirs to the supervisor before the job exists, so
 * it can read the change set and the artifacts after the sandbox is
 * gone. We keep no copy: the job must not inherit them. */
int sandbox_send_workspace(int sync_fd, int workspace_fd, int upper_fd)
{
        int fds[2] = { workspace_fd, upper_fd };
        size_t n = upper_fd >= 0 ? 2 : 1;
        struct sync_msg msg = { .kind = SYNC_WORKSPACE, .status = (int32_t)n };
        char cbuf[CMSG_SPACE(sizeof(fds))] = { 0 };
        struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = cbuf, .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n * sizeof(int));
        int r = sendmsg(sync_fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
        close(workspace_fd);
        if (upper_fd >= 0)
                close(upper_fd);
        return r;
}

static int cmp_int(const void *a, const void *b)
{
        return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* Close every fd above 2 except the n in keep (-1 entries: none). */
void sandbox_close_all_but(int *keep, size_t n)
{
        /* sort the fds to keep, then close the gaps between them */
        qsort(keep, n, sizeof(int), cmp_int);
        unsigned from = 3;
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < (int)from)
                        continue;
                if ((unsigned)keep[i] > from)
                        (void)syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
                from = (unsigned)keep[i] + 1;
        }
        (void)syscall(SYS_close_range, from, ~0U, 0);
}

/* Give up the caller's stdin, stdout and stderr: /dev/null takes their
 * places. They are the caller's own files, pipes or terminal, and init
 * runs as the sandbox user with capabilities in its user namespace, so
 * anything that could reach init's fds (/proc/1/fd) could reopen them
 * past every mount of the sandbox. The job gets hutch's pipes or its own
 * pty instead (job.c). Safety of /dev/null: it is the host's null
 * device, opened before the new root exists; it reads as empty and
 * discards writes, whoever reaches it. */
int sandbox_drop_caller_stdio(void)
{
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                return -errno;
        for (int fd = 0; fd < 3; fd++)
                if (fd != null && dup2(null, fd) < 0)
                        return -errno;
        if (null > 2)
                close(null);
        return 0;
}

/* init holds no fd of the supervisor's but the ones it needs: not the
 * host workspace dir, not whatever the caller passed hutch beyond stdio
 * (3</etc/passwd), which the job could otherwise reach through
 * /proc/1/fd as a way out of the sandbox; and not the caller's stdio
 * either (sandbox_drop_caller_stdio()). Exits on failure. */
static void keep_only_init_fds(const int *needed, size_t n_needed, struct named_clones *named)
{
        size_t n_keep = 0, max_keep = n_needed + named->n_ro + named->n_rw + named->n_inputs + named->n_layers + 1;
        int *keep = xcalloc(max_keep, sizeof(int));

        for (size_t i = 0; i < n_needed; i++)
                keep[n_keep++] = needed[i];
        (void)named_fds(named, keep, &n_keep, max_keep);
        sandbox_close_all_but(keep, n_keep);
        free(keep);
        if (sandbox_drop_caller_stdio() < 0)
                _exit(EXIT_SETUP);
}

/* Become the sandbox user. KEEPCAPS keeps the permitted set across the
 * uid change; the effective set is raised again below. These
 * capabilities are only good inside our own user namespace. */
static void become_sandbox_user(const struct run_config *cfg, int sync_fd)
{
        if (prctl(PR_SET_KEEPCAPS, 1) < 0)
                sandbox_setup_failed(sync_fd, -errno, "keepcaps", "");
        if (setresgid(cfg->gid, cfg->gid, cfg->gid) < 0)
                sandbox_setup_failed(sync_fd, -errno, "setgid", "");
        if (setresuid(cfg->uid, cfg->uid, cfg->uid) < 0)
                sandbox_setup_failed(sync_fd, -errno, "setuid", "");
        int r = caps_raise_effective();
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "capabilities", "");
        (void)prctl(PR_SET_KEEPCAPS, 0);
        /* a credential change clears the parent-death signal: arm it again */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                sandbox_setup_failed(sync_fd, -errno, "pdeathsig", "");
        (void)prctl(PR_SET_NAME, "hutch-init");
}

/* The hostname, then the network: the netns built beside (joined now),
 * or loopback up in our own, and the egress capture. */
static void setup_names_and_network(const struct run_config *cfg, const struct sandbox_inputs *in,
                                    const struct cpu_steer *steer, struct netns_build *net,
                                    int egress_fd, int sync_fd)
{
        int r = ns_set_hostname(cfg->hostname);
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "hostname", cfg->hostname);
        if (net_beside(cfg, steer)) {
                r = ns_netns_join(net);
                if (r < 0)
                        sandbox_setup_failed(sync_fd, r, net->step, streq(net->step, "loopback up") ? "lo" : "");
        } else if (cfg->net != NET_HOST) {
                r = ns_loopback_up();
                if (r < 0)
                        sandbox_setup_failed(sync_fd, r, "loopback up", "lo");
        }
        if (egress_fd >= 0) {
                /* every destination made local and caught; the sockets go
                 * to the supervisor's egress helper and none stays here,
                 * so the job never holds one (net/netns.c argues why) */
                const char *step = "egress";
                r = netns_capture_setup(egress_fd, in->egress_ports, in->n_egress_ports, &step);
                if (r < 0)
                        sandbox_setup_failed(sync_fd, r, step, "");
                close(egress_fd);
        }
}

/* A pty for the job; its master goes to the supervisor, which relays it. */
static void hand_over_pty(const struct winsize *winsize, int sync_fd, struct init_stdio *stdio)
{
        int master = -1;
        int r = open_pty(winsize, &master, &stdio->tty_slave);
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "open pty", "/dev/ptmx");
        struct sync_msg msg = { .kind = SYNC_READY };
        char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
        struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &master, sizeof(int));
        if (sendmsg(sync_fd, &mh, MSG_NOSIGNAL) < 0)
                _exit(EXIT_SETUP);
        close(master);
}

/* The seccomp filter the supervisor built, into started (a copy of in).
 * A job is never run without the filter it was promised. */
static void receive_filter(const struct sandbox_inputs *in, int sync_fd, struct sandbox_inputs *started)
{
        size_t max = 1 << 16;
        char *filter = xmalloc(max);
        ssize_t n = recv(sync_fd, filter, max, 0);

        *started = *in;
        if (n < 1)
                _exit(EXIT_SETUP);
        if (filter[0] != SANDBOX_MSG_FILTER) {
                init_report(sync_fd, SYNC_SETUP_ERROR, EPROTO, 0, 0, "seccomp", "no filter message");
                _exit(EXIT_SETUP);
        }
        if (n > 1) {
                started->seccomp_blob = filter + 1;
                started->seccomp_blob_len = (size_t)n - 1;
        } else if (in->seccomp_required) {
                init_report(sync_fd, SYNC_SETUP_ERROR, EINVAL, 0, 0, "seccomp", "no filter received");
                _exit(EXIT_SETUP);
        }
}

/* The child's last steps, in both tiers: the pty, hutch's whole CPU mask
 * back (steer may be NULL), the filter, then init. */
_Noreturn void sandbox_child_finish(const struct run_config *cfg, const struct sandbox_inputs *in, int sync_fd,
                                    int stdin_r, int stdout_w, int stderr_w, const struct winsize *winsize,
                                    const struct cpu_steer *steer)
{
        struct init_stdio stdio = { .stdin_fd = stdin_r, .stdout_fd = stdout_w, .stderr_fd = stderr_w,
                                    .tty_slave = -1, .notify_fd = -1 };
        if (cfg->tty)
                hand_over_pty(winsize, sync_fd, &stdio);
        /* every CPU hutch was given, before anything of the job can run */
        int r = steer ? cpu_steer_restore(steer) : 0;
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "cpu affinity", "");
        /* Built. The filter comes next, then init sets the job up and
         * waits for "start", which the supervisor sends once it has
         * recorded the run; EOF means it gave up (or died): then nothing
         * runs. */
        struct sandbox_inputs started;
        receive_filter(in, sync_fd, &started);
        init_main(cfg, &started, sync_fd, &stdio);
}

static _Noreturn void child_main(const struct run_config *cfg, const struct sandbox_inputs *in,
                                 int sync_fd, int stdin_r, int stdout_w, int stderr_w, int idmapped_lower,
                                 struct named_clones *named, const struct cpu_steer *steer,
                                 const struct winsize *winsize)
{
        struct setup_failure fail = { 0 };
        char go;
        int r;

        /* If the supervisor is gone before we even start, so are we. */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        int egress_fd = cfg->net == NET_ALLOW ? in->egress_fd : -1;
        int needed[] = { sync_fd, stdin_r, stdout_w, stderr_w, in->code_fd, idmapped_lower, egress_fd };
        keep_only_init_fds(needed, ELEMENTSOF(needed), named);
        if (recv(sync_fd, &go, sizeof(go), 0) != (ssize_t)sizeof(go))
                _exit(EXIT_SETUP);

        /* What the user named is resolved as the user who started hutch
         * (named.c): real root's supervisor did it before clone; else it
         * happens here, still as the caller's host uid, before the
         * sandbox takes its uid. */
        if (!named->opened) {
                r = named_open(cfg, in->inputs, idmapped_lower < 0 ? in->workspace_lower : NULL, named, &fail);
                if (r < 0)
                        sandbox_setup_failed(sync_fd, r, fail.step, fail.path);
        }
        int lower_clone = idmapped_lower >= 0 ? idmapped_lower : named->lower;
        named->lower = -1;
        become_sandbox_user(cfg, sync_fd);

        /* Safety: until ns_netns_join() below, this process is still in
         * the supervisor's network namespace; nothing of the job exists
         * before it succeeded, and a failure ends the setup. */
        struct netns_build net = { .pid = -1 };
        if (net_beside(cfg, steer)) {
                r = ns_netns_begin(&net);
                if (r < 0)
                        sandbox_setup_failed(sync_fd, r, net.step, "");
        }

        struct mount_workspace ws = { .lower_clone = lower_clone, .inputs = in->inputs,
                                      .root_clones = named->layers, .n_root_clones = named->n_layers,
                                      .ro_clones = named->ro, .rw_clones = named->rw,
                                      .input_clones = named->inputs,
                                      .code_fd = in->code_fd, .code_name = in->code_name,
                                      .ret_upper_fd = -1, .ret_workspace_fd = -1 };
        r = mount_build_root(cfg, &ws, &fail);
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, fail.step, fail.path);
        /* the old root may still be going: the job waits for it */
        job_set_detach_fd(ws.ret_detach_fd);
        named_close(named);     /* whatever mount_build_root() left */
        r = sandbox_send_workspace(sync_fd, ws.ret_workspace_fd, ws.ret_upper_fd);
        if (r < 0)
                sandbox_setup_failed(sync_fd, r, "send workspace", "");
        setup_names_and_network(cfg, in, steer, &net, egress_fd, sync_fd);

        sandbox_child_finish(cfg, in, sync_fd, stdin_r, stdout_w, stderr_w, winsize, steer);
}

/* An idmapped read-only clone of dir when root owns it, else -1 (also
 * when the kernel or filesystem cannot idmap it). */
static int idmap_workdir(const char *dir)
{
        struct stat st;
        if (stat(dir, &st) < 0 || st.st_uid != 0)
                return -1;
        _cleanup_close_ int userns = ns_idmap_userns(0, 0, ns_host_uid(), ns_host_gid());
        if (userns < 0) {
                log_debug("workdir %s: no idmap user namespace: %s", dir, strerror(-userns));
                return -1;
        }
        int fd = mount_clone_lower_idmapped(dir, userns);
        if (fd < 0) {
                /* the run still works, but the job will find root's files
                 * read-only: say so once, where the user looks */
                log_warning("run: --workdir %s: root's files stay read-only to the job: this filesystem "
                            "cannot be idmapped (%s; see hutch doctor)", dir, strerror(-fd));
                return -1;
        }
        return fd;
}

static int sys_clone3(struct clone_args *args)
{
        return (int)syscall(SYS_clone3, args, sizeof(*args));
}

/* The job's stdin, stdout and stderr pipes (no pty): stdin is a pipe
 * too, whatever the caller's stdin is: the supervisor relays it (DESIGN
 * §1). 0 or -errno; the caller closes what was made. */
static int make_job_pipes(int in_pipe[2], int out[2], int err[2])
{
        if (pipe2(in_pipe, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        /* a larger pipe means fewer wakeups for chatty jobs */
        (void)fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
        (void)fcntl(in_pipe[1], F_SETPIPE_SZ, 1 << 20);
        /* the supervisor never blocks on a pipe; only our ends are
         * non-blocking, the job's reads and writes block as usual */
        if (fcntl(in_pipe[1], F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(err[0], F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int sandbox_open_pipes(const struct run_config *cfg, int in_pipe[2], int out[2], int err[2])
{
        return cfg->tty ? 0 : make_job_pipes(in_pipe, out, err);
}

/* Root's sandbox user is host uid 65534, so a --workdir that root
 * owns would be read-only to the job. Through an idmapped clone
 * (host uid/gid 0 seen as 65534) its files are the sandbox user's,
 * as a user's own files are when hutch runs as that user. Only a
 * dir root owns: a session tree is chowned to 65534 after each
 * commit and needs no mapping. Where the filesystem cannot be
 * idmapped the plain clone is used, as before.
 * Safety: the clone is read-only, nosuid, nodev like the plain
 * one; the job writes to the overlay's upper on the scratch, and
 * root's files reach the host again only through hutch apply, as
 * root, after the run. */
static int prepare_as_root(const struct run_config *cfg, const struct sandbox_inputs *in,
                           int *idmapped_lower, struct named_clones *named, struct sandbox *ret)
{
        ret->failed_step = "workdir idmap";
        if (in->workspace_lower)
                *idmapped_lower = idmap_workdir(in->workspace_lower);

        /* Real root opens what the run names now, with root's own access
         * (named.c): the sandbox's setup runs as uid 65534 on the host,
         * which a 0700 dir of root's keeps out. */
        struct setup_failure nf = { 0 };
        int r = named_open(cfg, in->inputs, *idmapped_lower < 0 ? in->workspace_lower : NULL, named, &nf);
        if (r < 0) {
                ret->failed_step = nf.step;
                snprintf(ret->failed_path, sizeof(ret->failed_path), "%s", nf.path);
                return r;
        }

        /* Root on the host keeps no supplementary groups into the sandbox:
         * setgroups is denied inside, so they could never be shed there. */
        ret->failed_step = "drop supplementary groups";
        if (setgroups(0, NULL) < 0)
                return -errno;
        return 0;
}

/* The child's uid/gid maps, then "go". On failure the child is killed
 * and reaped; -errno. */
static int map_and_start(const struct run_config *cfg, pid_t pid, int pidfd, int sync_fd,
                         struct sandbox *ret)
{
        ret->failed_step = ns_real_root() ? "map the sandbox user to uid 65534" : "write uid/gid map";
        int r = ns_write_id_maps(pid, cfg->uid, cfg->gid, ns_host_uid(), ns_host_gid());
        if (r == 0) {
                ret->failed_step = "start the sandbox";
                char go = SANDBOX_MSG_GO;
                if (send(sync_fd, &go, sizeof(go), MSG_NOSIGNAL) < 0)
                        r = -errno;
        }
        if (r < 0) {
                (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                (void)waitpid(pid, NULL, 0);
        }
        return r;
}

int sandbox_spawn(const struct run_config *cfg, const struct sandbox_inputs *in,
                  const struct winsize *winsize, struct sandbox *ret)
{
        int sync_pair[2], in_pipe[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        int pidfd = -1, idmapped_lower = -1, r;
        struct named_clones named = { .lower = -1 };

        ret->failed_path[0] = '\0';
        if (in->landlock)
                return sandbox_spawn_landlock(cfg, in, winsize, ret);

        ret->failed_step = "sync socket";
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync_pair) < 0)
                return -errno;
        ret->failed_step = "pipes";
        if (!cfg->tty) {
                r = make_job_pipes(in_pipe, out, err);
                if (r < 0)
                        goto fail;
        }

        if (ns_real_root()) {
                r = prepare_as_root(cfg, in, &idmapped_lower, &named, ret);
                if (r < 0)
                        goto fail;
        }

        struct clone_args args = {
                .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
                         CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD,
                .pidfd = (uint64_t)(uintptr_t)&pidfd,
                .exit_signal = SIGCHLD,
        };
        ret->failed_step = "clone namespaces";
        /* Safety: with a run cgroup the child is born inside it, so no
         * instruction of the sandbox ever runs outside its limits (moving
         * it after clone would leave a window, and would need write
         * access to the source cgroup too). */
        if (in->cgroup) {
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t)cgroup_run_fd(in->cgroup);
        }
        struct cpu_steer steer;
        cpu_steer_prepare(&steer);
        if (cfg->net != NET_HOST && !net_beside(cfg, &steer))
                args.flags |= CLONE_NEWNET;
        pid_t pid = sys_clone3(&args);
        if (pid < 0) {
                r = -errno;
                goto fail;
        }
        if (pid == 0) {
                close(sync_pair[0]);
                if (!cfg->tty) {
                        close(in_pipe[1]);
                        close(out[0]);
                        close(err[0]);
                }
                child_main(cfg, in, sync_pair[1], in_pipe[0], out[1], err[1], idmapped_lower, &named, &steer,
                           winsize);
        }
        /* before the id maps and "go": the child has not run yet */
        cpu_steer_child(&steer, pid);
        named_close(&named);    /* the sandbox has its copies */
        if (idmapped_lower >= 0) {
                close(idmapped_lower);  /* the sandbox has its copy */
                idmapped_lower = -1;
        }

        close(sync_pair[1]);
        sync_pair[1] = -1;
        if (!cfg->tty) {
                close(in_pipe[0]);
                close(out[1]);
                close(err[1]);
                in_pipe[0] = out[1] = err[1] = -1;
        }

        r = map_and_start(cfg, pid, pidfd, sync_pair[0], ret);
        if (r < 0)
                goto fail;

        *ret = (struct sandbox) {
                .pid = pid, .pidfd = pidfd, .sync_fd = sync_pair[0],
                .stdin_fd = in_pipe[1], .stdout_fd = out[0], .stderr_fd = err[0], .cgroup = in->cgroup,
                .workspace_fd = -1, .upper_fd = -1,
        };
        return 0;

fail:
        named_close(&named);
        for (int *fd = (int[]){ sync_pair[0], sync_pair[1], in_pipe[0], in_pipe[1], out[0], out[1],
                                err[0], err[1], pidfd,
                                idmapped_lower, -2 };
             *fd != -2; fd++)
                if (*fd >= 0)
                        close(*fd);
        return r;
}

/* A sandbox that already failed its setup has closed its end; its
 * report is waiting in the socket for the supervisor either way. */
static int send_to_sandbox(struct sandbox *sb, const struct msghdr *mh)
{
        if (sendmsg(sb->sync_fd, mh, MSG_NOSIGNAL) < 0 && errno != EPIPE && errno != ECONNRESET)
                return -errno;
        return 0;
}

int sandbox_send_filter(struct sandbox *sb, const void *seccomp_blob, size_t len)
{
        /* one message: its mark, then the filter */
        char mark = SANDBOX_MSG_FILTER;
        struct iovec iov[2] = {
                { .iov_base = &mark, .iov_len = 1 },
                { .iov_base = (void *)seccomp_blob, .iov_len = seccomp_blob ? len : 0 },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
        int r = send_to_sandbox(sb, &mh);
        if (r == 0)
                sb->filter_sent = true;
        return r;
}

int sandbox_start(struct sandbox *sb, const void *seccomp_blob, size_t len)
{
        if (!sb->filter_sent) {
                int r = sandbox_send_filter(sb, seccomp_blob, len);
                if (r < 0)
                        return r;
        }
        char mark = SANDBOX_MSG_START;
        struct iovec iov = { .iov_base = &mark, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        return send_to_sandbox(sb, &mh);
}

void sandbox_abort(struct sandbox *sb)
{
        (void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        (void)waitpid(sb->pid, NULL, 0);
        sandbox_end_orphans(sb);
}

void sandbox_end_orphans(struct sandbox *sb)
{
        if (sb->subreaper)
                (void)reaper_end_children(sb->keep, sb->n_keep);
}

void sandbox_reap(pid_t init_pid)
{
        while (waitpid(init_pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

void sandbox_close(struct sandbox *sb)
{
        int *fds[] = { &sb->pidfd, &sb->sync_fd, &sb->stdin_fd, &sb->stdout_fd, &sb->stderr_fd,
                       &sb->workspace_fd, &sb->upper_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (*fds[i] >= 0) {
                        close(*fds[i]);
                        *fds[i] = -1;
                }
}
