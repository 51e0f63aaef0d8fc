/* profile.c - the profile key table, value parsing, the profile search
 * path and `extends`, trust, and the canonical resolved text.
 *
 * Shape of the work: a profile is a few dozen lines; a run reads one to
 * three of them (the profile and what it extends). Everything here is
 * small and linear; clarity and exact error messages matter more than
 * speed.
 *
 * Reading one file happens in two steps. First inih (through ini-text.c,
 * which adds line numbers) collects its entries, rejecting unknown
 * sections and keys, duplicates and syntax errors as it goes. Then the
 * file's `extends` target is loaded into the config, and the entries are
 * applied on top, each through the same setter the command line uses
 * (set_value), which records where the value came from.
 *
 * Trust: profiles found by name in the search path, and files given by a
 * path that lies inside one of those directories, are trusted. Any other
 * file may not ask for writable host binds (rw): a profile handed to hutch
 * by someone else must not be able to open the host for writing (STYLE
 * convention 6). The command line is the user and is always honoured.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "config/ini-text.h"
#include "limits/iomax.h"
#include "config/profile.h"
#include "lib/digest.h"
#include "lib/util.h"

#define PROFILE_MAX_DEPTH 16            /* profiles in one extends chain */
#define PROFILE_MAX_SIZE (1024 * 1024)  /* bytes in one profile file */
#define CANONICAL_WIDTH 78              /* fold lists longer than this */

/* ---- checks for strings and list items ---------------------------------- */

static bool has_control(const char *s)
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

        if (s[0] != '/' || strlen(s) >= PATH_MAX || has_control(s) || strchr(s, '"'))
                return expect;
        for (p = s; (p = strstr(p, "..")); p += 2)
                if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
                        return expect;
        return NULL;
}

/* Is PATH the directory TOP or below it? Both absolute; runs of '/'
 * count as one, as the kernel reads them, and a trailing '/' changes
 * nothing. Compared component by component, so /optional is not in /opt. */
static bool path_within(const char *path, const char *top)
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
        if (s[strspn(s, "/")] == '\0' || path_within(s, "/proc") || path_within(s, "/dev"))
                return expect;
        return NULL;
}

static const char *check_root(const char *s)
{
        static const char expect[] = "\"host\" or absolute dirs separated by ':'";
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (streq(s, "host"))
                return NULL;
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

static bool valid_env_name(const char *s)
{
        if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '_')
                        return false;
        return true;
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
                "io_max)";
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

/* root as written -> root_layers */
static void split_root(struct run_config *cfg)
{
        char *save = NULL;
        _cleanup_free_ char *copy = xstrdup(cfg->root);

        strv_free(cfg->root_layers);
        cfg->root_layers = NULL;
        if (streq(cfg->root, "host"))
                return;
        for (char *layer = strtok_r(copy, ":", &save); layer; layer = strtok_r(NULL, ":", &save))
                cfg->root_layers = strv_append(cfg->root_layers, layer);
}

/* ---- the table ------------------------------------------------------------ */

static const char *const net_words[] = { [NET_NONE] = "none", [NET_HOST] = "host", NULL };
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
          "\"host\" (binds of system_dirs) or image layers DIR[:DIR...], top first",
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
        { "limits", "io_max", "io-max", PROFILE_LIST, "", "\"DEVICE KEY=VALUE...\" items",
          "disk bandwidth and iops caps (cgroup io.max), e.g. \"8:0 wbps=10M riops=1000\"",
          FIELD(io_max), .check = iomax_check },
        { "limits", "max_file_size", "max-file-size", PROFILE_SIZE, "none", "bytes",
          "largest file the job may write (RLIMIT_FSIZE)",
          FIELD(max_file_size), .zero = "none", .max = SIZE_MAX_BYTES },
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

        { "network", "mode", "network", PROFILE_ENUM, "none", NULL,
          "none: only loopback; host: the host's network namespace",
          FIELD(net), .words = net_words },

        { "sandbox", "gid", "gid", PROFILE_COUNT, "1000", NULL,
          "group id of the job inside the sandbox",
          FIELD(gid), .max = 4294967294ULL },
        { "sandbox", "hostname", "hostname", PROFILE_STRING, "sandbox", NULL,
          "host name inside the sandbox",
          FIELD(hostname), .check = check_hostname },
        { "sandbox", "session_ttl", "session-ttl", PROFILE_DURATION, "1d", "ms",
          "a --session workspace unused this long is removed by hutch gc",
          FIELD(session_ttl_ms), .zero = "none", .min = 1, .max = DURATION_MAX_MS },
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
        "artifacts", "env", "filesystem", "limits", "network", "sandbox", "seccomp",
};

static bool section_known(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(known_sections); i++)
                if (streq(s, known_sections[i]))
                        return true;
        return false;
}

static const struct profile_key *key_in_section(const char *section, const char *name)
{
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].section, section) && streq(profile_keys[i].name, name))
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
                return key_in_section(section, dot + 1);
        }
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].name, name)) {
                        found = &profile_keys[i];
                        hits++;
                }
        return hits == 1 ? found : NULL;
}

/* "limits.memory", or "description" for top-level keys. */
static char *key_id(const struct profile_key *k)
{
        return k->section[0] ? xasprintf("%s.%s", k->section, k->name) : xstrdup(k->name);
}

/* ---- values: text -> field ---------------------------------------------- */

static void *field(struct run_config *cfg, const struct profile_key *k)
{
        return (char *)cfg + k->offset;
}

static const void *cfield(const struct run_config *cfg, const struct profile_key *k)
{
        return (const char *)cfg + k->offset;
}

static bool parse_bool(const char *s, bool *ret)
{
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return true;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return true;
                }
        }
        return false;
}

/* Whole number, digits only. */
static int parse_count(const char *s, uint64_t *ret)
{
        uint64_t v = 0;
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        for (; *s; s++) {
                if (!isdigit((unsigned char)*s))
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*s - '0');
        }
        *ret = v;
        return 0;
}

