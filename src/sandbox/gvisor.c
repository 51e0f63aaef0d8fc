/* gvisor.c - the gvisor runtime's host-side parts and init's (see
 * gvisor.h): finding runsc, what the runtime refuses, the enforcement
 * report under it, and signals to the job's container.
 *
 * runsc is run by hutch in three places only, each a fixed command line
 * with fds 0-2 on /dev/null (or a pipe for the version) and no other fd
 * of ours: `runsc --version` before a run, `runsc run` as the job's last
 * step (gvisor-spec.c), and `runsc kill` from init to forward a signal.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/gvisor.h"
#include "lib/util.h"

#define VERSION_TIMEOUT_MS 5000
#define INSTALL_HINT "install it (Debian/Ubuntu: apt-get install runsc; else https://gvisor.dev/docs/user_guide/install/)"

static bool is_executable_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int find_runsc(char *ret, size_t len, char **ret_error)
{
        const char *env = getenv("HUTCH_RUNSC");
        if (env && *env) {
                if (env[0] != '/') {
                        *ret_error = xasprintf("HUTCH_RUNSC=%s: not an absolute path", env);
                        return -EINVAL;
                }
                if (!is_executable_file(env)) {
                        *ret_error = xasprintf("HUTCH_RUNSC=%s: not an executable file: %s", env,
                                               strerror(errno ? errno : EACCES));
                        return -ENOENT;
                }
                snprintf(ret, len, "%s", env);
                return 0;
        }
        const char *path = getenv("PATH");
        _cleanup_free_ char *dirs = xasprintf("%s:/usr/sbin:/usr/bin:/usr/local/bin", path ? path : "");
        char *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;       /* a relative PATH entry names no fixed binary */
                snprintf(ret, len, "%s/runsc", d);
                if (is_executable_file(ret))
                        return 0;
        }
        *ret_error = xasprintf("runsc (gVisor) is not installed: %s", INSTALL_HINT);
        return -ENOENT;
}

