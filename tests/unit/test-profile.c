/* test-profile.c - the profile layer: the key table, value parsing (sizes,
 * durations, lists), inheritance and override precedence with provenance,
 * trust, every error path with its exact message, the shipped profiles,
 * and the canonical text with its sha256.
 *
 * Each test runs with its own scratch directories as the search path
 * ($XDG_CONFIG_HOME and $HUTCH_PROFILE_PATH), so the host's and the user's
 * profiles never leak in; the shipped profiles are read from the
 * $HUTCH_PROFILE_PATH that `make check` exports.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "config/profile.h"
#include "config/run-config.h"
#include "lib/util.h"

static char *shipped_dir;       /* $HUTCH_PROFILE_PATH as make check set it */

struct scratch {
        char *root;
        char *xdg;              /* XDG_CONFIG_HOME; profiles in xdg/hutch/profiles */
        char *user;             /* xdg/hutch/profiles */
        char *data;             /* HUTCH_PROFILE_PATH */
        char *elsewhere;        /* not in the search path: untrusted */
};

static int setup(void **state)
{
        struct scratch *s = xcalloc(1, sizeof(*s));
        char tmpl[] = "/tmp/hutch-test-profile-XXXXXX";

        if (!mkdtemp(tmpl))
                return -1;
        s->root = xstrdup(tmpl);
        s->xdg = xasprintf("%s/xdg", s->root);
        s->user = xasprintf("%s/hutch/profiles", s->xdg);
        s->data = xasprintf("%s/data", s->root);
        s->elsewhere = xasprintf("%s/elsewhere", s->root);
        if (mkdir_p(s->user, 0755) < 0 || mkdir_p(s->data, 0755) < 0 || mkdir_p(s->elsewhere, 0755) < 0)
                return -1;
        setenv("XDG_CONFIG_HOME", s->xdg, 1);
        setenv("HUTCH_PROFILE_PATH", s->data, 1);
        *state = s;
        return 0;
}

static int teardown(void **state)
{
        struct scratch *s = *state;
        _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", s->root);

        if (system(cmd) != 0)
                return -1;
        free(s->root);
        free(s->xdg);
        free(s->user);
        free(s->data);
        free(s->elsewhere);
        free(s);
        return 0;
}

static void put(const char *dir, const char *name, const char *text)
{
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
        assert_int_equal(write_file(p, text, 0644), 0);
}

/* Where key came from, as "file:line", "default" or "cli". */
static char *from(const struct run_config *cfg, const char *key)
{
        const struct key_origin *o = run_config_origin(cfg, key);
        if (!o)
                return xstrdup("unset");
        if (o->file)
                return xasprintf("%s:%u", o->file, o->line);
        return xstrdup(origin_to_string(o->origin));
}

#define assert_from(cfg, key, expected)                                 \
        do {                                                            \
                _cleanup_free_ char *_f = from(cfg, key);               \
                assert_string_equal(_f, expected);                      \
        } while (0)

