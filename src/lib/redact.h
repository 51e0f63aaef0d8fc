/* redact.h - secrets kept out of what hutch records and prints.
 *
 * A secret (`--secret NAME`) reaches the job's environment and nothing
 * else: wherever the job's output is captured, streamed as events or
 * turned into JSON, every occurrence of its value is replaced by the
 * marker "[secret NAME]". Values are held only in memory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Whether name is a valid environment variable name for a secret:
 * [A-Za-z_][A-Za-z0-9_]*, at most 128 characters. */
bool secret_name_valid(const char *name);

/* Resolve a --secret argument: "NAME" takes the value of the caller's
 * environment variable NAME, "NAME=@FILE" the contents of FILE (one
 * trailing newline dropped). *ret gets "NAME=VALUE". 0, or -errno with
 * *ret_error set ("--secret NAME: not set in the environment", ...). */
int secret_resolve(const char *spec, char **ret, char **ret_error);

/* The values to look for in what a job wrote: each of secrets
 * ("NAME=VALUE"), and when the job has a terminal (tty), each value
 * holding a "\n" once more as the terminal's line discipline renders it
 * (ONLCR: every "\n" written as "\r\n"), under the same NAME. A new
 * list (free with redact_forms_free()); NULL when secrets is empty. */
char **redact_forms(char *const *secrets, bool tty);
/* Wipe and free a list from redact_forms(). */
void redact_forms_free(char **forms);

/* Replace, in buf[0..n), every occurrence of each secret's value
 * (secrets: "NAME=VALUE" strings; empty values are ignored) by "[secret
 * NAME]". What is replaced is the union of all occurrences: a run of
 * overlapping ones becomes the markers of the values that make it up,
 * in order ("[secret A][secret B]"), so no part of either is left; one
 * inside another is said by the longer. Returns a new buffer
 * (NUL-terminated; *ret_len bytes), or NULL when nothing matched. */
char *redact(const char *buf, size_t n, char *const *secrets, size_t *ret_len);
/* The same for a stream: buf[0..from) was passed on already and is only
 * looked at for a run of matches that goes on past it (a value that
 * overlaps one already replaced); what is returned is the redacted form
 * of buf[from..n), or NULL when no match reaches into it. */
char *redact_range(const char *buf, size_t n, size_t from, char *const *secrets, size_t *ret_len);

/* Replace each string of v (NULL-terminated, may be NULL) by its
 * redacted copy where a value is in it. */
void redact_strv(char **v, char *const *secrets);
/* Replace *s (a string, may be NULL) by its redacted copy where a value
 * is in it. */
void redact_str(char **s, char *const *secrets);

/* The first of secrets whose value is in what is left to read of fd
 * (read to its end in chunks that overlap by the longest value, so a
 * value across two reads is found), or NULL. */
const char *redact_find_fd(int fd, char *const *secrets);

/* The largest value length among secrets (0: none). A stream cut into
 * chunks holds back this many bytes minus one so that a value split
 * across two chunks is still found. */
size_t redact_max_len(char *const *secrets);

/* How many of the bytes a stream passed on it keeps to look back at
 * (redact_range()'s from): the longest value less one byte, so that a
 * value that overlaps one already replaced is still found whole. */
size_t redact_lookbehind(char *const *secrets);

/* How much of buf[0..n), the latest bytes of a stream that goes on, can
 * be redacted and passed on now; the rest waits for more bytes. What
 * waits is a tail that could start a value. The cut never falls inside
 * a full match: a value whose end could also start it ("abcXabc") would
 * otherwise leave whole, in two pieces each redacted alone; the cut
 * moves past that match, which is then redacted whole, and what follows
 * it waits (a value may overlap it: the next bytes are redacted with
 * redact_range(), looking back at it). At most the longest value minus
 * one byte waits. */
size_t redact_cut(const char *buf, size_t n, char *const *secrets);
