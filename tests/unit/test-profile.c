/* test-profile.c - the profile layer: the key table, value parsing (sizes,
 * durations, lists), every error path with its exact message, and the
 * canonical text with its sha256. Inheritance, precedence, search, trust
 * and the shipped profiles are test-profile-files.c.
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
#include "test-profile.h"

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
                                    startswith(k->flag, "admission-") ||
                                    startswith(k->flag, "artifacts-") || startswith(k->flag, "net-") ||
                                    startswith(k->flag, "apply-") ||
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
                  "cpus, pids, nofile, disk, max_file_size, io_max) or isolation=namespaces, got \"grace\"" },
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
                  "profile t.ini:1: unknown section [limit] (known: apply, artifacts, env, filesystem, limits, network, "
                  "sandbox, seccomp)" },
                { "[limits]\n[emptymisspelt]\n", -EINVAL,
                  "profile t.ini:2: unknown section [emptymisspelt] (known: apply, artifacts, env, filesystem, limits, "
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
                "\n[admission]\n"
                "max_memory = none\n"
                "max_running = none\n"
                "redundancy = 0.8\n"
                "\n[apply]\n"
                "protect =\n"
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
                "\n[image]\n"
                "max_image_size = 16G\n"
                "max_layer_size = 4G\n"
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
                "commit = success\n"
                "gid = 1000\n"
                "hostname = sandbox\n"
                "isolation = namespaces\n"
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
        assert_string_equal(sha, "4adc1f650a5a2567ce21419929c85d3f433a0ca28c2975a7a6165ce67dbe1423");

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
        assert_int_equal(n, 1 + profile_n_keys + 2);
        assert_string_equal(opts[0].name, "timeout");
        assert_int_equal(opts[0].val, 't');
        for (size_t i = 0; i < n; i++)
                timeout += streq(opts[i].name, "timeout");
        assert_int_equal(timeout, 2);   /* the verb's own comes first and wins */
        assert_string_equal(opts[1].name, profile_keys[0].flag);
        assert_int_equal(opts[1].val, 1000);
        assert_string_equal(opts[n - 2].name, "env");
        assert_int_equal(opts[n - 2].val, 1000 + (int)profile_n_keys);
        assert_int_equal(opts[n - 2].has_arg, required_argument);
        /* --image NAME: root = image:NAME (profile_apply_cli()) */
        assert_string_equal(opts[n - 1].name, "image");
        assert_int_equal(opts[n - 1].val, 1000 + (int)profile_n_keys + 1);
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
                cmocka_unit_test(canonical),
                cmocka_unit_test(cli_options),
                cmocka_unit_test(man_page),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
