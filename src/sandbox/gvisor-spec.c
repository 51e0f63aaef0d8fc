/* gvisor-spec.c - the job's last step under the gvisor runtime: write
 * the OCI bundle runsc reads and exec `runsc run` (see gvisor.h).
 *
 * This runs in the forked job process, inside the sandbox hutch built:
 * its mount namespace is the finished root, so the bundle can describe
 * it instead of rebuilding it. The spec says:
 *  - root: "/" of the sandbox, read-only, as natively; every mount that
 *    is writable in the sandbox (the scratch's /tmp, /var/tmp, $HOME,
 *    /dev/shm, the workspace overlay, --rw and tmpfs paths) becomes a
 *    bind of itself, so the gofer writes there and only there. Those
 *    all live on the run's scratch tmpfs or are what the user named:
 *    nothing the job writes can reach another host path, whatever runsc
 *    would do with an overlay of its own (--overlay2=none keeps runsc
 *    from keeping writes in memory out of the disk limit's sight);
 *  - masks, read-only binds and inputs come along with the root: the
 *    gofer opens files in our namespace, where they are what mount.c
 *    made them (read-only mounts, mode-0000 masks);
 *  - /proc and /dev are gVisor's own (the sentry's, not the host's):
 *    its /dev is a writable tmpfs of the sentry's memory (gVisor refuses
 *    writes to /dev/null on a read-only one), holding gVisor's emulated
 *    devices only, /dev/fuse and /dev/net/tun among them, which need
 *    capabilities the job does not have;
 *    GVISOR_DIR (this bundle and runsc's state) is covered by a tmpfs
 *    of the sentry's, so the job never sees the control files;
 *  - the job is uid 0 *of gVisor's kernel* with no capabilities at all
 *    and no_new_privs: in rootless mode runsc maps only one id, ours,
 *    and its gofer can create files as that id alone, so any other uid
 *    would find its workspace unwritable. Without capabilities uid 0
 *    cannot pass the masks' mode 0000 nor any other permission check;
 *  - rlimits: nofile, pids, cpu_time and max_file_size bind the job
 *    inside the sentry (OCI rlimits, which gVisor's kernel enforces); on
 *    runsc's own host processes they would break the sentry (its memory
 *    file, its host fds, its threads) instead. runsc's tree gets only a
 *    scaled task backstop (GVISOR_HOST_TASKS).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/gvisor.h"
#include "lib/util.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
static const char *env_get(char **env, const char *key)
{
        size_t len = strlen(key);
        for (char **e = env; e && *e; e++)
                if (strncmp(*e, key, len) == 0 && (*e)[len] == '=')
                        return *e + len + 1;
        return NULL;
}

/* 0 if path is a file the job could exec, else -ENOENT / -EACCES. The
 * sentry sees the same files, so the answer matches what it would say,
 * and "not found" stays 127 as natively rather than runsc's failure. */
static int executable(const char *path)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOTDIR ? -ENOENT : -errno;
        if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
                return -EACCES;
        return 0;
}

static int find_command(const char *cmd, char **env)
{
        if (strchr(cmd, '/'))
                return executable(cmd);
        const char *path = env_get(env, "PATH");
        int best = -ENOENT;
        _cleanup_free_ char *copy = xstrdup(path ? path : DEFAULT_PATH);
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char full[PATH_MAX];
                snprintf(full, sizeof(full), "%s/%s", *dir ? dir : ".", cmd);
                int r = executable(full);
                if (r == 0)
                        return 0;
                if (r == -EACCES)
                        best = r;
        }
        return best;
}

/* mountinfo escapes blanks and backslashes as \ooo */
static void unescape(char *s)
{
        char *w = s;
        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else
                        *w++ = *r;
        }
        *w = '\0';
}

static bool under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static json_t *mount_obj(const char *dest, const char *type, const char *source, const char *const *opts)
{
        json_t *m = json_object();
        json_t *o = json_array();
        json_object_set_new(m, "destination", json_string(dest));
        json_object_set_new(m, "type", json_string(type));
        json_object_set_new(m, "source", json_string(source));
        for (; opts && *opts; opts++)
                json_array_append_new(o, json_string(*opts));
        json_object_set_new(m, "options", o);
        return m;
}

/* The sandbox's writable mounts, in mount order (parents first), as
 * binds of themselves; *ret_root_rw says whether "/" itself is writable
 * (an image root's overlay). */