/* Decimal with at most 3 places, in thousandths. */
static int parse_milli(const char *s, uint64_t *ret)
{
        uint64_t whole = 0, frac = 0;
        unsigned places = 0;
        const char *p = s;

        if (!isdigit((unsigned char)*p))
                return -EINVAL;
        for (; isdigit((unsigned char)*p); p++) {
                if (whole > 1000000000ULL)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return -EINVAL;
                for (; isdigit((unsigned char)*p); p++) {
                        if (++places > 3)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t)(*p - '0');
                }
        }
        if (*p)
                return -EINVAL;
        while (places++ < 3)
                frac *= 10;
        *ret = whole * 1000 + frac;
        return 0;
}

static const char *type_expect(const struct profile_key *k)
{
        switch (k->type) {
        case PROFILE_SIZE:     return "a size like 512M";
        case PROFILE_DURATION: return "a duration like 30s";
        case PROFILE_COUNT:    return "a whole number";
        case PROFILE_NUMBER:   return "a number like 1.5 (at most 3 decimals)";
        case PROFILE_BOOL:     return "yes or no";
        default:               return "a value";
        }
}

static const char *type_noun(const struct profile_key *k)
{
        switch (k->type) {
        case PROFILE_SIZE:     return "a size";
        case PROFILE_DURATION: return "a duration";
        case PROFILE_COUNT:    return "a whole number";
        default:               return "a number";
        }
}

static char *format_plain(const struct profile_key *k, uint64_t v);

/* Format a number of the key's type in canonical form; 0 is the key's
 * zero word if it has one. */
static char *format_number(const struct profile_key *k, uint64_t v)
{
        if (v == 0 && k->zero)
                return xstrdup(k->zero);
        return format_plain(k, v);
}

/* Same, but 0 is written as a number. */
static char *format_plain(const struct profile_key *k, uint64_t v)
{
        char buf[64];

        switch (k->type) {
        case PROFILE_SIZE:
                return xstrdup(format_size(v, buf, sizeof(buf)));
        case PROFILE_DURATION:
                if (v == 0)
                        return xstrdup("0s");
                if (v % 86400000 == 0)
                        return xasprintf("%llud", (unsigned long long)(v / 86400000));
                if (v % 3600000 == 0)
                        return xasprintf("%lluh", (unsigned long long)(v / 3600000));
                if (v % 60000 == 0)
                        return xasprintf("%llum", (unsigned long long)(v / 60000));
                if (v % 1000 == 0)
                        return xasprintf("%llus", (unsigned long long)(v / 1000));
                return xasprintf("%llums", (unsigned long long)v);
        case PROFILE_NUMBER:
                if (v % 1000 == 0)
                        return xasprintf("%llu", (unsigned long long)(v / 1000));
                snprintf(buf, sizeof(buf), "%llu.%03llu", (unsigned long long)(v / 1000),
                         (unsigned long long)(v % 1000));
                for (size_t n = strlen(buf); buf[n - 1] == '0'; n--)
                        buf[n - 1] = '\0';
                return xstrdup(buf);
        default:
                return xasprintf("%llu", (unsigned long long)v);
        }
}

/* Split a list value into items: blank-separated, "double quotes" keep
 * blanks inside one item. On error returns -EINVAL with *ret_expect. */
static int split_list(const char *value, char ***ret, const char **ret_expect)
{
        _cleanup_strv_ char **items = NULL;
        const char *p = value;

        for (;;) {
                const char *start, *end;

                while (*p && isspace((unsigned char)*p))
                        p++;
                if (!*p)
                        break;
                if (*p == '"') {
                        start = ++p;
                        end = strchr(p, '"');
                        if (!end || (end[1] && !isspace((unsigned char)end[1]))) {
                                *ret_expect = "items separated by blanks, with balanced \"quotes\"";
                                return -EINVAL;
                        }
                        p = end + 1;
                } else {
                        start = p;
                        while (*p && !isspace((unsigned char)*p) && *p != '"')
                                p++;
                        if (*p == '"') {
                                *ret_expect = "items separated by blanks, with balanced \"quotes\"";
                                return -EINVAL;
                        }
                        end = p;
                }
                _cleanup_free_ char *item = strndup(start, (size_t)(end - start));
                if (!item)
                        return -ENOMEM;
                items = strv_append(items, item);
        }
        *ret = TAKE_PTR(items);
        return 0;
}

