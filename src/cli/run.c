/* cli/run.c - `hutch run` and `hutch rerun`: command line -> resolved
 * run_config (profile_resolve(), or a rerun's stored text) -> the --lang
 * job -> run_execute(). The run itself, as stages over the frozen
 * config, is run/run.h; what this verb keeps beside it
 * (cli/run-internal.h) is the command line in run-options.c and the
 * --request, secrets and --id key in run-agent.c.
 *
 * Resolving comes first: a bad profile runs nothing and records nothing,
 * like a bad command line.
 */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/mman.h>

#include "cli/cli.h"
#include "cli/run-internal.h"
#include "lib/exit-codes.h"
#include "config/lang.h"
#include "lib/log.h"
#include "lib/redact.h"
#include "config/profile.h"
#include "config/request.h"
#include "config/run-config.h"
#include "sandbox/sandbox.h"
#include "record/store.h"

/* The words the run says with (run/run.h): the verb's. */
static int run_apply_changeset(const struct changeset *cs, const char *target, struct blobstore *bs,
                               enum apply_protected_policy policy, char *const *protect)
{
        return cli_apply_changeset_protected("run", cs, target, bs, false, policy, protect);
}

static const struct run_ui run_ui = {
        .result_object = cli_run_json_object,
        .apply_changeset = run_apply_changeset,
        .answer_key = run_answer_key,
};

const struct run_ui *cli_run_ui(void)
{
        return &run_ui;
}

static int prepare_lang(const struct run_args *a, struct run_config *cfg, struct lang_job *lj,
                        char **ret_error)
{
        const struct lang *l;
        int r;

        r = lang_table_load(NULL, &lj->table, ret_error);
        if (r < 0)
                return r;
        r = lang_lookup(lj->table, a->lang, &l, ret_error);
        if (r < 0)
                return r;
        r = lang_plan_make(l, &lj->plan, ret_error);
        if (r < 0)
                return r;
        lj->profile = l->profile;

        /* The code travels into the sandbox as an anonymous file: nothing
         * is written on the host. */
        lj->code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
        if (lj->code_fd < 0)
                return -errno;
        if (a->code)
                r = write_all(lj->code_fd, a->code, strlen(a->code));
        else {
                _cleanup_close_ int in = a->code_stdin ? dup(STDIN_FILENO) : open(a->code_file, O_RDONLY | O_CLOEXEC);
                char buf[65536];
                ssize_t n;
                if (in < 0) {
                        *ret_error = xasprintf("--file %s: %s", a->code_file, strerror(errno));
                        return -errno;
                }
                r = 0;
                while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                r = -errno;
                                break;
                        }
                        r = write_all(lj->code_fd, buf, (size_t)n);
                }
        }
        if (r < 0 && !*ret_error)
                *ret_error = xasprintf("reading the code: %s", strerror(-r));
        return r;
}


/* The job's argv for a --lang run: the language's run command, then the
 * program's own arguments. */
static void lang_argv(struct run_config *cfg, const struct lang_job *lj)
{
        char **job_argv = NULL;
        job_argv = strv_extend(job_argv, lj->plan.run_argv);
        job_argv = strv_extend(job_argv, cfg->argv);
        strv_free(cfg->argv);
        cfg->argv = job_argv;
}

static void lang_job_done(struct lang_job *lj)
{
        if (lj->code_fd >= 0)
                close(lj->code_fd);
        lang_plan_done(&lj->plan);
        lang_table_free(lj->table);
}

