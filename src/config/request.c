/* request.c - the hutch.request/1 reader (see request.h).
 *
 * Strict on purpose: an agent framework that misspells "timeout_ms" must
 * hear about it rather than run with the default limit. Every value goes
 * through the same profile setter as its command-line option (checked
 * here on a scratch config, so a bad one names its JSON pointer), and
 * the caller applies the overrides like the command line's.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>

#include "config/profile.h"
#include "config/request.h"
#include "config/run-config.h"
#include "lib/base64.h"
#include "lib/jsonutil.h"
#include "lib/redact.h"
#include "lib/util.h"

/* Bounds on what a request may hold (hutch-json(7)): the document is at
 * most REQUEST_MAX_BYTES, but 64 MiB of "" is 20 million argv items. The
 * same numbers as the import reader's where they meet. */
#define MAX_FILES 1024
#define MAX_PATH_LEN 1024
#define MAX_LABEL_LEN 256
#define MAX_ARGV 65536
#define MAX_LABELS 256
#define MAX_ENV 4096
#define MAX_SECRETS 256

struct parser {
        struct request *req;
        char *pointer;
        char *error;
        /* lengths of the vectors being built: appending is then
         * constant time, where strv_append() walks the vector */
        size_t n_overrides, n_argv, n_labels, n_secret_specs, n_secret_values, n_private_env;
};

/* The error is one line on a terminal or in a log, whatever the document
 * holds: a key or value's control characters (a newline in a field name)
 * become \xNN. Takes s; returns the text to use. */
