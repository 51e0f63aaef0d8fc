/* supervise-input.c - the caller's stdin relayed to the job's stdin
 * pipe or pty, with ssh's "~." escape for a raw terminal (see
 * supervise-internal.h; the loop that calls these is supervise.c). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "supervise/supervise-internal.h"


/* Where the job's input goes: its stdin pipe, or its pty. */
int input_target(const struct loop *l)
{
        if (l->cfg->tty)
                return l->master_open ? l->tty_master : -1;
        return l->sb->stdin_fd;
}

void close_job_stdin(struct loop *l)
{
        if (l->sb->stdin_fd >= 0) {
                close(l->sb->stdin_fd);
                l->sb->stdin_fd = -1;
        }
}

/* Pass what was read on to the job, as far as it takes it now. When the
 * caller's input has ended and all of it was taken, the job's stdin
 * pipe is closed: the job reads EOF, as from `cat | job`. */
void flush_input(struct loop *l)
{
        int fd = input_target(l);
        while (l->in_len > 0 && fd >= 0) {
                ssize_t n = write(fd, l->inbuf + l->in_off, l->in_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        /* the job closed its stdin (EPIPE), or its pty is
                         * gone: read no more of the caller's */
                        l->stdin_open = false;
                        l->in_len = 0;
                        break;
                }
                l->in_off += (size_t)n;
                l->in_len -= (size_t)n;
        }
        if (l->in_len == 0)
                l->in_off = 0;
        if (!l->stdin_open && (l->in_len == 0 || fd < 0))
                close_job_stdin(l);
}

/* ssh's escape, for a terminal in raw mode, where Ctrl-C is only a byte
 * for the job: "~." at the start of a line ends the run, whatever the
 * job ignores; "~~" there sends one "~"; any other "~x" passes as
 * typed. Filters in[0..n) into out (room for n + 1 bytes); returns the
 * bytes to send. */
static size_t escape_filter(struct loop *l, const char *in, size_t n, char *out)
{
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
                char c = in[i];
                if (l->esc == ESC_TILDE) {
                        if (c == '.') {
                                l->esc = ESC_NORMAL;
                                loop_event(l, EV_ESCAPE, NULL);
                                return w;
                        }
                        if (c != '~')
                                out[w++] = '~';
                } else if (l->esc == ESC_LINE_START && c == '~') {
                        l->esc = ESC_TILDE;
                        continue;
                }
                out[w++] = c;
                l->esc = c == '\r' || c == '\n' ? ESC_LINE_START : ESC_NORMAL;
        }
        return w;
}

/* Whether the caller's stdin may be read now. A terminal is read only
 * while hutch is in its foreground process group: in the background
 * (`hutch run ... &`) what is typed belongs to the shell. hutch then
 * waits, as a background program would, but without being stopped
 * (run.c ignores SIGTTIN, so a read the kernel refuses returns EIO
 * instead, which closes the race with a change of foreground): the
 * deadline and the watchdog go on, and the job's reads simply wait. A
 * terminal that is not our controlling one was redirected to us on
 * purpose (< /dev/pts/N) and is read. */
bool stdin_readable_now(const struct loop *l)
{
        if (!hostio_is_tty(l->host_in))
                return true;
        pid_t fg = tcgetpgrp(hostio_fd(l->host_in));
        return fg < 0 || fg == getpgrp();
}

void read_stdin(struct loop *l)
{
        ssize_t n = hostio_read(l->host_in, l->buf, sizeof(l->inbuf) - 1);
        if (n == -EAGAIN)
                return;
        if (n <= 0) {
                l->stdin_open = false;
                /* tell the job's terminal that input ended */
                if (l->cfg->tty) {
                        l->inbuf[0] = 4;
                        l->in_len = 1;
                }
        } else if (l->cfg->tty && hostio_is_tty(l->host_in)) {
                l->in_len = escape_filter(l, l->buf, (size_t)n, l->inbuf);
        } else {
                memcpy(l->inbuf, l->buf, (size_t)n);
                l->in_len = (size_t)n;
        }
        l->in_off = 0;
        flush_input(l);
}
