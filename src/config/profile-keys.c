/* profile-keys.c - the profile key table: every key a profile can set,
 * with its section, flag, type, default, bounds and the check of its
 * string values; the lookups by name, and the command-line options built
 * from it.
 *
 * The table is the one description of a key. The parser, the command
 * line, `hutch profile show`, run_config_init() and the tests all read
 * it, so a key added here exists everywhere at once (hutch-profile(5)
 * must follow by hand; the unit tests check that it does).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "config/iomax.h"
#include "image/image.h"
#include "lib/digest.h"
#include "net/rules.h"
#include "lib/util.h"

/* ---- checks for strings and list items ---------------------------------- */

bool profile_has_control(const char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

static const char *check_abs_path(const char *s)
{
        static const char expect[] = "an absolute path without \"..\"";
        const char *p;

        if (s[0] != '/' || strlen(s) >= PATH_MAX || profile_has_control(s) || strchr(s, '"'))
                return expect;
        for (p = s; (p = strstr(p, "..")); p += 2)
                if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
                        return expect;
        return NULL;
}

/* [apply] protect: a relative path or glob, matched against workspace
 * paths (workspace/protected.h), so no leading '/'. */
static const char *check_rel_glob(const char *s)
{
        static const char expect[] = "a relative path or glob (no leading '/')";

        if (!s[0] || s[0] == '/' || strlen(s) >= PATH_MAX || profile_has_control(s))
                return expect;
        return NULL;
}

/* Is PATH the directory TOP or below it? Both absolute; runs of '/'
 * count as one, as the kernel reads them, and a trailing '/' changes
 * nothing. Compared component by component, so /optional is not in /opt. */
bool profile_path_within(const char *path, const char *top)
{
        for (;;) {
                top += strspn(top, "/");
                path += strspn(path, "/");
                if (*top == '\0')
                        return true;
                size_t n = strcspn(top, "/");
                if (strncmp(path, top, n) != 0 || (path[n] != '\0' && path[n] != '/'))
                        return false;
                top += n;
                path += n;
        }
}

/* The workspace is bound over this path, so it must not be the root or
 * cover what the sandbox itself mounts there (/proc, /dev). */
static const char *check_workdir(const char *s)
{
        static const char expect[] = "an absolute path other than /, outside /proc and /dev";
        const char *e = check_abs_path(s);

        if (e)
                return e;
        if (s[strspn(s, "/")] == '\0' || profile_path_within(s, "/proc") || profile_path_within(s, "/dev"))
                return expect;
        return NULL;
}

bool profile_root_is_image(const char *root)
{
        return root && startswith(root, PROFILE_IMAGE_PREFIX);
}

bool profile_image_ref_valid(const char *ref)
{
        const char *at = strstr(ref, "@sha256:");
        if (startswith(ref, "sha256:"))
                return digest_hex_valid(ref + 7);
        _cleanup_free_ char *name = at ? strndup(ref, (size_t)(at - ref)) : xstrdup(ref);
        _cleanup_free_ char *norm = image_ref_normalize(name);
        return norm && (!at || digest_hex_valid(at + 8));
}

static const char *check_root(const char *s)
{
        static const char expect[] = "\"host\" or absolute dirs separated by ':'";
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (streq(s, "host"))
                return NULL;
        if (profile_root_is_image(s))
                return profile_image_ref_valid(s + strlen(PROFILE_IMAGE_PREFIX)) ? NULL
                       : "image:NAME[:TAG] (an image of hutch image ls), or absolute dirs separated by ':'";
        if (s[0] == '\0' || strstr(s, "::") || s[strlen(s) - 1] == ':')
                return expect;
        copy = xstrdup(s);
        for (char *layer = strtok_r(copy, ":", &save); layer; layer = strtok_r(NULL, ":", &save))
                if (check_abs_path(layer))
                        return expect;
        return NULL;
}

static const char *check_hostname(const char *s)
{
        static const char expect[] = "a host name (letters, digits, '-' and '.', at most 63)";
        size_t n = strlen(s);

        if (n == 0 || n > 63 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.' ||
            strstr(s, ".."))
                return expect;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.')
                        return expect;
        return NULL;
}

bool profile_valid_env_name(const char *s)
{
        return env_var_name_valid(s);       /* the one rule an image's Env is held to too */
}

/* Limits whose enforcement can be demanded with `require`. */
static const char *const enforceable_limits[] = {
        "timeout", "cpu_time", "memory", "memory_high", "cpus", "pids", "nofile", "disk",
        "max_file_size", "io_max",
};

static const char *check_limit_name(const char *s)
{
        static const char expect[] =
                "a limit name (timeout, cpu_time, memory, memory_high, cpus, pids, nofile, disk, max_file_size, "
                "io_max) or isolation=namespaces";
        /* the isolation tier that must run: the namespace tier, or at
         * least the landlock tier (which any tier that ran satisfies) */
        if (streq(s, "isolation=namespaces") || streq(s, "isolation=landlock"))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(enforceable_limits); i++)
                if (streq(s, enforceable_limits[i]))
                        return NULL;
        return expect;
}

