/* cli/import.c - `hutch import FILE|-`: merge the JSON lines of `hutch
 * export` (from other nodes' stores) into this one (exchange.h).
 *
 * All or nothing, in two passes: the first reads and checks every
 * line against the store without the write lock (a bad line or a
 * conflict is refused before anything is written, and a repeated import
 * takes no lock at all); the second writes the new runs in one
 * transaction, so a full disk half way leaves the store as it was.
 * stdin is copied to a temporary file to be read twice. Importing the same input again changes nothing: a record
 * already stored and the same is skipped. A record that says something
 * else about a stored run is refused with its id and line. Lines are
 * read with a bound (EXCHANGE_MAX_LINE), so a file without newlines
 * cannot make hutch take all memory.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "record/exchange.h"
#include "record/store.h"

static void help(void)
{
        printf("Usage: hutch import FILE|-\n"
               "\n"
               "Merge the runs in FILE (or stdin), JSON lines as hutch export writes them,\n"
               "into this store. A run already stored and the same is skipped, so importing\n"
               "twice changes nothing; a record that differs from the stored run with its id\n"
               "is refused. Nothing is imported unless every line is: every line is checked\n"
               "first, then the new runs are written in one transaction.\n"
               "\n"
               "Exit status: 0 imported (or all already there); 1 a record conflicts with a\n"
               "stored run; 2 bad usage, or a line that is not a record hutch export wrote;\n"
               "125 the store or the input cannot be used.\n"
               "\n"
               "  -h, --help   this text\n");
}

/* The next line of f into *buf (without its newline; NUL-terminated):
 * 1, 0 at the end, -EFBIG for a line longer than max (the rest of the
 * input is not read), -errno on a read error. */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *ret_len, size_t max)
{
        size_t n = 0;
        int ch;

        while ((ch = getc_unlocked(f)) != EOF && ch != '\n') {
                if (n >= max)
                        return -EFBIG;
                if (n + 1 >= *cap) {
                        *cap = *cap ? *cap * 2 : 65536;
                        *buf = xrealloc(*buf, *cap);
                }
                (*buf)[n++] = (char)ch;
        }
        if (ferror(f))
                return -EIO;
        if (ch == EOF && n == 0)
                return 0;
        if (!*buf)
                *buf = xmalloc(*cap = 1);
        (*buf)[n] = '\0';
        *ret_len = n;
        return 1;
}

static bool blank(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r", s[i]))
                        return false;
        return true;
}

/* The input, readable twice: a regular file as it is, anything else
 * (stdin, a pipe) copied into an unlinked temporary file first. NULL
 * with errno set on failure. */
static FILE *open_input(const char *name)
{
        struct stat st;
        FILE *in = streq(name, "-") ? stdin : fopen(name, "re");

        if (!in)
                return NULL;
        if (fstat(fileno(in), &st) == 0 && S_ISDIR(st.st_mode)) {
                fclose(in);
                errno = EISDIR;
                return NULL;
        }
        if (in != stdin && S_ISREG(st.st_mode))
                return in;
        FILE *copy = tmpfile();
        char buf[65536];
        size_t n;
        int saved = 0;
        while (copy && (n = fread(buf, 1, sizeof(buf), in)) > 0)
                if (fwrite(buf, 1, n, copy) != n)
                        break;
        if (ferror(in) || !copy || ferror(copy) || fflush(copy) != 0 || fseeko(copy, 0, SEEK_SET) != 0) {
                saved = errno ? errno : EIO;
                if (copy)
                        fclose(copy);
                copy = NULL;
        }
        if (in != stdin)
                fclose(in);
        errno = saved;
        return copy;
}

/* A line of the input that holds a run this store does not have. */
struct pending {
        off_t offset;
        size_t lineno;
};

struct import_ctx {
        struct store *s;
        const char *shown;
        char local_node[EXCHANGE_MAX_NODE + 1];
        char *line;
        size_t cap;
};

/* Parse the line read into c->line and check it against the store
 * (write: add it, inside the open transaction). 1 new (or added), 0
 * already stored, or a negative exit code for the verb, the error
 * logged. */