static char *one_line(char *s)
{
        size_t extra = 0;
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        extra += 3;
        if (!extra)
                return s;
        char *out = xmalloc(strlen(s) + extra + 1), *o = out;
        for (const char *c = s; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        o += sprintf(o, "\\x%02x", (unsigned char)*c);
                else
                        *o++ = *c;
        *o = '\0';
        free(s);
        return out;
}

static int fail(struct parser *p, const char *pointer, const char *fmt, ...) _printf_(3, 4);
static int fail(struct parser *p, const char *pointer, const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *what = NULL;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        free(p->pointer);
        free(p->error);
        p->pointer = xstrdup(pointer);
        p->error = one_line(xasprintf("request: %s: %s", *pointer ? pointer : "(document)", what ? what : "bad value"));
        return -EINVAL;
}

/* A string without NUL bytes. */
static int get_string(struct parser *p, const json_t *j, const char *pointer, char **ret)
{
        if (!json_is_string(j))
                return fail(p, pointer, "expected a string, got %s", json_type_name(j));
        if (strlen(json_string_value(j)) != json_string_length(j))
                return fail(p, pointer, "contains a NUL character");
        *ret = xstrdup(json_string_value(j));
        return 0;
}

static int get_count(struct parser *p, const json_t *j, const char *pointer, json_int_t *ret)
{
        if (!json_is_integer(j) || json_integer_value(j) < 0)
                return fail(p, pointer, "expected a non-negative integer, got %s", json_type_name(j));
        *ret = json_integer_value(j);
        return 0;
}

/* key/value pair through the profile setter, on a scratch config, so a
 * bad value names its pointer here rather than a flag later */
static int add_override(struct parser *p, const char *pointer, const char *key, const char *value)
{
        struct run_config scratch;
        _cleanup_free_ char *err = NULL;
        char *pair[] = { (char *)key, (char *)value, NULL };
        int r;

        run_config_init(&scratch);
        r = profile_apply_cli(&scratch, pair, &err);
        run_config_done(&scratch);
        if (r < 0) {
                /* the setter's words name the flag; keep what follows it */
                const char *why = err ? strchr(err, ':') : NULL;
                return fail(p, pointer, "%s", why && why[1] ? why + 2 : err ? err : "bad value");
        }
        p->req->overrides = strv_push(p->req->overrides, &p->n_overrides, key);
        p->req->overrides = strv_push(p->req->overrides, &p->n_overrides, value);
        return 0;
}

static int parse_limits(struct parser *p, const json_t *o)
{
        static const struct { const char *field, *key, *fmt; } map[] = {
                { "timeout_ms", "timeout", "%lldms" },
                { "memory_mb",  "memory",  "%lldM" },
                { "disk_mb",    "disk",    "%lldM" },
                { "pids",       "pids",    "%lld" },
                { "cpu_time_ms","cpu-time","%lldms" },
        };
        const char *k;
        json_t *v;

        if (!json_is_object(o))
                return fail(p, "/limits", "expected an object, got %s", json_type_name(o));
        json_object_foreach((json_t *)o, k, v) {
                _cleanup_free_ char *ptr = json_pointer_join("/limits", k);
                char buf[64];
                bool known = false;
                int r;

                if (streq(k, "cpu_cores")) {
                        if (!json_is_number(v) || json_number_value(v) < 0)
                                return fail(p, ptr, "expected a non-negative number, got %s", json_type_name(v));
                        snprintf(buf, sizeof(buf), "%.3f", json_number_value(v));
                        r = add_override(p, ptr, "cpus", buf);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(map); i++) {
                        json_int_t n = 0;
                        if (!streq(k, map[i].field))
                                continue;
                        known = true;
                        r = get_count(p, v, ptr, &n);
                        if (r < 0)
                                return r;
                        snprintf(buf, sizeof(buf), map[i].fmt, (long long)n);
                        r = add_override(p, ptr, map[i].key, buf);
                        if (r < 0)
                                return r;
                }
                if (!known)
                        return fail(p, ptr, "unknown field (known: timeout_ms, memory_mb, cpu_cores, "
                                    "disk_mb, pids, cpu_time_ms)");
        }
        return 0;
}

/* An object of string values, as "KEY=VALUE" strings: labels into
 * *ret; variables (env) into the profile's [env], or into *ret when
 * given (private_env, which is not recorded). */
static int parse_pairs(struct parser *p, const json_t *o, const char *pointer, bool env, char ***ret,
                       size_t *ret_n)
{
        const char *k;
        json_t *v;

        if (!json_is_object(o))
                return fail(p, pointer, "expected an object, got %s", json_type_name(o));
        if (json_object_size(o) > (env ? MAX_ENV : MAX_LABELS))
                return fail(p, pointer, "more than %d %s", env ? MAX_ENV : MAX_LABELS,
                            env ? "variables" : "labels");
        json_object_foreach((json_t *)o, k, v) {
                _cleanup_free_ char *ptr = json_pointer_join(pointer, k);
                _cleanup_free_ char *value = NULL, *kv = NULL;
                int r;

                if (!*k || strchr(k, '=') || strlen(k) > MAX_LABEL_LEN || (env && !secret_name_valid(k)))
                        return fail(p, ptr, env ? "not a variable name (letters, digits, '_')"
                                                : "a key must be 1-256 characters without '='");
                r = get_string(p, v, ptr, &value);
                if (r < 0)
                        return r;
                kv = xasprintf("%s=%s", k, value);
                if (env && !ret) {
                        r = add_override(p, ptr, "env", kv);
                        if (r < 0)
                                return r;
                } else
                        *ret = strv_push(*ret, ret_n, kv);
        }
        return 0;
}

static int parse_argv(struct parser *p, const json_t *a)
{
        size_t i;
        json_t *v;

        if (!json_is_array(a))
                return fail(p, "/argv", "expected an array of strings, got %s", json_type_name(a));
        if (json_array_size(a) > MAX_ARGV)
                return fail(p, "/argv", "more than %d items", MAX_ARGV);
        json_array_foreach(a, i, v) {
                char idx[32];
                _cleanup_free_ char *ptr = NULL, *s = NULL;
                snprintf(idx, sizeof(idx), "%zu", i);
                ptr = json_pointer_join("/argv", idx);
                int r = get_string(p, v, ptr, &s);
                if (r < 0)
                        return r;
                p->req->argv = strv_push(p->req->argv, &p->n_argv, s);
        }
        return 0;
}

/* secrets: ["NAME", ...] (from the caller's environment) or
 * { "NAME": {"env": "VAR"} | {"file": "PATH"} | {"value": "..."} } */
static int parse_secrets(struct parser *p, const json_t *s)
{
        size_t i;
        const char *k;
        json_t *v;

        if ((json_is_array(s) && json_array_size(s) > MAX_SECRETS) ||
            (json_is_object(s) && json_object_size(s) > MAX_SECRETS))
                return fail(p, "/secrets", "more than %d secrets", MAX_SECRETS);
        if (json_is_array(s)) {
                json_array_foreach(s, i, v) {
                        char idx[32];
                        _cleanup_free_ char *ptr = NULL, *name = NULL;
                        snprintf(idx, sizeof(idx), "%zu", i);
                        ptr = json_pointer_join("/secrets", idx);
                        int r = get_string(p, v, ptr, &name);
                        if (r < 0)
                                return r;
                        if (!secret_name_valid(name))
                                return fail(p, ptr, "not a variable name (letters, digits, '_')");
                        p->req->secret_specs = strv_push(p->req->secret_specs, &p->n_secret_specs, name);
                }
                return 0;
        }
        if (!json_is_object(s))
                return fail(p, "/secrets", "expected an array of names or an object, got %s", json_type_name(s));
        json_object_foreach((json_t *)s, k, v) {
                _cleanup_free_ char *ptr = json_pointer_join("/secrets", k);
                const char *how;
                json_t *src;
                int r;

                if (!secret_name_valid(k))
                        return fail(p, ptr, "not a variable name (letters, digits, '_')");
                if (!json_is_object(v) || json_object_size(v) != 1)
                        return fail(p, ptr, "expected an object with one of env, file or value");
                json_object_foreach(v, how, src) {
                        _cleanup_free_ char *sptr = json_pointer_join(ptr, how);
                        _cleanup_free_ char *text = NULL, *spec = NULL;
                        r = get_string(p, src, sptr, &text);
                        if (r < 0)
                                return r;
                        if (streq(how, "value")) {
                                spec = xasprintf("%s=%s", k, text);
                                p->req->secret_values = strv_push(p->req->secret_values, &p->n_secret_values, spec);
                        } else if (streq(how, "file")) {
                                spec = xasprintf("%s=@%s", k, text);
                                p->req->secret_specs = strv_push(p->req->secret_specs, &p->n_secret_specs, spec);
                        } else if (streq(how, "env")) {
                                const char *val = getenv(text);
                                if (!secret_name_valid(text) || !val)
                                        return fail(p, sptr, "not set in the environment");
                                spec = xasprintf("%s=%s", k, val);
                                p->req->secret_values = strv_push(p->req->secret_values, &p->n_secret_values, spec);
                        } else
                                return fail(p, sptr, "unknown field (known: env, file, value)");
                }
        }
        return 0;
}

static bool path_safe(const char *path)
{
        if (!*path || *path == '/' || strlen(path) > MAX_PATH_LEN)
                return false;
        for (const char *s = path; *s;) {
                size_t n = strcspn(s, "/");
                if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
                s += n;
                if (*s == '/')
                        s++;
        }
        return true;
}

/* files: { "PATH": "text" | {"content": "...", "encoding": "utf-8"|"base64"}
 *          | {"host_path": "/abs/path"} } */
static int parse_files(struct parser *p, const json_t *o)
{
        const char *k;
        json_t *v;

        if (!json_is_object(o))
                return fail(p, "/files", "expected an object of path: content, got %s", json_type_name(o));
        if (json_object_size(o) > MAX_FILES)
                return fail(p, "/files", "more than %d files", MAX_FILES);
        p->req->files = xcalloc(json_object_size(o) + 1, sizeof(*p->req->files));
        json_object_foreach((json_t *)o, k, v) {
                _cleanup_free_ char *ptr = json_pointer_join("/files", k);
                struct request_file *f = &p->req->files[p->req->n_files];
                const char *field;
                json_t *fv;
                bool base64 = false;
                json_t *content = NULL;
                int r;

                if (!path_safe(k))
                        return fail(p, ptr, "expected a relative path without '.' or '..' parts");
                f->path = xstrdup(k);
                p->req->n_files++;
                if (json_is_string(v))
                        content = v;
                else if (json_is_object(v)) {
                        json_object_foreach(v, field, fv) {
                                _cleanup_free_ char *fptr = json_pointer_join(ptr, field);
                                if (streq(field, "content"))
                                        content = fv;
                                else if (streq(field, "encoding")) {
                                        if (!json_is_string(fv) || (!streq(json_string_value(fv), "utf-8") &&
                                                                    !streq(json_string_value(fv), "base64")))
                                                return fail(p, fptr, "expected \"utf-8\" or \"base64\"");
                                        base64 = streq(json_string_value(fv), "base64");
                                } else if (streq(field, "host_path")) {
                                        r = get_string(p, fv, fptr, &f->host_path);
                                        if (r < 0)
                                                return r;
                                        if (f->host_path[0] != '/')
                                                return fail(p, fptr, "expected an absolute path");
                                } else
                                        return fail(p, fptr, "unknown field (known: content, encoding, host_path)");
                        }
                        if (!!content == !!f->host_path)
                                return fail(p, ptr, "expected exactly one of content or host_path");
                } else
                        return fail(p, ptr, "expected a string or an object, got %s", json_type_name(v));
                if (!content)
                        continue;
                _cleanup_free_ char *cptr = json_is_string(v) ? xstrdup(ptr) : json_pointer_join(ptr, "content");
                if (!json_is_string(content))
                        return fail(p, cptr, "expected a string, got %s", json_type_name(content));
                if (base64) {
                        if (base64_decode(json_string_value(content), json_string_length(content),
                                          &f->data, &f->len) < 0)
                                return fail(p, cptr, "not valid base64");
                } else {
                        f->len = json_string_length(content);
                        f->data = xmalloc(f->len + 1);
                        memcpy(f->data, json_string_value(content), f->len + 1);
                }
        }
        return 0;
}

static int parse_stdin(struct parser *p, const json_t *v)
{
        const char *field;
        json_t *fv;
        const json_t *content = v;
        bool base64 = false;

        if (json_is_object(v)) {
                content = NULL;
                json_object_foreach((json_t *)v, field, fv) {
                        _cleanup_free_ char *fptr = json_pointer_join("/stdin", field);
                        if (streq(field, "content"))
                                content = fv;
                        else if (streq(field, "encoding") && json_is_string(fv) &&
                                 (streq(json_string_value(fv), "utf-8") || streq(json_string_value(fv), "base64")))
                                base64 = streq(json_string_value(fv), "base64");
                        else if (streq(field, "encoding"))
                                return fail(p, fptr, "expected \"utf-8\" or \"base64\"");
                        else
                                return fail(p, fptr, "unknown field (known: content, encoding)");
                }
        }
        if (!json_is_string(content))
                return fail(p, "/stdin", "expected a string or {\"content\", \"encoding\"}");
        if (base64)
                return base64_decode(json_string_value(content), json_string_length(content),
                                     &p->req->stdin_data, &p->req->stdin_len) < 0
                       ? fail(p, "/stdin", "not valid base64") : 0;
        p->req->stdin_len = json_string_length(content);
        p->req->stdin_data = xmalloc(p->req->stdin_len + 1);
        memcpy(p->req->stdin_data, json_string_value(content), p->req->stdin_len + 1);
        return 0;
}

static int parse_top(struct parser *p, json_t *root)
{
        struct request *req = p->req;
        const char *k;
        json_t *v;
        int r = 0;

        if (!json_is_object(root))
                return fail(p, "", "expected a JSON object, got %s", json_type_name(root));
        v = json_object_get(root, "schema");
        if (v && (!json_is_string(v) || !streq(json_string_value(v), REQUEST_SCHEMA))) {
                fail(p, "/schema", "unsupported schema %s%s%s (this hutch reads " REQUEST_SCHEMA ")",
                     json_is_string(v) ? "\"" : "", json_is_string(v) ? json_string_value(v) : json_type_name(v),
                     json_is_string(v) ? "\"" : "");
                return -EPROTONOSUPPORT;
        }
        json_object_foreach(root, k, v) {
                _cleanup_free_ char *ptr = json_pointer_join("", k);
                if (streq(k, "schema"))
                        continue;
                else if (streq(k, "language"))
                        r = get_string(p, v, ptr, &req->language);
                else if (streq(k, "code"))
                        r = get_string(p, v, ptr, &req->code);
                else if (streq(k, "argv"))
                        r = parse_argv(p, v);
                else if (streq(k, "stdin"))
                        r = parse_stdin(p, v);
                else if (streq(k, "files"))
                        r = parse_files(p, v);
                else if (streq(k, "env"))
                        r = parse_pairs(p, v, "/env", true, NULL, NULL);
                else if (streq(k, "private_env"))
                        r = parse_pairs(p, v, "/private_env", true, &req->private_env, &p->n_private_env);
                else if (streq(k, "labels"))
                        r = parse_pairs(p, v, "/labels", false, &req->labels, &p->n_labels);
                else if (streq(k, "secrets"))
                        r = parse_secrets(p, v);
                else if (streq(k, "limits"))
                        r = parse_limits(p, v);
                else if (streq(k, "profile"))
                        r = get_string(p, v, ptr, &req->profile);
                else if (streq(k, "session"))
                        r = get_string(p, v, ptr, &req->session);
                else if (streq(k, "commit")) {
                        r = get_string(p, v, ptr, &req->commit);
                        if (r == 0 && !streq(req->commit, "success") && !streq(req->commit, "always") &&
                            !streq(req->commit, "never"))
                                r = fail(p, ptr, "expected \"success\", \"always\" or \"never\"");
                        if (r == 0)
                                r = add_override(p, ptr, "commit", req->commit);
                }
                else if (streq(k, "workdir"))
                        r = get_string(p, v, ptr, &req->workdir);
                else if (streq(k, "idempotency_key")) {
                        r = get_string(p, v, ptr, &req->idempotency_key);
                        if (r == 0 && (!*req->idempotency_key || strlen(req->idempotency_key) > 256))
                                r = fail(p, ptr, "expected 1-256 characters");
                } else if (streq(k, "network")) {
                        _cleanup_free_ char *mode = NULL;
                        r = get_string(p, v, ptr, &mode);
                        /* as the schema says: a request carries no allow
                         * rules, so "allow" (which needs them) is a profile's */
                        if (r == 0 && !streq(mode, "none") && !streq(mode, "host"))
                                r = fail(p, ptr, "expected \"none\" or \"host\" (network = allow and its rules "
                                         "come from a profile)");
                        if (r == 0)
                                r = add_override(p, ptr, "network", mode);
                } else
                        r = fail(p, ptr, "unknown field");
                if (r < 0)
                        return r;
        }
        if (!!req->language != !!req->code)
                return fail(p, req->language ? "/code" : "/language",
                            "language and code go together");
        if (!req->language && strv_length(req->argv) == 0)
                return fail(p, "", "nothing to run: give argv, or language and code");
        return 0;
}

int request_parse(const char *text, size_t len, struct request *ret, char **ret_pointer,
                  char **ret_error)
{
        struct parser p = { .req = ret };
        json_error_t jerr;
        json_t *root;
        int r;

        memset(ret, 0, sizeof(*ret));
        /* duplicate keys would let two readers see two different requests */
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!root) {
                *ret_pointer = xstrdup("");
                *ret_error = one_line(xasprintf("request: not valid JSON at line %d, column %d: %s",
                                                jerr.line, jerr.column, jerr.text));
                return -EINVAL;
        }
        r = parse_top(&p, root);
        json_decref(root);
        if (r < 0) {
                *ret_pointer = TAKE_PTR(p.pointer);
                *ret_error = TAKE_PTR(p.error);
                return r;
        }
        return 0;
}

