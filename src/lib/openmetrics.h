/* openmetrics.h - writing the text format monitors scrape: Prometheus'
 * text exposition format, which node_exporter's textfile collector and
 * `promtool check metrics` read, ended by OpenMetrics' "# EOF".
 *
 * A family is announced once (HELP, TYPE, and UNIT for a unit), then
 * its samples follow. Counters are declared under their sample name
 * (hutch_runs_total), as the Prometheus text format wants; histograms
 * write cumulative _bucket{le=...} samples ending at +Inf, then _sum and
 * _count. Label values are escaped here (backslash, double quote,
 * newline); label and metric names are the caller's constants or pass
 * om_name_valid() first.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Whether s is a valid label name for a caller-chosen label:
 * [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved). */
bool om_label_name_valid(const char *s);

/* Append `name="value"` (value escaped; a comma first when *labels is
 * not empty) to the label text *labels (NULL is an empty text; the
 * result is a new string and the old one is freed). value must be valid
 * UTF-8, which the caller checks. */
void om_label_add(char **labels, const char *name, const char *value);

/* "# HELP name help", "# TYPE name type", and "# UNIT name unit" when
 * unit is not NULL (name must then end in "_" unit). help must not hold
 * a newline or a backslash. */
void om_family(FILE *f, const char *name, const char *type, const char *unit, const char *help);

/* One sample: "name{labels} value" (no braces when labels is NULL or
 * empty). Integers are written exactly. */
void om_sample_u64(FILE *f, const char *name, const char *labels, uint64_t value);
void om_sample_double(FILE *f, const char *name, const char *labels, double value);

/* A histogram with fixed upper bounds (ascending, in the unit written;
 * +Inf is implied) over whole numbers of a smaller unit (ms written as
 * seconds: scale 1000), so that the sum is exact. */
struct om_histogram {
        const double *bounds;   /* not owned */
        size_t n_bounds;
        double scale;           /* written value = observed / scale */
        uint64_t *counts;       /* n_bounds + 1 (the last: above every bound); owned */
        uint64_t sum;           /* in the observed unit */
        uint64_t count;
};

/* Set h up with bounds[0..n) (kept by reference) and scale (> 0). */
void om_histogram_init(struct om_histogram *h, const double *bounds, size_t n, double scale);
/* Count one observation of v (in the observed unit). */
void om_histogram_observe(struct om_histogram *h, uint64_t v);
/* The samples of h under family name (the family line is the caller's):
 * name_bucket{labels,le="B"} cumulative counts, le="+Inf", name_sum and
 * name_count. */
void om_histogram_write(FILE *f, const char *name, const char *labels, const struct om_histogram *h);
void om_histogram_done(struct om_histogram *h);

/* The last line of the exposition. */
void om_eof(FILE *f);
