/* dbus.h - a D-Bus connection over a unix socket, as much of one as
 * hutch needs to ask systemd for a scope: connect, authenticate, call a
 * method and wait for its reply, and hand the signals that arrive on
 * the way to the caller.
 *
 * One connection, one thread, blocking calls bounded by a deadline on
 * CLOCK_MONOTONIC (now_monotonic_ms()). Functions return 0 or -errno
 * and, where they take ret_reason, set an allocated one-line reason on
 * failure; nothing here logs.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "limits/dbus-wire.h"
#include "lib/util.h"

struct dbus_conn;

/* Connect to the unix socket at path, authenticate as our effective uid
 * (SASL EXTERNAL), and, when it is a bus (a daemon between peers, not a
 * peer's private socket), say Hello. */
int dbus_conn_open_path(const char *path, bool bus, uint64_t deadline_ms, struct dbus_conn **ret,
                        char **ret_reason);

/* The same for a D-Bus server address ("unix:path=/run/user/1000/bus",
 * "unix:abstract=...", several separated by ';', tried in turn); other
 * transports are passed over. */
int dbus_conn_open_address(const char *address, bool bus, uint64_t deadline_ms, struct dbus_conn **ret,
                           char **ret_reason);

/* NULL-tolerant; returns NULL. */
struct dbus_conn *dbus_conn_free(struct dbus_conn *c);
static inline void dbus_conn_freep(struct dbus_conn **c) { dbus_conn_free(*c); }
#define _cleanup_dbus_conn_ _cleanup_(dbus_conn_freep)

/* Called for each signal that arrives while a call or a wait is under
 * way. A return > 0 ends dbus_conn_wait(). */
typedef int (*dbus_signal_fn)(const struct dbus_message *m, void *userdata);

/* Call a method and wait for its answer. A method return goes to
 * *ret_reply (release with dbus_message_done()). An error answer is
 * -EREMOTEIO with *ret_reason "Error.Name: its message". Signals that
 * come first go to on_signal (may be NULL). */
int dbus_conn_call(struct dbus_conn *c, const char *dest, const char *path, const char *interface,
                   const char *member, const char *sig, const struct dbus_writer *body, uint64_t deadline_ms,
                   dbus_signal_fn on_signal, void *userdata, struct dbus_message *ret_reply,
                   char **ret_reason);

/* Hand arriving signals to on_signal until it returns > 0 (then 0), the
 * deadline passes (-ETIMEDOUT) or the connection ends. */
int dbus_conn_wait(struct dbus_conn *c, uint64_t deadline_ms, dbus_signal_fn on_signal, void *userdata,
                   char **ret_reason);

/* Escape a socket path as the value of a D-Bus address ("unix:path=" and
 * the value, every byte but [-0-9A-Za-z_/.\*] as %XX). Allocated. */
char *dbus_unix_address(const char *path);