static const char *check_syscall_name(const char *s)
{
        static const char expect[] = "a syscall name or @group";
        size_t n = strlen(s);

        if (n == 0 || n > 64 || streq(s, "@"))
                return expect;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && !(*p == '@' && p == s))
                        return expect;
        return NULL;
}

static const char *check_seccomp_action(const char *s)
{
        /* "eperm" is an older spelling of "errno" */
        return streq(s, "errno") || streq(s, "eperm") || streq(s, "kill") || streq(s, "log")
                       ? NULL : "one of errno, kill, log";
}

/* [admission]: a count or a size, "auto" or "none" (admission.h reads them) */
static const char *check_max_running(const char *s)
{
        static const char expect[] = "a number of runs (1 or more), auto or none";
        char *end;
        if (streq(s, "auto") || streq(s, "none"))
                return NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        return s[0] >= '1' && s[0] <= '9' && !*end && errno == 0 && v <= 1000000 ? NULL : expect;
}

static const char *check_max_memory(const char *s)
{
        uint64_t v;
        if (streq(s, "auto") || streq(s, "none"))
                return NULL;
        return parse_size(s, &v) == 0 && v >= (1ULL << 20) ? NULL : "a size of 1M or more, auto or none";
}

/* root as written -> root_layers */
static void split_root(struct run_config *cfg)
{
        char *save = NULL;
        _cleanup_free_ char *copy = xstrdup(cfg->root);

        strv_free(cfg->root_layers);
        cfg->root_layers = NULL;
        free(cfg->image_workdir);
        cfg->image_workdir = NULL;
        /* an image's layers are the image store's answer: profile_resolve_image() */
        if (streq(cfg->root, "host") || profile_root_is_image(cfg->root))
                return;
        for (char *layer = strtok_r(copy, ":", &save); layer; layer = strtok_r(NULL, ":", &save))
                cfg->root_layers = strv_append(cfg->root_layers, layer);
}

/* ---- the table ------------------------------------------------------------ */

static const char *const net_words[] = {
        [NET_NONE] = "none", [NET_HOST] = "host", [NET_ALLOW] = "allow", NULL
};
static const char *const runtime_words[] = {
        [RUNTIME_NATIVE] = "native", [RUNTIME_GVISOR] = "gvisor", NULL
};
static const char *const commit_words[] = {
        [SESSION_COMMIT_SUCCESS] = "success", [SESSION_COMMIT_ALWAYS] = "always",
        [SESSION_COMMIT_NEVER] = "never", NULL
};
static const char *const isolation_words[] = {
        [ISOLATION_NAMESPACES] = "namespaces", [ISOLATION_LANDLOCK] = "landlock", [ISOLATION_AUTO] = "auto", NULL
};
static const char *const seccomp_mode_words[] = {
        [SECCOMP_MODE_DENY] = "deny", [SECCOMP_MODE_ALLOW] = "allow", NULL
};