int verb_run(int argc, char **argv)
{
        struct run_config cfg;
        struct run_args a = { .ui = &run_ui };
        struct lang_job lj = { .code_fd = -1 };
        struct request req = { 0 };
        _cleanup_free_ char *err = NULL;
        pid_t exiting_init = 0;
        _cleanup_free_ char *image_dir = NULL;
        _cleanup_close_ int image_fd = -1;
        int r, code = EXIT_SETUP;

        run_config_init(&cfg);
        r = run_parse_args(argc, argv, &cfg, &a);
        if (r != 0) {
                code = r < 0 ? EXIT_OK : r;
                goto out;
        }
        if (a.request) {
                code = run_apply_request(&a, &cfg, &req);
                if (code != EXIT_OK)
                        goto out;
        }
        code = run_resolve_secrets(&a, &cfg);
        if (code != EXIT_OK)
                goto out;
        /* our own messages quote the job's argv and words */
        if (cfg.redact_env)
                log_set_filter(redact, cfg.redact_env);
        a.redact = cfg.redact_env;
        if (a.detach) {
                /* the caller gets the id; the spool gets the events */
                a.events = true;
                a.json = false;
        }
        /* a finished run with the key is the answer: nothing runs */
        r = run_answer_key(&a, cfg.argv, a.id_wait);
        if (r >= 0) {
                code = r;
                goto out;
        }
        code = EXIT_SETUP;
        if (a.lang) {
                r = prepare_lang(&a, &cfg, &lj, &err);
                if (r < 0) {
                        log_error("run: %s", err ? err : strerror(-r));
                        goto out;
                }
                lang_argv(&cfg, &lj);
        }

        image_dir = cli_image_dir();
        struct profile_request preq = {
                .profile = a.profile ? a.profile : lj.profile, .trust = a.trust_profile,
                .overrides = a.overrides, .tty = cfg.tty, .image_dir = image_dir,
        };
        bool cli_error;
        r = profile_resolve(&cfg, &preq, &cli_error, &err);
        if (r < 0) {
                if (cli_error)
                        log_error("run: %s", err);
                else
                        log_error("%s", err);
                code = cli_error ? EXIT_USAGE : EXIT_SETUP;
                goto out;
        }
        if (!cfg.argv || !cfg.argv[0]) {
                log_error("run: no command given, and the image has no Entrypoint or Cmd");
                code = EXIT_USAGE;
                goto out;
        }
        /* --lang: the interpreter must be on the host's PATH, unless the
         * root is an image: then the languages.ini command runs inside
         * it and resolves on the image's PATH */
        if (a.lang && !profile_root_is_image(cfg.root)) {
                const struct lang *l;
                r = lang_lookup(lj.table, a.lang, &l, &err);
                if (r >= 0)
                        r = lang_check_host(l, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", &err);
                if (r < 0) {
                        log_error("run: %s", err ? err : strerror(-r));
                        goto out;
                }
        }
        if (cfg.net_allow && cfg.net != NET_ALLOW)
                log_warning("run: network is %s: the allow rules are not used",
                            cfg.net == NET_HOST ? "host" : "none");
        code = cli_image_hold("run", &cfg, image_dir, &image_fd);
        if (code != EXIT_OK)
                goto out;
        code = run_execute(&cfg, &lj, &a, a.lang, a.json, NULL, &exiting_init);
out:
        lang_job_done(&lj);
        strv_free(a.overrides);
        strv_free(a.inputs);
        strv_free(a.labels);
        strv_free(a.secrets);
        run_request_cleanup(&a);
        request_done(&req);
        log_set_filter(NULL, NULL);
        run_config_done(&cfg);
        if (exiting_init > 0)
                sandbox_reap(exiting_init);
        return code;
}

static void rerun_help(FILE *f)
{
        fprintf(f,
"Usage: hutch rerun [--json] [-v|-q] ID\n"
"\n"
"Run again what run ID ran (its command, or its --lang code) with the very\n"
"same resolved profile, as recorded with it, and record a new run that\n"
"points back to ID (rerun_of). ID may be any unique prefix of 4 or more\n"
"characters. Exit status as for hutch run. It runs in a fresh workspace\n"
"(not the run's --workdir or session); a run whose request gave it stdin\n"
"or files is refused (exit 1): hutch does not keep them.\n");
}

int verb_rerun(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json",    no_argument, NULL, OPT_JSON },
                { "verbose", no_argument, NULL, 'v' },
                { "quiet",   no_argument, NULL, 'q' },
                { "help",    no_argument, NULL, 'h' },
                {}
        };
        _cleanup_store_ struct store *store = NULL;
        _cleanup_run_record_ struct run_record *orig = NULL;
        _cleanup_free_ char *err = NULL, *display = NULL;
        struct lang_job lj = { .code_fd = -1 };
        struct run_config cfg;
        bool json = false;
        pid_t exiting_init = 0;
        _cleanup_free_ char *image_dir = NULL;
        _cleanup_close_ int image_fd = -1;
        int c, r, code, verbosity = LOG_NORMAL;

        optind = 1;
        while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) != -1) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'v':
                        verbosity = verbosity < LOG_VERBOSE ? LOG_VERBOSE : LOG_DEBUG;
                        break;
                case 'q':
                        verbosity = LOG_QUIET;
                        break;
                case 'h':
                        rerun_help(stdout);
                        return EXIT_OK;
                default:
                        return cli_usage_error("rerun", argv, opts);
                }
        }
        log_set_level((enum log_level)verbosity);
        code = cli_open_run("rerun", argc, argv, optind, &store, &orig);
        if (code != EXIT_OK)
                return code;
        /* a rerun is the same run or none: what the request gave it and
         * hutch does not keep cannot be given again */
        _cleanup_strv_ char **labels = NULL;
        (void)store_labels_get(store, orig->id, &labels);
        for (char **l = labels; l && *l; l++)
                if (startswith(*l, RUN_LABEL_REQUEST_STDIN "=") || startswith(*l, RUN_LABEL_REQUEST_FILES "=")) {
                        log_error("rerun: run %s read %s its request gave, which hutch does not keep; "
                                  "send the request again instead", orig->id,
                                  startswith(*l, RUN_LABEL_REQUEST_STDIN "=") ? "a stdin" : "files");
                        return EXIT_FAILURE_GENERIC;
                }
        store = store_close(TAKE_PTR(store));
        if (!orig->profile_text) {
                log_error("rerun: run %s has no recorded profile (recorded by an older hutch)", orig->id);
                return EXIT_FAILURE_GENERIC;
        }

        run_config_init(&cfg);
        code = EXIT_SETUP;
        display = xasprintf("run %s", orig->id);
        /* the text is hutch's own resolution of a profile it accepted then */
        r = profile_load_text(&cfg, orig->profile_text, display, true, &err);
        if (r >= 0)
                r = profile_validate(&cfg, &err);
        if (r < 0) {
                log_error("rerun: %s", err);
                goto out;
        }
        free(cfg.profile_name);
        cfg.profile_name = xstrdup(orig->profile ? orig->profile : "default");
        for (char **p = orig->argv; p && *p; p++)
                cfg.argv = strv_append(cfg.argv, *p);
        /* an image root: the very manifest the run used, or no rerun */
        image_dir = cli_image_dir();
        r = profile_resolve_image(&cfg, image_dir, &err);
        if (r < 0) {
                log_error("rerun: run %s ran %s, which is gone: %s", orig->id, cfg.root, err);
                code = EXIT_FAILURE_GENERIC;
                goto out;
        }
        if (orig->lang) {
                const struct lang *l;
                r = lang_table_load(NULL, &lj.table, &err);
                if (r >= 0)
                        r = lang_lookup(lj.table, orig->lang, &l, &err);
                if (r >= 0)
                        r = lang_plan_make(l, &lj.plan, &err);
                if (r < 0) {
                        log_error("rerun: %s", err);
                        goto out;
                }
                lj.code_fd = memfd_create("hutch-code", MFD_CLOEXEC);
                if (lj.code_fd < 0 || write_all(lj.code_fd, orig->code ? orig->code : "", orig->code_len) < 0) {
                        log_error("rerun: cannot stage the code: %s", strerror(errno));
                        goto out;
                }
        }
        /* the workspace options (--workdir, --session, --input) are not
         * part of the profile: a rerun runs in a fresh workspace */
        struct run_args none = { .ui = &run_ui };
        code = cli_image_hold("rerun", &cfg, image_dir, &image_fd);
        if (code != EXIT_OK)
                goto out;
        code = run_execute(&cfg, &lj, &none, orig->lang, json, orig->id, &exiting_init);
out:
        lang_job_done(&lj);
        run_config_done(&cfg);
        if (exiting_init > 0)
                sandbox_reap(exiting_init);
        return code;
}
