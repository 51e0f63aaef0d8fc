/* run/live-limits.c - a live sandbox's limits for the sandbox as a whole
 * (see run/live-limits.h for what holds each one and what a hit does).
 *
 * One periodic tick in the live supervisor's poll(): the watchdog's
 * tree walk (resumed from tick to tick, a slice at a time, as in
 * supervise.c, so that a tree the sandbox made slow to walk delays no
 * exec and no deadline), the run cgroup's event counters, and the
 * scratch's free space. What the tick finds is either a stop (memory,
 * cpu time: the sandbox ends, like a run that hits them) or a note
 * (pids, disk: the kernel refuses the fork or the write, the sandbox
 * goes on) that each exec running then carries into its record.
 *
 * The scratch is looked at through the fds init handed over before any
 * job ran (SYNC_WORKSPACE: the workspace dir, and with a lower dir the
 * overlay's upper dir, both on the scratch tmpfs): fstatfs() on an fd we
 * hold resolves no path the sandbox controls.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "config/run-config.h"
#include "lib/exit-codes.h"
#include "lib/util.h"
#include "limits/cgroup.h"
#include "limits/watchdog.h"
#include "run/live-internal.h"
#include "run/live-limits.h"
#include "sandbox/sandbox.h"
#include "supervise/supervise.h"

/* As supervise.c: often enough that a hog cannot outrun the watchdog by
 * much, a slice of the tick at most for the walk. */
#define TICK_MS 50
#define SLICE_MS 10

struct live_limits {
        const struct run_config *cfg;
        struct sandbox *sb;
        int tick_fd;                    /* periodic timerfd, or -1 */
        struct watchdog *wd;            /* the tree walk, resumed tick to tick */
        bool cg_memory, cg_pids;        /* memory.max / pids.max hold those */
        unsigned reached;               /* LIVE_LIMIT_* reached in the sandbox's life */
        unsigned stop;                  /* LIVE_LIMIT_MEMORY or _CPU_TIME: it must stop */
        uint64_t peak_memory;           /* largest sum the watchdog saw */
        uint64_t oom_kills, pids_refused; /* the cgroup's counters, last read */
        uint64_t oom_group_kills;
        char stop_msg[300];             /* "memory limit 64M exceeded: ..." */
        char why[340];                  /* "stopped: " + stop_msg, for live.c */
        char pids_msg[200], disk_msg[200], oom_msg[200];
};

static int tick_timer(void)
{
        struct itimerspec its = { .it_value = { 0, TICK_MS * 1000000L }, .it_interval = { 0, TICK_MS * 1000000L } };
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL) < 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

struct live_limits *live_limits_new(const struct run_config *cfg, struct sandbox *sb)
{
        struct live_limits *ll = xcalloc(1, sizeof(*ll));
        unsigned held = sb->cgroup ? cgroup_run_enforced(sb->cgroup) : 0;

        ll->cfg = cfg;
        ll->sb = sb;
        ll->cg_memory = held & CGROUP_LIMIT_MEMORY;
        ll->cg_pids = held & CGROUP_LIMIT_PIDS;
        ll->tick_fd = cfg->memory_bytes || cfg->cpu_time_ms || cfg->pids || cfg->disk_bytes ? tick_timer() : -1;
        return ll;
}

struct live_limits *live_limits_free(struct live_limits *ll)
{
        if (!ll)
                return NULL;
        if (ll->tick_fd >= 0)
                close(ll->tick_fd);
        watchdog_free(ll->wd);
        free(ll);
        return NULL;
}

void live_limits_poll(const struct live_limits *ll, struct pollfd *p)
{
        p[0] = (struct pollfd) { .fd = ll && !ll->stop ? ll->tick_fd : -1, .events = POLLIN };
}

const char *live_limits_stopped(const struct live_limits *ll)
{
        return ll && ll->stop ? ll->why : NULL;
}

static void stop_for(struct live_limits *ll, unsigned limit)
{
        ll->stop = limit;
        ll->reached |= limit;
        snprintf(ll->why, sizeof(ll->why), "stopped: %s", ll->stop_msg);
}