/* `runsc --version`, first line's last word: "runsc version 0.0~2022..." */
static int read_version(const char *runsc, char *ret, size_t len)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int e = -errno;
                close(p[0]);
                close(p[1]);
                return e;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(null, 2) < 0)
                        _exit(127);
                (void)syscall(SYS_close_range, 3, ~0U, 0);
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                execl(runsc, runsc, "--version", (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        char buf[512];
        size_t got = 0;
        uint64_t deadline = now_monotonic_ms() + VERSION_TIMEOUT_MS;
        for (;;) {
                uint64_t now = now_monotonic_ms();
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                if (now >= deadline || got >= sizeof(buf) - 1)
                        break;
                int n = poll(&pfd, 1, (int)(deadline - now));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                ssize_t k = read(p[0], buf + got, sizeof(buf) - 1 - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t)k;
        }
        close(p[0]);
        buf[got] = '\0';
        (void)kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
        const char *word = strrchr(buf, ' ');
        if (!startswith(buf, "runsc version ") || !word || !word[1])
                return -ENOEXEC;
        snprintf(ret, len, "%s", word + 1);
        return 0;
}

int gvisor_probe(struct gvisor_info *ret, char **ret_error)
{
        struct gvisor_info gv = { .platform = "ptrace" };
        int r = find_runsc(gv.path, sizeof(gv.path), ret_error);
        if (r < 0)
                return r;
        r = read_version(gv.path, gv.version, sizeof(gv.version));
        if (r < 0) {
                *ret_error = xasprintf("%s does not work: `%s --version` did not print its version: %s",
                                       gv.path, gv.path, INSTALL_HINT);
                return r;
        }
        *ret = gv;
        return 0;
}

int gvisor_check_config(const struct run_config *cfg, const struct gvisor_info *gv, char **ret_error)
{
        if (cfg->tty) {
                *ret_error = xstrdup("--runtime gvisor: -t/--tty is not supported (runsc needs a console socket)");
                return -EOPNOTSUPP;
        }
        if (cfg->net != NET_NONE) {
                *ret_error = xstrdup("--runtime gvisor: only network none is supported (rootless runsc has no host "
                                     "network, and allow's capture needs the native runtime's netns)");
                return -EOPNOTSUPP;
        }
        if (cfg->root_layers) {
                *ret_error = xasprintf("--runtime gvisor: root = %s: runsc (%s) must be visible inside; "
                                       "use root = host", cfg->root, gv->path);
                return -EOPNOTSUPP;
        }
        bool visible = false;
        for (char **d = cfg->ro_binds; d && *d && !visible; d++) {
                size_t n = strlen(*d);
                visible = strncmp(gv->path, *d, n) == 0 && gv->path[n] == '/';
        }
        if (!visible) {
                *ret_error = xasprintf("--runtime gvisor: %s is not under a system_dirs entry, so the "
                                       "sandbox cannot run it", gv->path);
                return -EOPNOTSUPP;
        }
        return 0;
}

static void set_covers(json_t *limits, const char *name, const char *mechanism, const char *covers)
{
        json_t *l = json_object_get(limits, name);
        if (!l)
                return;
        const char *mech = json_string_value(json_object_get(l, "mechanism"));
        if (mech && (streq(mech, "none") || streq(mech, "not enforced")))
                return;
        if (mechanism)
                json_object_set_new(l, "mechanism", json_string(mechanism));
        json_object_set_new(l, "covers", json_string(covers));
}

void gvisor_enforcement(json_t *report, const struct run_config *cfg, const struct gvisor_info *gv)
{
        json_t *rt = json_object();
        if (!gv) {
                json_object_set_new(rt, "name", json_string("native"));
                json_object_set_new(report, "runtime", rt);
                return;
        }
        json_object_set_new(rt, "name", json_string("gvisor"));
        json_object_set_new(rt, "runsc", json_string(gv->path));
        json_object_set_new(rt, "version", json_string(gv->version));
        json_object_set_new(rt, "platform", json_string(gv->platform));
        json_object_set_new(rt, "rootless", json_true());
        json_object_set_new(rt, "kernel", json_string("gVisor's sentry (a user-space kernel); the job makes no host syscall"));
        /* rootless runsc maps one id, and its gofer creates files as that
         * id alone: under any other uid every write fails (EINVAL), so the
         * job is uid 0 of gVisor's kernel, without capabilities, whatever
         * uid the profile names (that uid is runsc's, in hutch's namespace) */
        json_object_set_new(rt, "job_uid", json_integer(0));
        json_object_set_new(rt, "job_gid", json_integer(0));
        json_object_set_new(rt, "profile_uid", json_integer((json_int_t)cfg->uid));
        json_object_set_new(rt, "job_uid_why",
                            json_string("rootless runsc maps one id: the job is uid 0 of gVisor's kernel with no "
                                        "capabilities; the profile's uid runs runsc in hutch's namespace"));
        json_object_set_new(rt, "network", json_string(cfg->net == NET_NONE ? "none (gVisor netstack, loopback only)" : "host"));
        json_object_set_new(report, "runtime", rt);

        /* hutch's own filter would refuse what runsc needs (user
         * namespaces, ptrace); runsc filters its own host processes */
        json_t *sc = json_object();
        json_object_set_new(sc, "policy", json_string("gvisor"));
        json_object_set_new(sc, "mode", json_string("runsc's own filters on the sentry and gofer"));
        json_object_set_new(report, "seccomp", sc);
        json_object_set_new(report, "capabilities", json_string("none (in gVisor's kernel)"));

        json_t *limits = json_object_get(report, "limits");
        const char *tree = "runsc's process tree on the host: the job's use plus gVisor's own";
        set_covers(limits, "timeout", NULL, "the whole runsc process tree");
        set_covers(limits, "cpu_time", NULL, tree);
        set_covers(limits, "memory", NULL, tree);
        set_covers(limits, "memory_high", NULL, tree);
        set_covers(limits, "cpus", NULL, tree);
        set_covers(limits, "io_max", NULL, tree);
        set_covers(limits, "disk", NULL, "every file the job writes: runsc's gofer writes them on the scratch");
        set_covers(limits, "nofile", "rlimit", "each job process, inside gVisor's kernel");
        set_covers(limits, "max_file_size", "rlimit", "each job process, inside gVisor's kernel");
        json_t *pids = json_object_get(limits, "pids");
        const char *mech = json_string_value(json_object_get(pids, "mechanism"));
        if (mech && !streq(mech, "none")) {
                _cleanup_free_ char *text = xasprintf(
                        "the job's tasks, by gVisor's kernel (RLIMIT_NPROC); runsc's host tasks have a backstop "
                        "of %llu (%s)", (unsigned long long)GVISOR_HOST_TASKS(cfg->pids),
                        streq(mech, "cgroup") ? "pids.max" : "RLIMIT_NPROC");
                json_object_set_new(pids, "mechanism", json_string("rlimit"));
                json_object_set_new(pids, "covers", json_string(text));
        }
}

/* A signal that comes before runsc has created the container (a cancel
 * in the first few hundred ms) would be lost: runsc kill fails until
 * then. So the helper retries, every 50 ms for up to 2 s; once the job
 * is gone it dies with init like everything else in the namespace. */
#define KILL_RETRIES 40
#define KILL_RETRY_US 50000

void gvisor_forward_signal(const struct gvisor_info *gv, int sig)
{
        pid_t pid = fork();
        if (pid != 0)
                return;         /* init reaps it with the others */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                _exit(1);
        (void)syscall(SYS_close_range, 3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char num[16];
        snprintf(num, sizeof(num), "%d", sig);
        char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" GVISOR_DIR, NULL };
        char *args[] = { (char *)gv->path, "--rootless", "--root=" GVISOR_DIR "/state",
                         "kill", "--all", "hutch", num, NULL };
        for (int i = 0; i < KILL_RETRIES; i++) {
                pid_t k = fork();
                if (k < 0)
                        _exit(1);
                if (k == 0) {
                        execve(gv->path, args, env);
                        _exit(127);
                }
                int status;
                while (waitpid(k, &status, 0) < 0)
                        if (errno != EINTR)
                                _exit(1);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                        _exit(0);
                usleep(KILL_RETRY_US);
        }
        _exit(1);
}
