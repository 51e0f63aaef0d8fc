/* strindex.c - a hash index over strings that live elsewhere (see
 * strindex.h): open addressing with linear probing over a power-of-two
 * table kept at most half full, FNV-1a hashes. Nothing is deleted:
 * the lists it indexes only grow or are freed whole.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "lib/strindex.h"
#include "lib/util.h"

static size_t hash(const char *key, size_t len)
{
        uint64_t h = UINT64_C(14695981039346656037);
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)key[i];
                h *= UINT64_C(1099511628211);
        }
        return (size_t)h;
}

size_t strindex_find(const struct strindex *ix, const char *key, size_t len,
                     strindex_key_fn key_at, void *userdata)
{
        if (ix->cap == 0)
                return STRINDEX_NONE;
        for (size_t i = hash(key, len) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
                size_t slot = ix->slots[i], n;
                if (slot == 0)
                        return STRINDEX_NONE;
                const char *k = key_at(userdata, slot - 1, &n);
                if (n == len && memcmp(k, key, len) == 0)
                        return slot - 1;
        }
}

static void insert(size_t *slots, size_t cap, size_t pos, strindex_key_fn key_at, void *userdata)
{
        size_t len;
        const char *key = key_at(userdata, pos, &len);
        size_t i = hash(key, len) & (cap - 1);
        while (slots[i] != 0)
                i = (i + 1) & (cap - 1);
        slots[i] = pos + 1;
}

void strindex_add(struct strindex *ix, size_t pos, strindex_key_fn key_at, void *userdata)
{
        if ((ix->n + 1) * 2 > ix->cap) {
                size_t cap = ix->cap ? ix->cap * 2 : 64;
                size_t *slots = xcalloc(cap, sizeof(*slots));
                for (size_t i = 0; i < ix->cap; i++)
                        if (ix->slots[i])
                                insert(slots, cap, ix->slots[i] - 1, key_at, userdata);
                free(ix->slots);
                ix->slots = slots;
                ix->cap = cap;
        }
        insert(ix->slots, ix->cap, pos, key_at, userdata);
        ix->n++;
}

void strindex_done(struct strindex *ix)
{
        free(ix->slots);
        *ix = (struct strindex) { 0 };
}
