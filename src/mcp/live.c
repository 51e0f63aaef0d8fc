/* live.c - the argv vectors of `hutch mcp`'s live sessions, the process
 * listing, and the keeper (see live.h).
 *
 * What a call brings besides its code or argv (stdin, files, env)
 * reaches the live sandbox through the exec's stdin (`hutch exec
 * --stdin`), never its argv: an exec records its argv, and a fresh run
 * records neither stdin nor env, so neither may a live call. The argv
 * holds a fixed loader (LOADER below), the call's seq and what a fresh
 * run records too (the code, the command's argv); the stdin
 * is a sh script whose every value is single-quoted, so nothing a model
 * sends is ever parsed as shell. The loader reads the script into its
 * own memory and evals it; the call's stdin is a variable of the
 * script, fed to the call through a pipe. Both run inside the sandbox,
 * as the job, with the job's rights: they can write nothing the job
 * could not.
 *
 * Security: what an earlier call left running (or planted) must not
 * read a later call's env or stdin. The execs of one sandbox share its
 * uid and its /tmp, and only their Landlock domains keep them apart
 * (run/live.c): a file at a path a later call will use (the call's seq
 * is a counter) is one an earlier call can plant a symlink or a FIFO
 * at, or watch with inotify and open. So neither the script (which
 * holds the env values) nor the stdin is ever a file: the script
 * travels on the exec's own stdin pipe into a shell variable, the stdin
 * through a pipe the script makes, both reachable only through the
 * call's own processes. Nor is a run_code call's source: the script
 * hands it to the program on a pipe whose read end is the program's fd
 * 3, its {file} /dev/fd/3, and whose writer is the script's own
 * background printf of "$1" (the exec's argument). /dev/fd/3 is
 * /proc/self/fd/3: opened by another process it is that process's own fd
 * 3, never this pipe, and this process's /proc/PID/fd/3 is closed to
 * every other exec by its Landlock domain (run/live.c; where the kernel
 * has none, `hutch sandbox start` says so). So no process of the sandbox
 * can hand the program another source, whatever it watches or plants,
 * nor read it from a file. (The code is no secret from the sandbox,
 * unlike env and stdin: it is the exec's argument, kept in its record as
 * a fresh run's is, which /proc/PID/cmdline shows every process of the
 * sandbox while the loader runs.) A language with {out} (a compile step)
 * gets a directory mktemp -d makes for the call alone, under a random
 * name, for the compiled program only: a process still running from an
 * earlier call that watches /tmp can race into it and replace that
 * program before it runs (same uid, one /tmp): hutch-mcp(1) says so.
 * What a call writes on purpose (its files) is the sandbox's shared
 * state, as every file there is. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/lang.h"
#include "lib/util.h"
#include "mcp/calls.h"
#include "mcp/live.h"
#include "run/live-kernel.h"

/* the prefix of a compiled call's own directory in the sandbox's /tmp
 * (its seq, then mktemp's random part) */
#define CALL_FILE "/tmp/.hutch-mcp-"
/* The exec's whole command when the call has a script: `sh -c LOADER
 * hutch-mcp SEQ WORDS...` (the code, or the command's argv: recorded as
 * a fresh run records them), the script on stdin, WORDS its "$@". The
 * script is read whole into a variable (the "." keeps its trailing
 * newlines from $(...)) and evaluated, never written to a file. Its own
 * stdin is /dev/null unless it gives the call's (a fresh run's is empty
 * too). */
#define LOADER "shift; s=$(cat && echo .) || exit 125; eval \"${s%.}\" < /dev/null"

/* The n bytes at s single-quoted for sh, appended to f. */
static void put_quoted_n(FILE *f, const char *s, size_t n)
{
        fputc('\'', f);
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\'')
                        fputs("'\\''", f);
                else
                        fputc(s[i], f);
        fputc('\'', f);
}

static void put_quoted(FILE *f, const char *s)
{
        put_quoted_n(f, s, strlen(s));
}

/* The source as the program sees it: the read end of the script's pipe
 * (see the header), a path that names it only for the call's own
 * processes. */
#define CODE_FD "3"
#define CODE_FILE "/dev/fd/" CODE_FD

