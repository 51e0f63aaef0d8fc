/* run/live-conns.h - a live sandbox's connections recorded while it
 * runs: those of its published ports (live-publish.h) and of its
 * `network = allow` egress (net/egress.h), each added to the sandbox's
 * run's connections when it ends, in batches, from the supervisor's
 * loop (live.c). The bounds are argued in live-conns.c's header. Every
 * call takes what live_conns_new() returned. */
#pragma once

#include <poll.h>

struct egress;
struct live_publish;
struct store;

/* The pollfd entries live_conns_poll() fills. */
#define LIVE_CONNS_POLL 1

/* egress: the sandbox's egress helper (pid 0: none). */
struct live_conns *live_conns_new(struct egress *egress);

/* Fill pfd[0..LIVE_CONNS_POLL) (unused: fd -1). */
void live_conns_poll(const struct live_conns *c, struct pollfd *pfd);
/* Milliseconds until the waiting rows are due, or -1 for none. */
int live_conns_timeout(const struct live_conns *c);
/* Take what ended (pub's, and what the egress helper reported, pfd
 * saying so) and commit it with run run_id when it is due. */
void live_conns_run(struct live_conns *c, const struct pollfd *pfd, struct live_publish *pub, struct store *s,
                    const char *run_id);
/* The sandbox is gone: commit whatever waits, free c. Before
 * live_publish_finish() and the egress helper's end (run_egress_record()),
 * which add the rest. Returns NULL. */
struct live_conns *live_conns_free(struct live_conns *c, struct live_publish *pub, struct store *s,
                                   const char *run_id);