/* A small counter file of the run cgroup, into text. */
static int cgroup_text(const struct live_limits *ll, const char *name, char *buf, size_t len)
{
        _cleanup_close_ int fd = openat(cgroup_run_fd(ll->sb->cgroup), name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read_full(fd, buf, len - 1);
        if (n < 0)
                return (int)n;
        buf[n] = '\0';
        return 0;
}

/* The cgroup's OOM kills and refused forks since the last look: the
 * LIVE_LIMIT_* bits they add. */
static unsigned cgroup_events(struct live_limits *ll)
{
        struct cgroup_memory_events me;
        uint64_t refused;
        unsigned hit = 0;
        char text[512], size[32];

        if (!ll->sb->cgroup)
                return 0;
        if (ll->cfg->memory_bytes && cgroup_text(ll, "memory.events", text, sizeof(text)) == 0 &&
            cgroup_parse_memory_events(text, &me) == 0 && me.oom_kill + me.oom_group_kill > ll->oom_kills) {
                ll->oom_kills = me.oom_kill + me.oom_group_kill;
                ll->oom_group_kills = me.oom_group_kill;
                snprintf(ll->oom_msg, sizeof(ll->oom_msg),
                         "memory limit %s exceeded: the kernel's OOM killer killed in the sandbox's cgroup "
                         "(memory.max; %llu process%s killed so far)",
                         format_size(ll->cfg->memory_bytes, size, sizeof(size)), (unsigned long long)me.oom_kill,
                         me.oom_kill == 1 ? "" : "es");
                hit |= LIVE_LIMIT_MEMORY;
        }
        if (ll->cfg->pids && ll->cg_pids && cgroup_text(ll, "pids.events", text, sizeof(text)) == 0 &&
            cgroup_parse_pids_events(text, &refused) == 0 && refused > ll->pids_refused) {
                ll->pids_refused = refused;
                snprintf(ll->pids_msg, sizeof(ll->pids_msg), "pids limit %llu reached: pids.max refused %llu fork%s",
                         (unsigned long long)ll->cfg->pids, (unsigned long long)refused, refused == 1 ? "" : "s");
                hit |= LIVE_LIMIT_PIDS;
        }
        ll->reached |= hit;
        return hit;
}

/* Whether the scratch is full now (bytes or inodes): LIVE_LIMIT_DISK. */
static unsigned scratch_full(struct live_limits *ll)
{
        int fd = ll->sb->upper_fd >= 0 ? ll->sb->upper_fd : ll->sb->workspace_fd;
        struct statfs st;
        char size[32];

        if (fd < 0 || fstatfs(fd, &st) < 0 || st.f_type != TMPFS_MAGIC)
                return 0;
        if (st.f_bavail == 0 && st.f_blocks)
                snprintf(ll->disk_msg, sizeof(ll->disk_msg),
                         "disk limit %s reached: the sandbox's scratch was full (writes failed with ENOSPC)",
                         format_size(ll->cfg->disk_bytes, size, sizeof(size)));
        else if (st.f_ffree == 0 && st.f_files)
                snprintf(ll->disk_msg, sizeof(ll->disk_msg),
                         "limits.inodes %llu reached: the sandbox's scratch had no inode left (ENOSPC)",
                         (unsigned long long)ll->cfg->inodes);
        else
                return 0;
        ll->reached |= LIVE_LIMIT_DISK;
        return LIVE_LIMIT_DISK;
}

/* Whether the sandbox has cfg->pids processes now: a walk of init's
 * tree that stops there, so it costs at most that many small reads
 * (RLIMIT_NPROC holds the tree to about that size). */
static bool at_pids_limit(const struct live_limits *ll)
{
        size_t n = 0, cap = 64, pos = 0;
        _cleanup_free_ pid_t *queue = xmalloc(cap * sizeof(pid_t));
        char path[96], buf[4096];

        queue[n++] = ll->sb->pid;
        while (pos < n && n < ll->cfg->pids) {
                pid_t pid = queue[pos++];
                snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
                DIR *d = opendir(path);
                struct dirent *de;
                while (d && (de = readdir(d)) && n < ll->cfg->pids) {
                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, de->d_name);
                        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                        ssize_t len = fd >= 0 ? read_full(fd, buf, sizeof(buf) - 1) : -1;
                        if (len <= 0)
                                continue;
                        buf[len] = '\0';
                        char *save = NULL;
                        for (char *t = strtok_r(buf, " \n", &save); t && n < ll->cfg->pids; t = strtok_r(NULL, " \n", &save)) {
                                if (n == cap)
                                        queue = xrealloc(queue, (cap *= 2) * sizeof(pid_t));
                                queue[n++] = (pid_t)atoi(t);
                        }
                }
                if (d)
                        closedir(d);
        }
        return n >= ll->cfg->pids;
}