/* The placeholder for the call's own code directory in the words of
 * languages.ini's templates, and a word put with it replaced by the
 * script's "$hutch_d" (the rest single-quoted). */
#define CODE_DIR "\001hutch-code-dir"
static void put_code_word(FILE *f, const char *w)
{
        const char *at;
        while ((at = strstr(w, CODE_DIR))) {
                put_quoted_n(f, w, (size_t)(at - w));
                fputs("\"$hutch_d\"", f);
                w = at + strlen(CODE_DIR);
        }
        put_quoted(f, w);
}

static char *limit_arg(const char *flag, json_int_t v, const char *unit)
{
        return xasprintf("--%s=%lld%s", flag, (long long)v, unit);
}

char **mcp_live_start_argv(const char *name, const char *session, const json_t *req, const json_t *limits,
                           char *const *run_args, char *const *publish, uint64_t idle_ms)
{
        char **v = NULL;
        size_t n = 0;
        const char *k;
        json_t *x;

        v = strv_push(v, &n, "hutch");
        v = strv_push(v, &n, "sandbox");
        v = strv_push(v, &n, "start");
        v = strv_push(v, &n, name);
        _cleanup_free_ char *idle = xasprintf("--idle-timeout=%llums",
                                              (unsigned long long)(idle_ms + MCP_LIVE_BACKSTOP_MS));
        v = strv_push(v, &n, idle);
        v = strv_push(v, &n, "--session");
        v = strv_push(v, &n, session);
        /* the stop of a sandbox that ran commits, its kill does not: the
         * server chooses between them by the session's policy */
        v = strv_push(v, &n, "--commit=success");
        for (size_t i = 0; run_args && run_args[i]; i++)
                v = strv_push(v, &n, run_args[i]);
        /* the limits every run_command of the server gets: the sandbox
         * is the session's for every language */
        json_t *lim = json_object_get(limits, "");
        json_object_foreach(lim, k, x) {
                _cleanup_free_ char *a = NULL;
                if (streq(k, "memory_mb"))
                        a = limit_arg("memory", json_integer_value(x), "M");
                else if (streq(k, "disk_mb"))
                        a = limit_arg("disk", json_integer_value(x), "M");
                else if (streq(k, "pids"))
                        a = limit_arg("pids", json_integer_value(x), "");
                else if (streq(k, "cpu_cores") && json_number_value(x) > 0)
                        a = xasprintf("--cpus=%.3f", json_number_value(x));
                if (a)
                        v = strv_push(v, &n, a);
        }
        for (size_t i = 0; publish && publish[i]; i++) {
                _cleanup_free_ char *a = xasprintf("--publish=%s", publish[i]);
                v = strv_push(v, &n, a);
        }
        json_object_foreach(json_object_get(req, "labels"), k, x) {
                _cleanup_free_ char *a = xasprintf("--label=%s=%s", k, json_string_value(x) ?: "");
                v = strv_push(v, &n, a);
        }
        /* another holder of the session (another server of the scope,
         * the operator) is waited for as long as the call may run */
        json_int_t t = json_integer_value(json_object_get(json_object_get(req, "limits"), "timeout_ms"));
        _cleanup_free_ char *wait = xasprintf("--session-wait=%lldms", (long long)(t > 0 ? t : 30000));
        v = strv_push(v, &n, wait);
        return v;
}

/* A files/ path as the model gave it: relative, no '..', no empty part. */
static bool rel_path_ok(const char *p)
{
        if (!*p || *p == '/' || strlen(p) > 4096)
                return false;
        for (const char *c = p; *c;) {
                size_t len = strcspn(c, "/");
                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c += len;
                if (*c == '/')
                        c++;
        }
        return p[strlen(p) - 1] != '/';
}

/* A string of the request that a live call passes in its argv: no NUL. */
static bool argv_safe(const json_t *s)
{
        return json_is_string(s) && strlen(json_string_value(s)) == json_string_length(s);
}

/* The part of the wrapper every call shares: a fail function, the
 * files, env and stdin. 0 or -EINVAL with *ret_error. */