static bool strv_has(char *const *v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

/* ---- the table ------------------------------------------------------------ */

static void table(void **state)
{
        for (size_t i = 0; i < profile_n_keys; i++) {
                const struct profile_key *k = &profile_keys[i];
                _cleanup_free_ char *dashed = xstrdup(k->name);

                /* sorted by section, then name: the order of show and canonical */
                if (i > 0) {
                        const struct profile_key *p = &profile_keys[i - 1];
                        int c = strcmp(p->section, k->section);
                        assert_true(c < 0 || (c == 0 && strcmp(p->name, k->name) < 0));
                }
                assert_non_null(k->doc);
                assert_non_null(k->def);
                /* every flag is unique, and found by all three spellings */
                for (size_t j = 0; j < profile_n_keys; j++)
                        if (j != i)
                                assert_string_not_equal(k->flag, profile_keys[j].flag);
                assert_ptr_equal(profile_key_find(k->flag), k);
                if (k->section[0]) {
                        _cleanup_free_ char *full = xasprintf("%s.%s", k->section, k->name);
                        assert_ptr_equal(profile_key_find(full), k);
                }
                /* the flag is the name with '-' for '_', except where a
                 * section prefix keeps it unambiguous */
                for (char *c = dashed; *c; c++)
                        if (*c == '_')
                                *c = '-';
                if (!streq(k->flag, dashed))
                        assert_true(streq(k->flag, "network") || startswith(k->flag, "seccomp-") ||
                                    startswith(k->flag, "artifacts-") || startswith(k->flag, "net-") ||
                                    streq(k->flag, "workdir-inside"));
        }
        assert_ptr_equal(profile_key_find("memory_high"), profile_key_find("memory-high"));
        assert_null(profile_key_find("mode.nothing"));
        assert_null(profile_key_find("nonsense"));
        /* a bare INI name works when no other section has it */
        assert_ptr_equal(profile_key_find("dir"), profile_key_find("artifacts.dir"));
        assert_ptr_equal(profile_key_find("network.mode"), profile_key_find("network"));
        /* [network] mode and [seccomp] mode: a bare "mode" is ambiguous */
        assert_null(profile_key_find("mode"));
        assert_ptr_equal(profile_key_find("seccomp.mode"), profile_key_find("seccomp-mode"));
}

static void defaults(void **state)
{
        struct run_config cfg;

        run_config_init(&cfg);
        assert_string_equal(cfg.profile_name, "default");
        assert_null(cfg.profile_path);
        assert_int_equal(cfg.timeout_ms, 30000);
        assert_int_equal(cfg.grace_ms, 2000);
        assert_int_equal(cfg.cpu_time_ms, 0);
        assert_int_equal(cfg.memory_bytes, 512ULL << 20);
        assert_int_equal(cfg.memory_high_bytes, 0);
        assert_true(cfg.cpus == 1.0);
        assert_int_equal(cfg.pids, 256);
        assert_int_equal(cfg.nofile, 4096);
        assert_int_equal(cfg.disk_bytes, 1ULL << 30);
        assert_int_equal(cfg.capture_bytes, 64 << 10);
        assert_int_equal(cfg.max_file_size, 0);
        assert_int_equal(cfg.net, NET_NONE);
        assert_int_equal(cfg.uid, 1000);
        assert_int_equal(cfg.gid, 1000);
        assert_string_equal(cfg.hostname, "sandbox");
        assert_string_equal(cfg.workdir_inside, "/workspace");
        assert_string_equal(cfg.home, "/home/sandbox");
        assert_string_equal(cfg.root, "host");
        assert_null(cfg.root_layers);
        assert_true(strv_has(cfg.ro_binds, "/usr"));
        assert_true(strv_has(cfg.ro_binds, "/etc"));
        assert_true(strv_has(cfg.masks, "/etc/shadow"));
        assert_true(strv_has(cfg.masks, "/etc/ssh/ssh_host_*key"));
        assert_null(cfg.ro_paths);
        assert_null(cfg.rw_paths);
        assert_null(cfg.env);
        assert_string_equal(cfg.seccomp_default_action, "errno");
        assert_int_equal(cfg.seccomp_mode, SECCOMP_MODE_DENY);
        assert_false(cfg.seccomp_allow_ptrace);
        assert_string_equal(cfg.artifacts_dir, "/workspace/output");
        assert_from(&cfg, "limits.memory", "default");
        assert_from(&cfg, "description", "default");
        run_config_done(&cfg);
}

/* ---- values ------------------------------------------------------------------ */

static void values(void **state)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg,
                "[limits]\n"
                "timeout = 1.5s\n"
                "grace = 250ms\n"
                "cpu_time = 2m\n"
                "memory = 1.5G\n"
                "memory_high = 400M\n"
                "cpus = 0.25\n"
                "pids = none\n"
                "disk = 2GiB\n"
                "capture = 1M\n"
                "max_file_size = 10M\n"
                "nofile = 4096\n"
                "require = memory pids\n"
                "[network]\n"
                "mode = host\n"
                "[sandbox]\n"
                "uid = 0\n"
                "gid = 100\n"
                "hostname = box-1.example\n"
                "workdir = /src\n"
                "[seccomp]\n"
                "allow_ptrace = yes\n"
                "allow_io_uring = off\n"
                "default_action = kill\n"
                "deny = @mount ptrace\n"
                "[artifacts]\n"
                "max_files = 0\n"
                "max_bytes = 0\n"
                "[filesystem]\n"
                "root = /img/top:/img/base\n",
                "t.ini", true, &err), 0);
        assert_null(err);
        assert_int_equal(cfg.timeout_ms, 1500);
        assert_int_equal(cfg.grace_ms, 250);
        assert_int_equal(cfg.cpu_time_ms, 120000);
        assert_int_equal(cfg.memory_bytes, 3ULL << 29);
        assert_int_equal(cfg.memory_high_bytes, 400ULL << 20);
        assert_true(cfg.cpus == 0.25);
        assert_int_equal(cfg.pids, 0);         /* none */
        assert_int_equal(cfg.disk_bytes, 2ULL << 30);
        assert_int_equal(cfg.capture_bytes, 1 << 20);
        assert_int_equal(cfg.max_file_size, 10 << 20);
        assert_int_equal(cfg.nofile, 4096);
        assert_int_equal(strv_length(cfg.require), 2);
        assert_int_equal(cfg.net, NET_HOST);
        assert_int_equal(cfg.uid, 0);
        assert_int_equal(cfg.gid, 100);
        assert_string_equal(cfg.hostname, "box-1.example");
        assert_string_equal(cfg.workdir_inside, "/src");
        assert_true(cfg.seccomp_allow_ptrace);
        assert_false(cfg.seccomp_allow_io_uring);
        assert_string_equal(cfg.seccomp_default_action, "kill");
        assert_string_equal(cfg.seccomp_deny[0], "@mount");
        assert_string_equal(cfg.seccomp_deny[1], "ptrace");
        assert_int_equal(cfg.artifacts_max_files, 0);
        assert_string_equal(cfg.root, "/img/top:/img/base");
        assert_int_equal(strv_length(cfg.root_layers), 2);
        assert_string_equal(cfg.root_layers[1], "/img/base");
        assert_from(&cfg, "limits.memory", "t.ini:5");
        assert_from(&cfg, "sandbox.uid", "t.ini:17");
        assert_int_equal(run_config_origin(&cfg, "limits.memory")->origin, ORIGIN_FILE);

        /* the zero words and the canonical forms they print as */
        assert_int_equal(profile_set_key(&cfg, "timeout", "none", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(cfg.timeout_ms, 0);
        assert_int_equal(profile_set_key(&cfg, "memory-high", "auto", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(cfg.memory_high_bytes, 0);
        {
                _cleanup_free_ char *t = profile_format_value(&cfg, profile_key_find("timeout"));
                _cleanup_free_ char *m = profile_format_value(&cfg, profile_key_find("memory"));
                _cleanup_free_ char *h = profile_format_value(&cfg, profile_key_find("memory_high"));
                _cleanup_free_ char *g = profile_format_value(&cfg, profile_key_find("grace"));
                _cleanup_free_ char *c = profile_format_value(&cfg, profile_key_find("cpus"));
                _cleanup_free_ char *p = profile_format_value(&cfg, profile_key_find("allow_ptrace"));
                assert_string_equal(t, "none");
                assert_string_equal(m, "1536M");
                assert_string_equal(h, "auto");
                assert_string_equal(g, "250ms");
                assert_string_equal(c, "0.25");
                assert_string_equal(p, "yes");
        }
        assert_from(&cfg, "limits.timeout", "cli");
        run_config_done(&cfg);
        /* below the minimum is out of range, 0 included: only the word
         * none means no limit */
        run_config_init(&cfg);
        free(err);
        err = NULL;
        assert_int_equal(profile_load_text(&cfg, "[limits]\npids = 0\n", "z.ini", false, &err), -EINVAL);
        assert_non_null(strstr(err, "z.ini:2"));
        assert_non_null(strstr(err, "from 1 to"));
        run_config_done(&cfg);
}

static void lists(void **state)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg,
                "description = a   long\n"
                "   description\n"
                "[filesystem]\n"
                "ro = /data \"/with space\"\n"
                "     /more\n"
                "\n"
                "     /after-blank\n"
                "mask += /etc/extra /etc/shadow\n"
                "tmpfs =\n"
                "system_dirs = /usr\n",
                "t.ini", true, &err), 0);
        assert_null(err);
        assert_string_equal(cfg.description, "a long description");
        assert_int_equal(strv_length(cfg.ro_paths), 4);
        assert_string_equal(cfg.ro_paths[0], "/data");
        assert_string_equal(cfg.ro_paths[1], "/with space");
        assert_string_equal(cfg.ro_paths[2], "/more");
        assert_string_equal(cfg.ro_paths[3], "/after-blank");
        /* += keeps the defaults and does not repeat an item */
        assert_true(strv_has(cfg.masks, "/etc/machine-id"));
        assert_true(strv_has(cfg.masks, "/etc/extra"));
        {
                size_t shadows = 0;
                for (char **m = cfg.masks; *m; m++)
                        shadows += streq(*m, "/etc/shadow");
                assert_int_equal(shadows, 1);
        }
        assert_null(cfg.tmpfs_paths);
        assert_int_equal(strv_length(cfg.ro_binds), 1);
        assert_from(&cfg, "filesystem.ro", "t.ini:4");

        /* the command line: one item per flag, appended; empty clears */
        assert_int_equal(profile_set_key(&cfg, "ro", "/cli path", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(strv_length(cfg.ro_paths), 5);
        assert_string_equal(cfg.ro_paths[4], "/cli path");
        assert_int_equal(profile_set_key(&cfg, "system-dirs", "", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_null(cfg.ro_binds);
        assert_int_equal(profile_set_key(&cfg, "system-dirs", "/lib", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(strv_length(cfg.ro_binds), 1);
        assert_from(&cfg, "filesystem.system_dirs", "cli");

        /* env: by "env" NAME=VALUE and by "env.NAME"; later wins */
        assert_int_equal(profile_set_key(&cfg, "env", "A=1", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&cfg, "env", "B=x=y", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&cfg, "env.A", "2", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(strv_length(cfg.env), 2);
        assert_string_equal(cfg.env[0], "A=2");
        assert_string_equal(cfg.env[1], "B=x=y");
        assert_from(&cfg, "env.A", "cli");
        run_config_done(&cfg);
}

/* ---- errors ------------------------------------------------------------------ */

static void errors(void **state)
{
        static const struct {
                const char *text;
                int r;
                const char *error;
        } cases[] = {
                /* bad values, one per type */
                { "[limits]\nmemory = lots\n", -EINVAL,
                  "profile t.ini:2: memory: expected a size like 512M or none, got \"lots\"" },
                { "[limits]\ndisk = 0\n", -EINVAL,
                  "profile t.ini:2: disk: expected a size from 1M to 16T, got \"0\"" },
                { "[limits]\nmemory = 1K\n", -EINVAL,
                  "profile t.ini:2: memory: expected a size from 1M to 16T, or none, got \"1K\"" },
                { "[limits]\ntimeout = soon\n", -EINVAL,
                  "profile t.ini:2: timeout: expected a duration like 30s or none, got \"soon\"" },
                { "[limits]\ntimeout = 31d\n", -EINVAL,
                  "profile t.ini:2: timeout: expected a duration from 1ms to 30d, or none, got \"31d\"" },
                { "[limits]\ngrace = -1s\n", -EINVAL,
                  "profile t.ini:2: grace: expected a duration like 30s, got \"-1s\"" },
                { "[limits]\npids = 12abc\n", -EINVAL,
                  "profile t.ini:2: pids: expected a whole number or none, got \"12abc\"" },
                { "[limits]\nnofile = 8\n", -EINVAL,
                  "profile t.ini:2: nofile: expected a whole number from 16 to 1048576, got \"8\"" },
                { "[limits]\ncpus = 0.1234\n", -EINVAL,
                  "profile t.ini:2: cpus: expected a number like 1.5 (at most 3 decimals) or none, got \"0.1234\"" },
                { "[limits]\ncpus = 2000\n", -EINVAL,
                  "profile t.ini:2: cpus: expected a number from 0 to 1024, or none, got \"2000\"" },
                { "[seccomp]\nallow_ptrace = maybe\n", -EINVAL,
                  "profile t.ini:2: allow_ptrace: expected yes or no, got \"maybe\"" },
                { "[network]\nmode = bridge\n", -EINVAL,
                  "profile t.ini:2: mode: expected one of none, host, allow, got \"bridge\"" },
                { "[seccomp]\ndefault_action = trap\n", -EINVAL,
                  "profile t.ini:2: default_action: expected one of errno, kill, log, got \"trap\"" },
                { "[seccomp]\nmode = some\n", -EINVAL,
                  "profile t.ini:2: mode: expected one of deny, allow, got \"some\"" },
                { "[seccomp]\ndeny = ptrace @ bpf\n", -EINVAL,
                  "profile t.ini:2: deny: expected a syscall name or @group, got \"@\"" },
                { "[limits]\nrequire = memory grace\n", -EINVAL,
                  "profile t.ini:2: require: expected a limit name (timeout, cpu_time, memory, memory_high, "
                  "cpus, pids, nofile, disk, max_file_size, io_max), got \"grace\"" },
                { "[filesystem]\nro = /ok relative\n", -EINVAL,
                  "profile t.ini:2: ro: expected an absolute path without \"..\", got \"relative\"" },
                { "[filesystem]\nro = /a/../etc\n", -EINVAL,
                  "profile t.ini:2: ro: expected an absolute path without \"..\", got \"/a/../etc\"" },
                { "[filesystem]\nro = \"/unbalanced\n", -EINVAL,
                  "profile t.ini:2: ro: expected items separated by blanks, with balanced \"quotes\", "
                  "got \"\"/unbalanced\"" },
                { "[filesystem]\nroot = /a::/b\n", -EINVAL,
                  "profile t.ini:2: root: expected \"host\" or absolute dirs separated by ':', got \"/a::/b\"" },
                { "[sandbox]\nhostname = -bad\n", -EINVAL,
                  "profile t.ini:2: hostname: expected a host name (letters, digits, '-' and '.', at most 63), "
                  "got \"-bad\"" },
                { "[sandbox]\nhostname = a..b\n", -EINVAL,
                  "profile t.ini:2: hostname: expected a host name (letters, digits, '-' and '.', at most 63), "
                  "got \"a..b\"" },
                { "[sandbox]\nworkdir = work\n", -EINVAL,
                  "profile t.ini:2: workdir: expected an absolute path without \"..\", got \"work\"" },
                { "[sandbox]\nuid = 4294967295\n", -EINVAL,
                  "profile t.ini:2: uid: expected a whole number from 0 to 4294967294, got \"4294967295\"" },
                { "[env]\n1BAD = x\n", -EINVAL,
                  "profile t.ini:2: expected a variable name (letters, digits, '_'), got \"1BAD\"" },
                /* structure */
                { "[limit]\nmemory = 1G\n", -EINVAL,
                  "profile t.ini:1: unknown section [limit] (known: artifacts, env, filesystem, limits, network, "
                  "sandbox, seccomp)" },
                { "[limits]\n[emptymisspelt]\n", -EINVAL,
                  "profile t.ini:2: unknown section [emptymisspelt] (known: artifacts, env, filesystem, limits, "
                  "network, sandbox, seccomp)" },
                { "[limits]\nmemroy = 1G\n", -EINVAL, "profile t.ini:2: memroy: unknown key in [limits]" },
                { "[sandbox]\nmemory = 1G\n", -EINVAL,
                  "profile t.ini:2: memory: unknown key in [sandbox] (it belongs in [limits])" },
                { "memory = 1G\n", -EINVAL,
                  "profile t.ini:1: memory: unknown key at the top level (it belongs in [limits])" },
                { "colour = blue\n", -EINVAL,
                  "profile t.ini:1: colour: unknown key at the top level (only extends and description go there)" },
                { "[limits]\ndescription = x\n", -EINVAL,
                  "profile t.ini:2: description: unknown key in [limits] (it belongs at the top, before any section)" },
                { "[limits]\nmemory = 1G\npids = 5\nmemory = 2G\n", -EINVAL,
                  "profile t.ini:4: memory: duplicate key (first set on line 2)" },
                { "[limits]\nmemory = 1G\n[limits]\nmemory = 2G\n", -EINVAL,
                  "profile t.ini:4: memory: duplicate key (first set on line 2)" },
                { "[env]\nA = 1\nA = 2\n", -EINVAL, "profile t.ini:3: A: duplicate key (first set on line 2)" },
                { "[limits]\ntimeout = 10s\n  memory = 1G\n", -EINVAL,
                  "profile t.ini:3: timeout: unexpected indented line (only lists and description continue on "
                  "indented lines)" },
                { "[limits]\nmemory += 1G\n", -EINVAL, "profile t.ini:2: memory: += only works on lists" },
                { "[limits]\nmemory 1G\n", -EINVAL,
                  "profile t.ini:2: expected \"key = value\", \"[section]\" or a comment" },
                { "[limits\n", -EINVAL, "profile t.ini:1: expected \"key = value\", \"[section]\" or a comment" },
                { "[filesystem]\nrw = /tmp\n", -EPERM, NULL /* checked in trust() */ },
                { "extends = no/such/dir/x.ini\n", -ENOENT,
                  "profile t.ini:1: extends: cannot read no/such/dir/x.ini: No such file or directory" },
                { "extends = bad name!\n", -EINVAL,
                  "profile t.ini:1: extends: expected a profile name or path, got \"bad name!\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct run_config cfg;
                _cleanup_free_ char *err = NULL;

                run_config_init(&cfg);
                print_message("# case %zu: %s", i, cases[i].text);
                assert_int_equal(profile_load_text(&cfg, cases[i].text, "t.ini", false, &err), cases[i].r);
                assert_non_null(err);
                if (cases[i].error)
                        assert_string_equal(err, cases[i].error);
                run_config_done(&cfg);
        }
}

static void validate(void **state)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        run_config_init(&cfg);
        assert_int_equal(profile_validate(&cfg, &err), 0);
        assert_int_equal(profile_load_text(&cfg, "[limits]\nmemory_high = 1G\n", "t.ini", true, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), -EINVAL);
        assert_string_equal(err, "profile t.ini:2: memory_high: 1G is above memory (512M)");
        assert_int_equal(profile_set_key(&cfg, "memory", "none", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), 0);
        assert_int_equal(profile_set_key(&cfg, "require", "memory", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), -EINVAL);
        assert_string_equal(err, "--require: memory must be enforced but is set to none");
        assert_int_equal(profile_set_key(&cfg, "memory", "2G", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), 0);
        run_config_done(&cfg);

        /* the workspace must not hide a system dir; inside one is fine */
        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg, "[sandbox]\nworkdir = /usr\n", "t.ini", true, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), -EINVAL);
        assert_string_equal(err, "profile t.ini:2: workdir: /usr would hide the system dir /usr");
        assert_int_equal(profile_set_key(&cfg, "workdir", "//opt/", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), -EINVAL);
        assert_string_equal(err, "--workdir-inside: //opt/ would hide the system dir /opt");
        assert_int_equal(profile_set_key(&cfg, "workdir", "/usr/src/app", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), 0);
        assert_int_equal(profile_set_key(&cfg, "workdir", "/optional", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_validate(&cfg, &err), 0);
        /* not the root, nor what the sandbox mounts itself */
        static const char *const bad[] = { "/", "///", "/proc", "/proc/1", "/dev", "//dev//shm" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *want = xasprintf("--workdir-inside: expected an absolute path other than /, "
                                                      "outside /proc and /dev, got \"%s\"", bad[i]);
                assert_int_equal(profile_set_key(&cfg, "workdir", bad[i], ORIGIN_CLI, NULL, 0, &err), -EINVAL);
                assert_string_equal(err, want);
        }
        assert_int_equal(profile_set_key(&cfg, "workdir", "/devel", ORIGIN_CLI, NULL, 0, &err), 0);
        run_config_done(&cfg);
}

static void long_lines(void **state)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL, *text = NULL, *name = NULL, *longname = NULL;
        char value[300];

        memset(value, 'x', sizeof(value) - 1);
        value[sizeof(value) - 1] = '\0';
        text = xasprintf("[limits]\n\ndescription = %s\n", value);
        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg, text, "t.ini", true, &err), -EINVAL);
        assert_string_equal(err, "profile t.ini:3: line longer than 198 characters");
        run_config_done(&cfg);

        name = xstrdup("[env]\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA = 1\n");
        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg, name, "t.ini", true, &err), -EINVAL);
        assert_string_equal(err, "profile t.ini:2: name longer than 48 characters");
        run_config_done(&cfg);

        longname = xstrdup("[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n");
        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg, longname, "t.ini", true, &err), -EINVAL);
        assert_string_equal(err, "profile t.ini:1: name longer than 48 characters");
        run_config_done(&cfg);
}

