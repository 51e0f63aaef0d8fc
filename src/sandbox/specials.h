/* specials.h - make host sockets and FIFOs in bound trees unreachable.
 */
#pragma once

#include <stddef.h>

/* How many entries a run's user binds (--ro, --rw, -i and the profile's
 * ro/rw lists) may hold in all, counted while looking for sockets and
 * FIFOs. More is a setup error (-E2BIG), never a tree left unchecked. */
#define SPECIALS_MAX_ENTRIES 200000
/* How deep that walk goes; deeper is a setup error too (-ELOOP). */
#define SPECIALS_MAX_DEPTH 128

/* Walk the tree at path (a bind already attached in the new root; a
 * single file is fine) without following symlinks, and mount a fresh
 * read-only clone of the empty file empty_file over every socket and
 * FIFO in it. *budget counts entries down (see SPECIALS_MAX_ENTRIES).
 * Returns how many were masked, or -errno with *ret_path (malloc'ed, the
 * path below `path` where it failed, or NULL). */
int specials_mask_tree(const char *path, const char *empty_file, size_t *budget, char **ret_path);
