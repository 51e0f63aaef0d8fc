/* cgroup-stats.c - metering a run's cgroup v2: the counters read on
 * each supervisor heartbeat (memory.current, pids.current, cpu.stat)
 * and once at the end (peaks, events, io.stat), and the parsers of
 * those files.
 *
 * Nothing here is hot, so clarity beats cleverness: every file is read
 * whole and parsed from text.
 */
#include "config.h"

#include <string.h>

#include "limits/cgroup.h"
#include "limits/cgroup-internal.h"
#include "lib/util.h"

/* ---- parsers ------------------------------------------------------------ */

static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
        uint64_t v = 0;

        if (len == 3 && strncmp(s, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (len == 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return 0;
}

int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret)
{
        size_t klen = strlen(key);

        if (!text)
                return -ENOENT;
        for (const char *line = text; *line; ) {
                const char *end = strchrnul(line, '\n');
                if ((size_t)(end - line) > klen && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        const char *v = line + klen + 1;
                        size_t vlen = (size_t)(end - v);
                        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\r'))
                                vlen--;
                        return parse_u64(v, vlen, ret);
                }
                line = *end ? end + 1 : end;
        }
        return -ENOENT;
}

int cgroup_parse_cpu_stat(const char *text, struct cgroup_cpu_stat *ret)
{
        struct cgroup_cpu_stat s = { 0 };
        int r;

        r = cgroup_parse_keyed(text, "usage_usec", &s.usage_usec);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        (void)cgroup_parse_keyed(text, "user_usec", &s.user_usec);
        (void)cgroup_parse_keyed(text, "system_usec", &s.system_usec);
        if (cgroup_parse_keyed(text, "nr_throttled", &s.nr_throttled) == 0) {
                s.has_throttle = true;
                (void)cgroup_parse_keyed(text, "nr_periods", &s.nr_periods);
                (void)cgroup_parse_keyed(text, "throttled_usec", &s.throttled_usec);
        }
        *ret = s;
        return 0;
}

int cgroup_parse_memory_events(const char *text, struct cgroup_memory_events *ret)
{
        struct cgroup_memory_events e = { 0 };
        int found = 0;

        found += cgroup_parse_keyed(text, "low", &e.low) == 0;
        found += cgroup_parse_keyed(text, "high", &e.high) == 0;
        found += cgroup_parse_keyed(text, "max", &e.max) == 0;
        found += cgroup_parse_keyed(text, "oom", &e.oom) == 0;
        found += cgroup_parse_keyed(text, "oom_kill", &e.oom_kill) == 0;
        found += cgroup_parse_keyed(text, "oom_group_kill", &e.oom_group_kill) == 0;
        if (found == 0)
                return -EINVAL;
        *ret = e;
        return 0;
}

int cgroup_parse_pids_events(const char *text, uint64_t *ret_max)
{
        uint64_t v;
        int r = cgroup_parse_keyed(text, "max", &v);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        *ret_max = v;
        return 0;
}

int cgroup_parse_io_stat(const char *text, struct cgroup_io_stat *ret)
{
        static const struct { const char *key; size_t off; } keys[] = {
                { "rbytes", offsetof(struct cgroup_io_stat, rbytes) },
                { "wbytes", offsetof(struct cgroup_io_stat, wbytes) },
                { "rios", offsetof(struct cgroup_io_stat, rios) },
                { "wios", offsetof(struct cgroup_io_stat, wios) },
                { "dbytes", offsetof(struct cgroup_io_stat, dbytes) },
                { "dios", offsetof(struct cgroup_io_stat, dios) },
        };
        struct cgroup_io_stat s = { 0 };

        /* "MAJ:MIN rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n" per device */
        for (const char *p = text ? text : ""; *p; ) {
                const char *end = strchrnul(p, '\n');
                const char *tok = memchr(p, ' ', (size_t)(end - p));
                while (tok && tok < end) {
                        const char *t = tok + 1, *eq, *tend;
                        tend = memchr(t, ' ', (size_t)(end - t));
                        if (!tend)
                                tend = end;
                        eq = memchr(t, '=', (size_t)(tend - t));
                        if (eq) {
                                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                                        uint64_t v;
                                        if ((size_t)(eq - t) != strlen(keys[i].key) ||
                                            strncmp(t, keys[i].key, (size_t)(eq - t)) != 0)
                                                continue;
                                        if (parse_u64(eq + 1, (size_t)(tend - eq - 1), &v) < 0)
                                                return -EINVAL;
                                        *(uint64_t *)((char *)&s + keys[i].off) += v;
                                }
                        }
                        tok = tend < end ? tend : NULL;
                }
                p = *end ? end + 1 : end;
        }
        *ret = s;
        return 0;
}

