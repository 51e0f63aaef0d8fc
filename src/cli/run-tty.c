/* cli/run-tty.c - the user's terminal during a run: raw mode for -t,
 * and without -t its state saved before the job and put back after it,
 * whatever the job did to it.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/run-internal.h"

void run_tty_raw(struct tty_state *t)
{
        struct termios raw;
        t->excl = -1;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->orig) < 0)
                return;
        raw = t->orig;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
                t->saved = true;
}

/* Without -t the job's stdin *is* the user's terminal when hutch runs
 * from one, and a terminal's modes belong to the terminal, not to the
 * fd: a job could leave the user's shell with echo off, no line editing
 * or output stopped (stty -echo -icanon, tcflow(TCOOFF)), or in exclusive
 * mode (TIOCEXCL: every later open of it fails with EBUSY, so sudo, ssh
 * and less cannot prompt), long after the run. Save the state before the
 * run; run_tty_restore() puts it back once the sandbox, and so every process
 * that held the terminal, is gone. */
void run_tty_save(struct tty_state *t)
{
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->orig) < 0)
                return;
        if (ioctl(STDIN_FILENO, TIOCGEXCL, &t->excl) < 0)
                t->excl = -1;   /* unknown: leave it as the job does */
        t->saved = true;
}

void run_tty_restore(struct tty_state *t)
{
        if (t->saved) {
                /* output first: TCSADRAIN would wait forever on a
                 * terminal whose output the job stopped */
                (void)tcflow(STDIN_FILENO, TCOON);
                (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &t->orig);
                if (t->excl == 0)
                        (void)ioctl(STDIN_FILENO, TIOCNXCL);
        }
        t->saved = false;
}
