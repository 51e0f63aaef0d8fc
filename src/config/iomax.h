/* iomax.h - the io_max limit: "DEVICE KEY=VALUE..." items.
 *
 * DEVICE is a whole disk as MAJ:MIN or a block device path; KEY is rbps
 * or wbps (bytes per second, K/M/G units) or riops or wiops (operations
 * per second); VALUE is a number above 0 or "max". The cgroup's io.max
 * takes one line per disk in the kernel's own form, "8:0 wbps=1048576".
 *
 * Parsing lives here with the profile key it checks; limits/ writes the
 * lines into the run cgroup.
 */
#pragma once

/* NULL if item is well formed (paths are not looked at), else what was
 * expected: the profile key's check. */
const char *iomax_check(const char *item);

/* Resolve paths (stat: a block device) and units into io.max lines,
 * newline separated; *ret_lines is NULL when there are no items. 0, or
 * -errno and a one-line *ret_error naming the item. */
int iomax_lines(char *const *items, char **ret_lines, char **ret_error);
