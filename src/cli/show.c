/* cli/show.c - `hutch show ID`: everything recorded about one run (outcome,
 * command, times, metrics, limits and their enforcement, output), laid
 * out for people, or as one hutch.result/1 JSON object with --json. The
 * output text is sanitised (escape sequences removed, invalid UTF-8
 * replaced) in both forms; `hutch logs` gives the exact bytes. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/exchange.h"
#include "run/runfiles.h"
#include "lib/sanitize.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch show [--json] ID\n"
               "\n"
               "Show one recorded run. ID is a run id or a unique prefix of at\n"
               "least 4 characters.\n"
               "\n"
               "  --json      one JSON object (schema hutch.result/1), output included\n"
               "  -h, --help  this text\n");
}

static void field(const char *name, const char *value)
{
        printf("%-13s%s\n", name, value && *value ? value : "-");
}

static void field_time(const char *name, uint64_t ms)
{
        char buf[64];
        field(name, ms == RUN_UNSET ? NULL : format_iso8601_ms(ms, buf, sizeof(buf)));
}

static void field_duration(const char *name, uint64_t ms)
{
        char buf[64];
        field(name, ms == RUN_UNSET ? NULL : format_duration_ms(ms, buf, sizeof(buf)));
}

static void field_output(const char *name, const struct run_output *o)
{
        _cleanup_free_ char *v = xasprintf("%llu byte%s, %llu line%s%s",
                                           (unsigned long long)o->total_bytes,
                                           o->total_bytes == 1 ? "" : "s",
                                           (unsigned long long)o->lines,
                                           o->lines == 1 ? "" : "s",
                                           o->truncated ? ", truncated (head and tail kept)" : "");
        field(name, v);
}

static void print_output(const char *name, const struct run_output *o)
{
        _cleanup_free_ char *clean = NULL;
        size_t len;

        if (!o->data || o->len == 0)
                return;
        clean = sanitize_text(o->data, o->len, &len);
        printf("\n--- %s ---\n", name);
        fwrite(clean, 1, len, stdout);
        if (len > 0 && clean[len - 1] != '\n')
                printf("\n[no newline at end]\n");
}

/* The enforcement report (enforce.c) laid out for people: what was in
 * force, and for each limit the mechanism that held it, or why none did. */
static void print_enforcement(const char *text)
{
        json_error_t jerr;
        json_t *e = text ? json_loads(text, 0, &jerr) : NULL;
        if (!e) {
                field("enforcement:", text);
                return;
        }
        printf("enforcement:\n");
        json_t *iso = json_object_get(e, "isolation");
        if (json_is_object(iso)) {
                const char *tier = json_string_value(json_object_get(iso, "tier"));
                const char *refused = json_string_value(json_object_get(iso, "namespaces_refused"));
                printf("  isolation:    %s", tier ? tier : "-");
                if (json_is_integer(json_object_get(iso, "landlock_abi_used")))
                        printf(" (Landlock ABI %lld)", (long long)json_integer_value(json_object_get(iso, "landlock_abi_used")));
                if (refused)
                        printf("; chosen by auto: namespaces refused (%s)", refused);
                printf("\n");
                size_t i;
                json_t *v;
                json_array_foreach(json_object_get(iso, "not_held"), i, v)
                        printf("    not held:   %s\n", json_string_value(v) ?: "-");
        }
        json_t *ns = json_object_get(e, "namespaces");
        if (json_is_array(ns)) {
                size_t i;
                json_t *v;
                printf("  namespaces:   ");
                json_array_foreach(ns, i, v)
                        printf("%s%s", i ? " " : "", json_string_value(v));
                printf("\n");
        }
        printf("  uid/gid map:  %s / %s (inside host count)\n",
               json_string_value(json_object_get(e, "uid_map")) ?: "-",
               json_string_value(json_object_get(e, "gid_map")) ?: "-");
        printf("  network:      %s\n", json_string_value(json_object_get(e, "network")) ?: "-");
        printf("  capabilities: %s; no_new_privs %s\n",
               json_string_value(json_object_get(e, "capabilities")) ?: "-",
               json_is_true(json_object_get(e, "no_new_privs")) ? "set" : "NOT set");
        json_t *sc = json_object_get(e, "seccomp");
        if (json_is_object(sc))
                printf("  seccomp:      policy %s, %s, action %s, %lld syscalls, %lld rules, %s\n",
                       json_string_value(json_object_get(sc, "policy")) ?: "-",
                       json_string_value(json_object_get(sc, "mode")) ?: "-",
                       json_string_value(json_object_get(sc, "action")) ?: "-",
                       (long long)json_integer_value(json_object_get(sc, "syscalls")),
                       (long long)json_integer_value(json_object_get(sc, "rules")),
                       json_string_value(json_object_get(sc, "arch")) ?: "-");
        else
                printf("  seccomp:      none\n");
        json_t *cg = json_object_get(e, "cgroup");
        if (json_is_object(cg)) {
                const char *path = json_string_value(json_object_get(cg, "path"));
                json_t *written = json_object_get(cg, "written");
                size_t i;
                json_t *v;
                if (path) {
                        const char *unit = json_string_value(json_object_get(cg, "systemd_unit"));
                        printf("  cgroup:       %s (", path);
                        json_array_foreach(written, i, v)
                                printf("%s%s", i ? " " : "", json_string_value(v));
                        printf(")\n");
                        if (unit)
                                printf("                in %s, delegated by systemd\n", unit);
                } else
                        printf("  cgroup:       none (%s)\n",
                               json_string_value(json_object_get(cg, "reason")) ?: "-");
        }
        json_t *sl = json_object_get(e, "slurm");
        if (json_is_object(sl)) {
                json_t *capped = json_object_get(sl, "capped"), *v;
                size_t i;
                printf("  slurm:        job %s on %s, capped to the allocation:",
                       json_string_value(json_object_get(sl, "job_id")) ?: "-",
                       json_string_value(json_object_get(sl, "node")) ?: "-");
                json_array_foreach(capped, i, v)
                        printf(" %s", json_string_value(v) ?: "?");
                printf("%s\n                held by %s\n", json_array_size(capped) ? "" : " nothing",
                       json_string_value(json_object_get(sl, "held_by")) ?: "-");
        }
        json_t *limits = json_object_get(e, "limits");
        if (json_is_object(limits)) {
                const char *name;
                json_t *l;
                printf("  limits:\n");
                json_object_foreach(limits, name, l) {
                        const char *reason = json_string_value(json_object_get(l, "reason"));
                        printf("    %-14s %-10s %s%s%s%s\n", name,
                               json_string_value(json_object_get(l, "value")) ?: "-",
                               json_string_value(json_object_get(l, "mechanism")) ?: "-",
                               reason ? " (" : "", reason ? reason : "", reason ? ")" : "");
                }
        }
        json_decref(e);
}