/* ---- small file helpers -------------------------------------------------- */

static int read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        int r = cgroup_read_at(dirfd, name, &text);
        if (r < 0)
                return r;
        size_t len = strcspn(text, "\n");
        return parse_u64(text, len, ret);
}

/* ---- one run ------------------------------------------------------------- */

int cgroup_run_sample(struct cgroup_run *cg, uint64_t *ret_cpu_usec)
{
        _cleanup_free_ char *text = NULL;
        struct cgroup_cpu_stat cpu;
        uint64_t v;
        int r;

        if (read_u64_at(cg->fd, "memory.current", &v) == 0 && v > cg->sampled_memory)
                cg->sampled_memory = v;
        if (read_u64_at(cg->fd, "pids.current", &v) == 0 && v > cg->sampled_pids)
                cg->sampled_pids = v;
        r = cgroup_read_at(cg->fd, "cpu.stat", &text);
        if (r < 0)
                return r;
        r = cgroup_parse_cpu_stat(text, &cpu);
        if (r < 0)
                return r;
        if (ret_cpu_usec)
                *ret_cpu_usec = cpu.usage_usec;
        return 0;
}

int cgroup_run_stats(struct cgroup_run *cg, struct cgroup_stats *ret)
{
        struct cgroup_stats s = { 0 };
        char *text = NULL;
        uint64_t v;
        int r;

        if (cg->fd < 0)
                return -EBADF;
        r = cgroup_read_at(cg->fd, "cpu.stat", &text);
        if (r < 0)
                return r;
        if (cgroup_parse_cpu_stat(text, &s.cpu) == 0) {
                s.have |= CGROUP_HAVE_CPU_STAT;
                if (s.cpu.has_throttle)
                        s.have |= CGROUP_HAVE_CPU_THROTTLE;
        }
        free(text);

        if (read_u64_at(cg->fd, "memory.current", &v) == 0) {
                s.memory_current = v;
                if (v > cg->sampled_memory)
                        cg->sampled_memory = v;
        }
        if (read_u64_at(cg->fd, "memory.peak", &v) == 0) {
                s.memory_peak = v;
                s.have |= CGROUP_HAVE_MEMORY_PEAK;
        } else if (cg->usable & CGROUP_MEMORY) {
                /* before 5.19: the best we have is what we sampled */
                s.memory_peak = cg->sampled_memory;
                s.have |= CGROUP_HAVE_MEMORY_SAMPLED;
        }
        if (cgroup_read_at(cg->fd, "memory.events", &text) == 0) {
                if (cgroup_parse_memory_events(text, &s.memory_events) == 0)
                        s.have |= CGROUP_HAVE_MEMORY_EVENTS;
                free(text);
        }
        if (cgroup_read_at(cg->fd, "pids.events", &text) == 0) {
                if (cgroup_parse_pids_events(text, &s.pids_max_events) == 0)
                        s.have |= CGROUP_HAVE_PIDS_EVENTS;
                free(text);
        }
        if (read_u64_at(cg->fd, "pids.peak", &v) == 0) {
                s.pids_peak = v;
                s.have |= CGROUP_HAVE_PIDS_PEAK;
        } else {
                if (read_u64_at(cg->fd, "pids.current", &v) == 0 && v > cg->sampled_pids)
                        cg->sampled_pids = v;
                s.pids_peak = cg->sampled_pids;
        }
        if (cgroup_read_at(cg->fd, "io.stat", &text) == 0) {
                if (cgroup_parse_io_stat(text, &s.io) == 0)
                        s.have |= CGROUP_HAVE_IO_STAT;
                free(text);
        }
        *ret = s;
        return 0;
}
