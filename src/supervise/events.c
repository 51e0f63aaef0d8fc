/* events.c - the --events stream (see events.h). */
#include "config.h"

#include <string.h>

#include "lib/base64.h"
#include "lib/redact.h"
#include "lib/util.h"
#include "record/store.h"
#include "supervise/events.h"
#include "supervise/hostio.h"

/* room for a full 512 KiB read as events, with escapes */
#define EVENTS_BUFFER_BYTES (4u << 20)
#define EVENTS_STALL_MS 5000

struct pending {
        char *buf;
        size_t len;
        size_t seen;            /* buf's first bytes, emitted already: looked back
                                 * at for a value that overlaps one replaced */
        uint64_t offset;        /* of buf[seen] in the stream */
};

struct events {
        struct hostio *out;
        bool broken, started, exited;
        uint64_t seq;
        char *const *secrets;
        struct pending streams[2];      /* stdout, stderr */
};

struct events *events_new(int fd, char *const *secrets)
{
        struct events *ev = xcalloc(1, sizeof(*ev));
        ev->out = hostio_new(fd, true, EVENTS_BUFFER_BYTES);
        ev->secrets = secrets;
        return ev;
}

struct events *events_free(struct events *ev)
{
        if (!ev)
                return NULL;
        hostio_free(ev->out);
        free(ev->streams[0].buf);
        free(ev->streams[1].buf);
        free(ev);
        return NULL;
}

struct hostio *events_hostio(struct events *ev)
{
        return ev->out;
}

bool events_have_started(const struct events *ev)
{
        return ev->started;
}

bool events_have_exited(const struct events *ev)
{
        return ev->exited;
}

/* Stamp, dump and write one event; takes o. */
static void emit(struct events *ev, const char *type, json_t *o)
{
        char when[64];
        json_t *e = json_object();
        /* the envelope first, for people reading the stream */
        json_object_set_new(e, "schema", json_string("hutch.event/1"));
        json_object_set_new(e, "seq", json_integer((json_int_t)++ev->seq));
        json_object_set_new(e, "time", json_string(format_iso8601_ms(now_realtime_ms(), when, sizeof(when))));
        json_object_set_new(e, "type", json_string(type));
        json_object_update(e, o);
        json_decref(o);
        char *line = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(e);
        if (!line)
                return;
        size_t n = strlen(line);
        line[n] = '\n';
        /* the caller stopped reading: the run goes on, recorded as usual */
        if (!ev->broken && !hostio_gone(ev->out)) {
                /* the supervisor reads only what fits; an envelope or a
                 * heartbeat may go a little over */
                if (hostio_room(ev->out) < n + 1)
                        hostio_grow(ev->out, n + 1 - hostio_room(ev->out));
                if (hostio_send(ev->out, line, n + 1) < 0)
                        ev->broken = true;
        }
        free(line);
}

void events_started(struct events *ev, const char *id, pid_t pid, json_t *limits, json_t *labels)
{
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(id));
        json_object_set_new(o, "pid", json_integer(pid));
        json_object_set_new(o, "limits", limits ? json_incref(limits) : json_object());
        json_object_set_new(o, "labels", labels ? json_incref(labels) : json_object());
        ev->started = true;
        emit(ev, "started", o);
}

/* Bytes at the end of buf[0..n) that start a UTF-8 character whose
 * other bytes have not arrived yet. */
static size_t utf8_incomplete(const unsigned char *buf, size_t n)
{
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char c = buf[n - back];
                if ((c & 0xc0) == 0x80)
                        continue;       /* a continuation byte: look further back */
                size_t need = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
                return need > back ? back : 0;
        }
        return 0;
}

/* Emit buf[0..n), already redacted. */
static void emit_output(struct events *ev, enum output_stream stream, const char *data, size_t len,
                        uint64_t offset)
{
        json_t *o = json_object(), *text = json_stringn(data, len);

        json_object_set_new(o, "stream", json_string(stream == STREAM_STDERR ? "stderr" : "stdout"));
        json_object_set_new(o, "offset", json_integer((json_int_t)offset));
        if (text) {
                json_object_set_new(o, "data", text);
                json_object_set_new(o, "base64", json_false());
        } else {
                /* not UTF-8: carried losslessly */
                _cleanup_free_ char *b = base64_encode(data, len, NULL);
                json_object_set_new(o, "data", json_string(b));
                json_object_set_new(o, "base64", json_true());
        }
        emit(ev, "output", o);
}