static void cli_errors(void **state)
{
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        run_config_init(&cfg);
        assert_int_equal(profile_set_key(&cfg, "memory", "lots", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--memory: expected a size like 512M or none, got \"lots\"");
        assert_int_equal(profile_set_key(&cfg, "memory_high", "1", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--memory-high: expected a size from 1M to 16T, or auto, got \"1\"");
        assert_int_equal(profile_set_key(&cfg, "memroy", "1G", ORIGIN_CLI, NULL, 0, &err), -ENOENT);
        assert_string_equal(err, "--memroy: unknown key");
        assert_int_equal(profile_set_key(&cfg, "env", "NOEQUALS", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--env: expected NAME=VALUE, got \"NOEQUALS\"");
        assert_int_equal(profile_set_key(&cfg, "env", "A B=1", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--env: expected a variable name (letters, digits, '_'), got \"A B\"");
        assert_int_equal(profile_set_key(&cfg, "description", "x ;y", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--description: value may not contain control characters or \" ;\"");
        assert_int_equal(profile_set_key(&cfg, "hostname", "a\nb", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_int_equal(profile_set_key(&cfg, "ro", "rel", ORIGIN_CLI, NULL, 0, &err), -EINVAL);
        assert_string_equal(err, "--ro: expected an absolute path without \"..\", got \"rel\"");
        /* failures leave the config as it was */
        assert_int_equal(cfg.memory_bytes, 512ULL << 20);
        assert_null(cfg.ro_paths);
        assert_null(cfg.env);
        /* pairs in order; the first bad one stops and is reported */
        {
                char *pairs[] = { "pids", "10", "env", "X=1", "pids", "11", "timeout", "x", "pids", "12", NULL };
                assert_int_equal(profile_apply_cli(&cfg, pairs, &err), -EINVAL);
                assert_string_equal(err, "--timeout: expected a duration like 30s or none, got \"x\"");
                assert_int_equal(cfg.pids, 11);
                assert_string_equal(cfg.env[0], "X=1");
                strv_free(cfg.env);
                cfg.env = NULL;
        }
        /* the command line may ask for rw */
        assert_int_equal(profile_set_key(&cfg, "rw", "/tmp", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_string_equal(cfg.rw_paths[0], "/tmp");
        run_config_done(&cfg);
}

/* ---- inheritance, precedence, search ----------------------------------------- */

static void inheritance(void **state)
{
        struct scratch *s = *state;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        put(s->data, "base.ini",
            "description = base\n"
            "[limits]\n"
            "memory = 1G\n"
            "pids = 100\n"
            "[filesystem]\n"
            "ro = /base\n"
            "[env]\n"
            "A = base\n"
            "B = base\n");
        put(s->data, "mid.ini",
            "extends = base\n"
            "[limits]\n"
            "memory = 2G\n"
            "[filesystem]\n"
            "ro += /mid\n"
            "[env]\n"
            "B = mid\n");
        put(s->user, "top.ini",
            "# comment\n"
            "[limits]\n"
            "timeout = 5s\n"
            "extends = mid\n");  /* not at the top: an unknown key in [limits] */
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "top", &err), -EINVAL);
        assert_string_equal(err, "profile top.ini:4: extends: unknown key in [limits] (it belongs at the top, before any section)");
        run_config_done(&cfg);

        put(s->user, "top.ini",
            "# comment\n"
            "extends = mid\n"
            "[limits]\n"
            "timeout = 5s\n"
            "pids = 50\n");
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "top", &err), 0);
        assert_string_equal(cfg.profile_name, "top");
        assert_true(startswith(cfg.profile_path, s->user));
        assert_int_equal(strv_length(cfg.profile_files), 3);
        assert_true(strstr(cfg.profile_files[0], "/top.ini") != NULL);
        assert_true(strstr(cfg.profile_files[1], "/mid.ini") != NULL);
        assert_true(strstr(cfg.profile_files[2], "/base.ini") != NULL);

        assert_string_equal(cfg.description, "base");
        assert_from(&cfg, "description", "base.ini:1");
        assert_int_equal(cfg.memory_bytes, 2ULL << 30);
        assert_from(&cfg, "limits.memory", "mid.ini:3");
        assert_int_equal(cfg.pids, 50);
        assert_from(&cfg, "limits.pids", "top.ini:5");
        assert_int_equal(cfg.timeout_ms, 5000);
        assert_from(&cfg, "limits.timeout", "top.ini:4");
        assert_from(&cfg, "limits.disk", "default");
        assert_int_equal(strv_length(cfg.ro_paths), 2);
        assert_string_equal(cfg.ro_paths[1], "/mid");
        assert_true(strv_has(cfg.env, "A=base"));
        assert_true(strv_has(cfg.env, "B=mid"));
        assert_from(&cfg, "env.A", "base.ini:8");
        assert_from(&cfg, "env.B", "mid.ini:7");
        assert_int_equal(run_config_origin(&cfg, "limits.memory")->origin, ORIGIN_FILE);

        /* then the command line beats every file */
        assert_int_equal(profile_set_key(&cfg, "memory", "3G", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&cfg, "env", "B=cli", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(cfg.memory_bytes, 3ULL << 30);
        assert_from(&cfg, "limits.memory", "cli");
        assert_true(strv_has(cfg.env, "B=cli"));
        assert_from(&cfg, "env.B", "cli");
        run_config_done(&cfg);

        /* a path works like a name, and extends by path is relative to the file */
        put(s->elsewhere, "child.ini", "extends = ../data/base.ini\n[limits]\npids = 7\n");
        {
                _cleanup_free_ char *p = xasprintf("%s/child.ini", s->elsewhere);
                run_config_init(&cfg);
                assert_int_equal(profile_load(&cfg, p, &err), 0);
                assert_string_equal(cfg.profile_name, "child");
                assert_int_equal(cfg.pids, 7);
                assert_int_equal(cfg.memory_bytes, 1ULL << 30);
                assert_int_equal(run_config_origin(&cfg, "limits.pids")->origin, ORIGIN_FILE_UNTRUSTED);
                /* base.ini lies in a trusted dir even when reached by path */
                assert_int_equal(run_config_origin(&cfg, "limits.memory")->origin, ORIGIN_FILE);
                run_config_done(&cfg);
        }
}

/* ~/.config/hutch/profiles/NAME.ini may extend the NAME further down the path */
static void extend_same_name(void **state)
{
        struct scratch *s = *state;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL, *expect = NULL;

        put(s->data, "python.ini", "[limits]\nmemory = 1G\npids = 10\n");
        put(s->user, "python.ini", "extends = python\n[limits]\npids = 20\n");
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "python", &err), 0);
        assert_int_equal(cfg.memory_bytes, 1ULL << 30);
        assert_int_equal(cfg.pids, 20);
        assert_from(&cfg, "limits.pids", "python.ini:3");
        /* the two files share a name, so the inherited one shows its path */
        expect = xasprintf("%s/python.ini:2", s->data);
        assert_from(&cfg, "limits.memory", expect);
        run_config_done(&cfg);
}

static void extends_errors(void **state)
{
        struct scratch *s = *state;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL, *expect = NULL;

        put(s->data, "a.ini", "extends = b\n");
        put(s->data, "b.ini", "\nextends = a\n");
        put(s->data, "self.ini", "extends = self\n");
        put(s->data, "orphan.ini", "[limits]\npids = 1\n\nextends = gone\n");
        put(s->data, "orphan.ini", "extends = gone\n");
        put(s->data, "badchild.ini", "extends = badparent\n");
        put(s->data, "badparent.ini", "[limits]\npids = many\n");

        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "a", &err), -ELOOP);
        assert_string_equal(err, "profile b.ini:2: extends: cycle: a -> b -> a");
        run_config_done(&cfg);

        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "self", &err), -ENOENT);
        /* extending your own name looks further down the path: nothing there */
        assert_true(startswith(err, "profile self.ini:1: extends: no profile named \"self\" (looked in "));
        run_config_done(&cfg);

        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "orphan", &err), -ENOENT);
        expect = xasprintf("profile orphan.ini:1: extends: no profile named \"gone\" (looked in %s, "
                           "/etc/hutch/profiles, %s%s)", s->user,
                           streq(HUTCH_SYSCONFDIR, "/etc") ? "" : HUTCH_SYSCONFDIR "/hutch/profiles, ", s->data);
        assert_string_equal(err, expect);
        run_config_done(&cfg);

        /* an error in a parent names the parent's file and line */
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "badchild", &err), -EINVAL);
        assert_string_equal(err, "profile badparent.ini:2: pids: expected a whole number or none, got \"many\"");
        run_config_done(&cfg);

        /* chains deeper than 16 */
        for (int i = 0; i < 20; i++) {
                _cleanup_free_ char *name = xasprintf("deep%d.ini", i);
                _cleanup_free_ char *text = xasprintf("extends = deep%d\n", i + 1);
                put(s->data, name, text);
        }
        put(s->data, "deep20.ini", "");
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "deep0", &err), -ELOOP);
        assert_string_equal(err, "profile deep15.ini:1: extends: more than 16 profiles in the chain");
        run_config_done(&cfg);

        /* not found, by name and by path; a name must look like one */
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "nope", &err), -ENOENT);
        assert_true(startswith(err, "profile \"nope\" not found (looked in "));
        assert_int_equal(profile_load(&cfg, "./nope.ini", &err), -ENOENT);
        assert_string_equal(err, "profile ./nope.ini: cannot read: No such file or directory");
        assert_int_equal(profile_load(&cfg, "/dev/null/x.ini", &err), -ENOTDIR);
        assert_int_equal(profile_load(&cfg, "/dev/zero", &err), -EINVAL);
        assert_string_equal(err, "profile /dev/zero: not a regular file");
        assert_int_equal(profile_load(&cfg, "bad name", &err), -EINVAL);
        assert_string_equal(err, "profile \"bad name\": expected a name (letters, digits, '-', '_', '.') or a path");
        run_config_done(&cfg);

        /* a NUL byte */
        {
                _cleanup_free_ char *p = xasprintf("%s/nul.ini", s->elsewhere);
                FILE *f = fopen(p, "w");
                assert_non_null(f);
                fwrite("[limits]\0\n", 1, 10, f);
                fclose(f);
                run_config_init(&cfg);
                assert_int_equal(profile_load(&cfg, p, &err), -EINVAL);
                free(expect);
                expect = xasprintf("profile %s: contains a NUL byte", p);
                assert_string_equal(err, expect);
                run_config_done(&cfg);
        }
}

