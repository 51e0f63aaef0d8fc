/* strindex.h - a hash index over strings that live elsewhere.
 *
 * For lists that must stay unique by key and can grow to many thousands
 * of entries (a run's environment from 20,000 -e options, the origins of
 * its keys): the list keeps its own order and storage, and the index
 * maps a key to the entry's position in it, so a lookup or an insert is
 * O(1) on average instead of a scan of the whole list. The index holds
 * positions only; the caller says how to get the key of a position
 * (key_at), and must add every entry it appends and nothing else.
 */
#pragma once

#include <stddef.h>

#define STRINDEX_NONE ((size_t)-1)

struct strindex {
        size_t *slots;          /* position + 1, 0 for an empty slot */
        size_t cap;             /* slots (a power of two), 0 before the first add */
        size_t n;               /* positions indexed */
};

/* The key of position pos in the caller's list: a pointer to its bytes
 * and its length in *ret_len. */
typedef const char *(*strindex_key_fn)(void *userdata, size_t pos, size_t *ret_len);

/* The position whose key is key[0..len), or STRINDEX_NONE. */
size_t strindex_find(const struct strindex *ix, const char *key, size_t len,
                     strindex_key_fn key_at, void *userdata);
/* Index position pos (whose key must not be indexed yet). Grows the
 * table as needed; allocation failure exits (xmalloc). */
void strindex_add(struct strindex *ix, size_t pos, strindex_key_fn key_at, void *userdata);
/* Free the table; ix is empty again. */
void strindex_done(struct strindex *ix);
