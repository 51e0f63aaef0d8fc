/* util.c - allocation, I/O and unit parsing helpers (see util.h). */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/util.h"

static _noreturn_ void oom(void)
{
        static const char msg[] = "hutch: out of memory\n";
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(125);
}

void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *xcalloc(size_t n, size_t m)
{
        void *p = calloc(n ? n : 1, m ? m : 1);
        if (!p)
                oom();
        return p;
}

void *xrealloc(void *p, size_t n)
{
        p = realloc(p, n ? n : 1);
        if (!p)
                oom();
        return p;
}

char *xstrdup(const char *s)
{
        char *p = strdup(s);
        if (!p)
                oom();
        return p;
}

char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                oom();
        va_end(ap);
        return s;
}

void strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

size_t strv_length(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

char **strv_push(char **v, size_t *n, const char *s)
{
        size_t slots = 8;
        while (slots < *n + 2)
                slots *= 2;
        v = xrealloc(v, slots * sizeof(char *));
        v[*n] = xstrdup(s);
        v[++*n] = NULL;
        return v;
}

char **strv_append(char **v, const char *s)
{
        size_t n = strv_length(v);
        return strv_push(v, &n, s);
}

char **strv_extend(char **v, char *const *src)
{
        size_t n = strv_length(v), m = strv_length(src);
        if (!m)
                return v;
        v = xrealloc(v, (n + m + 1) * sizeof(char *));
        for (size_t i = 0; i < m; i++)
                v[n + i] = xstrdup(src[i]);
        v[n + m] = NULL;
        return v;
}

bool strv_contains(char *const *v, const char *s)
{
        for (size_t i = 0; v && v[i]; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

int write_all(int fd, const void *buf, size_t n)
{
        const char *p = buf;
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

ssize_t read_full(int fd, void *buf, size_t n)
{
        char *p = buf;
        size_t got = 0;
        while (got < n) {
                ssize_t r = read(fd, p + got, n - got);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r == 0)
                        break;
                got += (size_t)r;
        }
        return (ssize_t)got;
}

int read_file(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t cap = 4096, len = 0;
        char *buf;

        if (fd < 0)
                return -errno;
        buf = xmalloc(cap);
        for (;;) {
                ssize_t r;
                if (len + 1 >= cap)
                        buf = xrealloc(buf, cap *= 2);
                r = read(fd, buf + len, cap - len - 1);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = -errno;
                        free(buf);
                        return e;
                }
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        buf[len] = '\0';
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int write_file(const char *path, const char *text, mode_t mode)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        return write_all(fd, text, strlen(text));
}

/* Parse "<number>[.<fraction>]<unit>" where unit is looked up in the table;
 * returns value * multiplier rounded down. */
struct unit { const char *name; uint64_t mult; };

static int parse_with_units(const char *s, const struct unit *units, size_t n_units,
                            uint64_t bare_mult, uint64_t *ret)
{
        const char *p = s;
        uint64_t whole = 0, frac_num = 0, frac_den = 1;
        bool digits = false;

        if (!s)
                return -EINVAL;
        while (isspace((unsigned char)*p))
                p++;
        while (isdigit((unsigned char)*p)) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t)(*p++ - '0');
                digits = true;
        }
        if (*p == '.') {
                p++;
                while (isdigit((unsigned char)*p)) {
                        if (frac_den < 1000000000ULL) {
                                frac_num = frac_num * 10 + (uint64_t)(*p - '0');
                                frac_den *= 10;
                        }
                        p++;
                        digits = true;
                }
        }
        if (!digits)
                return -EINVAL;
        while (isspace((unsigned char)*p))
                p++;

        uint64_t mult = 0;
        if (*p == '\0')
                mult = bare_mult;
        else {
                size_t len = strlen(p);
                while (len > 0 && isspace((unsigned char)p[len - 1]))
                        len--;
                for (size_t i = 0; i < n_units; i++)
                        if (strlen(units[i].name) == len && strncasecmp(p, units[i].name, len) == 0) {
                                mult = units[i].mult;
                                break;
                        }
                if (mult == 0)
                        return -EINVAL;
        }
        if (whole > UINT64_MAX / mult)
                return -ERANGE;
        *ret = whole * mult + (frac_num * mult) / frac_den;
        return 0;
}

int parse_size(const char *s, uint64_t *ret_bytes)
{
        static const struct unit units[] = {
                { "B", 1 },
                { "K", 1ULL << 10 }, { "KB", 1ULL << 10 }, { "KiB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "MB", 1ULL << 20 }, { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "GB", 1ULL << 30 }, { "GiB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "TB", 1ULL << 40 }, { "TiB", 1ULL << 40 },
        };
        return parse_with_units(s, units, ELEMENTSOF(units), 1, ret_bytes);
}

int parse_duration_ms(const char *s, uint64_t *ret_ms)
{
        static const struct unit units[] = {
                { "ms", 1 },
                { "s", 1000 }, { "sec", 1000 },
                { "m", 60000 }, { "min", 60000 },
                { "h", 3600000 },
                { "d", 86400000 },
        };
        return parse_with_units(s, units, ELEMENTSOF(units), 1000, ret_ms);
}

const char *format_size(uint64_t bytes, char *buf, size_t len)
{
        static const char suffix[] = "KMGT";
        if (bytes < 1024 || bytes % 1024) {
                snprintf(buf, len, "%llu", (unsigned long long)bytes);
                return buf;
        }
        int i = -1;
        while (bytes >= 1024 && bytes % 1024 == 0 && i < 3) {
                bytes /= 1024;
                i++;
        }
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, suffix[i]);
        return buf;
}

