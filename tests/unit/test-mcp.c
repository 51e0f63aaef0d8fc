/* test-mcp.c - unit tests for the pure parts of `hutch mcp`: line
 * framing (wire.c) over a pipe, the head-and-tail cut of a result's text
 * (format.c), and the requests the run tools build from a model's
 * arguments (tools.c): ceilings held, host paths refused; the exec argv
 * of a live session's call (live.c): values quoted, bad paths refused. */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/util.h"
#include "mcp/format.h"
#include "mcp/live.h"
#include "run/live-kernel.h"
#include "mcp/tools.h"
#include "mcp/wire.h"

static void framing(void **state)
{
        int p[2];
        struct wire_in w;
        char *line = NULL;

        assert_int_equal(pipe2(p, O_NONBLOCK), 0);
        wire_in_init(&w, p[0]);
        assert_int_equal(write(p[1], "one\r\ntw", 7), 7);
        assert_int_equal(wire_in_fill(&w), 0);
        assert_int_equal(wire_in_next(&w, &line), WIRE_LINE);
        assert_string_equal(line, "one");
        free(line);
        assert_int_equal(wire_in_next(&w, &line), WIRE_NONE);
        assert_int_equal(write(p[1], "o\nlast", 6), 6);
        close(p[1]);
        assert_int_equal(wire_in_fill(&w), 0);
        assert_int_equal(wire_in_next(&w, &line), WIRE_LINE);
        assert_string_equal(line, "two");
        free(line);
        while (!w.eof)
                assert_int_equal(wire_in_fill(&w), 0);
        /* a last line without its newline still counts */
        assert_int_equal(wire_in_next(&w, &line), WIRE_LINE);
        assert_string_equal(line, "last");
        free(line);
        assert_int_equal(wire_in_next(&w, &line), WIRE_NONE);
        wire_in_done(&w);
        close(p[0]);
}

static void cut(void **state)
{
        _cleanup_free_ char *small = mcp_cut_text("abc", 3, 10, "ID", "stdout", NULL);
        assert_string_equal(small, "abc");

        char big[1000];
        memset(big, 'x', sizeof(big));
        memcpy(big, "HEAD", 4);
        memcpy(big + sizeof(big) - 4, "TAIL", 4);
        _cleanup_free_ char *c = mcp_cut_text(big, sizeof(big), 100, "01ID", "stderr", NULL);
        assert_true(startswith(c, "HEAD"));
        assert_non_null(strstr(c, "900 bytes cut here. stderr is 1000 bytes of text, all kept; "
                                  "shown here: bytes 0 to 50 and 950 to 1000"));
        assert_non_null(strstr(c, "\"run_id\": \"01ID\", \"stream\": \"stderr\", \"offset\": 50}"));
        assert_int_equal(memcmp(c + strlen(c) - 4, "TAIL", 4), 0);

        /* never inside a character: "é" is 2 bytes, the cut moves to its start */
        const char *u = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
        assert_int_equal(mcp_utf8_floor(u, 10, 3), 2);
        assert_int_equal(mcp_utf8_ceil(u, 10, 3), 4);
        assert_int_equal(mcp_utf8_floor(u, 10, 12), 10);
        _cleanup_free_ char *cu = mcp_cut_text(u, 10, 6, "X", "stdout", NULL);
        assert_true(startswith(cu, "\xc3\xa9\n[... "));

        /* a stream the record kept only head and tail of: its real size
         * first, and that the middle is gone for good */
        struct mcp_stream_size sz = { .bytes = 5100000, .truncated = true, .capture_bytes = 65536 };
        _cleanup_free_ char *t = mcp_cut_text(big, sizeof(big), 100, "01ID", "stdout", &sz);
        assert_non_null(strstr(t, "stdout was 5100000 bytes; the record kept only its first and last 65536 bytes "
                                  "(1000 bytes of text, the bytes in between are gone for good"));
        assert_non_null(strstr(t, "read the 900 cut bytes with read_output"));
}

static json_t *req(enum mcp_tool t, const char *args, uint64_t max_ms, char **ret_error)
{
        json_t *a = json_loads(args, 0, NULL), *labels = json_pack("{s:s}", "mcp.client", "t"), *r = NULL;
        assert_non_null(a);
        if (mcp_tool_request(t, a, NULL, max_ms, NULL, labels, &r, ret_error) < 0)
                r = NULL;
        json_decref(a);
        json_decref(labels);
        return r;
}

static long long timeout_of(json_t *r)
{
        return json_integer_value(json_object_get(json_object_get(r, "limits"), "timeout_ms"));
}

