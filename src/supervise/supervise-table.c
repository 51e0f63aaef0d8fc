/* supervise-table.c - how a run is ended: the supervisor's termination
 * state table (see supervise-internal.h), s6-supervise style.
 *
 * Every event that may end the run goes through loop_event(), which
 * looks up termination[state][event] and does its action; while the
 * loop runs, nothing else in the supervisor changes the state or sends
 * init a stopping signal.
 * Reading the table below is reading the whole termination behaviour.
 *
 * Killing init kills the whole pid namespace, so "SIGKILL init" is
 * "SIGKILL everything the job started". A run's reason is the first one
 * given (timeout, cancel, oom, ...): what the table does later never
 * changes why the run ended.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "supervise/supervise-internal.h"

#define T(action, next) { ACT_##action, PHASE_##next }

/* A table, not a function (hence longer than a function may be): one
 * block per state, one line per event, all 48 cells written out so that
 * none is left to a default. */
static const struct transition termination[_PHASE_MAX][_EV_MAX] = {
        [PHASE_RUNNING] = {
                [EV_TIMER]                  = T(TERM, TERMINATING),
                [EV_CPU_LIMIT]              = T(KILL, KILLED),
                [EV_MEMORY_LIMIT]           = T(KILL, KILLED),
                [EV_DISK_LIMIT]             = T(KILL, KILLED),
                [EV_SIGINT]                 = T(FORWARD, RUNNING),
                [EV_SIGINT_AGAIN]           = T(KILL, KILLED),
                [EV_SIGTERM]                = T(TERM, TERMINATING),
                [EV_KILL_REQUEST]           = T(REQUEST, TERMINATING),
                [EV_KILL_REQUEST_SIGKILL]   = T(KILL, KILLED),
                [EV_ESCAPE]                 = T(KILL, KILLED),
                [EV_FAILURE]                = T(KILL, KILLED),
                [EV_INIT_EXITED]            = T(NONE, DONE),
        },
        [PHASE_TERMINATING] = {
                [EV_TIMER]                  = T(KILL, KILLED),
                [EV_CPU_LIMIT]              = T(KILL, KILLED),
                [EV_MEMORY_LIMIT]           = T(KILL, KILLED),
                [EV_DISK_LIMIT]             = T(KILL, KILLED),
                [EV_SIGINT]                 = T(FORWARD, TERMINATING),
                [EV_SIGINT_AGAIN]           = T(KILL, KILLED),
                [EV_SIGTERM]                = T(NOTE, TERMINATING),
                [EV_KILL_REQUEST]           = T(NOTE, TERMINATING),
                [EV_KILL_REQUEST_SIGKILL]   = T(NOTE, TERMINATING),
                [EV_ESCAPE]                 = T(KILL, KILLED),
                [EV_FAILURE]                = T(KILL, KILLED),
                [EV_INIT_EXITED]            = T(NONE, DONE),
        },
        [PHASE_KILLED] = {
                [EV_TIMER]                  = T(NONE, KILLED),
                [EV_CPU_LIMIT]              = T(NONE, KILLED),
                [EV_MEMORY_LIMIT]           = T(NONE, KILLED),
                [EV_DISK_LIMIT]             = T(NONE, KILLED),
                [EV_SIGINT]                 = T(FORWARD, KILLED),
                [EV_SIGINT_AGAIN]           = T(KILL, KILLED),
                [EV_SIGTERM]                = T(NOTE, KILLED),
                [EV_KILL_REQUEST]           = T(NOTE, KILLED),
                [EV_KILL_REQUEST_SIGKILL]   = T(NOTE, KILLED),
                [EV_ESCAPE]                 = T(KILL, KILLED),
                [EV_FAILURE]                = T(KILL, KILLED),
                [EV_INIT_EXITED]            = T(NONE, DONE),
        },
        [PHASE_DONE] = {
                [EV_TIMER]                  = T(NONE, DONE),
                [EV_CPU_LIMIT]              = T(NONE, DONE),
                [EV_MEMORY_LIMIT]           = T(NONE, DONE),
                [EV_DISK_LIMIT]             = T(NONE, DONE),
                [EV_SIGINT]                 = T(NONE, DONE),
                [EV_SIGINT_AGAIN]           = T(NOTE, DONE),
                [EV_SIGTERM]                = T(NOTE, DONE),
                [EV_KILL_REQUEST]           = T(NOTE, DONE),
                [EV_KILL_REQUEST_SIGKILL]   = T(NOTE, DONE),
                [EV_ESCAPE]                 = T(NOTE, DONE),
                [EV_FAILURE]                = T(NONE, DONE),
                [EV_INIT_EXITED]            = T(NONE, DONE),
        },
};
#undef T

/* Why the run ends, when an event is the first to end it. */
static const enum stop_reason event_reason[_EV_MAX] = {
        [EV_TIMER] = STOP_TIMEOUT,
        [EV_CPU_LIMIT] = STOP_CPU,
        [EV_MEMORY_LIMIT] = STOP_OOM,
        [EV_DISK_LIMIT] = STOP_DISK,
        [EV_SIGINT] = STOP_NONE,        /* passed on to the job, ends nothing */
        [EV_SIGINT_AGAIN] = STOP_CANCEL_INT,
        [EV_SIGTERM] = STOP_CANCEL_TERM,
        [EV_KILL_REQUEST] = STOP_CANCEL_KILL,
        [EV_KILL_REQUEST_SIGKILL] = STOP_CANCEL_KILL,
        [EV_ESCAPE] = STOP_CANCEL_ESCAPE,
        [EV_FAILURE] = STOP_NONE,       /* the supervisor's own: no reason */
        [EV_INIT_EXITED] = STOP_NONE,
};

struct transition loop_transition(enum phase state, enum event ev)
{
        return termination[state][ev];
}

int send_init(struct loop *l, int sig)
{
        if (l->init_exited)
                return 0;
        if (syscall(SYS_pidfd_send_signal, l->sb->pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
                return -errno;
        return 0;
}

void arm_timer(struct loop *l, uint64_t ms)
{
        struct itimerspec its = { 0 };
        if (ms == 0)
                ms = 1;
        its.it_value.tv_sec = (time_t)(ms / 1000);
        its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
        (void)timerfd_settime(l->timer_fd, 0, &its, NULL);
}

void loop_event(struct loop *l, enum event ev, const struct cancel_request *req)
{
        struct transition t = termination[l->phase][ev];

        /* the first reason wins; a hutch kill request's details are kept
         * with its reason, for the message */
        if (t.action != ACT_NONE && t.action != ACT_FORWARD && l->reason == STOP_NONE) {
                l->reason = event_reason[ev];
                if (l->reason == STOP_CANCEL_KILL && req)
                        l->cancel = *req;
        }
        switch (t.action) {
        case ACT_NONE:
        case ACT_NOTE:
                break;
        case ACT_FORWARD:
                /* init passes it on to the job */
                (void)send_init(l, SIGINT);
                break;
        case ACT_TERM:
                (void)send_init(l, SIGTERM);
                arm_timer(l, l->cfg->grace_ms);
                break;
        case ACT_REQUEST:
                /* init forwards the signal to the job; SIGKILL to init
                 * after the grace ends everything, whatever the job did */
                (void)send_init(l, req->signal);
                arm_timer(l, req->grace_given ? req->grace_ms : l->cfg->grace_ms);
                break;
        case ACT_KILL:
                (void)send_init(l, SIGKILL);
                break;
        case _ACT_MAX:
                break;
        }
        l->phase = t.next;
}
