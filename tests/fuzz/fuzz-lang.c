/* fuzz-lang.c - libFuzzer target: arbitrary bytes as a languages file
 * (share/languages.ini). Parsing must never crash, leak or read out of
 * bounds; every language the parser accepts must look itself up by name
 * and expand its templates without failing in a way the parser should
 * have caught. Nothing is run and no file is touched.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/lang.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct lang_table *t = NULL;
        char *err = NULL;
        char *text = xmalloc(size + 1);

        memcpy(text, data, size);
        text[size] = '\0';
        if (lang_table_parse(text, "fuzz.ini", &t, &err) == 0) {
                for (size_t i = 0; i < lang_table_count(t); i++) {
                        const struct lang *l = lang_table_get(t, i), *found = NULL;
                        char **argv = NULL;
                        if (lang_lookup(t, l->name, &found, &err) != 0 || !found) {
                                fprintf(stderr, "accepted language \"%s\" not found: %s\n", l->name, err);
                                abort();
                        }
                        /* the parser accepted the templates: they expand */
                        if (lang_expand(l->command, "/w/prog", l->compile ? "/w/prog.out" : NULL, &argv, &err) != 0) {
                                fprintf(stderr, "accepted command of \"%s\" does not expand: %s\n", l->name, err);
                                abort();
                        }
                        strv_free(argv);
                        argv = NULL;
                        if (l->compile && lang_expand(l->compile, "/w/prog", "/w/prog.out", &argv, &err) != 0) {
                                fprintf(stderr, "accepted compile of \"%s\" does not expand: %s\n", l->name, err);
                                abort();
                        }
                        strv_free(argv);
                }
        }
        free(err);
        lang_table_free(t);
        free(text);
        return 0;
}