static void implicit_default(void **state)
{
        struct scratch *s = *state;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL;

        /* no default.ini anywhere: the built-in defaults are the default */
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, NULL, &err), 0);
        assert_null(cfg.profile_path);
        assert_null(cfg.profile_files);
        run_config_done(&cfg);

        put(s->data, "default.ini", "[limits]\npids = 3\n");
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, NULL, &err), 0);
        assert_int_equal(cfg.pids, 3);
        assert_non_null(cfg.profile_path);
        run_config_done(&cfg);
}

static void trust(void **state)
{
        struct scratch *s = *state;
        struct run_config cfg;
        _cleanup_free_ char *err = NULL, *untrusted = NULL, *trusted = NULL, *expect = NULL;
        _cleanup_free_ char *via_link = NULL, *link_target = NULL;
        static const char rw[] = "[filesystem]\nrw = /srv/data\n";

        put(s->elsewhere, "rw.ini", rw);
        put(s->data, "rw.ini", rw);
        untrusted = xasprintf("%s/rw.ini", s->elsewhere);
        trusted = xasprintf("%s/rw.ini", s->data);

        assert_false(profile_path_is_trusted(untrusted));
        assert_true(profile_path_is_trusted(trusted));

        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, untrusted, &err), -EPERM);
        expect = xasprintf("profile %s:2: rw: writable binds: refused from a profile outside the trusted "
                           "directories (%s, /etc/hutch/profiles, %s%s); put it there, pass --trust-profile, "
                           "or give the value on the command line",
                           untrusted, s->user,
                           streq(HUTCH_SYSCONFDIR, "/etc") ? "" : HUTCH_SYSCONFDIR "/hutch/profiles, ", s->data);
        assert_string_equal(err, expect);
        assert_null(cfg.rw_paths);
        run_config_done(&cfg);

        /* by name, or by a path into a trusted dir: honoured */
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, "rw", &err), 0);
        assert_string_equal(cfg.rw_paths[0], "/srv/data");
        run_config_done(&cfg);
        run_config_init(&cfg);
        assert_int_equal(profile_load(&cfg, trusted, &err), 0);
        run_config_done(&cfg);

        /* a symlink into a trusted dir does not make an outside file trusted */
        via_link = xasprintf("%s/link.ini", s->data);
        assert_int_equal(symlink(untrusted, via_link), 0);
        assert_false(profile_path_is_trusted(via_link));
        link_target = xasprintf("%s/up", s->elsewhere);
        assert_int_equal(symlink(s->data, link_target), 0);
        {
                _cleanup_free_ char *p = xasprintf("%s/up/rw.ini", s->elsewhere);
                assert_true(profile_path_is_trusted(p));
        }

        /* clearing rw is fine from anywhere */
        run_config_init(&cfg);
        assert_int_equal(profile_load_text(&cfg, "[filesystem]\nrw =\n", "t.ini", false, &err), 0);
        run_config_done(&cfg);
}

