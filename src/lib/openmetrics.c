/* openmetrics.c - the text format monitors scrape (see openmetrics.h).
 * Small and allocation-light: the metrics of a whole history are a few
 * hundred lines at most, written once per scrape interval.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/openmetrics.h"
#include "lib/util.h"

bool om_label_name_valid(const char *s)
{
        if (!s || !*s || startswith(s, "__"))
                return false;
        for (const char *p = s; *p; p++) {
                bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
                bool digit = *p >= '0' && *p <= '9';
                if (!alpha && !(digit && p != s))
                        return false;
        }
        return true;
}

void om_label_add(char **labels, const char *name, const char *value)
{
        size_t len = *labels ? strlen(*labels) : 0;
        /* worst case every byte escaped */
        char *out = xmalloc(len + strlen(name) + 2 * strlen(value) + 5);
        char *p = out;

        if (len) {
                memcpy(p, *labels, len);
                p += len;
                *p++ = ',';
        }
        p = stpcpy(p, name);
        *p++ = '=';
        *p++ = '"';
        for (const char *v = value; *v; v++) {
                if (*v == '\\' || *v == '"') {
                        *p++ = '\\';
                        *p++ = *v;
                } else if (*v == '\n') {
                        *p++ = '\\';
                        *p++ = 'n';
                } else
                        *p++ = *v;
        }
        *p++ = '"';
        *p = '\0';
        free(*labels);
        *labels = out;
}

void om_family(FILE *f, const char *name, const char *type, const char *unit, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
        if (unit)
                fprintf(f, "# UNIT %s %s\n", name, unit);
}

static void sample_name(FILE *f, const char *name, const char *labels)
{
        if (labels && *labels)
                fprintf(f, "%s{%s} ", name, labels);
        else
                fprintf(f, "%s ", name);
}

void om_sample_u64(FILE *f, const char *name, const char *labels, uint64_t value)
{
        sample_name(f, name, labels);
        fprintf(f, "%llu\n", (unsigned long long)value);
}

static void write_double(FILE *f, double v)
{
        if (isinf(v))
                fputs(v > 0 ? "+Inf" : "-Inf", f);
        else if (isnan(v))
                fputs("NaN", f);
        else {
                /* the shortest of the two that reads back the same */
                char buf[32];
                snprintf(buf, sizeof(buf), "%.15g", v);
                if (strtod(buf, NULL) != v)
                        snprintf(buf, sizeof(buf), "%.17g", v);
                fputs(buf, f);
        }
}

void om_sample_double(FILE *f, const char *name, const char *labels, double value)
{
        sample_name(f, name, labels);
        write_double(f, value);
        fputc('\n', f);
}

void om_histogram_init(struct om_histogram *h, const double *bounds, size_t n, double scale)
{
        *h = (struct om_histogram) { .bounds = bounds, .n_bounds = n, .scale = scale,
                                     .counts = xcalloc(n + 1, sizeof(uint64_t)) };
}

void om_histogram_observe(struct om_histogram *h, uint64_t v)
{
        double x = (double)v / h->scale;
        size_t i = 0;
        while (i < h->n_bounds && x > h->bounds[i])
                i++;
        h->counts[i]++;
        h->sum += v;
        h->count++;
}

void om_histogram_write(FILE *f, const char *name, const char *labels, const struct om_histogram *h)
{
        _cleanup_free_ char *bucket = xasprintf("%s_bucket", name), *sum = xasprintf("%s_sum", name),
                            *count = xasprintf("%s_count", name);
        uint64_t cumulative = 0;

        for (size_t i = 0; i <= h->n_bounds; i++) {
                char le[32];
                if (i < h->n_bounds)
                        snprintf(le, sizeof(le), "%.15g", h->bounds[i]);
                else
                        strcpy(le, "+Inf");
                _cleanup_free_ char *l = labels && *labels ? xstrdup(labels) : NULL;
                om_label_add(&l, "le", le);
                cumulative += h->counts[i];
                om_sample_u64(f, bucket, l, cumulative);
        }
        om_sample_double(f, sum, labels, (double)h->sum / h->scale);
        om_sample_u64(f, count, labels, h->count);
}

void om_histogram_done(struct om_histogram *h)
{
        free(h->counts);
        h->counts = NULL;
}

void om_eof(FILE *f)
{
        fputs("# EOF\n", f);
}
