/* run/live.h - live sandboxes: a sandbox that stays up between calls
 * (`hutch sandbox start|ls|stop`), and jobs run into it (`hutch exec`).
 *
 * A live sandbox is a run (run_execute() with run_args.live) whose
 * supervisor is detached (as --detach) and, instead of supervising one
 * job, serves a private control socket: <state dir>/sandboxes/NAME.sock,
 * the dir 0700, the socket 0600, every peer checked (same uid, same user
 * namespace as the supervisor). Beside it NAME.json says what
 * `hutch sandbox ls` lists. The wire and the security argument are in
 * run/live.c's header. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct live_port;
struct run_ui;

/* What `hutch sandbox start` adds to a run (run_args.live). */
struct run_live {
        const char *name;       /* live_name_valid() */
        uint64_t idle_ms;       /* stop after this long with no exec; 0 = never */
        int listen_fd;          /* live_listen()'s socket */
        ino_t listen_ino;       /* its path's inode, for live_unlisten() */
        struct live_port *ports; /* --publish, bound (run/live-publish.h); the
                                  * supervisor closes their fds at the end */
        size_t n_ports;
        bool workdir;           /* the workspace is a host --workdir (no fork) */
        char **args;            /* the run options start was given, for a fork
                                 * (NULL-terminated; NAME.json "args") */
};

/* A sandbox's name: 1-64 of [A-Za-z0-9._-], not starting with . or -. */
bool live_name_valid(const char *name);

/* Bind and listen on name's control socket (made 0600 in the 0700
 * sandboxes dir). A live sandbox of that name refuses (-EEXIST); a stale
 * socket (its supervisor gone) is replaced. 0 or -errno, logged. */
int live_listen(const char *name, int *ret_fd, ino_t *ret_ino);

/* The open files a live sandbox's supervisor may need at once: its poll
 * set (some 190) and what it holds beside (the store, exec clients'
 * pipes, published connections). */
#define LIVE_NOFILE_MIN 512

/* Raise the soft RLIMIT_NOFILE to the hard one, for the supervisor this
 * process is about to become: a soft limit below LIVE_NOFILE_MIN made its
 * poll() fail (EINVAL) and the sandbox stop at once. A hard limit below
 * it is refused here, with a message, rather than failing later. Jobs
 * are unaffected: each starts at min(its cap, 1024) (sandbox/job.c).
 * 0 or -EMFILE/-errno, logged. */
int live_nofile_raise(void);

/* A start that failed, whose supervisor never served or has exited
 * (run_detach() waited for it): remove name's socket, so neither `hutch
 * sandbox ls` nor a later start finds a sandbox that never was. Call it
 * before closing the listening fd: while that is open and listening, a
 * start of the same name is refused as running already, and the bound
 * socket keeps its inode from being reused, so a path of inode ino is
 * ours. */
void live_unlisten(const char *name, ino_t ino);
/* The same in the sandboxes directory dirfd, already open. */
void live_unlisten_at(int dirfd, const char *name, ino_t ino);

/* What `hutch exec` is asked for besides the command. */
struct live_exec_opts {
        uint64_t timeout_ms;    /* 0: the sandbox profile's timeout */
        bool json;              /* print the run as hutch.result/1 at the end */
        bool events;            /* print hutch.event/1 lines as things happen */
        bool stdin_relay;       /* --stdin: our stdin is relayed to the job's */
        const char *stdin_file; /* --stdin-file: this file's bytes are the job's stdin */
};

/* `hutch exec NAME -- argv`: run argv in the live sandbox as a job of
 * its own, recorded as a run labelled sandbox=NAME. Passes the job's
 * output through (or prints the run as JSON, or as events). The job's
 * stdin is empty unless eo says what feeds it; like `hutch run`'s, it
 * is a pipe, and no fd of ours enters the sandbox. Returns hutch's exit
 * code. */
int live_exec(const char *name, char **argv, const struct live_exec_opts *eo, const struct run_ui *ui);

/* `hutch sandbox fork NAME NEW`: copy NAME's workspace (a running
 * sandbox's, or a stopped fork's session) into a new session NEW and
 * record NEW as a stopped sandbox that `hutch sandbox start NEW`
 * resumes (live-fork.c has the consistency argument). Prints NEW.
 * Returns an exit code. */
int live_fork(const char *name, const char *new_name);

/* A stopped fork's state (sandboxes/NAME.fork, written by live_fork()):
 * 0 and *ret_args (the run options to start it with, --session NAME
 * included; a NULL-terminated vector to free) when NAME is one; -ENOENT
 * when it is not (a fork whose session was removed is not one any
 * more: its file goes); other -errno, logged. */
int live_fork_start_args(const char *name, char ***ret_args);

/* `hutch sandbox ls`: the live sandboxes, as a table or JSON lines
 * (json). Removes what stale ones left. Returns an exit code. */
int live_list(bool json);

/* `hutch sandbox stop NAME`: stop it and wait until its supervisor, and
 * with it everything of the sandbox, is gone. Returns an exit code. */
int live_stop(const char *name);