static void listing(void **state)
{
        struct scratch *s = *state;
        _cleanup_strv_ char **names = NULL, **paths = NULL;
        _cleanup_free_ char *user_b = NULL;

        put(s->data, "b.ini", "");
        put(s->data, "a.ini", "");
        put(s->user, "b.ini", "");
        put(s->data, "not-a-profile.txt", "");
        put(s->data, ".hidden.ini", "");
        assert_int_equal(profile_list(&names, &paths), 2);
        assert_string_equal(names[0], "a");
        assert_string_equal(names[1], "b");
        user_b = xasprintf("%s/b.ini", s->user);
        assert_string_equal(paths[1], user_b);      /* the user's copy wins */
        assert_null(names[2]);
}

static void search_dirs(void **state)
{
        struct scratch *s = *state;
        _cleanup_strv_ char **dirs = NULL, **dirs2 = NULL, **dirs3 = NULL;

        dirs = profile_search_dirs();
        assert_string_equal(dirs[0], s->user);
        assert_string_equal(dirs[1], "/etc/hutch/profiles");
        assert_string_equal(dirs[strv_length(dirs) - 1], s->data);

        setenv("HUTCH_PROFILE_PATH", "/one::/two", 1);
        dirs2 = profile_search_dirs();
        assert_string_equal(dirs2[strv_length(dirs2) - 2], "/one");
        assert_string_equal(dirs2[strv_length(dirs2) - 1], "/two");

        unsetenv("HUTCH_PROFILE_PATH");
        unsetenv("XDG_CONFIG_HOME");
        setenv("HOME", "/home/someone", 1);
        dirs3 = profile_search_dirs();
        assert_string_equal(dirs3[0], "/home/someone/.config/hutch/profiles");
        assert_string_equal(dirs3[strv_length(dirs3) - 1], HUTCH_DATADIR "/profiles");
        setenv("HUTCH_PROFILE_PATH", s->data, 1);
        setenv("XDG_CONFIG_HOME", s->xdg, 1);
}

