/* redact.c - secret values found and replaced in output (see redact.h).
 *
 * The search is a plain memmem per secret: a run has a few secrets and
 * a capture is at most a few hundred KiB, so nothing cleverer pays.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lib/redact.h"
#include "lib/util.h"

#define SECRET_NAME_MAX 128
#define SECRET_FILE_MAX (1u << 20)

bool secret_name_valid(const char *name)
{
        size_t n = 0;
        if (!name || !*name || (*name >= '0' && *name <= '9'))
                return false;
        for (const char *p = name; *p; p++, n++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= '0' && *p <= '9')))
                        return false;
        return n <= SECRET_NAME_MAX;
}

int secret_resolve(const char *spec, char **ret, char **ret_error)
{
        const char *eq = strchr(spec, '=');
        _cleanup_free_ char *name = eq ? xasprintf("%.*s", (int)(eq - spec), spec) : xstrdup(spec);
        _cleanup_free_ char *value = NULL;
        size_t len;
        int r;

        if (!secret_name_valid(name)) {
                *ret_error = xasprintf("--secret %s: expected NAME or NAME=@FILE (NAME: letters, digits, '_')",
                                       spec);
                return -EINVAL;
        }
        if (!eq) {
                const char *v = getenv(name);
                if (!v) {
                        *ret_error = xasprintf("--secret %s: not set in the environment", name);
                        return -ENOENT;
                }
                *ret = xasprintf("%s=%s", name, v);
                return 0;
        }
        if (eq[1] != '@' || !eq[2]) {
                /* a value on the command line would be in ps(1) and in
                 * the shell's history: refuse it */
                *ret_error = xasprintf("--secret %s: expected NAME or NAME=@FILE, not a value "
                                       "(a value in argv is visible to every user)", name);
                return -EINVAL;
        }
        r = read_file(eq + 2, &value, &len);
        if (r < 0) {
                *ret_error = xasprintf("--secret %s: %s: %s", name, eq + 2, strerror(-r));
                return r;
        }
        if (len > SECRET_FILE_MAX || strlen(value) != len) {
                *ret_error = xasprintf("--secret %s: %s: %s", name, eq + 2,
                                       len > SECRET_FILE_MAX ? "larger than 1 MiB" : "contains a NUL byte");
                return -EINVAL;
        }
        if (len && value[len - 1] == '\n')
                value[--len] = '\0';
        *ret = xasprintf("%s=%s", name, value);
        return 0;
}

/* kv with every "\n" of its value written "\r\n", as a pty's ONLCR
 * does; NULL when its value has none. */
static char *onlcr_form(const char *kv)
{
        const char *eq = strchr(kv, '=');
        size_t nl = 0, len = strlen(kv);
        if (!eq || !strchr(eq, '\n'))
                return NULL;
        for (const char *p = eq; *p; p++)
                nl += *p == '\n';
        char *out = xmalloc(len + nl + 1), *w = out;
        for (const char *p = kv; *p; p++) {
                if (p > eq && *p == '\n')
                        *w++ = '\r';
                *w++ = *p;
        }
        *w = '\0';
        return out;
}

char **redact_forms(char *const *secrets, bool tty)
{
        char **forms = NULL;
        for (char *const *s = secrets; s && *s; s++) {
                forms = strv_append(forms, *s);
                char *crlf = tty ? onlcr_form(*s) : NULL;
                if (crlf) {
                        forms = strv_append(forms, crlf);
                        explicit_bzero(crlf, strlen(crlf));
                        free(crlf);
                }
        }
        return forms;
}

void redact_forms_free(char **forms)
{
        for (char **e = forms; e && *e; e++)
                explicit_bzero(*e, strlen(*e));
        strv_free(forms);
}

size_t redact_max_len(char *const *secrets)
{
        size_t m = 0;
        for (char *const *s = secrets; s && *s; s++) {
                const char *eq = strchr(*s, '=');
                if (eq)
                        m = MAX(m, strlen(eq + 1));
        }
        return m;
}

/* The value of a "NAME=VALUE" secret and its length; NULL for an empty
 * or malformed one, which redacts nothing. */
static const char *secret_value(const char *kv, size_t *ret_len)
{
        const char *v = strchr(kv, '=');
        if (!v || !*++v)
                return NULL;
        *ret_len = strlen(v);
        return v;
}