#define FIELD(f) .offset = offsetof(struct run_config, f), .width = sizeof(((struct run_config *)0)->f)
#define SIZE_MAX_BYTES (16ULL << 40)            /* 16T */
#define DURATION_MAX_MS (30ULL * 86400 * 1000)  /* 30 days */

/* Sorted by section, then name: the order of `profile show` and of the
 * canonical text. */
const struct profile_key profile_keys[] = {
        { "", "description", "description", PROFILE_TEXT, "", NULL,
          "one line saying what the profile is for (shown by hutch profile list)",
          FIELD(description) },

        { "admission", "max_memory", "max-memory", PROFILE_STRING, "none", "bytes",
          "most memory (the sum of memory limits) this user's running runs may hold on the node: "
          "a size, auto (the node's allocatable memory times redundancy) or none",
          FIELD(admission_max_memory), .check = check_max_memory },
        { "admission", "max_running", "max-running", PROFILE_STRING, "none", "runs",
          "most runs of this user running at once on the node: a number, auto (from the node's "
          "allocatable memory and cpus, redundancy and the run's limits) or none",
          FIELD(admission_max_running), .check = check_max_running },
        { "admission", "redundancy", "admission-redundancy", PROFILE_NUMBER, "0.8", NULL,
          "share of the node's allocatable memory and cpus the auto caps fill (0.1 to 1)",
          FIELD(admission_redundancy), .min = 100, .max = 1000 },
        { "apply", "protect", "apply-protect", PROFILE_LIST, "", "globs",
          "workspace paths apply refuses on top of the built-in list (hutch-apply(1)); "
          "a directory protects its subtree, a bare name any component",
          FIELD(apply_protect), .check = check_rel_glob },

        { "artifacts", "dir", "artifacts-dir", PROFILE_STRING, "/workspace/output", "path",
          "directory inside the sandbox whose files are kept as the run's artifacts",
          FIELD(artifacts_dir), .check = check_abs_path },
        { "artifacts", "max_bytes", "artifacts-max-bytes", PROFILE_SIZE, "128M", "bytes",
          "most bytes of artifacts kept from one run",
          FIELD(artifacts_max_bytes), .max = SIZE_MAX_BYTES },
        { "artifacts", "max_files", "artifacts-max-files", PROFILE_COUNT, "1000", "files",
          "most artifact files kept from one run",
          FIELD(artifacts_max_files), .max = 1000000 },

        { "filesystem", "mask", "mask", PROFILE_LIST,
          "/etc/shadow /etc/shadow- /etc/gshadow /etc/gshadow- /etc/sudoers /etc/sudoers.d "
          "/etc/security/opasswd /etc/ssh/ssh_host_*key /etc/ssl/private /etc/credstore "
          "/etc/credstore.encrypted /etc/machine-id", "paths",
          "paths hidden behind an empty file or directory (globs allowed)",
          FIELD(masks), .check = check_abs_path },
        { "filesystem", "ro", "ro", PROFILE_LIST, "", "paths",
          "more host paths bound read-only at the same place (each must exist)",
          FIELD(ro_paths), .check = check_abs_path },
        { "filesystem", "root", "root", PROFILE_STRING, "host", NULL,
          "\"host\" (binds of system_dirs), image:NAME[:TAG] (hutch image), or image layers DIR[:DIR...], top first",
          FIELD(root), .check = check_root, .after = split_root },
        { "filesystem", "rw", "rw", PROFILE_LIST, "", "paths",
          "host paths bound read-write (only from trusted profile dirs or the command line)",
          FIELD(rw_paths), .check = check_abs_path, .trusted_only = true },
        { "filesystem", "system_dirs", "system-dirs", PROFILE_LIST,
          "/usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt", "paths",
          "host system dirs bound read-only when they exist",
          FIELD(ro_binds), .check = check_abs_path },
        { "filesystem", "tmpfs", "tmpfs", PROFILE_LIST, "", "paths",
          "extra empty tmpfs mount points (they count against disk)",
          FIELD(tmpfs_paths), .check = check_abs_path },

        { "image", "max_image_size", "max-image-size", PROFILE_SIZE, "16G", "bytes",
          "most bytes all layers of an image unpack to (hutch image import)",
          FIELD(image_max_image_bytes), .zero = "none", .max = SIZE_MAX_BYTES },
        { "image", "max_layer_size", "max-layer-size", PROFILE_SIZE, "4G", "bytes",
          "most bytes one layer of an image unpacks to, and one blob may have (hutch image import)",
          FIELD(image_max_layer_bytes), .zero = "none", .max = SIZE_MAX_BYTES },

        { "limits", "capture", "capture", PROFILE_SIZE, "64K", "bytes",
          "head and tail of each output stream kept in the record",
          FIELD(capture_bytes), .max = 1ULL << 30 },
        { "limits", "cpu_time", "cpu-time", PROFILE_DURATION, "none", "ms",
          "CPU time the job may use (user + system)",
          FIELD(cpu_time_ms), .zero = "none", .max = DURATION_MAX_MS },
        { "limits", "cpus", "cpus", PROFILE_NUMBER, "1", "cpus",
          "CPU bandwidth in cpus (cgroup cpu.max), e.g. 0.5 or 2",
          FIELD(cpus), .zero = "none", .max = 1024 * 1000 },
        { "limits", "disk", "disk", PROFILE_SIZE, "1G", "bytes",
          "size of the run's scratch tmpfs: every write inside counts",
          FIELD(disk_bytes), .min = 1ULL << 20, .max = SIZE_MAX_BYTES },
        { "limits", "grace", "grace", PROFILE_DURATION, "2s", "ms",
          "time between SIGTERM and SIGKILL when a limit ends the job",
          FIELD(grace_ms), .max = 3600 * 1000 },
        { "limits", "inodes", "inodes", PROFILE_COUNT, "65536", "inodes",
          "files, dirs and links the run's scratch tmpfs may hold (nr_inodes); each costs kernel memory",
          FIELD(inodes), .min = 64, .max = 1ULL << 31 },
        { "limits", "io_max", "io-max", PROFILE_LIST, "", "\"DEVICE KEY=VALUE...\" items",
          "disk bandwidth and iops caps (cgroup io.max), e.g. \"8:0 wbps=10M riops=1000\"",
          FIELD(io_max), .check = iomax_check },
        { "limits", "max_changes", "max-changes", PROFILE_COUNT, "10000", "files",
          "most workspace changes recorded (and applied) from one run; the rest are counted as skipped",
          FIELD(max_changes), .min = 1, .max = 1000000 },
        { "limits", "max_file_size", "max-file-size", PROFILE_SIZE, "none", "bytes",
          "largest file the job may write (RLIMIT_FSIZE)",
          FIELD(max_file_size), .zero = "none", .max = SIZE_MAX_BYTES },
        { "limits", "max_path", "max-path", PROFILE_COUNT, "1024", "bytes",
          "longest path a change or artifact of a run may have; longer ones are skipped (path_too_long)",
          FIELD(max_path), .min = 64, .max = 4096 },
        { "limits", "memory", "memory", PROFILE_SIZE, "512M", "bytes",
          "memory the job may use (cgroup memory.max)",
          FIELD(memory_bytes), .zero = "none", .min = 1ULL << 20, .max = SIZE_MAX_BYTES },
        { "limits", "memory_high", "memory-high", PROFILE_SIZE, "auto", "bytes",
          "memory above which the job is throttled (memory.high); auto = not set",
          FIELD(memory_high_bytes), .zero = "auto", .min = 1ULL << 20, .max = SIZE_MAX_BYTES },
        { "limits", "nofile", "nofile", PROFILE_COUNT, "4096", "files",
          "open file descriptors per process: the hard RLIMIT_NOFILE (soft starts at 1024)",
          FIELD(nofile), .min = 16, .max = 1048576 },
        { "limits", "pids", "pids", PROFILE_COUNT, "256", "tasks",
          "processes and threads the job may have at once",
          FIELD(pids), .zero = "none", .min = 1, .max = 4194304 },
        { "limits", "require", "require", PROFILE_LIST, "", "limit names",
          "limits that must really be enforced, or the run fails with setup_error",
          FIELD(require), .check = check_limit_name },
        { "limits", "timeout", "timeout", PROFILE_DURATION, "30s", "ms",
          "wall-clock time before the job is stopped (status timeout)",
          FIELD(timeout_ms), .zero = "none", .min = 1, .max = DURATION_MAX_MS },

        { "network", "add_host", "add-host", PROFILE_LIST, "", "NAME=IP items",
          "names mapped to addresses for this run (network = allow); named addresses may be private",
          FIELD(net_hosts), .check = egress_host_check },
        { "network", "allow", "allow", PROFILE_LIST, "", "HOST[:PORT] rules",
          "TCP destinations the job may reach (name, *.suffix, *, IP, CIDR; port N, N-M or *, "
          "default 443 and 80); any rule turns on mode allow",
          FIELD(net_allow), .check = egress_rule_check },
        { "network", "deny", "deny", PROFILE_LIST, "", "HOST[:PORT] rules",
          "destinations refused before the allow rules are read (default port: all)",
          FIELD(net_deny), .check = egress_rule_check },
        { "network", "max_bytes", "net-max-bytes", PROFILE_SIZE, "1G", "bytes",
          "bytes relayed both ways over the run (network = allow); beyond, connections are closed",
          FIELD(net_max_bytes), .zero = "none", .max = SIZE_MAX_BYTES },
        { "network", "max_connections", "net-max-connections", PROFILE_COUNT, "64", "connections",
          "TCP connections open at once (network = allow); beyond, new ones are refused",
          FIELD(net_max_connections), .zero = "none", .min = 1, .max = 65536 },
        { "network", "mode", "network", PROFILE_ENUM, "none", NULL,
          "none: only loopback; host: the host's network namespace; allow: only what allow rules let "
          "through hutch",
          FIELD(net), .words = net_words },

        { "sandbox", "commit", "commit", PROFILE_ENUM, "success", NULL,
          "when a --session run's changes are kept in the session: success (the job exited 0), "
          "always (whatever it did), never",
          FIELD(commit), .words = commit_words },
        { "sandbox", "gid", "gid", PROFILE_COUNT, "1000", NULL,
          "group id of the job inside the sandbox",
          FIELD(gid), .max = 4294967294ULL },
        { "sandbox", "hostname", "hostname", PROFILE_STRING, "sandbox", NULL,
          "host name inside the sandbox",
          FIELD(hostname), .check = check_hostname },
        { "sandbox", "isolation", "isolation", PROFILE_ENUM, "namespaces", NULL,
          "namespaces: user, mount, pid, ipc, uts (and net) namespaces; landlock: no namespace, the job "
          "held by Landlock, seccomp and an unprivileged uid, for hosts that refuse user namespaces "
          "(weaker: see hutch-run(1) ISOLATION); auto: landlock only when namespaces are refused",
          FIELD(isolation), .words = isolation_words },
        { "sandbox", "runtime", "runtime", PROFILE_ENUM, "native", NULL,
          "native: hutch's own namespaces; gvisor: the job under gVisor's runsc (a user-space kernel)",
          FIELD(runtime), .words = runtime_words },
        { "sandbox", "session_ttl", "session-ttl", PROFILE_DURATION, "1d", "ms",
          "a --session workspace unused this long is removed by hutch gc",
          FIELD(session_ttl_ms), .zero = "none", .min = 1, .max = DURATION_MAX_MS },
        { "sandbox", "snapshot", "snapshot", PROFILE_BOOL, "no", NULL,
          "copy the --workdir before the job starts and use the copy, so diff shows the job's own "
          "change and apply refuses paths the host changed since",
          FIELD(snapshot) },
        { "sandbox", "uid", "uid", PROFILE_COUNT, "1000", NULL,
          "user id of the job inside the sandbox",
          FIELD(uid), .max = 4294967294ULL },
        { "sandbox", "workdir", "workdir-inside", PROFILE_STRING, "/workspace", "path",
          "working directory of the job inside the sandbox",
          FIELD(workdir_inside), .check = check_workdir },

        { "seccomp", "allow", "seccomp-allow", PROFILE_LIST, "", "syscalls",
          "syscalls and @groups let through even if denied otherwise",
          FIELD(seccomp_allow), .check = check_syscall_name },
        { "seccomp", "allow_io_uring", "allow-io-uring", PROFILE_BOOL, "no", NULL,
          "let the job use io_uring (denied by default)",
          FIELD(seccomp_allow_io_uring) },
        { "seccomp", "allow_ptrace", "allow-ptrace", PROFILE_BOOL, "no", NULL,
          "let the job use ptrace on its own processes (denied by default)",
          FIELD(seccomp_allow_ptrace) },
        { "seccomp", "default_action", "seccomp-default-action", PROFILE_STRING, "errno", NULL,
          "what a denied syscall does: errno (fails with EPERM), kill (SIGSYS) or log (allowed, logged)",
          FIELD(seccomp_default_action), .check = check_seccomp_action },
        { "seccomp", "deny", "seccomp-deny", PROFILE_LIST, "", "syscalls",
          "syscalls and @groups denied on top of the built-in baseline",
          FIELD(seccomp_deny), .check = check_syscall_name },
        { "seccomp", "mode", "seccomp-mode", PROFILE_ENUM, "deny", NULL,
          "deny: the built-in deny list (@hutch-deny); allow: only the allow list (@hutch-strict)",
          FIELD(seccomp_mode), .words = seccomp_mode_words },
};
const size_t profile_n_keys = ELEMENTSOF(profile_keys);