const char *format_duration_ms(uint64_t ms, char *buf, size_t len)
{
        if (ms % 3600000 == 0 && ms >= 3600000)
                snprintf(buf, len, "%lluh", (unsigned long long)(ms / 3600000));
        else if (ms % 60000 == 0 && ms >= 60000)
                snprintf(buf, len, "%llum", (unsigned long long)(ms / 60000));
        else if (ms % 1000 == 0)
                snprintf(buf, len, "%llus", (unsigned long long)(ms / 1000));
        else if (ms > 1000)
                snprintf(buf, len, "%.3gs", (double)ms / 1000.0);
        else
                snprintf(buf, len, "%llums", (unsigned long long)ms);
        return buf;
}

uint64_t now_monotonic_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t now_monotonic_ms(void)
{
        return now_monotonic_ns() / 1000000;
}

uint64_t now_realtime_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = xstrdup(path);
        for (char *p = copy + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(copy, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

bool streq(const char *a, const char *b)
{
        return a && b && strcmp(a, b) == 0;
}

bool startswith(const char *s, const char *prefix)
{
        return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

void *task_stack_new(size_t bytes)
{
        long page = sysconf(_SC_PAGESIZE);
        void *stack = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return NULL;
        if (mprotect(stack, (size_t)page, PROT_NONE) < 0) {
                int e = errno;
                munmap(stack, bytes);
                errno = e;
                return NULL;
        }
        return stack;
}

void task_stack_free(void *stack, size_t bytes)
{
        if (stack)
                munmap(stack, bytes);
}

bool is_key_value(const char *s)
{
        return s[0] != '=' && strchr(s, '=') != NULL;
}

bool env_var_name_valid(const char *s)
{
        if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '_')
                        return false;
        return true;
}

bool env_var_value_valid(const char *s)
{
        for (const char *p = s; *p; p++) {
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        return false;
                if (*p == ';' && (p == s || isspace((unsigned char)p[-1])))
                        return false;
        }
        return true;
}

const char *env_entry_problem(const char *entry)
{
        const char *eq = strchr(entry, '=');
        if (!eq)
                return "no '=' (NAME=VALUE)";
        if (eq == entry)
                return "an empty name";
        _cleanup_free_ char *name = strndup(entry, (size_t)(eq - entry));
        if (!name || !env_var_name_valid(name))
                return "the name is not letters, digits and '_' (not starting with a digit)";
        if (!env_var_value_valid(eq + 1))
                return "the value holds a control character (a newline?) or a ';' after a blank";
        return NULL;
}