/* One secret as redact() sweeps the buffer. */
struct finder {
        const char *kv;         /* "NAME=VALUE" */
        const char *value;
        size_t vlen;
        size_t next;            /* its first match at or after the sweep's position (n: none) */
        size_t scanned;         /* while a run grows: matches starting before this were seen */
        size_t last_end;        /* ... and the end of the last of them (0: none) */
};

/* The first match of f's value at or after from and before limit
 * (SIZE_MAX: none); only the bytes such a match can span are read. */
static size_t find_between(const char *buf, size_t n, const struct finder *f, size_t from, size_t limit)
{
        size_t to = limit >= n ? n : MIN(n, limit + f->vlen - 1);
        if (from >= to || to - from < f->vlen)
                return SIZE_MAX;
        const char *hit = memmem(buf + from, to - from, f->value, f->vlen);
        return hit ? (size_t)(hit - buf) : SIZE_MAX;
}

static void put(char **out, size_t *len, size_t *cap, const void *p, size_t k)
{
        if (*len + k + 1 > *cap)
                *out = xrealloc(*out, *cap = (*len + k + 1) * 2);
        memcpy(*out + *len, p, k);
        *len += k;
}

static void put_marker(char **out, size_t *len, size_t *cap, const struct finder *f)
{
        put(out, len, cap, "[secret ", 8);
        put(out, len, cap, f->kv, (size_t)(f->value - 1 - f->kv));
        put(out, len, cap, "]", 1);
}

/* Grow the run of matches that ends at end (it started at start): a
 * match that starts inside it and goes on past its end extends it, so
 * that the union of all matches is redacted and no part of a value that
 * overlaps another is left. Each extension that reaches past from is
 * said by the marker of the secret that reaches furthest, unless it is
 * the one said last. Returns the run's end. Linear: each finder reads
 * each byte of the run once. */
static size_t grow_run(const char *buf, size_t n, struct finder *f, size_t nf, size_t start, size_t end,
                       size_t from, const struct finder *said, char **out, size_t *len, size_t *cap)
{
        for (size_t k = 0; k < nf; k++) {
                f[k].scanned = start + 1;
                f[k].last_end = 0;
        }
        for (;;) {
                struct finder *ext = NULL;
                size_t ext_end = end, at;
                for (size_t k = 0; k < nf; k++) {
                        while ((at = find_between(buf, n, &f[k], f[k].scanned, end)) != SIZE_MAX) {
                                f[k].last_end = at + f[k].vlen;
                                f[k].scanned = at + 1;
                        }
                        f[k].scanned = MAX(f[k].scanned, end);
                        if (f[k].last_end > ext_end) {
                                ext_end = f[k].last_end;
                                ext = &f[k];
                        }
                }
                if (!ext)
                        return end;
                if (ext != said && ext_end > from) {
                        put_marker(out, len, cap, ext);
                        said = ext;
                }
                end = ext_end;
        }
}

char *redact(const char *buf, size_t n, char *const *secrets, size_t *ret_len)
{
        return redact_range(buf, n, 0, secrets, ret_len);
}

char *redact_range(const char *buf, size_t n, size_t from, char *const *secrets, size_t *ret_len)
{
        size_t count = 0, nf = 0, pos = from, len = 0, cap = 0;
        char *out = NULL;
        bool changed = false;

        for (char *const *s = secrets; s && *s; s++)
                count++;
        _cleanup_free_ struct finder *f = xcalloc(count + 1, sizeof(*f));
        for (size_t i = 0; i < count; i++) {
                size_t vlen;
                const char *v = secret_value(secrets[i], &vlen);
                if (!v)
                        continue;
                f[nf] = (struct finder) { .kv = secrets[i], .value = v, .vlen = vlen };
                size_t at = find_between(buf, n, &f[nf], 0, n);
                f[nf].next = at == SIZE_MAX ? n : at;
                nf++;
        }
        for (;;) {
                /* the earliest match; of those at one place, the longest */
                struct finder *first = NULL;
                for (size_t k = 0; k < nf; k++)
                        if (f[k].next < n && (!first || f[k].next < first->next ||
                                              (f[k].next == first->next && f[k].vlen > first->vlen)))
                                first = &f[k];
                if (!first)
                        break;
                size_t start = first->next, end;
                const struct finder *said = NULL;
                if (start > pos)
                        put(&out, &len, &cap, buf + pos, start - pos);
                if (start + first->vlen > from) {
                        put_marker(&out, &len, &cap, first);
                        said = first;
                }
                end = grow_run(buf, n, f, nf, start, start + first->vlen, from, said, &out, &len, &cap);
                changed |= end > from;
                pos = MAX(pos, end);
                for (size_t k = 0; k < nf; k++)
                        if (f[k].next < end) {
                                size_t at = find_between(buf, n, &f[k], end, n);
                                f[k].next = at == SIZE_MAX ? n : at;
                        }
        }
        if (!changed) {
                free(out);
                return NULL;
        }
        put(&out, &len, &cap, buf + pos, n - pos);
        out[len] = '\0';
        *ret_len = len;
        return out;
}