/* The watchdog's slice of this tick, for what no cgroup holds: memory
 * and cpu time may stop the sandbox; the processes counted tell whether
 * RLIMIT_NPROC is reached. A part of a round is a lower bound of it, so
 * it may stop the sandbox, never clear it. */
static unsigned tree_walk(struct live_limits *ll)
{
        const struct run_config *cfg = ll->cfg;
        struct tree_sample s;
        uint64_t usec;
        char a[32], b[32];

        bool cg_cpu = ll->sb->cgroup && cgroup_run_sample(ll->sb->cgroup, &usec) == 0;
        if (cg_cpu && cfg->cpu_time_ms && usec / 1000 >= cfg->cpu_time_ms) {
                snprintf(ll->stop_msg, sizeof(ll->stop_msg), "cpu time limit %s exceeded (cgroup cpu.stat: %s)",
                         format_duration_ms(cfg->cpu_time_ms, a, sizeof(a)),
                         format_duration_ms(usec / 1000, b, sizeof(b)));
                stop_for(ll, LIVE_LIMIT_CPU_TIME);
                return LIVE_LIMIT_CPU_TIME;
        }
        bool tree_memory = cfg->memory_bytes && !ll->cg_memory, tree_cpu = cfg->cpu_time_ms && !cg_cpu,
             tree_pids = cfg->pids && !ll->cg_pids;
        if (!tree_memory && !tree_cpu && !tree_pids)
                return 0;
        if (!ll->wd && watchdog_new(ll->sb->pid, &ll->wd) < 0)
                return 0;
        if (watchdog_step(ll->wd, SLICE_MS * 1000000ULL, &s) < 0)
                return 0;
        ll->peak_memory = MAX(ll->peak_memory, s.memory_bytes);
        if (tree_memory && s.memory_bytes > cfg->memory_bytes) {
                snprintf(ll->stop_msg, sizeof(ll->stop_msg),
                         "memory limit %s exceeded: the watchdog measured %s in use in the sandbox",
                         format_size(cfg->memory_bytes, a, sizeof(a)),
                         format_size((s.memory_bytes >> 20) << 20, b, sizeof(b)));
                stop_for(ll, LIVE_LIMIT_MEMORY);
                return LIVE_LIMIT_MEMORY;
        }
        if (tree_cpu && s.cpu_ms >= cfg->cpu_time_ms) {
                snprintf(ll->stop_msg, sizeof(ll->stop_msg),
                         "cpu time limit %s exceeded: the watchdog counted %s over every process of the sandbox",
                         format_duration_ms(cfg->cpu_time_ms, a, sizeof(a)),
                         format_duration_ms(s.cpu_ms, b, sizeof(b)));
                stop_for(ll, LIVE_LIMIT_CPU_TIME);
                return LIVE_LIMIT_CPU_TIME;
        }
        if (tree_pids && s.processes >= cfg->pids) {
                snprintf(ll->pids_msg, sizeof(ll->pids_msg),
                         "pids limit %llu reached: the watchdog counted %u processes in the sandbox; "
                         "RLIMIT_NPROC fails the forks past it with EAGAIN", (unsigned long long)cfg->pids, s.processes);
                ll->reached |= LIVE_LIMIT_PIDS;
                return LIVE_LIMIT_PIDS;
        }
        return 0;
}