static bool strv_contains(char *const *v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

/* Collapse runs of blanks (including newlines of continued lines). */
static char *collapse_blanks(const char *s)
{
        char *out = xmalloc(strlen(s) + 1), *o = out;
        bool blank = false;

        while (*s && isspace((unsigned char)*s))
                s++;
        for (; *s; s++) {
                if (isspace((unsigned char)*s)) {
                        blank = true;
                        continue;
                }
                if (blank)
                        *o++ = ' ';
                blank = false;
                *o++ = *s;
        }
        *o = '\0';
        return out;
}

/* " ;" starts an inline comment for inih, and so does a leading ';' once
 * the value is written after "key = ": such a value could never be read
 * back from the canonical text. */
static bool has_comment_start(const char *s)
{
        for (const char *p = strchr(s, ';'); p; p = strchr(p + 1, ';'))
                if (p == s || isspace((unsigned char)p[-1]))
                        return true;
        return false;
}

/* Where a value came from, as the start of an error message. */
static char *where(const struct profile_key *k, const char *name, enum origin origin,
                   const char *file, unsigned line)
{
        if (origin == ORIGIN_CLI)
                return xasprintf("--%s", k ? k->flag : name);
        if (file)
                return xasprintf("profile %s:%u: %s", file, line, k ? k->name : name);
        return xasprintf("default %s", k ? k->name : name);
}

static int fail(char **ret_error, int r, char *w, const char *fmt, ...) _printf_(4, 5);
static int fail(char **ret_error, int r, char *w, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (ret_error) {
                free(*ret_error);
                *ret_error = w ? xasprintf("%s: %s", w, msg ? msg : "error") : xstrdup(msg ? msg : "error");
        }
        free(w);
        return r;
}

static int set_env(struct run_config *cfg, const char *name, const char *value,
                   enum origin origin, const char *file, unsigned line, char **ret_error)
{
        _cleanup_free_ char *entry = NULL, *id = NULL;
        size_t n = strlen(name);

        if (!valid_env_name(name))
                return fail(ret_error, -EINVAL, where(NULL, "env", origin, file, line),
                            "expected a variable name (letters, digits, '_'), got \"%s\"", name);
        if (has_control(value) || has_comment_start(value))
                return fail(ret_error, -EINVAL, where(NULL, name, origin, file, line),
                            "value may not contain control characters or \" ;\"");
        entry = xasprintf("%s=%s", name, value);
        for (char **e = cfg->env; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
                        free(*e);
                        *e = TAKE_PTR(entry);
                        break;
                }
        if (entry)
                cfg->env = strv_append(cfg->env, entry);
        id = xasprintf("env.%s", name);
        run_config_set_origin(cfg, id, origin, file, line);
        return 0;
}

/* Parse value for k and store it; append adds list items instead of
 * replacing the list. */
static int set_value(struct run_config *cfg, const struct profile_key *k, const char *value,
                     bool append, enum origin origin, const char *file, unsigned line,
                     char **ret_error)
{
        _cleanup_free_ char *id = NULL;
        void *f = field(cfg, k);
        uint64_t v = 0;
        int r;

        if (has_comment_start(value) || (k->type != PROFILE_TEXT && k->type != PROFILE_LIST &&
                                         has_control(value)))
                return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                            "value may not contain control characters or \" ;\"");

        switch (k->type) {
        case PROFILE_SIZE:
        case PROFILE_DURATION:
        case PROFILE_COUNT:
        case PROFILE_NUMBER:
                if (k->zero && streq(value, k->zero))
                        v = 0;
                else {
                        if (k->type == PROFILE_SIZE)
                                r = parse_size(value, &v);
                        else if (k->type == PROFILE_DURATION)
                                r = parse_duration_ms(value, &v);
                        else if (k->type == PROFILE_COUNT)
                                r = parse_count(value, &v);
                        else
                                r = parse_milli(value, &v);
                        /* parse_size() and parse_duration_ms() allow blanks
                         * around the number; the canonical form has none */
                        if (r == 0 && (isspace((unsigned char)value[0]) ||
                                       isspace((unsigned char)value[strlen(value) - 1])))
                                r = -EINVAL;
                        if (r == -EINVAL)
                                return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                            "expected %s%s%s, got \"%s\"", type_expect(k),
                                            k->zero ? " or " : "", k->zero ? k->zero : "", value);
                        if (r < 0 || v > k->max || (v < k->min && !(v == 0 && k->zero))) {
                                _cleanup_free_ char *lo = format_plain(k, k->min);
                                _cleanup_free_ char *hi = format_plain(k, k->max);
                                return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                            "expected %s from %s to %s%s%s, got \"%s\"",
                                            type_noun(k), lo, hi, k->zero ? ", or " : "",
                                            k->zero ? k->zero : "", value);
                        }
                }
                if (k->type == PROFILE_NUMBER)
                        *(double *)f = (double)v / 1000.0;
                else if (k->width == sizeof(uint32_t))
                        *(uint32_t *)f = (uint32_t)v;
                else
                        *(uint64_t *)f = v;
                break;

        case PROFILE_BOOL: {
                bool b;
                if (!parse_bool(value, &b))
                        return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                    "expected yes or no, got \"%s\"", value);
                *(bool *)f = b;
                break;
        }

        case PROFILE_ENUM: {
                size_t i;
                for (i = 0; k->words[i]; i++)
                        if (streq(k->words[i], value))
                                break;
                if (!k->words[i]) {
                        _cleanup_free_ char *all = NULL;
                        for (size_t j = 0; k->words[j]; j++) {
                                char *t = xasprintf("%s%s%s", all ? all : "", all ? ", " : "", k->words[j]);
                                free(all);
                                all = t;
                        }
                        return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                    "expected one of %s, got \"%s\"", all, value);
                }
                *(int *)f = (int)i;
                break;
        }

        case PROFILE_STRING:
        case PROFILE_TEXT: {
                _cleanup_free_ char *s = k->type == PROFILE_TEXT ? collapse_blanks(value) : xstrdup(value);
                const char *expect = k->check ? k->check(s) : NULL;
                if (k->type == PROFILE_TEXT && has_control(s))
                        expect = "text without control characters";
                if (expect)
                        return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                    "expected %s, got \"%s\"", expect, value);
                free(*(char **)f);
                *(char **)f = TAKE_PTR(s);
                break;
        }

        case PROFILE_LIST: {
                _cleanup_strv_ char **items = NULL;
                const char *expect = NULL;
                char ***list = f;

                /* on the command line the shell already split words: one
                 * value is one item */
                if (origin == ORIGIN_CLI) {
                        r = 0;
                        if (value[0])
                                items = strv_append(NULL, value);
                } else
                        r = split_list(value, &items, &expect);
                if (r < 0)
                        return fail(ret_error, r, where(k, NULL, origin, file, line),
                                    "expected %s, got \"%s\"", expect, value);
                for (char **i = items; i && *i; i++) {
                        expect = k->check ? k->check(*i) : NULL;
                        if (!expect && has_control(*i))
                                expect = "items without control characters";
                        if (expect)
                                return fail(ret_error, -EINVAL, where(k, NULL, origin, file, line),
                                            "expected %s, got \"%s\"", expect, *i);
                }
                if (k->trusted_only && items && origin == ORIGIN_FILE_UNTRUSTED) {
                        _cleanup_strv_ char **dirs = profile_search_dirs();
                        _cleanup_free_ char *list_text = NULL;
                        for (char **d = dirs; d && *d; d++) {
                                char *t = xasprintf("%s%s%s", list_text ? list_text : "",
                                                    list_text ? ", " : "", *d);
                                free(list_text);
                                list_text = t;
                        }
                        return fail(ret_error, -EPERM, where(k, NULL, origin, file, line),
                                    "writable binds are only honoured from profiles in trusted "
                                    "directories (%s) or from the command line",
                                    list_text ? list_text : "none");
                }
                if (!items || !items[0]) {
                        /* an empty value clears the list, also when appending */
                        strv_free(*list);
                        *list = NULL;
                } else {
                        if (!append) {
                                strv_free(*list);
                                *list = NULL;
                        }
                        for (char **i = items; *i; i++)
                                if (!strv_contains(*list, *i))
                                        *list = strv_append(*list, *i);
                }
                break;
        }

        default:
                return fail(ret_error, -EINVAL, NULL, "internal error: bad key type");
        }

        if (k->after)
                k->after(cfg);
        id = key_id(k);
        run_config_set_origin(cfg, id, origin, file, line);
        return 0;
}