static void requests(void **state)
{
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL;
        json_t *r = req(TOOL_RUN_CODE, "{\"language\":\"python\",\"code\":\"print(1)\"}", 120000, &e1);
        assert_non_null(r);
        assert_int_equal(timeout_of(r), MCP_DEFAULT_TIMEOUT_MS);
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "labels"), "mcp.client")), "t");
        assert_string_equal(json_string_value(json_object_get(r, "schema")), "hutch.request/1");
        json_decref(r);

        /* the ceiling holds, a lower ask is kept, the default stays under the ceiling */
        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"true\"],\"timeout_s\":1000}", 5000, &e1);
        assert_int_equal(timeout_of(r), 5000);
        json_decref(r);
        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"true\"],\"timeout_s\":0.25}", 5000, &e1);
        assert_int_equal(timeout_of(r), 250);
        json_decref(r);
        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"true\"]}", 2000, &e1);
        assert_int_equal(timeout_of(r), 2000);
        json_decref(r);

        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"true\"],\"session\":\"w1\"}", 2000, &e1);
        assert_string_equal(json_string_value(json_object_get(r, "session")), "mcp-w1");
        /* a model's session keeps every call's changes unless it says otherwise */
        assert_string_equal(json_string_value(json_object_get(r, "commit")), "always");
        json_decref(r);
        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"true\"],\"session\":\"w1\",\"commit\":\"never\"}", 2000, &e1);
        assert_string_equal(json_string_value(json_object_get(r, "commit")), "never");
        json_decref(r);

        assert_null(req(TOOL_RUN_COMMAND, "{\"argv\":[\"cat\"],\"files\":{\"x\":{\"host_path\":\"/etc/shadow\"}}}",
                        5000, &e2));
        assert_non_null(strstr(e2, "host_path"));
        assert_null(req(TOOL_RUN_COMMAND, "{\"argv\":[]}", 5000, &e3));
        assert_null(req(TOOL_RUN_CODE, "{\"code\":\"x\"}", 5000, &e4));
        assert_string_equal(e4, "missing argument \"language\"");
        r = req(TOOL_RUN_COMMAND, "{\"argv\":[\"x\"],\"env\":{\"A\":\"b\"}}", 5000, &e5);
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "env"), "A")), "b");
        json_decref(r);
        assert_null(req(TOOL_RUN_COMMAND, "{\"argv\":[\"x\"],\"env\":{\"1A\":\"b\"}}", 5000, &e5));
        assert_non_null(strstr(e5, "env/1A"));
}

/* Scopes: their names, and sessions no two scopes (nor the operator's
 * names) share. */
static void scopes(void **state)
{
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *err = NULL, *err2 = NULL;

        assert_true(mcp_scope_valid("default"));
        assert_true(mcp_scope_valid("conv_42"));
        assert_false(mcp_scope_valid(""));
        assert_false(mcp_scope_valid("a-b"));   /* '-' ends a scope in a session name */
        assert_false(mcp_scope_valid("../x"));
        assert_false(mcp_scope_valid("abcdefghijklmnopq"));

        a = mcp_session_name(NULL, "w", &err);
        b = mcp_session_name("default", "w", &err);
        c = mcp_session_name("t1", "w", &err);
        assert_string_equal(a, "mcp-w");
        assert_string_equal(b, "mcp-w");
        assert_string_equal(c, "mcs-t1-w");
        /* scope "a" session "b-c" and scope "a_b"... never meet: no '-' in a scope */
        d = mcp_session_name("a", "b-c", &err);
        assert_string_equal(d, "mcs-a-b-c");
        /* the name must still fit a session's 64 bytes */
        char long_name[61];
        memset(long_name, 'n', 60);
        long_name[60] = '\0';
        assert_null(mcp_session_name("scope", long_name, &err2));
        assert_non_null(strstr(err2, "1 to 54"));
        /* the published pattern: no leading '.' ("." and ".." are the
         * directories of a path) */
        const char *bad[] = { ".", "..", ".hidden", "a/b", "" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *e = NULL;
                assert_null(mcp_session_name(NULL, bad[i], &e));
                assert_non_null(strstr(e, "session: "));
        }
        _cleanup_free_ char *ok = mcp_session_name(NULL, "-a.b_", &err2);
        assert_string_equal(ok, "mcp--a.b_");
}

/* A NUL in a run's text shows as U+FFFD and ends nothing; a NUL in an
 * argument is found where it is (stdin and files contents exempt). */
