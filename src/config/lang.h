/* lang.h - languages as data (DESIGN §5): share/languages.ini says, for
 * each language, how to run (and maybe first compile) a source file. This
 * module reads that table, expands a language's {file}/{out} templates
 * into argv vectors, and checks that the interpreter or compiler exists on
 * the host's PATH (the sandbox sees the host's /usr, so the host PATH is
 * what the job gets).
 *
 * Use from `hutch run --lang NAME -c CODE | --file F | -`:
 *
 *     _cleanup_(lang_table_freep) struct lang_table *t = NULL;
 *     _cleanup_(lang_plan_done) struct lang_plan plan = {};
 *     r = lang_table_load(NULL, &t, &err);              share/languages.ini
 *     r = lang_lookup(t, "python", &l, &err);
 *     r = lang_check_host(l, getenv("PATH"), &err);     interpreter on PATH?
 *     r = lang_plan_make(l, &plan, &err);
 *     write CODE to plan.source (as seen inside); profile: l->profile
 *     if plan.compile_argv: run it; non-zero -> status compile_error
 *     run plan.run_argv
 *
 * Errors: negative errno and one line in *ret_error (no "hutch: " prefix).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct lang {
        char *name;             /* section name: "python" */
        char *command;          /* run template: "python3 -I -u {file}" */
        char *compile;          /* compile template, or NULL */
        char *extension;        /* ".py" */
        char *profile;          /* profile to use by default ("default" if unset) */
        unsigned line;          /* line of the [section] in its file */
};

struct lang_table;              /* opaque: the languages of one file */

/* The file read when lang_table_load() gets NULL: $HUTCH_DATADIR/languages.ini
 * if HUTCH_DATADIR is set, else HUTCH_DATADIR "/languages.ini" as installed.
 * Newly allocated. */
char *lang_table_default_path(void);

/* Read a languages file (NULL = lang_table_default_path()). Errors name
 * file:line: unknown keys, duplicates, a language without command or
 * extension, placeholders other than {file} and {out}, {out} without a
 * compile step. Returns 0, -ENOENT/-errno (unreadable) or -EINVAL. */
int lang_table_load(const char *path, struct lang_table **ret, char **ret_error);
/* The same from text; display names the file in messages. */
int lang_table_parse(const char *text, const char *display, struct lang_table **ret,
                     char **ret_error);
/* NULL-safe; returns NULL. */
struct lang_table *lang_table_free(struct lang_table *t);
static inline void lang_table_freep(struct lang_table **t) { lang_table_free(*t); }

/* Number of languages, and the i-th in file order (NULL past the end). */
size_t lang_table_count(const struct lang_table *t);
const struct lang *lang_table_get(const struct lang_table *t, size_t i);

/* Find a language by name. Returns 0 and *ret (owned by the table), or
 * -ENOENT with "unknown language "x" (known: bash, c, ...)". */
int lang_lookup(const struct lang_table *t, const char *name, const struct lang **ret,
                char **ret_error);

/* Expand a template into argv: split at blanks, replace {file} and {out}
 * (out may be NULL if the template has no {out}). Returns 0 and a new
 * NULL-terminated vector, or -EINVAL for an unknown or unusable
 * placeholder or an empty template. */
int lang_expand(const char *template, const char *file, const char *out, char ***ret_argv,
                char **ret_error);

/* Look a program up like execvp() would: a word with '/' is checked as is,
 * otherwise each dir of path_env (NULL or "" = "/usr/local/bin:/usr/bin:/bin").
 * Returns 0 and, if ret_path is not NULL, the full path; or -ENOENT. */
int lang_find_program(const char *program, const char *path_env, char **ret_path);

/* Check that l's compiler (if any) and interpreter exist on path_env.
 * A command whose first word is {out} or {file} is the program itself and
 * is not looked up. Returns 0 or -ENOENT with e.g.
 * "language python: interpreter \"python3\" not found on PATH (/usr/bin:/bin)". */
int lang_check_host(const struct lang *l, const char *path_env, char **ret_error);

/* Where the code lives inside the sandbox: a read-only dir of its own on
 * the run's scratch, outside the workspace, so the code is never part of
 * a change set, a session or an apply, and a workspace's own main.py is
 * left alone. A compile step writes its program to LANG_BUILD_DIR. */
#define LANG_CODE_DIR "/run/hutch/code"
#define LANG_BUILD_DIR "/run/hutch/build"

/* What to run for l. */
struct lang_plan {
        char *source;           /* LANG_CODE_DIR/main<extension> */
        char *source_name;      /* main<extension> */
        char *output;           /* LANG_BUILD_DIR/main: the compiled program */
        char **compile_argv;    /* NULL when the language has no compile step */
        char **run_argv;
};
int lang_plan_make(const struct lang *l, struct lang_plan *ret, char **ret_error);
/* Free what a plan owns; NULL-safe on fields. */
void lang_plan_done(struct lang_plan *plan);