static int writable_binds(json_t *mounts, bool *ret_root_rw)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[8192];
        if (!f)
                return -errno;
        *ret_root_rw = false;
        while (fgets(line, sizeof(line), f)) {
                char *save = NULL, *field[6] = { 0 };
                char *t = strtok_r(line, " ", &save);
                for (int i = 0; t && i < 6; i++, t = strtok_r(NULL, " ", &save))
                        field[i] = t;
                if (!field[5])
                        continue;
                char *mp = field[4];
                unescape(mp);
                bool rw = startswith(field[5], "rw");
                if (streq(mp, "/")) {
                        *ret_root_rw = rw;
                        continue;
                }
                /* gVisor brings its own /proc, /sys and /dev; our own
                 * bundle stays ours */
                if (!rw || under(mp, "/proc") || under(mp, "/sys") || under(mp, GVISOR_DIR) ||
                    (under(mp, "/dev") && !under(mp, "/dev/shm")))
                        continue;
                struct stat st;
                if (lstat(mp, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                        continue;
                json_array_append_new(mounts, mount_obj(mp, "bind", mp,
                                                        (const char *const[]){ "rbind", "rw", "nosuid", "nodev", NULL }));
        }
        return 0;
}

static void add_rlimit(json_t *list, const char *type, rlim_t soft, rlim_t hard)
{
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string(type));
        json_object_set_new(o, "soft", json_integer((json_int_t)soft));
        json_object_set_new(o, "hard", json_integer((json_int_t)hard));
        json_array_append_new(list, o);
}

static json_t *strv_json(char **v)
{
        json_t *a = json_array();
        for (; v && *v; v++)
                json_array_append_new(a, json_string(*v));
        return a;
}

static json_t *build_spec(const struct run_config *cfg, char **argv, char **env, int *ret_error)
{
        json_t *spec = json_object(), *process = json_object(), *user = json_object();
        json_t *caps = json_object(), *rl = json_array(), *mounts = json_array(), *root = json_object();
        json_t *lnx = json_object(), *ns = json_array();
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        bool root_rw = false;

        json_object_set_new(spec, "ociVersion", json_string("1.0.0"));

        json_object_set_new(process, "terminal", json_false());
        json_object_set_new(user, "uid", json_integer(0));
        json_object_set_new(user, "gid", json_integer(0));
        json_object_set_new(process, "user", user);
        json_object_set_new(process, "args", strv_json(argv));
        json_object_set_new(process, "env", strv_json(env));
        json_object_set_new(process, "cwd", json_string(cwd ? cwd : "/"));
        for (const char *const *set = (const char *const[]){ "bounding", "effective", "inheritable",
                                                             "permitted", "ambient", NULL };
             *set; set++)
                json_object_set_new(caps, *set, json_array());
        json_object_set_new(process, "capabilities", caps);
        json_object_set_new(process, "noNewPrivileges", json_true());
        rlim_t nofile = cfg->nofile ? cfg->nofile : 4096;
        add_rlimit(rl, "RLIMIT_NOFILE", MIN(nofile, (rlim_t)1024), nofile);
        add_rlimit(rl, "RLIMIT_CORE", 0, 0);
        if (cfg->cpu_time_ms) {
                rlim_t secs = (cfg->cpu_time_ms + 999) / 1000;
                add_rlimit(rl, "RLIMIT_CPU", secs, secs + 1);
        }
        if (cfg->pids)
                add_rlimit(rl, "RLIMIT_NPROC", cfg->pids, cfg->pids);
        if (cfg->max_file_size)
                add_rlimit(rl, "RLIMIT_FSIZE", cfg->max_file_size, cfg->max_file_size);
        json_object_set_new(process, "rlimits", rl);
        json_object_set_new(spec, "process", process);

        json_object_set_new(spec, "hostname", json_string(cfg->hostname));

        json_array_append_new(mounts, mount_obj("/proc", "proc", "proc", NULL));
        json_array_append_new(mounts, mount_obj("/dev", "tmpfs", "tmpfs",
                                                (const char *const[]){ "nosuid", "noexec", "mode=755", NULL }));
        json_array_append_new(mounts, mount_obj("/dev/pts", "devpts", "devpts",
                                                (const char *const[]){ "nosuid", "noexec", "newinstance",
                                                                       "ptmxmode=0666", "mode=0620", NULL }));
        int r = writable_binds(mounts, &root_rw);
        if (r < 0) {
                *ret_error = r;
                json_decref(spec);
                json_decref(mounts);
                json_decref(root);
                json_decref(lnx);
                json_decref(ns);
                return NULL;
        }
        /* last, so it covers the /tmp bind it sits in */
        json_array_append_new(mounts, mount_obj(GVISOR_DIR, "tmpfs", "tmpfs",
                                                (const char *const[]){ "nosuid", "nodev", "noexec", "mode=000", NULL }));
        json_object_set_new(spec, "mounts", mounts);

        json_object_set_new(root, "path", json_string("/"));
        /* Not "readonly": runsc would remount our root read-only and
         * fail, since it may not touch the nosuid/nodev that lock it.
         * It is read-only already, in our namespace, where runsc cannot
         * change that; an image root's overlay stays writable. */
        (void)root_rw;
        json_object_set_new(root, "readonly", json_false());
        json_object_set_new(spec, "root", root);

        const char *kinds[] = { "pid", "ipc", "uts", "mount", cfg->net == NET_NONE ? "network" : NULL };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (kinds[i]) {
                        json_t *o = json_object();
                        json_object_set_new(o, "type", json_string(kinds[i]));
                        json_array_append_new(ns, o);
                }
        json_object_set_new(lnx, "namespaces", ns);
        json_object_set_new(spec, "linux", lnx);
        return spec;
}

