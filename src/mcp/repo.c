/* repo.c - the diff and apply tools of `hutch mcp` (see repo.h). */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lib/sanitize.h"
#include "lib/util.h"
#include "mcp/calls.h"
#include "mcp/format.h"
#include "mcp/history.h"
#include "mcp/repo.h"
#include "record/ulid.h"

/* The known arguments of a repository tool; a tool error for another. */
static json_t *check_args(json_t *args, bool with_stat)
{
        const char *k;
        json_t *v;
        json_object_foreach(args, k, v) {
                if (streq(k, "run_id"))
                        continue;
                if (with_stat && streq(k, "stat")) {
                        if (!json_is_boolean(v))
                                return mcp_result_error("stat: expected true or false");
                        continue;
                }
                return mcp_result_error("unknown argument \"%s\"", k);
        }
        return NULL;
}

/* `hutch ARGS...` as a child: its output as sanitised text (escape
 * sequences out, invalid UTF-8 replaced: it holds the files' lines),
 * whether it was cut, and its exit code (-1 when killed). NULL and
 * *ret_error a tool error when it could not run. */
static char *child_text(int exe_fd, char *const *argv, bool *ret_cut, int *ret_code, json_t **ret_error)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        int st, r = call_run_sync(exe_fd, argv, MCP_DIFF_MAX, &out, &len, ret_cut, &st);
        if (r < 0) {
                *ret_error = mcp_result_error("could not start hutch %s: %s", argv[1], strerror(-r));
                return NULL;
        }
        *ret_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        /* never split a character where the cap cut */
        len = *ret_cut ? mcp_utf8_floor(out, len, len) : len;
        return sanitize_text(out, len, NULL);
}

json_t *mcp_diff(json_t *args, const struct mcp_config *cfg, int exe_fd)
{
        char id[ULID_LEN + 1];
        json_t *e;
        bool cut = false;
        int code;

        if ((e = check_args(args, true)) || (e = mcp_resolve_run(json_object_get(args, "run_id"), cfg->scope, id, NULL)))
                return e;
        bool stat = json_is_true(json_object_get(args, "stat"));
        char *argv[] = { (char *)"hutch", (char *)"diff", stat ? (char *)"--stat" : id, stat ? id : NULL, NULL };
        _cleanup_free_ char *text = child_text(exe_fd, argv, &cut, &code, &e);
        if (!text)
                return e;
        if (code != 0)
                return mcp_result_error("diff of run %s failed (exit %d): %s", id, code, text);
        _cleanup_free_ char *shown = cut ? xasprintf("%s\n[... the diff goes on past %u KiB and is cut here; "
                                                     "diff {\"run_id\": \"%s\", \"stat\": true} lists every "
                                                     "changed path ...]\n", text, MCP_DIFF_MAX >> 10, id)
                                         : xstrdup(*text ? text : "(no changes)\n");
        json_t *t = json_string(shown);
        if (!t)
                return mcp_result_error("diff of run %s: not UTF-8 after sanitising", id);
        return json_pack("{s:[{s:s, s:O}], s:{s:s, s:o, s:b}, s:b}", "content", "type", "text", "text", t,
                         "structuredContent", "run_id", id, "text", t, "truncated", cut, "isError", 0);
        /* (the second "text" took the reference json_string() gave) */
}

/* Whether run_workdir (as recorded) is the server's --workdir. Both are
 * absolute host paths; compared as real paths, so a symlinked spelling
 * of the same directory matches and nothing else does. */
static bool same_dir(const char *run_workdir, const char *workdir)
{
        char a[PATH_MAX], b[PATH_MAX];
        return run_workdir && workdir && realpath(run_workdir, a) && realpath(workdir, b) && streq(a, b);
}

json_t *mcp_apply(json_t *args, const struct mcp_config *cfg, int exe_fd)
{
        char id[ULID_LEN + 1];
        _cleanup_free_ char *run_workdir = NULL;
        json_t *e;
        bool cut = false;
        int code;

        if ((e = check_args(args, false)) ||
            (e = mcp_resolve_run(json_object_get(args, "run_id"), cfg->scope, id, &run_workdir)))
                return e;
        /* the operator allowed applying to this server's directory, and
         * to nothing else: a run of the same scope from a server started
         * on another directory is not applied here, nor anywhere */
        if (!cfg->workdir || !same_dir(run_workdir, cfg->workdir))
                return mcp_result_error("run %s did not run on this server's working directory; apply takes the "
                                        "runs of hutch mcp --workdir only", id);
        /* hutch apply as the CLI runs it: all or nothing, conflicts and
         * protected paths refused, to the run's own --workdir */
        char *argv[] = { (char *)"hutch", (char *)"apply", id, NULL };
        _cleanup_free_ char *text = child_text(exe_fd, argv, &cut, &code, &e);
        if (!text)
                return e;
        _cleanup_free_ char *shown = xasprintf("%s%s", code == 0 ? "applied: " : "not applied: ",
                                               *text ? text : (code == 0 ? "done\n" : "(no message)\n"));
        json_t *t = json_string(shown);
        if (!t)
                t = json_string(code == 0 ? "applied" : "not applied");
        return json_pack("{s:[{s:s, s:O}], s:{s:s, s:b, s:i, s:o}, s:b}", "content", "type", "text", "text", t,
                         "structuredContent", "run_id", id, "applied", code == 0, "exit_code", code, "text", t,
                         "isError", code != 0);
}