static void nul(void **state)
{
        size_t n;
        _cleanup_free_ char *t = mcp_text_without_nul("a\0b\0", 4, &n);
        assert_int_equal(n, 8);
        assert_memory_equal(t, "a\xef\xbf\xbd" "b\xef\xbf\xbd", 9);
        json_t *run = json_pack("{s:s#, s:[s#]}", "stdout", "x\0y", (int)3, "argv", "\0", (int)1);
        mcp_json_without_nul(run);
        assert_string_equal(json_string_value(json_object_get(run, "stdout")), "x\xef\xbf\xbdy");
        assert_string_equal(json_string_value(json_array_get(json_object_get(run, "argv"), 0)), "\xef\xbf\xbd");
        json_decref(run);

        json_t *args = json_pack("{s:s#, s:{s:s#, s:{s:s#}}, s:[s, s#]}", "stdin", "a\0", (int)2, "files", "f",
                                 "b\0", (int)2, "g", "content", "c\0", (int)2, "argv", "ok", "x\0", (int)2);
        _cleanup_free_ char *p = mcp_args_nul_path(TOOL_RUN_COMMAND, args);
        assert_string_equal(p, "argv/1");
        json_array_remove(json_object_get(args, "argv"), 1);
        assert_null(mcp_args_nul_path(TOOL_RUN_COMMAND, args));
        /* bytes for a run, not for a tool that takes no such field */
        _cleanup_free_ char *q = mcp_args_nul_path(TOOL_READ_OUTPUT, args);
        assert_non_null(q);
        json_object_set_new(json_object_get(json_object_get(args, "files"), "g"), "encoding",
                            json_stringn("base64\0", 7));
        _cleanup_free_ char *r = mcp_args_nul_path(TOOL_RUN_COMMAND, args);
        assert_string_equal(r, "files/g/encoding");
        json_decref(args);
}

static void tools(void **state)
{
        json_t *t = mcp_tools_json(30000, false, false);
        const char *order[] = { "run_code", "run_command", "read_output", "list_runs", "get_file", "diff", "apply",
                                "list_processes", "list_ports" };
        /* apply only when the operator allows it; the live tools only
         * with live sessions */
        assert_int_equal(json_array_size(t), 6);
        json_decref(t);
        t = mcp_tools_json(30000, false, true);
        assert_int_equal(json_array_size(t), 8);
        assert_string_equal(json_string_value(json_object_get(json_array_get(t, 6), "name")), "list_processes");
        json_decref(t);
        t = mcp_tools_json(30000, true, true);
        assert_int_equal(json_array_size(t), 9);
        for (size_t i = 0; i < 9; i++) {
                json_t *x = json_array_get(t, i);
                assert_string_equal(json_string_value(json_object_get(x, "name")), order[i]);
                assert_string_equal(json_string_value(json_object_get(json_object_get(x, "inputSchema"), "type")), "object");
                assert_string_equal(json_string_value(json_object_get(json_object_get(x, "outputSchema"), "type")), "object");
                assert_int_equal(mcp_tool_from_name(order[i]), (int)i);
        }
        assert_int_equal(mcp_tool_from_name("nope"), _TOOL_INVALID);
        json_decref(t);
}