void profile_apply_defaults(struct run_config *cfg)
{
        for (size_t i = 0; i < profile_n_keys; i++) {
                _cleanup_free_ char *err = NULL;
                if (set_value(cfg, &profile_keys[i], profile_keys[i].def, false, ORIGIN_DEFAULT,
                              NULL, 0, &err) < 0) {
                        fprintf(stderr, "hutch: BUG: bad built-in default: %s\n", err);
                        abort();
                }
        }
}

int profile_set_key(struct run_config *cfg, const char *key, const char *value,
                    enum origin origin, const char *file, unsigned line, char **ret_error)
{
        const struct profile_key *k;

        if (!key || !value)
                return fail(ret_error, -EINVAL, NULL, "missing key or value");
        if (streq(key, "env")) {
                const char *eq = strchr(value, '=');
                _cleanup_free_ char *name = NULL;
                if (!eq)
                        return fail(ret_error, -EINVAL, where(NULL, "env", origin, file, line),
                                    "expected NAME=VALUE, got \"%s\"", value);
                name = strndup(value, (size_t)(eq - value));
                if (!name)
                        return -ENOMEM;
                return set_env(cfg, name, eq + 1, origin, file, line, ret_error);
        }
        if (startswith(key, "env."))
                return set_env(cfg, key + 4, value, origin, file, line, ret_error);

        k = profile_key_find(key);
        if (!k)
                return fail(ret_error, -ENOENT, where(NULL, key, origin, file, line), "unknown key");
        return set_value(cfg, k, value, k->type == PROFILE_LIST && origin == ORIGIN_CLI,
                         origin, file, line, ret_error);
}

/* The start of an error message about key, from where its value came. */
static char *where_set(const struct run_config *cfg, const struct profile_key *k)
{
        _cleanup_free_ char *id = key_id(k);
        const struct key_origin *o = run_config_origin(cfg, id);

        if (!o)
                return where(k, NULL, ORIGIN_DEFAULT, NULL, 0);
        return where(k, NULL, o->origin, o->file, o->line);
}

int profile_validate(const struct run_config *cfg, char **ret_error)
{
        const struct profile_key *high = profile_key_find("memory_high");
        const struct profile_key *req = profile_key_find("require");

        if (cfg->memory_high_bytes > 0 && cfg->memory_bytes > 0 &&
            cfg->memory_high_bytes > cfg->memory_bytes) {
                char a[32], b[32];
                return fail(ret_error, -EINVAL, where_set(cfg, high), "%s is above memory (%s)",
                            format_size(cfg->memory_high_bytes, a, sizeof(a)),
                            format_size(cfg->memory_bytes, b, sizeof(b)));
        }
        /* The workspace is bound at workdir after the system dirs: at or
         * above one it would hide it, and the job would find no /usr.
         * (Inside one is fine where the host has that directory.) Only
         * for the host's dirs: an image root has none. */
        for (char **d = cfg->ro_binds; cfg->workdir_inside && !cfg->root_layers && d && *d; d++)
                if (path_within(*d, cfg->workdir_inside))
                        return fail(ret_error, -EINVAL, where_set(cfg, profile_key_find("workdir")),
                                    "%s would hide the system dir %s", cfg->workdir_inside, *d);
        for (char **r = cfg->require; r && *r; r++) {
                const struct profile_key *k = profile_key_find(*r);
                _cleanup_free_ char *v = NULL;
                if (!k || !k->zero)
                        continue;
                v = profile_format_value(cfg, k);
                if (streq(v, "none"))
                        return fail(ret_error, -EINVAL, where_set(cfg, req),
                                    "%s must be enforced but is set to none", *r);
        }
        return 0;
}