/* ---- the shipped profiles, canonical text, sha256 ------------------------------ */

static void shipped(void **state)
{
        static const char *const names[] = { "default", "python", "node", "bash", "strict", "untrusted", "ci" };

        setenv("HUTCH_PROFILE_PATH", shipped_dir, 1);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                struct run_config cfg, again;
                _cleanup_free_ char *err = NULL, *text = NULL, *text2 = NULL;

                run_config_init(&cfg);
                print_message("# profile %s\n", names[i]);
                assert_int_equal(profile_load(&cfg, names[i], &err), 0);
                assert_null(err);
                assert_string_equal(cfg.profile_name, names[i]);
                assert_non_null(cfg.description);
                assert_true(strlen(cfg.description) > 10);
                /* every file was written to be read: it names each key it
                 * sets, the defaults file every key of the table */
                if (streq(names[i], "default"))
                        for (size_t k = 0; k < profile_n_keys; k++) {
                                _cleanup_free_ char *id = profile_keys[k].section[0]
                                        ? xasprintf("%s.%s", profile_keys[k].section, profile_keys[k].name)
                                        : xstrdup(profile_keys[k].name);
                                const struct key_origin *o = run_config_origin(&cfg, id);
                                print_message("# key %s\n", id);
                                assert_int_equal(o->origin, ORIGIN_FILE);
                        }

                /* canonical text reads back to itself */
                text = profile_canonical_text(&cfg);
                run_config_init(&again);
                assert_int_equal(profile_load_text(&again, text, "canonical", true, &err), 0);
                text2 = profile_canonical_text(&again);
                assert_string_equal(text, text2);
                run_config_done(&again);
                run_config_done(&cfg);
        }

        {
                /* what the shipped files promise */
                struct run_config cfg;
                _cleanup_free_ char *err = NULL;

                run_config_init(&cfg);
                assert_int_equal(profile_load(&cfg, "default", &err), 0);
                assert_int_equal(cfg.timeout_ms, 30000);
                assert_int_equal(cfg.memory_bytes, 512ULL << 20);
                assert_true(cfg.cpus == 1.0);
                assert_int_equal(cfg.pids, 256);
                assert_int_equal(cfg.disk_bytes, 1ULL << 30);
                assert_int_equal(cfg.capture_bytes, 64 << 10);
                assert_int_equal(cfg.net, NET_NONE);
                run_config_done(&cfg);

                run_config_init(&cfg);
                assert_int_equal(profile_load(&cfg, "ci", &err), 0);
                assert_int_equal(cfg.net, NET_HOST);
                assert_true(cfg.timeout_ms > 30000);
                run_config_done(&cfg);

                run_config_init(&cfg);
                assert_int_equal(profile_load(&cfg, "strict", &err), 0);
                assert_true(cfg.memory_bytes < 512ULL << 20);
                assert_true(cfg.timeout_ms < 30000);
                assert_true(strv_length(cfg.ro_binds) < 9);
                assert_true(strv_has(cfg.masks, "/etc/shadow"));   /* += kept the defaults */
                assert_int_equal(cfg.net, NET_NONE);
                run_config_done(&cfg);
        }
        setenv("HUTCH_PROFILE_PATH", ((struct scratch *)*state)->data, 1);
}