unsigned live_limits_run(struct live_limits *ll, const struct pollfd *p)
{
        uint64_t ticks;

        if (!ll || ll->stop || !(p[0].revents & POLLIN))
                return 0;
        (void)!read(ll->tick_fd, &ticks, sizeof(ticks));
        unsigned hit = cgroup_events(ll) | scratch_full(ll);
        /* with memory.oom.group the OOM killer ended the sandbox: its
         * init's exit tells live.c, live_limits_reaped() says why */
        return hit | tree_walk(ll);
}

/* "A; B; C" for the bits of hit. */
static void words_for(const struct live_limits *ll, unsigned hit, bool xcpu, char *buf, size_t len)
{
        char a[32];
        size_t at = 0;

        buf[0] = '\0';
#define ADD(...) do { \
                int n_ = snprintf(buf + at, len - at, "%s", at ? "; " : ""); \
                if (n_ > 0 && (size_t)n_ < len - at) at += (size_t)n_; \
                n_ = snprintf(buf + at, len - at, __VA_ARGS__); \
                if (n_ > 0) at = MIN(len - 1, at + (size_t)n_); \
        } while (0)
        if (hit & LIVE_LIMIT_MEMORY)
                ADD("%s", ll->stop == LIVE_LIMIT_MEMORY ? ll->stop_msg : ll->oom_msg);
        if ((hit & LIVE_LIMIT_CPU_TIME) && (ll->stop == LIVE_LIMIT_CPU_TIME || !xcpu))
                ADD("%s", ll->stop_msg);
        else if (hit & LIVE_LIMIT_CPU_TIME)
                ADD("cpu time limit %s exceeded by one process (RLIMIT_CPU: SIGXCPU)",
                    format_duration_ms(ll->cfg->cpu_time_ms, a, sizeof(a)));
        if (hit & LIVE_LIMIT_PIDS)
                ADD("%s", ll->pids_msg);
        if (hit & LIVE_LIMIT_DISK)
                ADD("%s", ll->disk_msg);
#undef ADD
}

void live_limits_exec_end(struct live_limits *ll, struct live_reply *end)
{
        bool xcpu = false;

        if (!ll)
                return;
        if (!end->error && !end->stopped && !end->timed_out && WIFSIGNALED(end->status) &&
            WTERMSIG(end->status) == SIGXCPU && ll->cfg->cpu_time_ms) {
                end->limits_hit |= LIVE_LIMIT_CPU_TIME;
                xcpu = true;
        }
        /* what happened since the last tick, and the state at its end */
        end->limits_hit |= cgroup_events(ll) | scratch_full(ll);
        if (ll->cfg->pids && !ll->cg_pids && !ll->stop && !(end->limits_hit & LIVE_LIMIT_PIDS) &&
            at_pids_limit(ll)) {
                snprintf(ll->pids_msg, sizeof(ll->pids_msg),
                         "pids limit %llu reached: the sandbox had that many processes when the job ended; "
                         "RLIMIT_NPROC fails the forks past it with EAGAIN", (unsigned long long)ll->cfg->pids);
                ll->reached |= LIVE_LIMIT_PIDS;
                end->limits_hit |= LIVE_LIMIT_PIDS;
        }
        if (end->stopped)
                end->limits_hit |= ll->stop;
        if (end->limits_hit)
                words_for(ll, end->limits_hit, xcpu, end->limit_message, sizeof(end->limit_message));
}

void live_limits_reaped(struct live_limits *ll, bool init_died)
{
        if (!ll || ll->stop || !init_died || !ll->sb->cgroup)
                return;
        /* init ended on its own (nothing in the sandbox can signal it)
         * and the OOM killer was at work in the cgroup: with
         * memory.oom.group it took the whole sandbox */
        if ((cgroup_events(ll) & LIVE_LIMIT_MEMORY) || ll->oom_group_kills || (ll->reached & LIVE_LIMIT_MEMORY)) {
                snprintf(ll->stop_msg, sizeof(ll->stop_msg), "%s, which ended the sandbox", ll->oom_msg);
                stop_for(ll, LIVE_LIMIT_MEMORY);
        }
}

