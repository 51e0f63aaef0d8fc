/* dbus-wire.h - the D-Bus message format: building a method call and
 * reading what comes back.
 *
 * Only what hutch says to systemd is covered: the basic types, arrays,
 * structs and variants, in either byte order when reading, in the
 * host's when writing. No unix fds, no GVariant. Every read is checked
 * against the bytes that are really there: a malformed message is
 * -EBADMSG, never a read past the buffer, whatever the peer sent.
 *
 * Alignment in a body is relative to the message's first byte, and a
 * body starts on a multiple of 8, so aligning within the body's own
 * buffer comes to the same thing (the spec's rule, used both ways).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest message hutch takes: systemd's answers to it are a few
 * hundred bytes; a peer that sends more is not one we talk to. */
#define DBUS_MESSAGE_MAX (1u << 20)
/* The fixed part of every message, enough to know its whole size. */
#define DBUS_FIXED_HEADER 16

enum dbus_type {
        DBUS_METHOD_CALL = 1,
        DBUS_METHOD_RETURN = 2,
        DBUS_ERROR = 3,
        DBUS_SIGNAL = 4,
};

/* Bytes being put together, host byte order; grows as needed. */
struct dbus_writer {
        uint8_t *buf;
        size_t len, cap;
};

void dbus_writer_done(struct dbus_writer *w);
void dbus_put_byte(struct dbus_writer *w, uint8_t v);
void dbus_put_bool(struct dbus_writer *w, bool v);
void dbus_put_u32(struct dbus_writer *w, uint32_t v);
/* s and o: the caller passes valid UTF-8 without NUL (a path for o). */
void dbus_put_string(struct dbus_writer *w, const char *s);
/* g: at most 255 bytes */
void dbus_put_signature(struct dbus_writer *w, const char *sig);
/* a variant's signature; its value follows with the dbus_put_* above */
void dbus_put_variant(struct dbus_writer *w, const char *sig);
/* the 8-byte boundary a struct (or dict entry) starts on */
void dbus_put_struct(struct dbus_writer *w);
/* one (code, variant) entry of a header's field array: a string,
 * object path or signature value, per sig ("s", "o" or "g") */
void dbus_put_header_field(struct dbus_writer *w, uint8_t code, const char *sig, const char *value);

/* An array: open it with the alignment of its element type (8 for
 * structs, 4 for u and s, 1 for bytes), put the elements, close it.
 * Its length counts from the first element, after the padding. */
struct dbus_array {
        size_t length_at, first;
};
struct dbus_array dbus_array_open(struct dbus_writer *w, size_t element_align);
void dbus_array_close(struct dbus_writer *w, struct dbus_array a);

/* A whole method call in *out (which it resets): the fixed header,
 * the header fields and body (the bytes of a writer that started
 * empty, of signature sig; sig NULL or "" for none). dest may be NULL.
 * The names are the caller's constants, valid as the spec has them. */
void dbus_method_call(struct dbus_writer *out, uint32_t serial, const char *dest, const char *path,
                      const char *interface, const char *member, const char *sig,
                      const struct dbus_writer *body);

/* A message received: its header fields point into raw, which the
 * message owns. Absent fields are NULL (reply_serial 0). */
struct dbus_message {
        uint8_t *raw;
        size_t size;
        enum dbus_type type;
        bool swap;              /* its byte order is not the host's */
        uint32_t serial, reply_serial;
        const char *path, *interface, *member, *error_name, *destination, *sender, *signature;
        size_t body_at, body_len;
};

/* How many bytes the message that starts with these (at least
 * DBUS_FIXED_HEADER) takes in all: > 0; -EBADMSG when they are no
 * D-Bus message, -EMSGSIZE when it is larger than DBUS_MESSAGE_MAX. */
ssize_t dbus_message_size(const uint8_t *buf, size_t len);

/* Check and index the message in raw[0..size) (size as
 * dbus_message_size() gave it). Takes raw (malloc'd) in every case:
 * on success m owns it, on failure it is freed. 0 or -EBADMSG. */
int dbus_message_parse(uint8_t *raw, size_t size, struct dbus_message *m);
void dbus_message_done(struct dbus_message *m);

/* Reading a body (or any part of a message), one value at a time. */
struct dbus_reader {
        const uint8_t *p;
        size_t len, pos;
        bool swap;
};

/* A reader over m's body, which must have signature sig (else
 * -EBADMSG): the reads that follow are then of the types expected. */
int dbus_body_reader(const struct dbus_message *m, const char *sig, struct dbus_reader *ret);
int dbus_get_u32(struct dbus_reader *r, uint32_t *ret);
/* s and o: *ret points into the message, NUL-terminated and checked
 * to hold no NUL. */
int dbus_get_string(struct dbus_reader *r, const char **ret);
int dbus_get_signature(struct dbus_reader *r, const char **ret);
/* A variant holding exactly one string (s or o): *ret as above. */
int dbus_get_variant_string(struct dbus_reader *r, const char **ret);