/* Sections a profile may have, besides the top level. */
static const char *const known_sections[] = {
        "admission", "apply", "artifacts", "env", "filesystem", "image", "limits", "network", "sandbox",
        "seccomp",
};

bool profile_section_known(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++)
                if (streq(s, known_sections[i]))
                        return true;
        return false;
}

const struct profile_key *profile_key_in_section(const char *section, const char *name)
{
        /* every line of every profile comes here: the first byte turns
         * away most of the table without a call */
        for (size_t i = 0; i < profile_n_keys; i++)
                if (profile_keys[i].name[0] == name[0] && streq(profile_keys[i].name, name) &&
                    streq(profile_keys[i].section, section))
                        return &profile_keys[i];
        return NULL;
}

const struct profile_key *profile_key_find(const char *name)
{
        const struct profile_key *found = NULL;
        const char *dot;
        size_t hits = 0;

        if (!name)
                return NULL;
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].flag, name))
                        return &profile_keys[i];
        dot = strchr(name, '.');
        if (dot) {
                _cleanup_free_ char *section = strndup(name, (size_t)(dot - name));
                if (!section)
                        return NULL;
                return profile_key_in_section(section, dot + 1);
        }
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].name, name)) {
                        found = &profile_keys[i];
                        hits++;
                }
        return hits == 1 ? found : NULL;
}

/* "limits.memory", or "description" for top-level keys. */
char *profile_key_id(const struct profile_key *k)
{
        return k->section[0] ? xasprintf("%s.%s", k->section, k->name) : xstrdup(k->name);
}

/* ---- command-line options -------------------------------------------------- */

struct option *profile_cli_options(const struct option *own, int base)
{
        size_t n_own = 0, i = 0;
        struct option *opts;

        while (own && own[n_own].name)
                n_own++;
        opts = xcalloc(n_own + profile_n_keys + 3, sizeof(*opts));
        for (; i < n_own; i++)
                opts[i] = own[i];
        for (size_t k = 0; k < profile_n_keys; k++)
                opts[i++] = (struct option) { profile_keys[k].flag, required_argument, NULL, base + (int)k };
        opts[i++] = (struct option) { "env", required_argument, NULL, base + (int)profile_n_keys };
        opts[i++] = (struct option) { "image", required_argument, NULL, base + (int)profile_n_keys + 1 };
        return opts;
}
