/* fuzz-profile.c - libFuzzer target: arbitrary bytes as a profile.
 *
 * Parsing must never crash, leak or read out of bounds, whatever the
 * input; and whenever a profile is accepted, its canonical text must read
 * back to the very same text (the resolved profile stored with a run has
 * to mean what it says). `extends` lookups go to a search path that does
 * not exist, so the target touches no files of the host.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/ini-text.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Any line of the canonical text too long for inih to read back? Values
 * that filled a whole input line can grow by the " = " around them. */
static bool has_long_line(const char *text)
{
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                if (n + 1 > INI_TEXT_MAX_LINE)
                        return true;
                p += n + (nl ? 1 : 0);
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct run_config cfg, again;
        char *text, *err = NULL;
        bool trusted = size > 0 && (data[0] & 1);

        setenv("HUTCH_PROFILE_PATH", "/nonexistent/hutch-fuzz", 1);
        setenv("XDG_CONFIG_HOME", "/nonexistent/hutch-fuzz", 1);

        text = xmalloc(size + 1);
        memcpy(text, data, size);
        text[size] = '\0';

        run_config_init(&cfg);
        if (profile_load_text(&cfg, text, "fuzz.ini", trusted, &err) == 0) {
                char *canon = profile_canonical_text(&cfg);
                char *canon2;
                char sha[DIGEST_HEX_SIZE];

                profile_sha256_hex(canon, sha);
                if (!has_long_line(canon)) {
                        run_config_init(&again);
                        if (profile_load_text(&again, canon, "canonical.ini", true, &err) != 0) {
                                fprintf(stderr, "canonical text does not parse: %s\n%s", err, canon);
                                abort();
                        }
                        canon2 = profile_canonical_text(&again);
                        if (strcmp(canon, canon2) != 0) {
                                fprintf(stderr, "canonical text changed on re-read:\n%s\n---\n%s", canon, canon2);
                                abort();
                        }
                        free(canon2);
                        run_config_done(&again);
                }
                free(canon);
        } else if (!err || !*err) {
                fprintf(stderr, "profile rejected without a message\n");
                abort();
        }
        free(err);
        run_config_done(&cfg);
        free(text);
        return 0;
}
