/* workspace/apply-internal.h - what apply.c (stage, commit, finish) and
 * apply-check.c (the check phase) share: one step per change set entry
 * and the context of one apply. Not an API: only workspace/apply*.c
 * include it. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "workspace/apply.h"
#include "workspace/changeset.h"
#include "lib/util.h"

enum install {
        INST_NONE,
        INST_MKDIR,     /* new directory, built under tmp_name in its parent */
        INST_INSIDE,    /* below a new directory: created at its final name there */
        INST_CREATE,    /* new file or symlink: tmp_name renamed onto a free path */
        INST_REPLACE,   /* file or symlink over a non-directory: exchanged */
        INST_CHMOD,     /* same content, new permission bits */
};

struct step {
        enum install install;
        bool trash;             /* rename the target's entry aside first */
        bool under_trash;       /* an ancestor is renamed aside: nothing to do */
        bool already;           /* target already matches: nothing to do */
        mode_t cur_mode;        /* target's mode when checked (undo of CHMOD) */
        char *stage_path;       /* staged location relative to the target */
        char tmp_name[64];
        char trash_name[64];
        char backup_name[64];   /* REPLACE where RENAME_EXCHANGE is unsupported */
        bool staged, trashed, installed, exchanged, backed_up;
};

/* What commit did, in order: rollback walks it backwards. */
struct done_op {
        size_t step;
        bool install;           /* else: renamed aside */
};

struct ctx {
        const struct changeset *cs;
        int root;
        const struct apply_source *src;
        struct step *steps;
        struct apply_result *res;
        size_t conflicts_cap;
        struct done_op *journal;        /* cs->n * 2 slots: each step trashes and installs at most once */
        size_t n_journal;
        mode_t perm_mask;               /* permission bits apply may install */
        bool overwrite;                 /* lower_changed entries are not conflicts */
        const struct apply_options *opts; /* may be NULL */
};
static inline char *parent_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? xasprintf("%.*s", (int)(slash - path), path) : xstrdup("");
}

static inline const char *base_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

static inline char *join(const char *prefix, const char *name)
{
        return *prefix ? xasprintf("%s/%s", prefix, name) : xstrdup(name);
}

/* The permission bits apply writes. The job chose them, and the
 * target is the caller's: as root, a job's `chmod 0777 tool.sh` would
 * become a root-owned file any local user can rewrite. So set-uid and
 * set-gid are never installed, and by default neither are the sticky
 * bit and what the caller's umask takes away (group and world write,
 * usually): the job's bits filtered like any new file the caller makes. */
static inline mode_t perms_of(const struct ctx *x, mode_t mode)
{
        return mode & x->perm_mask;
}

static inline struct step *parent_step(struct ctx *x, const char *path)
{
        _cleanup_free_ char *pp = parent_of(path);
        const struct change *pc;

        if (!*pp)
                return NULL;
        pc = changeset_find(x->cs, pp);
        return pc ? &x->steps[pc - x->cs->entries] : NULL;
}

/* Check entry i against the target (phase 1): decide its step, or add
 * its conflicts to x->res. Changes nothing. */
void apply_check_entry(struct ctx *x, size_t i);