static int put_prelude(FILE *f, const json_t *req, char **ret_error)
{
        const char *k;
        json_t *x;

        fputs("hutch_fail() { echo \"hutch: live session: $1\" >&2; exit 125; }\n", f);
        json_object_foreach(json_object_get(req, "files"), k, x) {
                json_t *content = json_is_object(x) ? json_object_get(x, "content") : x;
                const char *enc = json_string_value(json_object_get(x, "encoding"));
                bool b64 = enc && streq(enc, "base64");
                if (!rel_path_ok(k)) {
                        *ret_error = xasprintf("files/%s: expected a relative path inside the workspace", k);
                        return -EINVAL;
                }
                if (!argv_safe(content)) {
                        *ret_error = xasprintf("files/%s: a live session takes text without NUL bytes "
                                               "(give binary content with encoding base64)", k);
                        return -EINVAL;
                }
                if (strchr(k, '/')) {
                        _cleanup_free_ char *dir = xstrdup(k);
                        *strrchr(dir, '/') = '\0';
                        fputs("mkdir -p -- ", f);
                        put_quoted(f, dir);
                        fputs(" || hutch_fail 'cannot make a directory of files'\n", f);
                }
                fputs("printf %s ", f);
                put_quoted(f, json_string_value(content));
                fputs(b64 ? " | base64 -d > " : " > ", f);
                put_quoted(f, k);
                fputs(" || hutch_fail 'cannot write files/'", f);
                put_quoted(f, k);
                fputc('\n', f);
        }
        json_object_foreach(json_object_get(req, "env"), k, x) {
                /* names are checked by mcp_tool_request(): [A-Za-z_][A-Za-z0-9_]* */
                if (!argv_safe(x)) {
                        *ret_error = xasprintf("env/%s: expected a string without NUL", k);
                        return -EINVAL;
                }
                fprintf(f, "export %s=", k);
                put_quoted(f, json_string_value(x));
                fputc('\n', f);
        }
        json_t *in = json_object_get(req, "stdin");
        if (in) {
                if (!argv_safe(in)) {
                        *ret_error = xstrdup("stdin: a live session takes text without NUL bytes");
                        return -EINVAL;
                }
                /* a variable, not a file (see the header) */
                fputs("hutch_in=", f);
                put_quoted(f, json_string_value(in));
                fputc('\n', f);
        }
        /* the call itself, a function finish_script() calls */
        fputs("hutch_main() {\n", f);
        return 0;
}

/* A new script in *text (open_memstream()), begun by put_prelude():
 * 0 and *ret_f, or -ENOMEM / -EINVAL with *ret_error. */
static int script_begin(const json_t *req, char **text, size_t *len, FILE **ret_f, char **ret_error)
{
        FILE *f = open_memstream(text, len);
        if (!f) {
                *ret_error = xstrdup("out of memory");
                return -ENOMEM;
        }
        int r = put_prelude(f, req, ret_error);
        if (r < 0) {
                fclose(f);
                return r;
        }
        *ret_f = f;
        return 0;
}

/* `hutch exec NAME --json --timeout T --` then, with a seq, `--stdin
 * -- sh -c LOADER hutch-mcp SEQ WORDS...` (the script comes on stdin),
 * else `-- WORDS...`. */
static char **exec_argv(const char *name, const json_t *req, unsigned seq, char *const *words)
{
        char **v = NULL;
        size_t n = 0;
        json_int_t t = json_integer_value(json_object_get(json_object_get(req, "limits"), "timeout_ms"));
        _cleanup_free_ char *timeout = xasprintf("--timeout=%lldms", (long long)(t > 0 ? t : 30000));

        v = strv_push(v, &n, "hutch");
        v = strv_push(v, &n, "exec");
        v = strv_push(v, &n, name);
        v = strv_push(v, &n, "--json");
        v = strv_push(v, &n, timeout);
        if (seq) {
                _cleanup_free_ char *s = xasprintf("%u", seq);
                v = strv_push(v, &n, "--stdin");
                v = strv_push(v, &n, "--");
                v = strv_push(v, &n, "sh");
                v = strv_push(v, &n, "-c");
                v = strv_push(v, &n, LOADER);
                v = strv_push(v, &n, "hutch-mcp");
                v = strv_push(v, &n, s);
        } else
                v = strv_push(v, &n, "--");
        for (size_t i = 0; words[i]; i++)
                v = strv_push(v, &n, words[i]);
        return v;
}