int gvisor_exec(const struct run_config *cfg, const struct gvisor_info *gv, char **argv, char **env,
                bool compile, const char **ret_step)
{
        const char *id = compile ? "hutch-compile" : "hutch";
        char bundle[PATH_MAX], spec_path[PATH_MAX];
        int r;

        *ret_step = "exec";
        r = find_command(argv[0], env);
        if (r < 0)
                return r;

        *ret_step = "runsc bundle";
        snprintf(bundle, sizeof(bundle), GVISOR_DIR "/%s", id);
        snprintf(spec_path, sizeof(spec_path), "%s/config.json", bundle);
        if ((mkdir(GVISOR_DIR, 0700) < 0 && errno != EEXIST) || (mkdir(bundle, 0700) < 0 && errno != EEXIST))
                return -errno;
        /* Nothing of the job's can have made these first (each container
         * is created here before its job runs, and the sentry hides
         * GVISOR_DIR from it), but a bundle is only written into a real
         * directory of our own, never through a link. */
        struct stat st;
        if (lstat(GVISOR_DIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            lstat(bundle, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
                return -ENOTDIR;
        json_t *spec = build_spec(cfg, argv, env, &r);
        if (!spec)
                return r;
        r = json_dump_file(spec, spec_path, JSON_COMPACT) < 0 ? -EIO : 0;
        json_decref(spec);
        if (r < 0)
                return r;

        /* runsc run's log, where init reads the job's wait status
         * (gvisor-status.c): empty, a file of our own in our bundle */
        char log_path[PATH_MAX];
        gvisor_log_path(log_path, sizeof(log_path), compile);
        int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (log_fd < 0)
                return -errno;
        close(log_fd);

        /* the backstop on runsc's host tasks (gvisor.h); the job's own
         * pids limit is the RLIMIT_NPROC in its spec */
        *ret_step = "setrlimit";
        if (cfg->pids) {
                rlim_t n = GVISOR_HOST_TASKS(cfg->pids);
                struct rlimit lim = { n, n };
                if (setrlimit(RLIMIT_NPROC, &lim) < 0)
                        return -errno;
        }

        char *args[] = {
                (char *)gv->path, "--rootless",
                cfg->net == NET_NONE ? "--network=none" : "--network=host",
                "--ignore-cgroups", "--overlay2=none", "--host-uds=none", "--host-fifo=none",
                xasprintf("--platform=%s", gv->platform),
                "--root=" GVISOR_DIR "/state",
                xasprintf("--debug-log=%s", log_path), "--debug-command=run",
                "run", "--bundle", bundle, (char *)id, NULL,
        };
        char *runsc_env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                              "HOME=" GVISOR_DIR, NULL };
        *ret_step = "exec runsc";
        execve(gv->path, args, runsc_env);
        return -errno;
}