static void live_argv(void **state)
{
        char **v = NULL, *err = NULL, *in = NULL;
        json_t *req = json_pack("{s:[s,s], s:{s:i}}", "argv", "echo", "it's", "limits", "timeout_ms", 5000);

        /* a plain command: its argv as is, after exec's own options */
        assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 1, false, &v, &in, &err), 0);
        const char *want[] = { "hutch", "exec", "sb", "--json", "--timeout=5000ms", "--", "echo", "it's", NULL };
        for (size_t i = 0; want[i] || v[i]; i++)
                assert_string_equal(v[i], want[i]);
        assert_null(in);
        strv_free(v);
        /* stdin, env and files: one sh script on the exec's stdin, every
         * value single-quoted; the argv has the loader and the command */
        json_object_set_new(req, "stdin", json_string("a'b $(x) SECRET-IN"));
        json_object_set_new(req, "env", json_pack("{s:s}", "K", "v' SECRET-ENV"));
        json_object_set_new(req, "files", json_pack("{s:s}", "d/f.txt", "`x` SECRET-FILE"));
        assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 7, false, &v, &in, &err), 0);
        const char *want2[] = { "hutch", "exec", "sb", "--json", "--timeout=5000ms", "--stdin", "--", "sh", "-c",
                                NULL /* the loader */, "hutch-mcp", "7", "echo", "it's", NULL };
        for (size_t i = 0; want2[i] || i == 9 || v[i]; i++)
                if (i != 9)
                        assert_string_equal(v[i], want2[i]);
        for (size_t i = 0; v[i]; i++)
                assert_null(strstr(v[i], "SECRET"));
        /* neither the script nor the stdin is ever a file in the sandbox */
        assert_null(strstr(in, "/tmp/"));
        assert_non_null(strstr(in, "hutch_in='a'\\''b $(x) SECRET-IN'\n"));
        assert_non_null(strstr(in, "{ printf %s \"$hutch_in\" & } | hutch_main \"$@\"\n"));
        assert_non_null(strstr(in, "export K='v'\\'' SECRET-ENV'\n"));
        assert_non_null(strstr(in, "mkdir -p -- 'd'"));
        assert_non_null(strstr(in, "printf %s '`x` SECRET-FILE' > 'd/f.txt'"));
        assert_non_null(strstr(in, "exec \"$@\"\n"));
        strv_free(v);
        free(in);
        /* paths out of the workspace, NUL bytes, too much */
        const char *bad[] = { "../x", "/etc/x", "a//b", "a/./b", "a/", "" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_object_set_new(req, "files", json_pack("{s:s}", bad[i], "x"));
                assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 1, false, &v, &in, &err), -EINVAL);
                assert_non_null(strstr(err, "relative path"));
                free(err);
                err = NULL;
        }
        json_object_del(req, "files");
        json_object_set_new(req, "stdin", json_stringn("a\0b", 3));
        assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 1, false, &v, &in, &err), -EINVAL);
        assert_non_null(strstr(err, "NUL"));
        free(err);
        /* a large stdin goes on stdin; a too large argv is refused */
        char *big = xmalloc(MCP_LIVE_ARGV_MAX + 2);
        memset(big, 'x', MCP_LIVE_ARGV_MAX + 1);
        big[MCP_LIVE_ARGV_MAX + 1] = '\0';
        json_object_set_new(req, "stdin", json_string(big));
        assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 1, false, &v, &in, &err), 0);
        assert_true(strlen(in) > MCP_LIVE_ARGV_MAX);
        strv_free(v);
        free(in);
        json_array_append_new(json_object_get(req, "argv"), json_string(big));
        assert_int_equal(mcp_live_exec_argv("sb", req, NULL, 1, false, &v, &in, &err), -E2BIG);
        assert_non_null(strstr(err, "argv"));
        free(err);
        free(big);
        json_decref(req);
}

static void live_kernel_lang(void **state)
{
        json_t *req = json_pack("{s:s, s:s}", "language", "python", "code", "x += 1");
        assert_int_equal(mcp_live_kernel_lang(req), LIVE_KERNEL_PYTHON);
        json_object_set_new(req, "language", json_string("node"));
        assert_int_equal(mcp_live_kernel_lang(req), LIVE_KERNEL_NODE);
        /* what a kernel cannot take runs as a program */
        const char *brought[] = { "stdin", "files", "env" };
        for (size_t i = 0; i < ELEMENTSOF(brought); i++) {
                json_object_set_new(req, brought[i], json_object());
                assert_int_equal(mcp_live_kernel_lang(req), -EINVAL);
                json_object_del(req, brought[i]);
        }
        json_object_set_new(req, "code", json_stringn("a\0b", 3));
        assert_int_equal(mcp_live_kernel_lang(req), -EINVAL);
        char *big = xmalloc(LIVE_KERNEL_CODE_MAX + 2);
        memset(big, '1', LIVE_KERNEL_CODE_MAX + 1);
        big[LIVE_KERNEL_CODE_MAX + 1] = '\0';
        json_object_set_new(req, "code", json_string(big));
        assert_int_equal(mcp_live_kernel_lang(req), -EINVAL);
        big[LIVE_KERNEL_CODE_MAX] = '\0';
        json_object_set_new(req, "code", json_string(big));
        assert_int_equal(mcp_live_kernel_lang(req), LIVE_KERNEL_NODE);
        free(big);
        json_object_set_new(req, "language", json_string("c"));
        assert_int_equal(mcp_live_kernel_lang(req), -EINVAL);
        json_object_del(req, "language");
        assert_int_equal(mcp_live_kernel_lang(req), -EINVAL);
        json_decref(req);
}

static void live_ps(void **state)
{
        json_t *a = mcp_live_ps_parse("1 0 S [hutch]\n12 1 S python3 server.py  \nnot a line\n");
        assert_int_equal(json_array_size(a), 2);
        json_t *p = json_array_get(a, 1);
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), 12);
        assert_int_equal(json_integer_value(json_object_get(p, "ppid")), 1);
        assert_string_equal(json_string_value(json_object_get(p, "state")), "S");
        assert_string_equal(json_string_value(json_object_get(p, "command")), "python3 server.py");
        json_decref(a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(framing),
                cmocka_unit_test(cut),
                cmocka_unit_test(scopes),
                cmocka_unit_test(nul),
                cmocka_unit_test(requests),
                cmocka_unit_test(tools),
                cmocka_unit_test(live_argv),
                cmocka_unit_test(live_kernel_lang),
                cmocka_unit_test(live_ps),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