void events_output(struct events *ev, enum output_stream stream, const void *buf, size_t n)
{
        struct pending *p = &ev->streams[stream == STREAM_STDERR];
        _cleanup_free_ char *owned = NULL, *clean = NULL;
        const char *work = buf, *data;
        size_t len = n, cut, clean_len, part;

        if (n == 0)
                return;
        if (p->len) {
                owned = xmalloc(p->len + n);
                memcpy(owned, p->buf, p->len);
                memcpy(owned + p->len, buf, n);
                work = owned;
                len = p->len + n;
        }
        /* never inside a full match, never before the start of a value
         * that may go on (redact.h); the first p->seen bytes were
         * emitted already, and are there to look back at */
        size_t skip = p->seen;
        cut = MAX(redact_cut(work, len, ev->secrets), skip);
        clean = redact_range(work, cut, skip, ev->secrets, &clean_len);
        data = clean ? clean : work + skip;
        if (!clean)
                clean_len = cut - skip;
        /* An incomplete UTF-8 character at the end of what is emitted is
         * the job's own bytes, never part of a match (a marker is
         * ASCII): those bytes wait too. */
        part = utf8_incomplete((const unsigned char *)data, clean_len);
        cut -= part;
        if (clean_len > part)
                emit_output(ev, stream, data, clean_len - part, p->offset);
        p->offset += cut - skip;
        /* what waits is at most 3 bytes or a value's length, and what is
         * looked back at a value's length: tiny */
        size_t back = MIN(cut, redact_lookbehind(ev->secrets)), hold = len - cut + back;
        char *keep = hold ? xmalloc(hold) : NULL;
        if (hold)
                memcpy(keep, work + cut - back, hold);
        free(p->buf);
        p->buf = keep;
        p->len = hold;
        p->seen = back;
}

void events_flush(struct events *ev)
{
        for (int i = 0; i < 2; i++) {
                struct pending *p = &ev->streams[i];
                size_t held = p->len - p->seen;
                if (held) {
                        size_t len;
                        _cleanup_free_ char *clean = redact_range(p->buf, p->len, p->seen, ev->secrets, &len);
                        emit_output(ev, i ? STREAM_STDERR : STREAM_STDOUT, clean ? clean : p->buf + p->seen,
                                    clean ? len : held, p->offset);
                        p->offset += held;
                }
                free(p->buf);
                p->buf = NULL;
                p->len = p->seen = 0;
        }
}

void events_heartbeat(struct events *ev, uint64_t elapsed_ms, bool have_sample, uint64_t cpu_ms,
                      uint64_t memory_bytes)
{
        json_t *o = json_object();
        json_object_set_new(o, "elapsed_ms", json_integer((json_int_t)elapsed_ms));
        json_object_set_new(o, "cpu_ms", have_sample ? json_integer((json_int_t)cpu_ms) : json_null());
        json_object_set_new(o, "memory_mb", have_sample
                            ? json_real((double)((memory_bytes * 10 + 524288) / 1048576) / 10.0) : json_null());
        emit(ev, "heartbeat", o);
}

void events_truncated(struct events *ev, enum output_stream stream, uint64_t offset)
{
        json_t *o = json_object();
        json_object_set_new(o, "stream", json_string(stream == STREAM_STDERR ? "stderr" : "stdout"));
        json_object_set_new(o, "offset", json_integer((json_int_t)offset));
        emit(ev, "truncated", o);
}

void events_warning(struct events *ev, const char *message)
{
        json_t *o = json_object();
        size_t len;
        _cleanup_free_ char *clean = redact(message, strlen(message), ev->secrets, &len);
        json_t *m = json_string(clean ? clean : message);
        json_object_set_new(o, "message", m ? m : json_string("(not valid UTF-8)"));
        emit(ev, "warning", o);
}

void events_queued(struct events *ev, const char *id, uint64_t running, uint64_t max_running, uint64_t waited_ms)
{
        if (!ev)
                return;
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(id));
        json_object_set_new(o, "running", json_integer((json_int_t)running));
        json_object_set_new(o, "max_running", max_running ? json_integer((json_int_t)max_running) : json_null());
        json_object_set_new(o, "waited_ms", json_integer((json_int_t)waited_ms));
        emit(ev, "queued", o);
        (void)hostio_drain(ev->out, EVENTS_STALL_MS);
}

void events_exit(struct events *ev, json_t *result)
{
        if (ev->exited)
                return;
        events_flush(ev);
        json_t *o = json_object();
        json_object_set(o, "result", result);
        ev->exited = true;
        emit(ev, "exit", o);
        (void)hostio_drain(ev->out, EVENTS_STALL_MS);
}