/* The end of the script put_prelude() began: the call, its stdin (if
 * req has one) through a pipe from a writer it does not wait for (a
 * process the call leaves holding its stdin unread holds up only that
 * writer, not the call). */
static int finish_script(FILE *f, const json_t *req, char **text, size_t *len, char **ret_error)
{
        fputs("}\n", f);
        if (json_object_get(req, "stdin"))
                fputs("{ printf %s \"$hutch_in\" & } | hutch_main \"$@\"\n", f);
        else
                fputs("hutch_main \"$@\"\n", f);
        if (fclose(f) != 0) {
                *ret_error = xstrdup("out of memory");
                return -ENOMEM;
        }
        if (*len > MCP_LIVE_INPUT_MAX) {
                *ret_error = xasprintf("a live session's call carries at most %u MiB of code, stdin, files "
                                       "and env together (this one %zu MiB): write large files in parts",
                                       MCP_LIVE_INPUT_MAX >> 20, *len >> 20);
                free(*text);
                *text = NULL;
                return -E2BIG;
        }
        return 0;
}

int mcp_live_kernel_lang(const json_t *req)
{
        const char *lang = json_string_value(json_object_get(req, "language"));
        json_t *code = json_object_get(req, "code");
        int k = lang ? live_kernel_lang_from_string(lang) : -EINVAL;
        /* a kernel takes code alone: what brings stdin, files or env
         * runs as a program */
        if (k < 0 || !argv_safe(code) || json_string_length(code) > LIVE_KERNEL_CODE_MAX ||
            json_object_get(req, "stdin") || json_object_get(req, "files") || json_object_get(req, "env"))
                return -EINVAL;
        return k;
}

/* `hutch exec NAME --json --timeout T --kernel LANG -c CODE`, or NULL
 * when the call is not one for a kernel. */
static char **kernel_argv(const char *name, const json_t *req)
{
        int k = mcp_live_kernel_lang(req);
        if (k < 0)
                return NULL;
        json_int_t t = json_integer_value(json_object_get(json_object_get(req, "limits"), "timeout_ms"));
        _cleanup_free_ char *timeout = xasprintf("--timeout=%lldms", (long long)(t > 0 ? t : 30000));
        char **v = NULL;
        size_t n = 0;
        const char *words[] = { "hutch", "exec", name, "--json", timeout, "--kernel",
                                live_kernel_lang_to_string(k), "-c",
                                json_string_value(json_object_get(req, "code")) ?: "", NULL };
        for (size_t i = 0; words[i]; i++)
                v = strv_push(v, &n, words[i]);
        return v;
}

/* words' size in an argv: at most MCP_LIVE_ARGV_MAX (the control
 * socket's request has room for no more). 0 or -E2BIG with *ret_error. */
static int words_fit(char *const *words, const char *what, char **ret_error)
{
        size_t total = 0;
        for (size_t i = 0; words[i]; i++)
                total += strlen(words[i]) + 1;
        if (total <= MCP_LIVE_ARGV_MAX)
                return 0;
        *ret_error = xasprintf("%s: at most %u KiB in a live session", what, MCP_LIVE_ARGV_MAX >> 10);
        return -E2BIG;
}

/* Whether a word of v (may be NULL) names the call's code directory. */
static bool uses_code_dir(char *const *v)
{
        for (size_t i = 0; v && v[i]; i++)
                if (strstr(v[i], CODE_DIR))
                        return true;
        return false;
}

/* The body of a run_code call's hutch_main(): the source ("$1") through
 * a pipe onto the program's fd CODE_FD, the call's stdin kept as its
 * fd 0 (saved on fd 4 across the pipeline, closed in the writer); the
 * code directory (only for {out}), the compile step (if any), the run.
 * The pipeline's end is a subshell that execs the program, so the job
 * is the loader's shell, not the program: a program killed by signal N
 * (1-15, whose default is to end the process) is told to the shell as
 * status 128+N, and the shell then sends N to itself, so that the exec
 * ends killed by N as it did when the shell exec'd the program. */