static void canonical(void **state)
{
        struct run_config a, b;
        _cleanup_free_ char *err = NULL, *ta = NULL, *tb = NULL;
        char sha[DIGEST_HEX_SIZE];

        /* the built-in defaults: a golden text and hash. If this fails you
         * changed a default or the canonical form; both change the hash
         * stored with every future run, so update it on purpose. */
        run_config_init(&a);
        ta = profile_canonical_text(&a);
        assert_string_equal(ta,
                "description =\n"
                "\n[artifacts]\n"
                "dir = /workspace/output\n"
                "max_bytes = 128M\n"
                "max_files = 1000\n"
                "\n[filesystem]\n"
                "mask = /etc/shadow /etc/shadow- /etc/gshadow /etc/gshadow- /etc/sudoers\n"
                "        /etc/sudoers.d /etc/security/opasswd /etc/ssh/ssh_host_*key\n"
                "        /etc/ssl/private /etc/credstore /etc/credstore.encrypted\n"
                "        /etc/machine-id\n"
                "ro =\n"
                "root = host\n"
                "rw =\n"
                "system_dirs = /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt\n"
                "tmpfs =\n"
                "\n[limits]\n"
                "capture = 64K\n"
                "cpu_time = none\n"
                "cpus = 1\n"
                "disk = 1G\n"
                "grace = 2s\n"
                "inodes = 65536\n"
                "io_max =\n"
                "max_changes = 10000\n"
                "max_file_size = none\n"
                "max_path = 1024\n"
                "memory = 512M\n"
                "memory_high = auto\n"
                "nofile = 4096\n"
                "pids = 256\n"
                "require =\n"
                "timeout = 30s\n"
                "\n[network]\n"
                "add_host =\n"
                "allow =\n"
                "deny =\n"
                "max_bytes = 1G\n"
                "max_connections = 64\n"
                "mode = none\n"
                "\n[sandbox]\n"
                "gid = 1000\n"
                "hostname = sandbox\n"
                "runtime = native\n"
                "session_ttl = 1d\n"
                "snapshot = no\n"
                "uid = 1000\n"
                "workdir = /workspace\n"
                "\n[seccomp]\n"
                "allow =\n"
                "allow_io_uring = no\n"
                "allow_ptrace = no\n"
                "default_action = errno\n"
                "deny =\n"
                "mode = deny\n");
        profile_sha256_hex(ta, sha);
        assert_string_equal(sha, "ec08f26760e568ab3a5b43a88ae947a25111c0efb2c063beab291467b18ed2c8");

        /* the same settings reached differently give the same text */
        assert_int_equal(profile_load_text(&a,
                "[env]\nZ = 1\nA = 2\n[limits]\nmemory = 1024M\ntimeout = 60000ms\n", "x.ini", true, &err), 0);
        run_config_init(&b);
        assert_int_equal(profile_set_key(&b, "timeout", "1m", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&b, "env", "A=2", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&b, "memory", "1G", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&b, "env", "Z=1", ORIGIN_CLI, NULL, 0, &err), 0);
        free(ta);
        ta = profile_canonical_text(&a);
        tb = profile_canonical_text(&b);
        assert_string_equal(ta, tb);
        assert_true(strstr(ta, "\n[env]\nA = 2\nZ = 1\n\n[filesystem]\n") != NULL);
        assert_true(strstr(ta, "memory = 1G\n") != NULL);
        assert_true(strstr(ta, "timeout = 1m\n") != NULL);
        run_config_done(&a);
        run_config_done(&b);

        /* a quoted item and a long description survive the round trip */
        run_config_init(&a);
        assert_int_equal(profile_set_key(&a, "ro", "/with space", ORIGIN_CLI, NULL, 0, &err), 0);
        assert_int_equal(profile_set_key(&a, "description",
                "one #1 two #2 three #3 four #4 five #5 six #6 seven #7 eight #8 nine #9 ten #10 "
                "eleven #11 twelve #12 thirteen #13", ORIGIN_CLI, NULL, 0, &err), 0);
        free(ta);
        ta = profile_canonical_text(&a);
        assert_true(strstr(ta, "ro = \"/with space\"\n") != NULL);
        run_config_init(&b);
        assert_int_equal(profile_load_text(&b, ta, "c.ini", true, &err), 0);
        assert_string_equal(a.description, b.description);
        assert_string_equal(b.ro_paths[0], "/with space");
        free(tb);
        tb = profile_canonical_text(&b);
        assert_string_equal(ta, tb);
        run_config_done(&a);
        run_config_done(&b);
}