int profile_apply_cli(struct run_config *cfg, char *const *pairs, char **ret_error)
{
        for (; pairs && pairs[0] && pairs[1]; pairs += 2) {
                int r = profile_set_key(cfg, pairs[0], pairs[1], ORIGIN_CLI, NULL, 0, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- values: field -> text ---------------------------------------------- */

static bool item_needs_quotes(const char *s)
{
        if (!*s)
                return true;
        for (; *s; s++)
                if (isspace((unsigned char)*s))
                        return true;
        return false;
}

static char *join_list(char *const *v)
{
        char *out = xstrdup("");
        for (; v && *v; v++) {
                bool q = item_needs_quotes(*v);
                char *t = xasprintf("%s%s%s%s%s", out, out[0] ? " " : "", q ? "\"" : "", *v, q ? "\"" : "");
                free(out);
                out = t;
        }
        return out;
}

char *profile_format_value(const struct run_config *cfg, const struct profile_key *k)
{
        const void *f = cfield(cfg, k);

        switch (k->type) {
        case PROFILE_SIZE:
        case PROFILE_DURATION:
        case PROFILE_COUNT:
                return format_number(k, k->width == sizeof(uint32_t) ? *(const uint32_t *)f
                                                                     : *(const uint64_t *)f);
        case PROFILE_NUMBER: {
                double d = *(const double *)f;
                return format_number(k, d <= 0 ? 0 : (uint64_t)(d * 1000.0 + 0.5));
        }
        case PROFILE_BOOL:
                return xstrdup(*(const bool *)f ? "yes" : "no");
        case PROFILE_ENUM: {
                int i = *(const int *)f;
                return xstrdup(i >= 0 && k->words[i] ? k->words[i] : "?");
        }
        case PROFILE_STRING:
        case PROFILE_TEXT: {
                const char *s = *(char *const *)f;
                return xstrdup(s ? s : "");
        }
        case PROFILE_LIST:
                return join_list(*(char **const *)f);
        default:
                return xstrdup("");
        }
}

/* Append "key = value" to *out, folding lists and text at blanks so no
 * line gets much longer than CANONICAL_WIDTH; continuation lines are
 * indented, which is how inih reads them back. A fold never comes before
 * a word starting with ';' or '#' (inih would read a comment). */
static void append_entry(char **out, const char *name, const char *value, bool fold)
{
        size_t col;
        char *t = xasprintf("%s%s =%s", *out, name, value[0] ? " " : "");
        free(*out);
        *out = t;
        col = strlen(name) + 3;

        if (!fold) {
                t = xasprintf("%s%s\n", *out, value);
                free(*out);
                *out = t;
                return;
        }

        const char *p = value;
        bool first = true;
        while (*p) {
                /* next word, keeping "quoted items" whole */
                const char *end = p;
                if (*end == '"') {
                        const char *q = strchr(end + 1, '"');
                        end = q ? q + 1 : end + strlen(end);
                }
                while (*end && *end != ' ')
                        end++;
                size_t n = (size_t)(end - p);
                bool fold_here = !first && col + 1 + n > CANONICAL_WIDTH && *p != ';' && *p != '#';
                if (fold_here) {
                        t = xasprintf("%s\n        %.*s", *out, (int)n, p);
                        col = 8 + n;
                } else {
                        t = xasprintf("%s%s%.*s", *out, first ? "" : " ", (int)n, p);
                        col += (first ? 0 : 1) + n;
                }
                free(*out);
                *out = t;
                first = false;
                p = end;
                while (*p == ' ')
                        p++;
        }
        t = xasprintf("%s\n", *out);
        free(*out);
        *out = t;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

char *profile_canonical_text(const struct run_config *cfg)
{
        char *out = xstrdup("");
        const char *section = "";

        /* the table is sorted by section then name, and [env] sorts
         * between [artifacts] and [filesystem] */
        for (size_t i = 0; i <= profile_n_keys; i++) {
                const struct profile_key *k = i < profile_n_keys ? &profile_keys[i] : NULL;
                const char *next = k ? k->section : "\x7f";

                if (!streq(next, section)) {
                        if (strcmp(section, "env") < 0 && strcmp(next, "env") > 0 && cfg->env) {
                                size_t n = strv_length(cfg->env);
                                char **sorted = xmalloc((n + 1) * sizeof(char *));
                                char *t = xasprintf("%s\n[env]\n", out);
                                free(out);
                                out = t;
                                memcpy(sorted, cfg->env, (n + 1) * sizeof(char *));
                                qsort(sorted, n, sizeof(char *), cmp_str);
                                for (size_t j = 0; j < n; j++) {
                                        const char *eq = strchr(sorted[j], '=');
                                        _cleanup_free_ char *name = strndup(sorted[j], (size_t)(eq - sorted[j]));
                                        append_entry(&out, name, eq + 1, false);
                                }
                                free(sorted);
                        }
                        if (!k)
                                break;
                        section = next;
                        char *t = xasprintf("%s\n[%s]\n", out, section);
                        free(out);
                        out = t;
                }
                _cleanup_free_ char *value = profile_format_value(cfg, k);
                append_entry(&out, k->name, value, k->type == PROFILE_LIST || k->type == PROFILE_TEXT);
        }
        return out;
}

char *profile_sha256_hex(const char *text, char ret[DIGEST_HEX_SIZE])
{
        digest_buffer(text, strlen(text), ret);
        return ret;
}

/* ---- the search path and trust ------------------------------------------ */

char **profile_search_dirs(void)
{
        char **dirs = NULL;
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        const char *path = getenv("HUTCH_PROFILE_PATH");

        if (xdg && xdg[0] == '/') {
                _cleanup_free_ char *d = xasprintf("%s/hutch/profiles", xdg);
                dirs = strv_append(dirs, d);
        } else if (home && home[0] == '/') {
                _cleanup_free_ char *d = xasprintf("%s/.config/hutch/profiles", home);
                dirs = strv_append(dirs, d);
        }
        dirs = strv_append(dirs, "/etc/hutch/profiles");
        if (!streq(HUTCH_SYSCONFDIR, "/etc"))
                dirs = strv_append(dirs, HUTCH_SYSCONFDIR "/hutch/profiles");
        if (path) {
                _cleanup_free_ char *copy = xstrdup(path);
                char *save = NULL;
                for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                        if (!strv_contains(dirs, d))
                                dirs = strv_append(dirs, d);
        } else
                dirs = strv_append(dirs, HUTCH_DATADIR "/profiles");
        return dirs;
}

bool profile_path_is_trusted(const char *path)
{
        _cleanup_free_ char *real = realpath(path, NULL);
        _cleanup_strv_ char **dirs = NULL;

        if (!real)
                return false;
        dirs = profile_search_dirs();
        for (char **d = dirs; *d; d++) {
                _cleanup_free_ char *rd = realpath(*d, NULL);
                size_t n;
                if (!rd)
                        continue;
                n = strlen(rd);
                if (strncmp(real, rd, n) == 0 && (real[n] == '/' || (n == 1 && rd[0] == '/')))
                        return true;
        }
        return false;
}

static bool valid_profile_name(const char *s)
{
        if (!s || !*s || *s == '.' || strlen(s) > 64)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
                        return false;
        return true;
}

static bool is_path(const char *s)
{
        size_t n = strlen(s);
        return strchr(s, '/') || (n >= 4 && streq(s + n - 4, ".ini"));
}

static char *dirs_text(char *const *dirs)
{
        char *out = NULL;
        for (; dirs && *dirs; dirs++) {
                char *t = xasprintf("%s%s%s", out ? out : "", out ? ", " : "", *dirs);
                free(out);
                out = t;
        }
        return out ? out : xstrdup("nowhere");
}

/* Find NAME.ini in the search path, skipping the file `skip` (a realpath;
 * so that ~/.config/hutch/profiles/python.ini can extend the python profile
 * further down the path). Returns 0 with *ret_path, or -ENOENT. */
static int find_profile(const char *name, const char *skip, char **ret_path)
{
        _cleanup_strv_ char **dirs = profile_search_dirs();

        for (char **d = dirs; *d; d++) {
                _cleanup_free_ char *p = xasprintf("%s/%s.ini", *d, name);
                _cleanup_free_ char *real = NULL;
                struct stat st;

                if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                real = realpath(p, NULL);
                if (skip && real && streq(real, skip))
                        continue;
                *ret_path = TAKE_PTR(p);
                return 0;
        }
        return -ENOENT;
}

static char *path_basename(const char *p)
{
        const char *s = strrchr(p, '/');
        return xstrdup(s ? s + 1 : p);
}

/* "python" from ".../python.ini" */
static char *profile_name_of(const char *path)
{
        char *b = path_basename(path);
        size_t n = strlen(b);
        if (n > 4 && streq(b + n - 4, ".ini"))
                b[n - 4] = '\0';
        return b;
}

/* ---- reading one file ----------------------------------------------------- */

struct entry {
        char *section;
        char *name;
        char *value;
        unsigned line;
        bool append;            /* written "name += value" */
};

struct parse {
        const char *display;    /* file as shown in messages */
        struct entry *entries;
        size_t n_entries;
        char *error;
};

static void parse_done(struct parse *p)
{
        for (size_t i = 0; i < p->n_entries; i++) {
                free(p->entries[i].section);
                free(p->entries[i].name);
                free(p->entries[i].value);
        }
        free(p->entries);
        free(p->error);
}

static const char *section_hint(const char *name)
{
        for (size_t i = 0; i < profile_n_keys; i++)
                if (streq(profile_keys[i].name, name))
                        return profile_keys[i].section;
        if (streq(name, "extends"))
                return "";
        return NULL;
}

static int parse_error(struct parse *p, unsigned line, int r, const char *fmt, ...) _printf_(4, 5);
static int parse_error(struct parse *p, unsigned line, int r, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!p->error)
                p->error = xasprintf("profile %s:%u: %s", p->display, line, msg ? msg : "error");
        return r;
}

static int on_ini_line(void *userdata, const char *section, const char *name, const char *value,
                       unsigned line, bool continuation)
{
        struct parse *p = userdata;
        const struct profile_key *k = NULL;
        _cleanup_free_ char *key = NULL;
        bool append = false;

        if (!name) {
                if (!section_known(section))
                        return parse_error(p, line, -EINVAL,
                                           "unknown section [%s] (known: artifacts, env, filesystem, "
                                           "limits, network, sandbox, seccomp)", section);
                return 0;
        }

        if (continuation) {
                struct entry *last = &p->entries[p->n_entries - 1];
                const struct profile_key *lk = key_in_section(last->section, last->name);
                if (!lk || (lk->type != PROFILE_LIST && lk->type != PROFILE_TEXT))
                        return parse_error(p, line, -EINVAL,
                                           "%s: unexpected indented line (only lists and "
                                           "description continue on indented lines)", last->name);
                char *t = xasprintf("%s\n%s", last->value, value);
                free(last->value);
                last->value = t;
                return 0;
        }

        key = xstrdup(name);
        size_t n = strlen(key);
        if (n > 0 && key[n - 1] == '+') {
                append = true;
                key[--n] = '\0';
                while (n > 0 && isspace((unsigned char)key[n - 1]))
                        key[--n] = '\0';
        }

        if (streq(section, "env")) {
                if (!valid_env_name(key))
                        return parse_error(p, line, -EINVAL,
                                           "expected a variable name (letters, digits, '_'), got \"%s\"", key);
                if (append)
                        return parse_error(p, line, -EINVAL, "%s: += only works on lists", key);
        } else if (section[0] == '\0' && streq(key, "extends")) {
                if (append)
                        return parse_error(p, line, -EINVAL, "extends: += only works on lists");
        } else {
                k = key_in_section(section, key);
                if (!k) {
                        const char *hint = section_hint(key);
                        if (hint && hint[0] && section[0])
                                return parse_error(p, line, -EINVAL, "%s: unknown key in [%s] (it belongs in [%s])",
                                                   key, section, hint);
                        if (hint && hint[0])
                                return parse_error(p, line, -EINVAL, "%s: unknown key at the top level (it belongs in [%s])",
                                                   key, hint);
                        if (hint)
                                return parse_error(p, line, -EINVAL, "%s: unknown key in [%s] (it belongs at the top, before any section)",
                                                   key, section);
                        if (section[0] == '\0')
                                return parse_error(p, line, -EINVAL, "%s: unknown key at the top level (only extends and description go there)", key);
                        return parse_error(p, line, -EINVAL, "%s: unknown key in [%s]", key, section);
                }
                if (append && k->type != PROFILE_LIST)
                        return parse_error(p, line, -EINVAL, "%s: += only works on lists", key);
        }

        for (size_t i = 0; i < p->n_entries; i++)
                if (streq(p->entries[i].section, section) && streq(p->entries[i].name, key))
                        return parse_error(p, line, -EINVAL, "%s: duplicate key (first set on line %u)",
                                           key, p->entries[i].line);

        p->entries = xrealloc(p->entries, (p->n_entries + 1) * sizeof(*p->entries));
        p->entries[p->n_entries++] = (struct entry) {
                .section = xstrdup(section),
                .name = TAKE_PTR(key),
                .value = xstrdup(value),
                .line = line,
                .append = append,
        };
        return 0;
}

static int parse_text(struct parse *p, const char *text, size_t len)
{
        unsigned line = 0;
        bool syntax = false;
        int r;

        if (len > PROFILE_MAX_SIZE) {
                p->error = xasprintf("profile %s: larger than 1M", p->display);
                return -EFBIG;
        }
        if (strlen(text) != len) {
                p->error = xasprintf("profile %s: contains a NUL byte", p->display);
                return -EINVAL;
        }
        r = ini_text_parse(text, on_ini_line, p, &line, &syntax);
        if (r == -EINVAL && syntax)
                return parse_error(p, line, -EINVAL, "expected \"key = value\", \"[section]\" or a comment");
        if (r == -E2BIG)
                return parse_error(p, line, -EINVAL, "line longer than %d characters", INI_TEXT_MAX_LINE - 1);
        if (r == -ENAMETOOLONG)
                return parse_error(p, line, -EINVAL, "name longer than %d characters", INI_TEXT_MAX_NAME - 1);
        if (r < 0)
                return parse_error(p, line, r, "%s", strerror(-r));
        return 0;
}

/* ---- loading with extends ------------------------------------------------ */

/* The files being loaded, innermost last: each links to the profile that
 * extends it. Lives on the stack of load_file(). */
struct chain {
        const char *real;       /* realpath of the file, NULL for text */
        const char *name;       /* profile name, for cycle messages */
        const char *display;
        const struct chain *child;  /* the profile that extends this one */
        unsigned depth;         /* files in the chain so far, this one included */
};

static int load_text(struct run_config *cfg, const char *text, size_t len, const char *display,
                     bool trusted, const char *base_dir, const struct chain *chain, char **ret_error);

/* Read a profile: a regular file of at most PROFILE_MAX_SIZE bytes (never
 * a device or a FIFO, which could block or never end). -EBADFD if not
 * regular, -EFBIG if too big. */
static int read_profile_file(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_size > PROFILE_MAX_SIZE)
                return -EFBIG;
        buf = xmalloc(PROFILE_MAX_SIZE + 2);
        n = read_full(fd, buf, PROFILE_MAX_SIZE + 1);
        if (n < 0)
                return (int)n;
        if (n > PROFILE_MAX_SIZE)
                return -EFBIG;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t)n;
        return 0;
}

static int load_file(struct run_config *cfg, const char *path, const char *display, bool trusted,
                     const struct chain *child, char **ret_error)
{
        _cleanup_free_ char *text = NULL, *real = NULL, *name = NULL, *dir = NULL;
        char *slash;
        size_t len = 0;
        int r;

        r = read_profile_file(path, &text, &len);
        if (r == -EFBIG)
                return fail(ret_error, r, NULL, "profile %s: larger than 1M", display);
        if (r == -EBADFD)
                return fail(ret_error, -EINVAL, NULL, "profile %s: not a regular file", display);
        if (r < 0)
                return fail(ret_error, r, NULL, "profile %s: cannot read: %s", display, strerror(-r));
        real = realpath(path, NULL);
        name = profile_name_of(path);
        cfg->profile_files = strv_append(cfg->profile_files, real ? real : path);

        dir = xstrdup(path);
        slash = strrchr(dir, '/');
        if (slash)
                slash[slash == dir ? 1 : 0] = '\0';
        else {
                free(dir);
                dir = xstrdup(".");
        }
        struct chain here = {
                .real = real, .name = name, .display = display, .child = child,
                .depth = child ? child->depth + 1 : 1,
        };
        return load_text(cfg, text, len, display, trusted, dir, &here, ret_error);
}

/* Resolve `extends = target`, written at display:line of the file `chain`
 * describes (NULL for text), and load it. */
static int load_parent(struct run_config *cfg, const char *target, const char *display,
                       unsigned line, const char *base_dir, const struct chain *chain,
                       char **ret_error)
{
        _cleanup_free_ char *path = NULL, *shown = NULL, *real = NULL;
        bool trusted;
        int r;

        if (chain && chain->depth >= PROFILE_MAX_DEPTH)
                return fail(ret_error, -ELOOP, NULL,
                            "profile %s:%u: extends: more than %d profiles in the chain",
                            display, line, PROFILE_MAX_DEPTH);
        if (is_path(target)) {
                path = target[0] == '/' || !base_dir ? xstrdup(target)
                                                      : xasprintf("%s/%s", base_dir, target);
                if (access(path, R_OK) < 0)
                        return fail(ret_error, -ENOENT, NULL, "profile %s:%u: extends: cannot read %s: %s",
                                    display, line, path, strerror(errno));
                trusted = profile_path_is_trusted(path);
                shown = xstrdup(path);
        } else {
                if (!valid_profile_name(target))
                        return fail(ret_error, -EINVAL, NULL,
                                    "profile %s:%u: extends: expected a profile name or path, got \"%s\"",
                                    display, line, target);
                r = find_profile(target, chain ? chain->real : NULL, &path);
                if (r < 0) {
                        _cleanup_strv_ char **dirs = profile_search_dirs();
                        _cleanup_free_ char *where_text = dirs_text(dirs);
                        return fail(ret_error, -ENOENT, NULL,
                                    "profile %s:%u: extends: no profile named \"%s\" (looked in %s)",
                                    display, line, target, where_text);
                }
                trusted = true;
                shown = path_basename(path);
                /* two files of one name in a chain: show full paths */
                for (const struct chain *c = chain; c; c = c->child)
                        if (streq(c->display, shown)) {
                                free(shown);
                                shown = xstrdup(path);
                                break;
                        }
        }

        /* a cycle is reported on the extends line that closes it */
        real = realpath(path, NULL);
        for (const struct chain *c = chain; c && real; c = c->child)
                if (c->real && streq(c->real, real)) {
                        _cleanup_free_ char *cycle = profile_name_of(path);
                        for (const struct chain *d = chain; d; d = d->child) {
                                char *t = xasprintf("%s -> %s", d->name, cycle);
                                free(cycle);
                                cycle = t;
                                if (d == c)
                                        break;
                        }
                        return fail(ret_error, -ELOOP, NULL, "profile %s:%u: extends: cycle: %s",
                                    display, line, cycle);
                }

        return load_file(cfg, path, shown, trusted, chain, ret_error);
}

static int load_text(struct run_config *cfg, const char *text, size_t len, const char *display,
                     bool trusted, const char *base_dir, const struct chain *chain, char **ret_error)
{
        struct parse p = { .display = display };
        enum origin origin = trusted ? ORIGIN_FILE : ORIGIN_FILE_UNTRUSTED;
        int r;

        r = parse_text(&p, text, len);
        if (r < 0)
                goto out;

        for (size_t i = 0; i < p.n_entries; i++) {
                struct entry *e = &p.entries[i];
                if (e->section[0] || !streq(e->name, "extends"))
                        continue;
                r = load_parent(cfg, e->value, display, e->line, base_dir, chain, ret_error);
                if (r < 0)
                        goto out_keep;
        }

        for (size_t i = 0; i < p.n_entries; i++) {
                struct entry *e = &p.entries[i];
                if (!e->section[0] && streq(e->name, "extends"))
                        continue;
                if (streq(e->section, "env"))
                        r = set_env(cfg, e->name, e->value, origin, display, e->line, ret_error);
                else
                        r = set_value(cfg, key_in_section(e->section, e->name), e->value, e->append,
                                      origin, display, e->line, ret_error);
                if (r < 0)
                        goto out_keep;
        }
        r = 0;
out:
        if (r < 0 && ret_error) {
                free(*ret_error);
                *ret_error = TAKE_PTR(p.error);
        }
out_keep:
        parse_done(&p);
        return r;
}

int profile_load_text(struct run_config *cfg, const char *text, const char *display_name,
                      bool trusted, char **ret_error)
{
        return load_text(cfg, text, strlen(text), display_name, trusted, NULL, NULL, ret_error);
}

int profile_load(struct run_config *cfg, const char *name_or_path, char **ret_error)
{
        _cleanup_free_ char *path = NULL, *display = NULL;
        bool trusted;
        int r;

        if (!name_or_path)
                name_or_path = "default";

        if (is_path(name_or_path)) {
                path = xstrdup(name_or_path);
                display = xstrdup(name_or_path);
                trusted = profile_path_is_trusted(path);
        } else {
                if (!valid_profile_name(name_or_path))
                        return fail(ret_error, -EINVAL, NULL,
                                    "profile \"%s\": expected a name (letters, digits, '-', '_', '.') or a path",
                                    name_or_path);
                r = find_profile(name_or_path, NULL, &path);
                if (r < 0) {
                        _cleanup_strv_ char **dirs = NULL;
                        _cleanup_free_ char *where_text = NULL;
                        if (streq(name_or_path, "default"))
                                return 0;       /* the built-in defaults are the default profile */
                        dirs = profile_search_dirs();
                        where_text = dirs_text(dirs);
                        return fail(ret_error, -ENOENT, NULL, "profile \"%s\" not found (looked in %s)",
                                    name_or_path, where_text);
                }
                display = path_basename(path);
                trusted = true;
        }

        r = load_file(cfg, path, display, trusted, NULL, ret_error);
        if (r < 0)
                return r;
        free(cfg->profile_name);
        cfg->profile_name = profile_name_of(path);
        free(cfg->profile_path);
        cfg->profile_path = realpath(path, NULL);
        if (!cfg->profile_path)
                cfg->profile_path = xstrdup(path);
        return 0;
}

/* ---- listing ------------------------------------------------------------- */

int profile_list(char ***ret_names, char ***ret_paths)
{
        _cleanup_strv_ char **dirs = profile_search_dirs();
        _cleanup_strv_ char **names = NULL, **paths = NULL;
        size_t n;

        for (char **d = dirs; *d; d++) {
                DIR *dir = opendir(*d);
                struct dirent *de;
                char **found = NULL;

                if (!dir)
                        continue;
                while ((de = readdir(dir))) {
                        size_t len = strlen(de->d_name);
                        if (len <= 4 || !streq(de->d_name + len - 4, ".ini"))
                                continue;
                        found = strv_append(found, de->d_name);
                }
                closedir(dir);
                if (found)
                        qsort(found, strv_length(found), sizeof(char *), cmp_str);
                for (char **f = found; f && *f; f++) {
                        _cleanup_free_ char *name = strndup(*f, strlen(*f) - 4);
                        _cleanup_free_ char *path = xasprintf("%s/%s", *d, *f);
                        struct stat st;
                        if (!name || !valid_profile_name(name) || strv_contains(names, name))
                                continue;
                        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                                continue;
                        names = strv_append(names, name);
                        paths = strv_append(paths, path);
                }
                strv_free(found);
        }

        /* sort both by name, keeping them parallel */
        n = strv_length(names);
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                        char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
                        t = paths[j]; paths[j] = paths[j - 1]; paths[j - 1] = t;
                }
        if (!names) {
                names = xcalloc(1, sizeof(char *));
                paths = xcalloc(1, sizeof(char *));
        }
        *ret_names = TAKE_PTR(names);
        *ret_paths = TAKE_PTR(paths);
        return (int)n;
}

/* ---- command-line options -------------------------------------------------- */

struct option *profile_cli_options(const struct option *own, int base)
{
        size_t n_own = 0, i = 0;
        struct option *opts;

        while (own && own[n_own].name)
                n_own++;
        opts = xcalloc(n_own + profile_n_keys + 2, sizeof(*opts));
        for (; i < n_own; i++)
                opts[i] = own[i];
        for (size_t k = 0; k < profile_n_keys; k++)
                opts[i++] = (struct option) { profile_keys[k].flag, required_argument, NULL, base + (int)k };
        opts[i++] = (struct option) { "env", required_argument, NULL, base + (int)profile_n_keys };
        return opts;
}