void redact_str(char **s, char *const *secrets)
{
        size_t len;
        char *clean = *s ? redact(*s, strlen(*s), secrets, &len) : NULL;
        if (clean) {
                explicit_bzero(*s, strlen(*s));
                free(*s);
                *s = clean;
        }
}

void redact_strv(char **v, char *const *secrets)
{
        for (char **p = v; p && *p; p++)
                redact_str(p, secrets);
}

size_t redact_lookbehind(char *const *secrets)
{
        size_t m = redact_max_len(secrets);
        return m ? m - 1 : 0;
}

/* The end of the last full match of a value that starts before buf[cut]
 * and ends after it, or 0 if none does. */
static size_t match_across(const char *buf, size_t n, size_t cut, char *const *secrets)
{
        size_t end = 0;
        for (char *const *s = secrets; s && *s; s++) {
                size_t vlen;
                const char *v = secret_value(*s, &vlen);
                if (!v || vlen < 2)
                        continue;       /* one byte cannot straddle */
                /* a straddling match lies in buf[cut-vlen+1 .. cut+vlen-1) */
                size_t lo = cut >= vlen - 1 ? cut - (vlen - 1) : 0;
                size_t hi = MIN(n, cut + vlen - 1);
                for (size_t at = lo; at + vlen <= hi;) {
                        const char *hit = memmem(buf + at, hi - at, v, vlen);
                        if (!hit)
                                break;
                        size_t i = (size_t)(hit - buf);
                        if (i < cut && i + vlen > cut)
                                end = MAX(end, i + vlen);
                        at = i + 1;
                }
        }
        return end;
}

/* The longest tail of buf[0..n) that is the start (not the whole) of a
 * value. */
static size_t value_prefix(const char *buf, size_t n, char *const *secrets)
{
        size_t best = 0;
        for (char *const *s = secrets; s && *s; s++) {
                size_t vlen;
                const char *v = secret_value(*s, &vlen);
                if (!v)
                        continue;
                for (size_t k = MIN(vlen - 1, n); k > best; k--)
                        if (memcmp(buf + n - k, v, k) == 0) {
                                best = k;
                                break;
                        }
        }
        return best;
}

size_t redact_cut(const char *buf, size_t n, char *const *secrets)
{
        size_t held = value_prefix(buf, n, secrets), cut = n - held, end;

        /* The cut only grows, so this ends. The match moved past holds
         * the start of the longest tail that could start a value (it
         * straddled the first cut): that value may overlap the match, so
         * all that follows the match waits (less than held bytes), and
         * the next bytes look back at the match (redact_range()). */
        while ((end = match_across(buf, n, cut, secrets)) > cut)
                cut = end;
        return cut;
}

const char *redact_find_fd(int fd, char *const *secrets)
{
        size_t keep = redact_max_len(secrets), len = 0, cap = 65536 + keep;
        _cleanup_free_ char *buf = xmalloc(cap);
        ssize_t n;

        if (!keep)
                return NULL;
        while ((n = read(fd, buf + len, cap - len)) > 0) {
                len += (size_t)n;
                for (char *const *s = secrets; *s; s++) {
                        const char *eq = strchr(*s, '=');
                        if (eq && eq[1] && memmem(buf, len, eq + 1, strlen(eq + 1))) {
                                explicit_bzero(buf, len);
                                return *s;
                        }
                }
                if (len > keep) {
                        memmove(buf, buf + len - keep, keep);
                        len = keep;
                }
        }
        explicit_bzero(buf, len);
        return NULL;
}
