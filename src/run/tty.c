/* run/tty.c - the caller's terminal under -t: raw mode for the run,
 * and everything about it put back afterwards.
 *
 * Without -t the job never sees the caller's terminal (its stdio are
 * hutch's pipes), so there is nothing to save or restore: nothing inside
 * can change it. With -t the job has a pty of its own and only hutch
 * touches the caller's terminal, but a run must still leave it exactly
 * as it found it, and must never be stopped by job control for it:
 * run.c ignores SIGTTOU, so tcsetattr() from the background does not
 * stop us (a stopped hutch would leave its run `running` and its
 * session locked).
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "run/run-internal.h"

void run_tty_raw(struct tty_state *t)
{
        struct termios raw;
        int fd = STDIN_FILENO;

        *t = (struct tty_state) { .excl = -1, .ldisc = -1, .fl = -1 };
        if (!isatty(fd) || tcgetattr(fd, &t->orig) < 0)
                return;
        /* In the background the terminal is the shell's (or another
         * job's): leave its modes alone. The supervisor does not read it
         * either until we are in the foreground (supervise.c). */
        if (tcgetpgrp(fd) != getpgrp())
                return;
        t->have_ws = ioctl(fd, TIOCGWINSZ, &t->ws) == 0;
        if (ioctl(fd, TIOCGEXCL, &t->excl) < 0)
                t->excl = -1;
        if (ioctl(fd, TIOCGETD, &t->ldisc) < 0)
                t->ldisc = -1;
        t->fl = fcntl(fd, F_GETFL);
        raw = t->orig;
        cfmakeraw(&raw);
        if (tcsetattr(fd, TCSADRAIN, &raw) == 0)
                t->saved = true;
}

void run_tty_restore(struct tty_state *t)
{
        int fd = STDIN_FILENO;

        if (!t->saved)
                return;
        t->saved = false;
        /* TCSANOW: TCSADRAIN would wait forever on a terminal whose
         * output someone stopped */
        (void)tcsetattr(fd, TCSANOW, &t->orig);
        struct winsize ws;
        if (t->have_ws && ioctl(fd, TIOCGWINSZ, &ws) == 0 && memcmp(&ws, &t->ws, sizeof(ws)) != 0)
                (void)ioctl(fd, TIOCSWINSZ, &t->ws);
        int excl = -1;
        if (t->excl == 0 && ioctl(fd, TIOCGEXCL, &excl) == 0 && excl)
                (void)ioctl(fd, TIOCNXCL);
        int ldisc = -1;
        if (t->ldisc >= 0 && ioctl(fd, TIOCGETD, &ldisc) == 0 && ldisc != t->ldisc)
                (void)ioctl(fd, TIOCSETD, &t->ldisc);
        /* the status flags of the caller's open file description, which
         * it shares with the shell: O_NONBLOCK left set there would make
         * the next `cat` fail with EAGAIN */
        int fl = fcntl(fd, F_GETFL);
        if (t->fl >= 0 && fl >= 0 && fl != t->fl)
                (void)fcntl(fd, F_SETFL, t->fl);
}
