/* test-supervise-table.c - unit tests for the supervisor's termination
 * state table (supervise-table.c).
 *
 * Every cell, state x event, is one test. It checks the table's action
 * and next state against the spec below, written out here on its own,
 * then does the cell for real: a child process stands in for the
 * sandbox's init (its pidfd is the loop's), and the test looks at what
 * reached the child (which signal, if any), whether the grace timer was
 * armed and for how long, the state the loop is left in, and the run's
 * reason (the first one given wins).
 */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "supervise/supervise-internal.h"

#define GRACE_MS 5000           /* the profile's */
#define REQUEST_GRACE_MS 7000   /* hutch kill --grace */

static const char *const state_names[_PHASE_MAX] = {
        "running", "terminating", "killed", "done",
};
static const char *const event_names[_EV_MAX] = {
        "timer", "cpu_limit", "memory_limit", "disk_limit", "sigint", "sigint_again", "sigterm",
        "kill_request", "kill_request_sigkill", "escape", "failure", "init_exited",
};

/* The spec: what each cell must do, one row per cell. */
static const struct cell {
        enum phase state;
        enum event event;
        enum action action;
        enum phase next;
} spec[] = {
        /* running: the deadline, SIGTERM and hutch kill ask the job to
         * stop; a limit, a second Ctrl-C and "~." end it now */
        { PHASE_RUNNING, EV_TIMER, ACT_TERM, PHASE_TERMINATING },
        { PHASE_RUNNING, EV_CPU_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_MEMORY_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_DISK_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_SIGINT, ACT_FORWARD, PHASE_RUNNING },
        { PHASE_RUNNING, EV_SIGINT_AGAIN, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_SIGTERM, ACT_TERM, PHASE_TERMINATING },
        { PHASE_RUNNING, EV_KILL_REQUEST, ACT_REQUEST, PHASE_TERMINATING },
        { PHASE_RUNNING, EV_KILL_REQUEST_SIGKILL, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_ESCAPE, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_FAILURE, ACT_KILL, PHASE_KILLED },
        { PHASE_RUNNING, EV_INIT_EXITED, ACT_NONE, PHASE_DONE },
        /* terminating: the grace's end, a limit, Ctrl-C twice end it;
         * another request to stop changes nothing */
        { PHASE_TERMINATING, EV_TIMER, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_CPU_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_MEMORY_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_DISK_LIMIT, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_SIGINT, ACT_FORWARD, PHASE_TERMINATING },
        { PHASE_TERMINATING, EV_SIGINT_AGAIN, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_SIGTERM, ACT_NOTE, PHASE_TERMINATING },
        { PHASE_TERMINATING, EV_KILL_REQUEST, ACT_NOTE, PHASE_TERMINATING },
        { PHASE_TERMINATING, EV_KILL_REQUEST_SIGKILL, ACT_NOTE, PHASE_TERMINATING },
        { PHASE_TERMINATING, EV_ESCAPE, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_FAILURE, ACT_KILL, PHASE_KILLED },
        { PHASE_TERMINATING, EV_INIT_EXITED, ACT_NONE, PHASE_DONE },
        /* killed: everything is dying; only init's exit moves on */
        { PHASE_KILLED, EV_TIMER, ACT_NONE, PHASE_KILLED },
        { PHASE_KILLED, EV_CPU_LIMIT, ACT_NONE, PHASE_KILLED },
        { PHASE_KILLED, EV_MEMORY_LIMIT, ACT_NONE, PHASE_KILLED },
        { PHASE_KILLED, EV_DISK_LIMIT, ACT_NONE, PHASE_KILLED },
        { PHASE_KILLED, EV_SIGINT, ACT_FORWARD, PHASE_KILLED },
        { PHASE_KILLED, EV_SIGINT_AGAIN, ACT_KILL, PHASE_KILLED },
        { PHASE_KILLED, EV_SIGTERM, ACT_NOTE, PHASE_KILLED },
        { PHASE_KILLED, EV_KILL_REQUEST, ACT_NOTE, PHASE_KILLED },
        { PHASE_KILLED, EV_KILL_REQUEST_SIGKILL, ACT_NOTE, PHASE_KILLED },
        { PHASE_KILLED, EV_ESCAPE, ACT_KILL, PHASE_KILLED },
        { PHASE_KILLED, EV_FAILURE, ACT_KILL, PHASE_KILLED },
        { PHASE_KILLED, EV_INIT_EXITED, ACT_NONE, PHASE_DONE },
        /* done: nothing is left to signal; a cancel still names the reason */
        { PHASE_DONE, EV_TIMER, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_CPU_LIMIT, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_MEMORY_LIMIT, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_DISK_LIMIT, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_SIGINT, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_SIGINT_AGAIN, ACT_NOTE, PHASE_DONE },
        { PHASE_DONE, EV_SIGTERM, ACT_NOTE, PHASE_DONE },
        { PHASE_DONE, EV_KILL_REQUEST, ACT_NOTE, PHASE_DONE },
        { PHASE_DONE, EV_KILL_REQUEST_SIGKILL, ACT_NOTE, PHASE_DONE },
        { PHASE_DONE, EV_ESCAPE, ACT_NOTE, PHASE_DONE },
        { PHASE_DONE, EV_FAILURE, ACT_NONE, PHASE_DONE },
        { PHASE_DONE, EV_INIT_EXITED, ACT_NONE, PHASE_DONE },
};
#define N_CELLS (sizeof(spec) / sizeof(spec[0]))