void live_limits_outcome(const struct live_limits *ll, const char *name, struct run_outcome *out)
{
        char notes[420];

        if (!ll || out->status == RUN_SETUP_ERROR)
                return;
        out->peak_tree_memory_bytes = ll->peak_memory;
        if (ll->stop) {
                bool oom = ll->stop == LIVE_LIMIT_MEMORY;
                out->status = oom ? RUN_OOM : RUN_CPU_TIMEOUT;
                out->exit_code = oom ? EXIT_OOM : EXIT_TIMEOUT;
                out->job_exit_code = -1;
                snprintf(out->message, sizeof(out->message), "sandbox %s stopped: %s", name, ll->stop_msg);
        }
        words_for(ll, ll->reached & ~ll->stop, false, notes, sizeof(notes));
        size_t len = strlen(out->message);
        if (notes[0])
                snprintf(out->message + len, sizeof(out->message) - len, "%s%s%s", len ? " (" : "", notes,
                         len ? ")" : "");
}

void live_limits_exec_outcome(const struct live_reply *e, struct run_outcome *o)
{
        if (!e->limits_hit || !e->limit_message[0])
                return;
        /* a limit ended the job when the job did not end by itself:
         * killed (by the OOM killer, SIGXCPU) or stopped with the sandbox */
        bool killed = o->status == RUN_SIGNALED || (o->status == RUN_CANCELLED && e->stopped);
        if (killed && (e->limits_hit & (LIVE_LIMIT_MEMORY | LIVE_LIMIT_CPU_TIME))) {
                bool oom = e->limits_hit & LIVE_LIMIT_MEMORY;
                o->status = oom ? RUN_OOM : RUN_CPU_TIMEOUT;
                o->exit_code = oom ? EXIT_OOM : EXIT_TIMEOUT;
                snprintf(o->message, sizeof(o->message), "%s%s", e->stopped ? "the sandbox stopped: " : "",
                         e->limit_message);
                return;
        }
        size_t len = strlen(o->message);
        snprintf(o->message + len, sizeof(o->message) - len, "%sthe sandbox: %s%s", len ? " (" : "",
                 e->limit_message, len ? ")" : "");
}

static const char *mechanism(const struct live_limits *ll, unsigned limit)
{
        switch (limit) {
        case LIVE_LIMIT_MEMORY:
                return !ll->cfg->memory_bytes ? "none" : ll->cg_memory ? "cgroup" : "watchdog";
        case LIVE_LIMIT_CPU_TIME:
                return !ll->cfg->cpu_time_ms ? "none" : ll->sb->cgroup ? "cgroup" : "watchdog";
        case LIVE_LIMIT_PIDS:
                return !ll->cfg->pids ? "none" : ll->cg_pids ? "cgroup" : "rlimit";
        default:
                return "tmpfs size";
        }
}

char *live_limits_state_json(const struct live_limits *ll)
{
        static const struct { unsigned bit; const char *name; } names[] = {
                { LIVE_LIMIT_MEMORY, "memory" }, { LIVE_LIMIT_CPU_TIME, "cpu_time" },
                { LIVE_LIMIT_PIDS, "pids" }, { LIVE_LIMIT_DISK, "disk" },
        };
        json_t *o = json_object(), *limits = json_object(), *hit = json_array();

        for (size_t i = 0; ll && i < ELEMENTSOF(names); i++) {
                json_object_set_new(limits, names[i].name, json_string(mechanism(ll, names[i].bit)));
                if (ll->reached & names[i].bit)
                        json_array_append_new(hit, json_string(names[i].name));
        }
        json_object_set_new(o, "limits", limits);
        json_object_set_new(o, "limits_hit", hit);
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        /* "{...}" -> ",..." to go inside the state's object */
        size_t n = text ? strlen(text) : 0;
        if (n < 2)
                return xstrdup("");
        text[n - 1] = '\0';
        return xasprintf(",%s", text + 1);
}

void live_limits_enforcement(json_t *enforcement)
{
        json_t *limits = json_object_get(enforcement, "limits"), *v;
        const char *key;

        json_object_foreach(limits, key, v) {
                const char *scope = streq(key, "timeout") ? "exec"
                                  : streq(key, "nofile") || streq(key, "max_file_size") ? "process"
                                                                                         : "sandbox";
                if (json_is_object(v))
                        json_object_set_new(v, "scope", json_string(scope));
        }
}
