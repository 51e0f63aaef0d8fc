/* events.h - `hutch run --events`: the run as JSON lines, as it happens
 * (schema hutch.event/1; share/schema/hutch.event-1.json, hutch-json(7)).
 *
 * Every event is one line {"schema":"hutch.event/1","seq":N,"time":...,
 * "type":...}: seq counts from 1 with no gaps; started comes first;
 * output carries the job's bytes with their offset in their stream
 * (text when they are UTF-8, else base64 with "base64":true); exit
 * comes once, last, with the whole result.
 *
 * Output is emitted as soon as it is read, except for what cannot be
 * judged yet: the start of a UTF-8 character cut by a read, and a tail
 * that could be the start of a secret's value (redact.h); those few
 * bytes wait for the next read or the end of the run, so no secret is
 * ever split past the redaction and no character is split into base64.
 * A cut never falls inside a full match of a value, even one whose end
 * could also start it again ("abcXabc"): that match goes out whole,
 * redacted. The same stream feeds the --detach spool and logs --follow.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "supervise/supervise.h"

struct events;

/* A new stream writing to the caller's fd (through a hostio of its own,
 * so the supervisor never blocks on it); secrets ("NAME=VALUE", may be
 * NULL; not copied, must outlive the stream) are redacted from output.
 * Never NULL. */
struct events *events_new(int fd, char *const *secrets);
/* The stream's hostio, for supervise_hooks.host_out with .events. */
struct hostio *events_hostio(struct events *ev);
/* Free ev (NULL is fine); does not emit anything. Returns NULL. */
struct events *events_free(struct events *ev);
static inline void events_freep(struct events **ev) { events_free(*ev); }
#define _cleanup_events_ __attribute__((cleanup(events_freep)))

/* Emitters. Each queues one line and writes what the reader takes
 * now, never blocking: the supervisor reads the job only while there is
 * room (supervise.h), so nothing is dropped. A reader that went away
 * stops the stream. json arguments are borrowed. */
void events_started(struct events *ev, const char *id, pid_t pid, json_t *limits, json_t *labels);
void events_output(struct events *ev, enum output_stream stream, const void *buf, size_t n);
/* Emit the bytes held back (at the end of the run, before exit). */
void events_flush(struct events *ev);
void events_heartbeat(struct events *ev, uint64_t elapsed_ms, bool have_sample, uint64_t cpu_ms,
                      uint64_t memory_bytes);
void events_truncated(struct events *ev, enum output_stream stream, uint64_t offset);
void events_warning(struct events *ev, const char *message);
/* A "queued" event: run id waits for admission, running of max_running
 * (0: no count cap) of the user's runs are running, waited_ms so far.
 * ev may be NULL (nothing is written). Written at once. */
void events_queued(struct events *ev, const char *id, uint64_t running, uint64_t max_running, uint64_t waited_ms);
/* The last event: result is the hutch.result/1 object. Flushes the
 * held-back output first, then waits for the reader to take everything
 * (giving up when it takes nothing for 5 s). Only the first call emits. */
void events_exit(struct events *ev, json_t *result);
/* Whether events_started() / events_exit() were called. */
bool events_have_started(const struct events *ev);
bool events_have_exited(const struct events *ev);
