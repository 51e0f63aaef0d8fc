/* run-config.h - the resolved settings of one run.
 *
 * Built once, in order: built-in defaults, then the profile, then the
 * command line; after that it is passed around as `const struct
 * run_config *` and never changed. It is the only global state sbx has
 * besides the log level.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum net_mode {
        NET_NONE,       /* private namespace with only lo (default) */
        NET_HOST,       /* share the host's network namespace */
        _NET_MODE_MAX,
        _NET_MODE_INVALID = -22,
};

struct run_config {
        char *profile_name;     /* "default" unless -p */
        char **argv;            /* the job's command line (NULL-terminated) */
        char **env;             /* extra KEY=VALUE from -e and [env] */

        uid_t uid;              /* job's uid inside (default 1000) */
        gid_t gid;
        char *hostname;         /* default "sandbox" */
        char *home;             /* default /home/sandbox */
        char *workdir_inside;   /* default /workspace */
        enum net_mode net;
        bool tty;               /* -t: job gets a pty */

        uint64_t timeout_ms;    /* wall clock; 0 = none */
        uint64_t grace_ms;      /* SIGTERM -> SIGKILL delay */
        uint64_t disk_bytes;    /* size of the scratch tmpfs */
        uint64_t capture_bytes; /* head and tail kept per stream */
        uint64_t nofile;        /* RLIMIT_NOFILE */
        uint64_t cpu_time_ms;   /* 0 = none */
        uint64_t memory_bytes;  /* 0 = none */
        uint64_t memory_high_bytes;
        uint64_t pids;          /* 0 = none */
        uint64_t max_file_size; /* RLIMIT_FSIZE; 0 = none */
        double cpus;            /* 0 = none */

        char **ro_binds;        /* host paths bound read-only at the same place */
        char **ro_extra;        /* user's read-only binds, "SRC" or "SRC:DEST"; must exist */
        char **masks;           /* paths hidden behind an empty file or dir */
};

/* Fill cfg with the built-in defaults (DESIGN §3). */
void run_config_init(struct run_config *cfg);
void run_config_done(struct run_config *cfg);