static void put_code_call(FILE *f, char *const *compile, char *const *run, unsigned seq)
{
        fputs("{ { printf %s \"$1\" 4<&- & } | { exec " CODE_FD "<&0 <&4 4<&-\n", f);
        if (uses_code_dir(compile) || uses_code_dir(run))
                fprintf(f, "hutch_d=$(mktemp -d " CALL_FILE "%u.XXXXXXXX) || hutch_fail 'cannot make the code "
                           "directory'\n", seq);
        if (compile) {
                for (size_t i = 0; compile[i]; i++) {
                        put_code_word(f, compile[i]);
                        fputc(' ', f);
                }
                fputs("|| { s=$?; echo \"hutch: compile failed (exit $s)\" >&2; exit $s; }\n", f);
        }
        fputs("exec", f);
        for (size_t i = 0; run[i]; i++) {
                fputc(' ', f);
                put_code_word(f, run[i]);
        }
        fputs("\n}; } 4<&0\n", f);
        fputs("s=$?; [ \"$s\" -gt 128 ] && [ \"$s\" -lt 144 ] && kill -$((s - 128)) $$; return \"$s\"\n", f);
}

int mcp_live_code_argv(const char *name, const json_t *req, const struct lang_table *langs, unsigned seq,
                       bool kernels, char ***ret, char **ret_input, char **ret_error)
{
        const struct lang *l;
        _cleanup_free_ char *text = NULL, *src = NULL, *out = NULL;
        _cleanup_strv_ char **compile = NULL, **run = NULL;
        size_t len = 0;
        int r;

        *ret_input = NULL;
        if (kernels && (*ret = kernel_argv(name, req)))
                return 0;
        if (!langs) {
                *ret_error = xstrdup("language: no languages file (languages.ini) on this server");
                return -EINVAL;
        }
        r = lang_lookup(langs, json_string_value(json_object_get(req, "language")) ?: "", &l, ret_error);
        if (r < 0)
                return -EINVAL;
        if (!argv_safe(json_object_get(req, "code"))) {
                *ret_error = xstrdup("code: a live session takes code without NUL bytes");
                return -EINVAL;
        }
        /* the code is the exec's argument, so its record holds it as a
         * fresh run's does; the rest comes on stdin */
        char *words[] = { (char *)json_string_value(json_object_get(req, "code")), NULL };
        r = words_fit(words, "code", ret_error);
        if (r < 0)
                return r;
        /* the source a pipe, the compiled program in a directory of
         * its own per call, made by the script under a name nobody can
         * know before (see the header): out names it by a placeholder
         * put_code_word() replaces */
        src = xstrdup(CODE_FILE);
        out = xstrdup(CODE_DIR "/main");
        if ((l->compile && lang_expand(l->compile, src, out, &compile, ret_error) < 0) ||
            lang_expand(l->command, src, out, &run, ret_error) < 0)
                return -EINVAL;
        FILE *f;
        r = script_begin(req, &text, &len, &f, ret_error);
        if (r < 0)
                return r;
        put_code_call(f, compile, run, seq);
        r = finish_script(f, req, &text, &len, ret_error);
        if (r < 0)
                return r;
        *ret = exec_argv(name, req, seq, words);
        *ret_input = TAKE_PTR(text);
        return 0;
}

