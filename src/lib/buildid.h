/* buildid.h - the identity of the running hutch binary (see buildid.c). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* Write the running executable's GNU build-id as lowercase hex into out
 * (size bytes, NUL-terminated, cut to fit), or, when it has none, a text
 * made of its device, inode, size and mtime. Returns 0, or -errno when
 * neither can be had (out is then untouched). */
int build_id(char *out, size_t size);