/* The reason an event gives a run that has none yet. */
static enum stop_reason spec_reason(enum event ev)
{
        switch (ev) {
        case EV_TIMER: return STOP_TIMEOUT;
        case EV_CPU_LIMIT: return STOP_CPU;
        case EV_MEMORY_LIMIT: return STOP_OOM;
        case EV_DISK_LIMIT: return STOP_DISK;
        case EV_SIGINT_AGAIN: return STOP_CANCEL_INT;
        case EV_SIGTERM: return STOP_CANCEL_TERM;
        case EV_KILL_REQUEST:
        case EV_KILL_REQUEST_SIGKILL: return STOP_CANCEL_KILL;
        case EV_ESCAPE: return STOP_CANCEL_ESCAPE;
        default: return STOP_NONE;
        }
}

static uint64_t pending(pid_t pid, bool *ret_asleep);
static pid_t child = -1;        /* the current cell's, for the teardown */

/* A child that blocks every signal it can and sleeps: what is sent to
 * it stays pending where /proc shows it; only SIGKILL ends it. */
static pid_t sleeper(void)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                sigset_t all;
                sigfillset(&all);
                sigprocmask(SIG_BLOCK, &all, NULL);
                (void)!write(p[1], "x", 1);
                for (;;)
                        pause();
        }
        char c;
        child = pid;
        close(p[1]);
        assert_int_equal(read(p[0], &c, 1), 1);
        close(p[0]);
        /* wait until it sleeps in pause(), where the checks expect it */
        bool asleep = false;
        for (int i = 0; i < 5000 && !asleep; i++) {
                (void)pending(pid, &asleep);
                if (!asleep)
                        usleep(1000);
        }
        assert_true(asleep);
        return pid;
}

/* A cell that failed half way leaves no child behind. */
static int reap_child(void **state)
{
        (void)state;
        if (child > 0) {
                kill(child, SIGKILL);
                (void)waitpid(child, NULL, 0);
                child = -1;
        }
        return 0;
}

/* The signals pending for pid (its own and its process's), and whether
 * it is still asleep. */
static uint64_t pending(pid_t pid, bool *ret_asleep)
{
        char path[64], line[256];
        uint64_t mask = 0;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        *ret_asleep = false;
        while (fgets(line, sizeof(line), f)) {
                if (!strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7))
                        mask |= strtoull(line + 7, NULL, 16);
                if (!strncmp(line, "State:", 6))
                        *ret_asleep = strstr(line, "S (sleeping)") != NULL;
        }
        fclose(f);
        return mask;
}

static int sent_signal(enum action a, const struct cancel_request *req)
{
        switch (a) {
        case ACT_FORWARD: return SIGINT;
        case ACT_TERM: return SIGTERM;
        case ACT_REQUEST: return req->signal;
        case ACT_KILL: return SIGKILL;
        default: return 0;
        }
}

