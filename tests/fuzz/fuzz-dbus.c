/* fuzz-dbus.c - libFuzzer target: arbitrary bytes as what a D-Bus peer
 * sends hutch (src/limits/dbus-wire.c). The input is cut into messages
 * the way dbus.c cuts what it reads (the fixed header says how long each
 * is), each message is parsed, and its body is read under every
 * signature hutch ever reads. None of it may crash, read out of bounds,
 * leak or loop, whatever the bytes are.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limits/dbus-wire.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read the body as sig says, as far as it goes. */
static void read_body(const struct dbus_message *m, const char *sig)
{
        struct dbus_reader r;
        const char *s;
        uint32_t u;

        if (dbus_body_reader(m, sig, &r) < 0)
                return;
        for (const char *t = sig; *t; t++) {
                int e = *t == 'u' ? dbus_get_u32(&r, &u)
                        : *t == 'v' ? dbus_get_variant_string(&r, &s)
                        : dbus_get_string(&r, &s);
                if (e < 0)
                        return;
                if (*t != 'u' && strlen(s) > r.len)
                        abort();        /* a string past the message */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        while (size >= DBUS_FIXED_HEADER) {
                ssize_t n = dbus_message_size(data, size);
                if (n < 0 || (size_t)n > size)
                        return 0;
                uint8_t *raw = xmalloc((size_t)n);
                memcpy(raw, data, (size_t)n);
                struct dbus_message m;
                if (dbus_message_parse(raw, (size_t)n, &m) == 0) {
                        static const char *const sigs[] = { "o", "s", "v", "ss", "uoss" };
                        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                                read_body(&m, sigs[i]);
                        dbus_message_done(&m);
                }
                data += n;
                size -= (size_t)n;
        }
        return 0;
}
