/* archive-dl.h - libarchive, loaded with dlopen() when an image is read.
 *
 * libarchive brings libxml2, ICU and libstdc++ with it: linked into hutch
 * they were mapped and relocated by every start, a `hutch run -- true`
 * included, and made up some 2 MiB of its resident memory. Only `hutch
 * image import` reads archives, so the library is loaded there, the
 * first time one of the functions below is called. Include this after
 * <archive.h> and <archive_entry.h>: each name below then calls hutch's
 * forwarder (archive-dl.c), which never clashes with the library's own
 * symbols (a test may link libarchive itself).
 */
#pragma once

#include <archive.h>
#include <archive_entry.h>

/* Load libarchive (libarchive.so.13) once. 0, or -ENOENT (or -ENOSYS for
 * a symbol it lacks) with *ret_error saying what, when ret_error is not
 * NULL (caller frees). archive_read_new() calls it and answers NULL on
 * failure; every other forwarder is only reached with an archive that
 * archive_read_new() made. */
int archive_dl_load(char **ret_error);

#define HUTCH_ARCHIVE_FUNCTIONS(X) \
        X(const char *, archive_error_string, (struct archive *a), (a)) \
        X(int, archive_read_free, (struct archive *a), (a)) \
        X(int, archive_read_open_fd, (struct archive *a, int fd, size_t block), (a, fd, block)) \
        X(int, archive_read_next_header, (struct archive *a, struct archive_entry **e), (a, e)) \
        X(int, archive_read_data_block, (struct archive *a, const void **b, size_t *n, la_int64_t *off), \
          (a, b, n, off)) \
        X(la_ssize_t, archive_read_data, (struct archive *a, void *b, size_t n), (a, b, n)) \
        X(int, archive_read_support_format_tar, (struct archive *a), (a)) \
        X(int, archive_read_support_filter_none, (struct archive *a), (a)) \
        X(int, archive_read_support_filter_gzip, (struct archive *a), (a)) \
        X(int, archive_read_support_filter_zstd, (struct archive *a), (a)) \
        X(int, archive_read_support_filter_xz, (struct archive *a), (a)) \
        X(int, archive_read_support_filter_bzip2, (struct archive *a), (a)) \
        X(time_t, archive_entry_mtime, (struct archive_entry *e), (e)) \
        X(long, archive_entry_mtime_nsec, (struct archive_entry *e), (e)) \
        X(const char *, archive_entry_hardlink, (struct archive_entry *e), (e)) \
        X(const char *, archive_entry_symlink, (struct archive_entry *e), (e)) \
        X(const char *, archive_entry_pathname, (struct archive_entry *e), (e)) \
        X(__LA_MODE_T, archive_entry_filetype, (struct archive_entry *e), (e)) \
        X(__LA_MODE_T, archive_entry_perm, (struct archive_entry *e), (e)) \
        X(la_int64_t, archive_entry_size, (struct archive_entry *e), (e)) \
        X(int, archive_entry_size_is_set, (struct archive_entry *e), (e)) \
        X(int, archive_entry_xattr_reset, (struct archive_entry *e), (e)) \
        X(int, archive_entry_xattr_next, (struct archive_entry *e, const char **k, const void **v, size_t *n), \
          (e, k, v, n))

#define HUTCH_ARCHIVE_DECLARE(ret, name, params, args) ret hutch_##name params;
HUTCH_ARCHIVE_FUNCTIONS(HUTCH_ARCHIVE_DECLARE)
struct archive *hutch_archive_read_new(void);

#define archive_error_string hutch_archive_error_string
#define archive_read_free hutch_archive_read_free
#define archive_read_open_fd hutch_archive_read_open_fd
#define archive_read_next_header hutch_archive_read_next_header
#define archive_read_data_block hutch_archive_read_data_block
#define archive_read_data hutch_archive_read_data
#define archive_read_support_format_tar hutch_archive_read_support_format_tar
#define archive_read_support_filter_none hutch_archive_read_support_filter_none
#define archive_read_support_filter_gzip hutch_archive_read_support_filter_gzip
#define archive_read_support_filter_zstd hutch_archive_read_support_filter_zstd
#define archive_read_support_filter_xz hutch_archive_read_support_filter_xz
#define archive_read_support_filter_bzip2 hutch_archive_read_support_filter_bzip2
#define archive_entry_mtime hutch_archive_entry_mtime
#define archive_entry_mtime_nsec hutch_archive_entry_mtime_nsec
#define archive_entry_hardlink hutch_archive_entry_hardlink
#define archive_entry_symlink hutch_archive_entry_symlink
#define archive_entry_pathname hutch_archive_entry_pathname
#define archive_entry_filetype hutch_archive_entry_filetype
#define archive_entry_perm hutch_archive_entry_perm
#define archive_entry_size hutch_archive_entry_size
#define archive_entry_size_is_set hutch_archive_entry_size_is_set
#define archive_entry_xattr_reset hutch_archive_entry_xattr_reset
#define archive_entry_xattr_next hutch_archive_entry_xattr_next
#define archive_read_new hutch_archive_read_new
