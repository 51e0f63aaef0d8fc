/* test-profile-files.c - profiles as files: inheritance and override
 * precedence with provenance, the search path, trust, listing, and the
 * shipped profiles.
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
#include "test-profile.h"

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
int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(inheritance, setup, teardown),
                cmocka_unit_test_setup_teardown(extend_same_name, setup, teardown),
                cmocka_unit_test_setup_teardown(extends_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(implicit_default, setup, teardown),
                cmocka_unit_test_setup_teardown(trust, setup, teardown),
                cmocka_unit_test_setup_teardown(listing, setup, teardown),
                cmocka_unit_test_setup_teardown(search_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(shipped, setup, teardown),
        };
        const char *p = getenv("HUTCH_PROFILE_PATH");

        /* the shipped profiles, as make check points at them */
        shipped_dir = xstrdup(p && *p ? p : "profiles");
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