/* hutch-profile(5) is hand-written: make sure it has an entry for every key,
 * under the right section, with its flag. */
static void man_page(void **state)
{
        const char *tests_dir = getenv("TESTS_DIR");
        _cleanup_free_ char *path = xasprintf("%s/../man/hutch-profile.5", tests_dir ? tests_dir : "tests");
        _cleanup_free_ char *man = NULL;

        assert_int_equal(read_file(path, &man, NULL), 0);
        for (size_t i = 0; i < profile_n_keys; i++) {
                const struct profile_key *k = &profile_keys[i];
                _cleanup_free_ char *heading = k->section[0] ? xasprintf("\n.SS [%s]\n", k->section)
                                                             : xstrdup("\n.SS Top level\n");
                _cleanup_free_ char *entry = xasprintf("\n.B %s = ", k->name);
                _cleanup_free_ char *flag = xstrdup("\\-\\-");
                const char *start, *end, *at;

                for (const char *c = k->flag; *c; c++) {
                        char *t = *c == '-' ? xasprintf("%s\\-", flag) : xasprintf("%s%c", flag, *c);
                        free(flag);
                        flag = t;
                }
                print_message("# man: [%s] %s (%s)\n", k->section, k->name, flag);
                start = strstr(man, heading);
                assert_non_null(start);
                end = strstr(start + 1, "\n.SS ");
                if (!end)
                        end = strstr(start + 1, "\n.SH ");
                assert_non_null(end);
                at = strstr(start, entry);
                assert_non_null(at);
                assert_true(at < end);
                if (!streq(k->name, "description"))
                        assert_non_null(strstr(at, flag));
        }
}

static void cli_options(void **state)
{
        static const struct option own[] = {
                { "timeout", required_argument, NULL, 't' },
                {}
        };
        _cleanup_free_ struct option *opts = profile_cli_options(own, 1000);
        size_t n = 0, timeout = 0;

        while (opts[n].name)
                n++;
        assert_int_equal(n, 1 + profile_n_keys + 1);
        assert_string_equal(opts[0].name, "timeout");
        assert_int_equal(opts[0].val, 't');
        for (size_t i = 0; i < n; i++)
                timeout += streq(opts[i].name, "timeout");
        assert_int_equal(timeout, 2);   /* the verb's own comes first and wins */
        assert_string_equal(opts[1].name, profile_keys[0].flag);
        assert_int_equal(opts[1].val, 1000);
        assert_string_equal(opts[n - 1].name, "env");
        assert_int_equal(opts[n - 1].val, 1000 + (int)profile_n_keys);
        assert_int_equal(opts[n - 1].has_arg, required_argument);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(table),
                cmocka_unit_test(defaults),
                cmocka_unit_test(values),
                cmocka_unit_test(lists),
                cmocka_unit_test(errors),
                cmocka_unit_test(long_lines),
                cmocka_unit_test(cli_errors),
                cmocka_unit_test(validate),
                cmocka_unit_test_setup_teardown(inheritance, setup, teardown),
                cmocka_unit_test_setup_teardown(extend_same_name, setup, teardown),
                cmocka_unit_test_setup_teardown(extends_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(implicit_default, setup, teardown),
                cmocka_unit_test_setup_teardown(trust, setup, teardown),
                cmocka_unit_test_setup_teardown(listing, setup, teardown),
                cmocka_unit_test_setup_teardown(search_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(shipped, setup, teardown),
                cmocka_unit_test(canonical),
                cmocka_unit_test(cli_options),
                cmocka_unit_test(man_page),
        };
        const char *p = getenv("HUTCH_PROFILE_PATH");

        /* the shipped profiles, as make check points at them */
        shipped_dir = xstrdup(p && *p ? p : "profiles");
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