static void print_files(struct store *s, const struct run_record *rec)
{
        struct file_record *f = NULL;
        size_t n = 0;

        if (store_files_list(s, rec->id, NULL, &f, &n) < 0 || n == 0) {
                file_records_free(f, n);
                return;
        }
        printf("\n--- files ---\n");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = sanitize_quote_name(f[i].path);
                char size[32] = "-";
                if (f[i].size != RUN_UNSET && !streq(f[i].kind, "deleted"))
                        format_size(f[i].size, size, sizeof(size));
                char note[48];
                cli_mode_note(!streq(f[i].kind, "modified"), streq(f[i].kind, "deleted"), f[i].old_mode,
                              f[i].mode, note, sizeof(note));
                printf("%-9s %8s  %-12.12s  %s%s%s%s%s\n", f[i].kind, size,
                       f[i].sha256[0] ? f[i].sha256 : "-", path, note,
                       f[i].mime ? "  " : "", f[i].mime ? f[i].mime : "",
                       f[i].skip ? (streq(f[i].skip, "symlink") ? "  (skipped: symlink)" : "  (skipped)") : "");
                if (f[i].skip && !streq(f[i].skip, "symlink"))
                        printf("%-9s %8s  %-12s  reason: %s\n", "", "", "", f[i].skip);
        }
        file_records_free(f, n);
}

/* One value of a connection row, sanitised: the job chose most of them. */
static char *conn_text(json_t *o, const char *key)
{
        const char *v = json_string_value(json_object_get(o, key));
        return v ? sanitize_text(v, strlen(v), NULL) : xstrdup("-");
}

static void print_connections(struct store *s, const struct run_record *rec)
{
        json_t *arr = store_connections_json(s, rec->id), *o;
        size_t i;

        if (json_array_size(arr) > 0) {
                printf("\n--- connections ---\n");
                printf("%-8s %-5s %-32s %-24s %-10s %10s %10s  %s\n", "DECISION", "PROTO", "DEST", "RESOLVED",
                       "NAME", "OUT", "IN", "WHY");
        }
        json_array_foreach(arr, i, o) {
                _cleanup_free_ char *decision = conn_text(o, "decision"), *proto = conn_text(o, "proto"),
                                    *dest = conn_text(o, "dest"), *resolved = conn_text(o, "resolved"),
                                    *name = conn_text(o, "name"), *rule = conn_text(o, "rule"),
                                    *reason = conn_text(o, "reason"), *end = conn_text(o, "end");
                char out[32] = "-", in[32] = "-";
                if (json_is_integer(json_object_get(o, "bytes_out")))
                        format_size((uint64_t)json_integer_value(json_object_get(o, "bytes_out")), out, sizeof(out));
                if (json_is_integer(json_object_get(o, "bytes_in")))
                        format_size((uint64_t)json_integer_value(json_object_get(o, "bytes_in")), in, sizeof(in));
                if (streq(proto, "summary")) {
                        printf("(%lld more decisions not recorded: limit)\n",
                               (long long)json_integer_value(json_object_get(o, "dropped")));
                        continue;
                }
                printf("%-8s %-5s %-32s %-24s %-10s %10s %10s  %s%s%s%s%s\n", decision, proto, dest, resolved, name,
                       out, in, reason, streq(rule, "-") ? "" : " ", streq(rule, "-") ? "" : rule,
                       streq(end, "-") ? "" : "; ended: ", streq(end, "-") ? "" : end);
        }
        json_decref(arr);
}