int request_read(const char *path, struct request *ret, char **ret_pointer, char **ret_error)
{
        _cleanup_close_ int fd = streq(path, "-") ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        size_t cap = 65536, len = 0;

        memset(ret, 0, sizeof(*ret));
        if (fd < 0) {
                int e = errno;
                *ret_pointer = xstrdup("");
                *ret_error = xasprintf("request: %s: %s", path, strerror(e));
                return -e;
        }
        buf = xmalloc(cap);
        for (;;) {
                if (len == cap) {
                        if (cap >= REQUEST_MAX_BYTES) {
                                *ret_pointer = xstrdup("");
                                *ret_error = xasprintf("request: %s: larger than %u MiB", path,
                                                       REQUEST_MAX_BYTES >> 20);
                                return -EFBIG;
                        }
                        buf = xrealloc(buf, cap *= 2);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        *ret_pointer = xstrdup("");
                        *ret_error = xasprintf("request: %s: %s", path, strerror(e));
                        return -e;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        return request_parse(buf, len, ret, ret_pointer, ret_error);
}

void request_done(struct request *r)
{
        free(r->language);
        free(r->code);
        strv_free(r->argv);
        free(r->profile);
        free(r->session);
        free(r->commit);
        free(r->workdir);
        free(r->idempotency_key);
        strv_free(r->overrides);
        strv_free(r->labels);
        strv_free(r->secret_specs);
        if (r->secret_values)
                for (char **s = r->secret_values; *s; s++)
                        explicit_bzero(*s, strlen(*s));
        strv_free(r->secret_values);
        for (char **s = r->private_env; s && *s; s++)
                explicit_bzero(*s, strlen(*s));
        strv_free(r->private_env);
        free(r->stdin_data);
        for (size_t i = 0; i < r->n_files; i++) {
                free(r->files[i].path);
                free(r->files[i].data);
                free(r->files[i].host_path);
        }
        free(r->files);
        memset(r, 0, sizeof(*r));
}
