/* fuzz-import.c - libFuzzer target: arbitrary bytes as one line of
 * `hutch import` input (record/exchange-parse.c), a file from another
 * machine. The reader must never crash, leak or read out of bounds; a
 * refused line names a field; and an accepted record must survive the
 * way back: written out again as `hutch export` writes it
 * (exchange_json()) it is accepted again, and says the same thing, so
 * every store import fills can be exported and imported again.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/exchange.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *detail)
{
        if (!ok) {
                fprintf(stderr, "import: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
                abort();
        }
}

static json_t *export_of(const struct exchange_record *x)
{
        json_t *labels = json_object();
        for (char **l = x->labels; l && *l; l++) {
                const char *eq = strchr(*l, '=');
                check(eq != NULL, "label without =", *l);
                char *k = strndup(*l, (size_t)(eq - *l));
                check(k != NULL, "out of memory", NULL);
                json_object_set_new(labels, k, json_string(eq + 1));
                free(k);
        }
        json_t *o = exchange_json(x->rec, x->with_output, labels, x->node, false);
        json_decref(labels);
        return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct exchange_record x, y;
        char *field = NULL, *error = NULL;
        int r = exchange_parse_record((const char *)data, size, &x, &field, &error);

        if (r < 0) {
                check(field && error, "refused without a field and an error", NULL);
                check(field[0] == '\0' || field[0] == '/', "field is not a JSON pointer", field);
                free(field);
                free(error);
                exchange_record_done(&x);
                return 0;
        }
        check(exchange_node_valid(x.node), "accepted an invalid node", x.node);

        json_t *first = export_of(&x);
        char *line = json_dumps(first, JSON_COMPACT | JSON_ENSURE_ASCII);
        check(line != NULL, "export not serialisable", NULL);
        r = exchange_parse_record(line, strlen(line), &y, &field, &error);
        check(r == 0, "its own export refused", error);
        json_t *second = export_of(&y);
        if (!json_equal(first, second)) {
                char *again = json_dumps(second, JSON_COMPACT | JSON_SORT_KEYS);
                fprintf(stderr, "first:  %s\nsecond: %s\n", line, again);
                free(again);
                check(0, "export, import, export changes the record", NULL);
        }
        json_decref(second);
        json_decref(first);
        free(line);
        exchange_record_done(&y);
        exchange_record_done(&x);
        return 0;
}