static int one_record(struct import_ctx *c, size_t len, size_t lineno, bool write, uint64_t now)
{
        struct exchange_record x;
        _cleanup_free_ char *field = NULL, *why = NULL, *conflict = NULL;
        int r = exchange_parse_record(c->line, len, &x, &field, &why);

        if (r < 0) {
                log_error("import: %s:%zu: %s: %s; nothing imported", c->shown, lineno,
                          *field ? field : "(line)", why);
                exchange_record_done(&x);
                return -EXIT_USAGE;
        }
        r = write ? store_import_add(c->s, &x, c->local_node, now, &conflict)
                  : store_import_check(c->s, &x, c->local_node, &conflict);
        if (r == -EEXIST) {
                log_error("import: %s:%zu: run %s: conflicts with the stored run of that id "
                          "(/%s differs); nothing imported", c->shown, lineno, x.rec->id, conflict);
                r = -EXIT_FAILURE_GENERIC;
        } else if (r < 0) {
                log_error("import: %s:%zu: run %s: run store: %s; nothing imported", c->shown, lineno,
                          x.rec->id, store_error(c->s));
                r = -EXIT_SETUP;
        }
        exchange_record_done(&x);
        return r;
}

int verb_import(int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_free_ struct pending *todo = NULL;
        struct import_ctx c = { 0 };
        size_t len = 0, lineno = 0, n_todo = 0, cap_todo = 0, added = 0, same = 0;
        FILE *in = NULL;
        int ch, r, code = EXIT_SETUP;

        while ((ch = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (ch) {
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("import", argv, options);
                }
        if (optind + 1 != argc) {
                log_error("import: expected one FILE or - (see hutch import --help)");
                return EXIT_USAGE;
        }
        const char *name = argv[optind];
        c.shown = streq(name, "-") ? "stdin" : name;
        in = open_input(name);
        if (!in) {
                log_error_errno(-errno, "import: %s: %m", c.shown);
                return EXIT_SETUP;
        }
        exchange_local_node(c.local_node, sizeof(c.local_node));
        r = cli_open_store("import", &s);
        if (r != EXIT_OK) {
                code = r;
                goto out;
        }
        c.s = s;

        /* Pass 1, without the write lock: every line parsed and compared
         * with the store, so a bad or conflicting input is refused before
         * anything is written, and runs already here cost no lock. */
        for (;;) {
                off_t at = ftello(in);
                r = read_line(in, &c.line, &c.cap, &len, EXCHANGE_MAX_LINE);
                if (r <= 0)
                        break;
                lineno++;
                if (blank(c.line, len))
                        continue;
                r = one_record(&c, len, lineno, false, 0);
                if (r < 0) {
                        code = -r;
                        goto out;
                }
                if (r == 0) {
                        same++;
                        continue;
                }
                if (n_todo == cap_todo)
                        todo = xrealloc(todo, (cap_todo = cap_todo ? cap_todo * 2 : 256) * sizeof(*todo));
                todo[n_todo++] = (struct pending) { .offset = at, .lineno = lineno };
        }
        if (r == -EFBIG) {
                log_error("import: %s:%zu: line longer than %u bytes; nothing imported", c.shown, lineno + 1,
                          EXCHANGE_MAX_LINE);
                code = EXIT_USAGE;
                goto out;
        }
        if (r < 0) {
                log_error_errno(r, "import: %s: %m; nothing imported", c.shown);
                goto out;
        }

        /* Pass 2: the new runs, all in one transaction. Another import
         * may have added some of them since pass 1: those are checked
         * again like any other. */
        if (n_todo > 0) {
                uint64_t now = now_realtime_ms();
                r = store_import_begin(s);
                if (r < 0) {
                        log_error("import: run store: %s; nothing imported", store_error(s));
                        goto out;
                }
                for (size_t i = 0; i < n_todo; i++) {
                        if (fseeko(in, todo[i].offset, SEEK_SET) != 0 ||
                            read_line(in, &c.line, &c.cap, &len, EXCHANGE_MAX_LINE) <= 0) {
                                log_error("import: %s: the input changed while it was imported; nothing imported",
                                          c.shown);
                                store_import_abort(s);
                                goto out;
                        }
                        r = one_record(&c, len, todo[i].lineno, true, now);
                        if (r < 0) {
                                store_import_abort(s);
                                code = -r;
                                goto out;
                        }
                        if (r > 0)
                                added++;
                        else
                                same++;
                }
                r = store_import_commit(s);
                if (r < 0) {
                        log_error("import: run store: %s; nothing imported", store_error(s));
                        goto out;
                }
        }
        printf("imported %zu run%s from %s (%zu already here)\n", added, added == 1 ? "" : "s", c.shown, same);
        code = EXIT_OK;
out:
        free(c.line);
        if (in && in != stdin)
                fclose(in);
        return code;
}