static void check_cell(void **state)
{
        const struct cell *c = *state;
        struct transition t = loop_transition(c->state, c->event);

        /* the table */
        assert_int_equal(t.action, c->action);
        assert_int_equal(t.next, c->next);

        /* the cell done for real */
        pid_t pid = sleeper();
        struct sandbox sb = { .pid = pid, .pidfd = (int)syscall(SYS_pidfd_open, pid, 0) };
        struct run_config cfg = { .grace_ms = GRACE_MS };
        struct loop *l = calloc(1, sizeof(*l));
        assert_true(sb.pidfd >= 0);
        assert_non_null(l);
        l->cfg = &cfg;
        l->sb = &sb;
        l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        assert_true(l->timer_fd >= 0);
        l->phase = c->state;
        /* past running the run has its reason; done after a plain exit
         * has none, so a late cancel shows whether it is noted */
        enum stop_reason before = c->state == PHASE_TERMINATING || c->state == PHASE_KILLED
                                  ? STOP_TIMEOUT : STOP_NONE;
        l->reason = before;
        l->init_exited = c->state == PHASE_DONE;
        struct cancel_request req = {
                .signal = c->event == EV_KILL_REQUEST_SIGKILL ? SIGKILL : SIGUSR1,
                .grace_given = true,
                .grace_ms = REQUEST_GRACE_MS,
        };
        bool with_req = c->event == EV_KILL_REQUEST || c->event == EV_KILL_REQUEST_SIGKILL;

        loop_event(l, c->event, with_req ? &req : NULL);

        assert_int_equal(l->phase, c->next);
        /* what init got: nothing once it was reaped */
        int sig = l->init_exited ? 0 : sent_signal(c->action, &req);
        int status;
        if (sig == SIGKILL) {
                assert_int_equal(waitpid(pid, &status, 0), pid);
        } else {
                bool asleep;
                uint64_t mask = pending(pid, &asleep);
                assert_true(asleep);
                assert_int_equal(mask, sig ? 1ull << (sig - 1) : 0);
                kill(pid, SIGKILL);
                assert_int_equal(waitpid(pid, &status, 0), pid);
        }
        child = -1;
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* the grace timer: armed by a request to stop, for its grace */
        struct itimerspec its;
        assert_int_equal(timerfd_gettime(l->timer_fd, &its), 0);
        uint64_t armed_ms = (uint64_t)its.it_value.tv_sec * 1000 + (uint64_t)its.it_value.tv_nsec / 1000000;
        uint64_t want_ms = c->action == ACT_TERM ? GRACE_MS : c->action == ACT_REQUEST ? REQUEST_GRACE_MS : 0;
        if (want_ms) {
                assert_true(armed_ms <= want_ms);
                assert_true(armed_ms + 1000 > want_ms);
        } else
                assert_int_equal(armed_ms, 0);
        /* the reason: the first one given wins */
        bool gives = c->action != ACT_NONE && c->action != ACT_FORWARD;
        enum stop_reason after = before == STOP_NONE && gives ? spec_reason(c->event) : before;
        assert_int_equal(l->reason, after);
        if (after == STOP_CANCEL_KILL)
                assert_int_equal(l->cancel.signal, req.signal);
        else
                assert_int_equal(l->cancel.signal, 0);

        close(l->timer_fd);
        close(sb.pidfd);
        free(l);
}

/* The spec covers each cell once. */
static void spec_is_whole(void **state)
{
        (void)state;
        int seen[_PHASE_MAX][_EV_MAX] = { { 0 } };
        assert_int_equal(N_CELLS, _PHASE_MAX * _EV_MAX);
        for (size_t i = 0; i < N_CELLS; i++)
                seen[spec[i].state][spec[i].event]++;
        for (int s = 0; s < _PHASE_MAX; s++)
                for (int e = 0; e < _EV_MAX; e++)
                        assert_int_equal(seen[s][e], 1);
}

int main(void)
{
        static struct CMUnitTest tests[N_CELLS + 1];
        static char names[N_CELLS][64];

        tests[0] = (struct CMUnitTest)cmocka_unit_test(spec_is_whole);
        for (size_t i = 0; i < N_CELLS; i++) {
                snprintf(names[i], sizeof(names[i]), "%s x %s", state_names[spec[i].state],
                         event_names[spec[i].event]);
                tests[i + 1] = (struct CMUnitTest){ .name = names[i], .test_func = check_cell,
                                                    .teardown_func = reap_child,
                                                    .initial_state = (void *)&spec[i] };
        }
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