int mcp_live_exec_argv(const char *name, const json_t *req, const struct lang_table *langs, unsigned seq,
                       bool kernels, char ***ret, char **ret_input, char **ret_error)
{
        json_t *argv = json_object_get(req, "argv");
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_ char **words = NULL;
        size_t len = 0, n = 0, i;
        json_t *x;
        int r;

        *ret_input = NULL;
        if (!argv)
                return mcp_live_code_argv(name, req, langs, seq, kernels, ret, ret_input, ret_error);
        json_array_foreach(argv, i, x) {
                if (!argv_safe(x)) {
                        *ret_error = xasprintf("argv/%zu: expected a string without NUL", i);
                        return -EINVAL;
                }
                words = strv_push(words, &n, json_string_value(x));
        }
        r = words_fit(words, "argv", ret_error);
        if (r < 0)
                return r;
        if (!json_object_get(req, "stdin") && !json_object_get(req, "files") && !json_object_get(req, "env")) {
                *ret = exec_argv(name, req, 0, words);
                return 0;
        }
        FILE *f;
        r = script_begin(req, &text, &len, &f, ret_error);
        if (r < 0)
                return r;
        /* the words are the exec's arguments (recorded, as a fresh
         * run's argv is), the script's "$@" */
        fputs("exec \"$@\"\n", f);
        r = finish_script(f, req, &text, &len, ret_error);
        if (r < 0)
                return r;
        *ret = exec_argv(name, req, seq, words);
        *ret_input = TAKE_PTR(text);
        return 0;
}

/* Each process of the sandbox but its init (pid 1, hutch's) and this
 * listing's own shell and its children: pid, parent, state, command
 * line (or [comm]). From /proc,
 * so it needs nothing but sh, cat and tr in the sandbox. A line is one
 * process: the command line and the name are the process's own to set
 * (argv, prctl), so a newline in either becomes a blank, and no process
 * can add a made-up entry to the list. */
static const char ps_script[] =
        "me=$$\n"
        "for d in /proc/[0-9]*; do\n"
        "  p=${d#/proc/}; [ \"$p\" = \"$me\" ] || [ \"$p\" = 1 ] && continue\n"
        "  s=$(cat \"$d/stat\" 2>/dev/null) || continue\n"
        "  c=$(tr '\\000\\n' '  ' < \"$d/cmdline\" 2>/dev/null)\n"
        "  t=${s#*(}; t=${t%)*}; set -- ${s##*) }\n"
        "  [ \"$2\" = \"$me\" ] && continue\n"
        "  [ -n \"$c\" ] || c=\"[$(printf %s \"$t\" | tr '\\n' ' ')]\"\n"
        "  printf '%s %s %s %s\\n' \"$p\" \"$2\" \"$1\" \"$c\"\n"
        "done\n";

char **mcp_live_ps_argv(const char *name)
{
        json_t *req = json_pack("{s:{s:i}}", "limits", "timeout_ms", 10000);
        char *words[] = { (char *)"sh", (char *)"-c", (char *)ps_script, NULL };
        char **v = exec_argv(name, req, 0, words);
        json_decref(req);
        return v;
}

json_t *mcp_live_ps_parse(const char *text)
{
        json_t *a = json_array();
        while (text && *text) {
                size_t len = strcspn(text, "\n");
                _cleanup_free_ char *line = xmalloc(len + 1);
                memcpy(line, text, len);
                line[len] = '\0';
                long pid, ppid;
                char state[8];
                int used = 0;
                if (sscanf(line, "%ld %ld %7s %n", &pid, &ppid, state, &used) >= 3 && used > 0) {
                        char *cmd = line + used;
                        size_t cl = strlen(cmd);
                        while (cl && cmd[cl - 1] == ' ')
                                cmd[--cl] = '\0';
                        json_t *c = json_string(cmd);
                        json_array_append_new(a, json_pack("{s:I, s:I, s:s, s:o}", "pid", (json_int_t)pid, "ppid",
                                                           (json_int_t)ppid, "state", state, "command",
                                                           c ? c : json_string("?")));
                }
                text += len + (text[len] == '\n');
        }
        return a;
}

/* The keeper's list: a name and how to stop it, per line "+name" or "!name". */
struct kept {
        char **names;           /* "+name" / "!name" */
        size_t n;
};

static void kept_apply(struct kept *k, const char *line)
{
        for (size_t i = 0; i < k->n; i++)
                if (k->names[i] && streq(k->names[i] + 1, line + 1)) {
                        free(k->names[i]);
                        k->names[i] = NULL;
                }
        if (line[0] == '+' || line[0] == '!')
                k->names = strv_push(k->names, &k->n, line);
}

