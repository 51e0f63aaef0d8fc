/* run-config.h - the resolved settings of one run.
 *
 * Built once, in order: built-in defaults, then the profile (and the
 * profiles it extends), then the command line; after that it is passed
 * around as `const struct run_config *` and never changed. It is the only
 * global state hutch has besides the log level.
 *
 * Every field a profile can set is named after its key (profile-keys.c holds
 * the one table of keys, their types, defaults and docs; hutch-profile(5)
 * describes them). The comment on each field gives "[section] key".
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/strindex.h"

enum net_mode {
        NET_NONE,       /* private namespace with only lo (default) */
        NET_HOST,       /* share the host's network namespace */
        NET_ALLOW,      /* private namespace; TCP out only through hutch's egress rules */
        _NET_MODE_MAX,
        _NET_MODE_INVALID = -EINVAL,
};

/* When a session run's change set is committed to the session's tree
 * (profile key [sandbox] commit, `hutch run --commit`, a request's
 * "commit", the MCP tools' argument). */
enum session_commit {
        SESSION_COMMIT_SUCCESS, /* only when the job succeeded (exit 0): the default */
        SESSION_COMMIT_ALWAYS,  /* whatever the job's outcome (a REPL keeps what it did) */
        SESSION_COMMIT_NEVER,   /* never: try something, keep nothing */
};

/* What runs the job (DESIGN §8). */
enum runtime {
        RUNTIME_NATIVE,         /* hutch's own namespaces and seccomp (default) */
        RUNTIME_GVISOR,         /* the job under gVisor's runsc, rootless (gvisor.h) */
        _RUNTIME_MAX,
        _RUNTIME_INVALID = -EINVAL,
};

/* What isolates the job (DESIGN §10). Never weaker than asked, never
 * silently: auto picks landlock only when the host refuses user
 * namespaces, and says so. */
enum isolation {
        ISOLATION_NAMESPACES,   /* user, mount, pid, ipc, uts, net namespaces (default) */
        ISOLATION_LANDLOCK,     /* no namespace: Landlock, seccomp, an unprivileged uid */
        ISOLATION_AUTO,         /* namespaces where the host allows them, else landlock */
        _ISOLATION_MAX,
        _ISOLATION_INVALID = -EINVAL,
};

enum seccomp_mode {
        SECCOMP_MODE_DENY,      /* deny the listed syscalls, allow the rest */
        SECCOMP_MODE_ALLOW,     /* allow the listed syscalls, deny the rest */
        _SECCOMP_MODE_MAX,
        _SECCOMP_MODE_INVALID = -EINVAL,
};

/* Where a setting came from, for `hutch profile show` and for trust. */
enum origin {
        ORIGIN_DEFAULT,         /* built-in default from the key table */
        ORIGIN_FILE,            /* a profile in a trusted directory */
        ORIGIN_FILE_UNTRUSTED,  /* a profile named by a path outside them */
        ORIGIN_CLI,             /* the command line (or an API caller) */
        _ORIGIN_MAX,
        _ORIGIN_INVALID = -EINVAL,
};

struct key_origin {
        char *key;              /* "limits.memory", "env.PATH", "description" */
        enum origin origin;
        char *file;             /* profile file as shown to users; NULL unless from a file */
        unsigned line;          /* 0 unless from a file */
};

struct run_config {
        char *profile_name;     /* "default" unless -p */
        char *profile_path;     /* file the profile was read from; NULL = built-in defaults only */
        char **profile_files;   /* every file read: the profile, then what it extends, in order */
        char *description;      /* description (top level) */
        char **argv;            /* the job's command line (NULL-terminated) */
        char **env;             /* [env] KEY = VALUE and -e, as "KEY=VALUE", one per KEY */
        char **secret_env;      /* --secret: "NAME=VALUE" for the job's environment only;
                                 * not a profile key, so never in the canonical
                                 * text, the record or `profile show` */
        char **private_env;     /* a request's private_env: "NAME=VALUE" for the job's
                                 * environment only, like secret_env, but not
                                 * redacted (hutch mcp's fresh calls' env) */
        char **redact_env;      /* what is redacted from the run's output and
                                 * record: secret_env, and with a tty each
                                 * multi-line value as the pty renders it
                                 * (redact_forms()); NULL: no secrets */

        /* [sandbox] */
        uid_t uid;              /* uid: job's uid inside (default 1000) */
        gid_t gid;              /* gid */
        char *hostname;         /* hostname: default "sandbox" */
        char *home;             /* $HOME inside: /home/sandbox (not a profile key) */
        char *workdir_inside;   /* workdir: working directory inside, default /workspace */
        bool tty;               /* -t: job gets a pty (not a profile key) */
        enum runtime runtime;   /* runtime: native | gvisor */
        enum session_commit commit; /* commit: when a session run's changes are kept */
        enum isolation isolation; /* isolation: namespaces | landlock | auto */
        uint64_t session_ttl_ms;/* session_ttl: idle sessions removed by gc (0 = never) */