static void print_human(struct store *s, const struct run_record *rec)
{
        _cleanup_free_ char *workdir = NULL;
        _cleanup_free_ char *cmd = sanitize_argv_line(rec->argv, 0);
        _cleanup_free_ char *message = rec->message ? sanitize_text(rec->message, strlen(rec->message), NULL) : NULL;
        const char *status = run_status_to_string(rec->status);
        char buf[128];

        field("id:", rec->id);
        field("status:", status);
        if (rec->exit_code >= 0) {
                /* a cancel or deadline's code is hutch's: the job's own
                 * beside it, when it exited by itself meanwhile */
                if (rec->job_exit_code >= 0 && rec->job_exit_code != rec->exit_code)
                        snprintf(buf, sizeof(buf), "%d (the job exited %d)", rec->exit_code, rec->job_exit_code);
                else
                        snprintf(buf, sizeof(buf), "%d", rec->exit_code);
                field("exit code:", buf);
        }
        if (rec->signal > 0) {
                snprintf(buf, sizeof(buf), "%d (%s)", rec->signal, strsignal(rec->signal));
                field("signal:", buf);
        }
        if (message)
                field("message:", message);
        field("command:", cmd);
        field("cwd:", rec->cwd);
        if (rec->profile_sha256) {
                snprintf(buf, sizeof(buf), "%s (sha256 %.16s)", rec->profile ? rec->profile : "-",
                         rec->profile_sha256);
                field("profile:", buf);
        } else
                field("profile:", rec->profile);
        if (rec->session)
                field("session:", rec->session);
        _cleanup_free_ char *node = NULL;
        uint64_t imported_at = RUN_UNSET;
        if (store_origin_get(s, rec->id, &node, &imported_at) == 0) {
                char when[64];
                snprintf(buf, sizeof(buf), "%s (imported %s)", node,
                         format_iso8601_ms(imported_at, when, sizeof(when)));
                field("node:", buf);
        } else
                field("node:", exchange_local_node(buf, sizeof(buf)));
        if (store_workspace_get(s, rec->id, &workdir, NULL) == 0 && workdir)
                field("workdir:", workdir);
        if (rec->rerun_of)
                field("rerun of:", rec->rerun_of);
        if (rec->idempotency_key)
                field("key:", rec->idempotency_key);
        field_time("started:", rec->started_at_ms);
        field_time("finished:", rec->finished_at_ms);
        field_duration("duration:", rec->duration_ms);
        if (rec->cpu_user_ms != RUN_UNSET || rec->cpu_sys_ms != RUN_UNSET) {
                char u[32] = "-", sy[32] = "-";
                if (rec->cpu_user_ms != RUN_UNSET)
                        format_duration_ms(rec->cpu_user_ms, u, sizeof(u));
                if (rec->cpu_sys_ms != RUN_UNSET)
                        format_duration_ms(rec->cpu_sys_ms, sy, sizeof(sy));
                snprintf(buf, sizeof(buf), "%s user, %s sys", u, sy);
                field("cpu:", buf);
        } else
                field("cpu:", NULL);
        if (rec->peak_memory_bytes != RUN_UNSET) {
                snprintf(buf, sizeof(buf), "%.1f MiB", (double)rec->peak_memory_bytes / 1048576.0);
                field("peak memory:", buf);
        } else
                field("peak memory:", NULL);
        print_enforcement(rec->enforcement_json);
        if (rec->supervisor_pid > 0) {
                char hb[64] = "-";
                if (rec->heartbeat_at_ms != RUN_UNSET)
                        format_iso8601_ms(rec->heartbeat_at_ms, hb, sizeof(hb));
                snprintf(buf, sizeof(buf), "pid %d, last heartbeat %s", (int)rec->supervisor_pid, hb);
                field("supervisor:", buf);
        }
        field_output("stdout:", &rec->out);
        field_output("stderr:", &rec->err);
        if (rec->output_lost) {
                _cleanup_free_ char *lost = sanitize_text(rec->output_lost, strlen(rec->output_lost), NULL);
                field("not stored:", lost);
        }
        print_output("stdout", &rec->out);
        print_output("stderr", &rec->err);
        if (rec->profile_text)
                printf("\n--- resolved profile (sha256 %s) ---\n%s", rec->profile_sha256 ? rec->profile_sha256 : "-",
                       rec->profile_text);
}

int verb_show(int argc, char **argv)
{
        cli_guard_terminal();
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_run_record_ struct run_record *rec = NULL;
        bool json = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("show", argv, options);
                }
        r = cli_open_run("show", argc, argv, optind, &s, &rec);
        if (r != EXIT_OK)
                return r;

        if (json) {
                _cleanup_free_ char *text = cli_run_json(s, rec);
                puts(text ? text : "{}");
        } else {
                print_human(s, rec);
                print_files(s, rec);
                print_connections(s, rec);
        }
        return EXIT_OK;
}