json_t *mcp_live_ls_entry(int exe_fd, const char *name)
{
        char *argv[] = { (char *)"hutch", (char *)"sandbox", (char *)"ls", (char *)"--json", NULL };
        _cleanup_free_ char *out = NULL;
        size_t len;
        bool cut;
        int st;
        if (call_run_sync(exe_fd, argv, 1 << 20, &out, &len, &cut, &st) < 0)
                return NULL;
        for (char *l = out; l && *l;) {
                char *nl = strchr(l, '\n');
                if (nl)
                        *nl = '\0';
                json_t *o = json_loads(l, 0, NULL);
                const char *n = json_string_value(json_object_get(o, "name"));
                if (n && streq(n, name))
                        return o;
                json_decref(o);
                l = nl ? nl + 1 : NULL;
        }
        return NULL;
}

char *mcp_live_run_id(int exe_fd, const char *name)
{
        json_t *o = mcp_live_ls_entry(exe_fd, name);
        const char *id = json_string_value(json_object_get(o, "id"));
        char *r = id ? xstrdup(id) : NULL;
        json_decref(o);
        return r;
}

/* Stop (commit) or kill (throw away) sandbox name. */
static void keeper_stop(int exe_fd, const char *name, bool commit)
{
        _cleanup_free_ char *out = NULL, *id = commit ? NULL : mcp_live_run_id(exe_fd, name);
        char *stop[] = { (char *)"hutch", (char *)"sandbox", (char *)"stop", (char *)name, NULL };
        char *kill[] = { (char *)"hutch", (char *)"kill", (char *)"--grace", (char *)"0", id, NULL };
        size_t len;
        bool cut;
        int st;
        if (!commit && !id)
                return;         /* not running */
        (void)call_run_sync(exe_fd, commit ? stop : kill, 4096, &out, &len, &cut, &st);
}

static _noreturn_ void keeper_main(int rfd, int exe_fd)
{
        struct kept k = { 0 };
        char buf[4096];
        size_t have = 0;

        for (;;) {
                ssize_t n = read(rfd, buf + have, sizeof(buf) - 1 - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                have += (size_t)n;
                buf[have] = '\0';
                char *nl;
                while ((nl = memchr(buf, '\n', have))) {
                        *nl = '\0';
                        kept_apply(&k, buf);
                        have -= (size_t)(nl + 1 - buf);
                        memmove(buf, nl + 1, have);
                }
                if (have == sizeof(buf) - 1)
                        have = 0;       /* not ours: no line is this long */
        }
        /* the server is gone: what it started ends. A start that was in
         * flight may bring its sandbox up a moment later: look twice. */
        size_t left = 0;
        for (size_t i = 0; i < k.n; i++)
                left += k.names[i] != NULL;
        for (int round = 0; left && round < 2; round++) {
                for (size_t i = 0; i < k.n; i++)
                        if (k.names[i])
                                keeper_stop(exe_fd, k.names[i] + 1, k.names[i][0] == '+');
                if (round == 0)
                        usleep(500 * 1000);
        }
        _exit(0);
}

int mcp_keeper_start(int exe_fd, int *ret_fd, pid_t *ret_pid)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                /* its own session: a signal to the client's process group
                 * (Ctrl-C) ends the server, not the one that cleans up */
                (void)setsid();
                signal(SIGINT, SIG_IGN);
                signal(SIGHUP, SIG_IGN);
                signal(SIGPIPE, SIG_IGN);
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                /* hold none of the client's pipes (stdin, stdout) open */
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
                        _exit(125);
                int keep[2] = { MIN(p[0], exe_fd), MAX(p[0], exe_fd) };
                (void)close_range(3, (unsigned)keep[0] - 1, 0);
                (void)close_range((unsigned)keep[0] + 1, (unsigned)keep[1] - 1, 0);
                (void)close_range((unsigned)keep[1] + 1, ~0u, 0);
                keeper_main(p[0], exe_fd);
        }
        close(p[0]);
        *ret_fd = p[1];
        *ret_pid = pid;
        return 0;
}

void mcp_keeper_tell(int fd, char what, const char *name)
{
        _cleanup_free_ char *line = xasprintf("%c%s\n", what, name);
        if (fd >= 0)
                (void)write_all(fd, line, strlen(line));
}