        /* [admission]: this user's runs on the node (run/admission.c) */
        char *admission_max_running; /* max_running: "N", "auto" or "none" */
        char *admission_max_memory;  /* max_memory: a size, "auto" or "none" */
        double admission_redundancy; /* redundancy: share of the node auto fills */
        bool snapshot;          /* snapshot: --workdir's lower is a copy taken at the start */

        /* [network] */
        enum net_mode net;      /* mode = none | host | allow */
        char **net_allow;       /* allow: HOST[:PORT] rules (network = allow) */
        char **net_deny;        /* deny: HOST[:PORT] rules, checked before allow */
        char **net_hosts;       /* add_host: NAME=IP for this run */
        uint64_t net_max_connections; /* max_connections: open at once (0 = no limit) */
        uint64_t net_max_bytes; /* max_bytes: relayed both ways over the run (0 = no limit) */

        /* [limits]; 0 means "none" except where noted */
        uint64_t timeout_ms;    /* timeout: wall clock */
        uint64_t grace_ms;      /* grace: SIGTERM -> SIGKILL delay (0 = kill at once) */
        uint64_t disk_bytes;    /* disk: size of the scratch tmpfs (never 0) */
        uint64_t inodes;        /* inodes: nr_inodes of the scratch tmpfs (never 0) */
        uint64_t max_changes;   /* max_changes: workspace changes recorded per run (never 0) */
        uint64_t max_path;      /* max_path: longest recorded path, in bytes (never 0) */
        uint64_t capture_bytes; /* capture: head and tail kept per stream (0 = keep none) */
        uint64_t nofile;        /* nofile: RLIMIT_NOFILE (never 0) */
        uint64_t cpu_time_ms;   /* cpu_time */
        uint64_t memory_bytes;  /* memory: memory.max */
        uint64_t memory_high_bytes; /* memory_high: memory.high; 0 = auto: not set */
        uint64_t pids;          /* pids */
        uint64_t max_file_size; /* max_file_size: RLIMIT_FSIZE */
        double cpus;            /* cpus: cpu.max in cpus, 3 decimals at most */
        char **io_max;          /* io_max: "DEVICE KEY=VALUE..." items for io.max */
        char **require;         /* require: limit names that must be enforced, else setup error */

        /* [apply] */
        char **apply_protect;   /* protect: globs apply refuses on top of the built-in
                                 * protected paths (workspace/protected.h) */

        /* [filesystem] */
        char **ro_binds;        /* system_dirs: host dirs bound read-only at the same
                                 * place when they exist (missing ones are skipped) */
        char **ro_paths;        /* ro: more host paths bound read-only; must exist */
        char **rw_paths;        /* rw: host paths bound read-write; must exist; only
                                 * from trusted profile dirs or the command line */
        char **tmpfs_paths;     /* tmpfs: extra tmpfs mount points (on the scratch limit) */
        char **masks;           /* mask: paths hidden behind an empty file or dir (globs) */
        char *root;             /* root: "host" or "DIR[:DIR...]" as written */
        char **root_layers;     /* root split into layers, top first; NULL for "host";
                                 * for image:REF the store's, by profile_resolve_image() */
        char *image_workdir;    /* root = image:REF: the image's WorkingDir (the job's cwd), or NULL */

        /* [seccomp]: stored for the seccomp module, checked only for shape */
        char *seccomp_default_action; /* default_action: "eperm" or "kill" */
        char **seccomp_deny;    /* deny: names and @groups denied on top of the baseline */
        char **seccomp_allow;   /* allow: names and @groups let through */
        int seccomp_mode;       /* mode: SECCOMP_MODE_DENY (deny list) or _ALLOW (allow list) */
        bool seccomp_allow_ptrace;    /* allow_ptrace */
        bool seccomp_allow_io_uring;  /* allow_io_uring */

        /* [artifacts] */
        char *artifacts_dir;    /* dir: inside path collected after the run */
        uint64_t artifacts_max_files; /* max_files */
        uint64_t artifacts_max_bytes; /* max_bytes */

        /* [image] (hutch image import) */
        uint64_t image_max_layer_bytes; /* max_layer_size (0 = no limit) */
        uint64_t image_max_image_bytes; /* max_image_size (0 = no limit) */

        /* provenance of every key set so far; see run_config_origin() */
        struct key_origin *origins;
        size_t n_origins;

        /* indexes that keep setting a key O(1) however many there are
         * (thousands of -e options): origins by key, env by name, and
         * env's length (env is written only by profile_set_env()) */
        struct strindex origin_index;
        struct strindex env_index;
        size_t n_env;
};

/* Fill cfg with the built-in defaults (DESIGN §3): every key of the
 * profile table at its default, with origin ORIGIN_DEFAULT. */
void run_config_init(struct run_config *cfg);
/* Free everything cfg owns and zero it. NULL-safe on fields. */
void run_config_done(struct run_config *cfg);

/* Record where key ("section.name", "env.NAME" or "description") got its
 * value; replaces an earlier record. file is copied. */
void run_config_set_origin(struct run_config *cfg, const char *key, enum origin origin,
                           const char *file, unsigned line);
/* Where key got its value, or NULL if it was never set. */
const struct key_origin *run_config_origin(const struct run_config *cfg, const char *key);

/* "default", "file", "untrusted file", "cli". */
const char *origin_to_string(enum origin o);
