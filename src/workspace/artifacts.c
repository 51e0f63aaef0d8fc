/* artifacts.c - collect an output directory into the blob store
 * (artifacts.h).
 *
 * Data shape: up to max_files files (default 1000), most small (logs,
 * plots, JSON), a few large; one pass over each file (blobstore_put_fd
 * hashes while it copies) plus a 4 KiB pread for the MIME guess.
 *
 * Why a hostile output tree cannot make us read outside it: the walk
 * starts at the fd the caller opened and goes down one level at a time
 * with openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
 * names come from readdir (no '/'; "." and ".." dropped), so every open
 * is relative to a directory inside the tree and a symlink is never
 * traversed, at any depth, whatever it points to (`x -> /etc/passwd`,
 * `up -> ../../..`): it is recorded as skipped. Files are opened
 * O_NOFOLLOW | O_NONBLOCK (a fifo swapped in cannot block us) and
 * checked with fstat() on the very fd that is copied, so what is stored
 * is a regular file from inside the tree even if names changed under us.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "workspace/artifacts.h"
#include "record/blobstore.h"
#include "lib/fsutil.h"
#include "lib/util.h"

#define HEAD_SIZE 4096

struct collector {
        struct blobstore *bs;
        size_t max_files, max_skipped;
        uint64_t max_bytes;
        struct timespec deadline;
        struct artifact *v;
        size_t n, cap, n_collected, n_skipped_listed, n_unlisted;
        uint64_t bytes;
};

static char *join(const char *prefix, const char *name)
{
        return *prefix ? xasprintf("%s/%s", prefix, name) : xstrdup(name);
}

static struct artifact *add_item(struct collector *c, char *path)
{
        struct artifact *a;

        if (c->n == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 64;
                c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
        }
        a = &c->v[c->n++];
        memset(a, 0, sizeof(*a));
        a->path = path;
        return a;
}

/* Record a skipped entry; takes path and link_target. */
static void skip(struct collector *c, char *path, enum artifact_skip why, int error,
                 const struct stat *st, char *link_target)
{
        struct artifact *a;

        if (c->n_skipped_listed >= c->max_skipped) {
                c->n_unlisted++;
                free(path);
                free(link_target);
                return;
        }
        c->n_skipped_listed++;
        a = add_item(c, path);
        a->skip = why;
        a->error = error;
        a->mode = st ? st->st_mode : 0;
        a->size = st && S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
        a->link_target = link_target;
}

static int collect_file(struct collector *c, int dirfd, const char *name, char *path,
                        const struct stat *st)
{
        _cleanup_close_ int fd = -1;
        char head[HEAD_SIZE], hex[DIGEST_HEX_SIZE];
        struct stat fst;
        uint64_t size;
        ssize_t got;
        int r;

        if (c->n_collected >= c->max_files) {
                skip(c, path, ARTIFACT_SKIP_MAX_FILES, 0, st, NULL);
                return 0;
        }
        if ((uint64_t)st->st_size > c->max_bytes - c->bytes) {
                skip(c, path, ARTIFACT_SKIP_MAX_BYTES, 0, st, NULL);
                return 0;
        }
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                skip(c, path, errno == ELOOP ? ARTIFACT_SKIP_SYMLINK : ARTIFACT_SKIP_UNREADABLE,
                     -errno, st, NULL);
                return 0;
        }
        if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
                skip(c, path, ARTIFACT_SKIP_SPECIAL, 0, &fst, NULL);
                return 0;
        }
        do
                got = pread(fd, head, sizeof(head), 0);
        while (got < 0 && errno == EINTR);
        if (got < 0) {
                skip(c, path, ARTIFACT_SKIP_UNREADABLE, -errno, &fst, NULL);
                return 0;
        }
        /* the byte cap is enforced on what is read, not only on st_size
         * (blobstore_put_fd takes 0 as "no limit", hence the 1) */
        uint64_t budget = c->max_bytes - c->bytes;
        r = blobstore_put_fd(c->bs, fd, budget ? budget : 1, hex, &size);
        if (r >= 0 && size > budget) {
                skip(c, path, ARTIFACT_SKIP_MAX_BYTES, 0, &fst, NULL);   /* gc drops the blob */
                return 0;
        }
        if (r == -EFBIG) {
                skip(c, path, ARTIFACT_SKIP_MAX_BYTES, 0, &fst, NULL);
                return 0;
        }
        if (r == -EIO) {
                skip(c, path, ARTIFACT_SKIP_UNREADABLE, r, &fst, NULL);
                return 0;
        }
        if (r < 0)
                return r;

        struct artifact *a = add_item(c, path);
        a->mode = fst.st_mode;
        a->size = size;
        memcpy(a->sha256, hex, sizeof(hex));
        a->mime = artifacts_guess_mime(head, (size_t)got, size <= (uint64_t)got, name);
        c->n_collected++;
        c->bytes += size;
        return 0;
}

/* Checked once per entry; one file's copy is bounded by max_bytes. */
static bool out_of_time(const struct collector *c)
{
        struct timespec now;

        if (!c->deadline.tv_sec && !c->deadline.tv_nsec)
                return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return now.tv_sec > c->deadline.tv_sec ||
               (now.tv_sec == c->deadline.tv_sec && now.tv_nsec >= c->deadline.tv_nsec);
}

static int walk(struct collector *c, int dirfd, const char *prefix, int depth)
{
        _cleanup_strv_ char **names = NULL;
        int r;

        r = fs_list_dir(dirfd, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                char *path = join(prefix, *n);
                struct stat st;

                if (fstatat(dirfd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        skip(c, path, ARTIFACT_SKIP_UNREADABLE, -errno, NULL, NULL);
                        continue;
                }
                if (out_of_time(c)) {
                        skip(c, path, ARTIFACT_SKIP_TIME, 0, &st, NULL);
                        continue;
                }
                if (S_ISLNK(st.st_mode)) {
                        char *target = NULL;
                        (void)fs_readlink_at(dirfd, *n, &target);
                        skip(c, path, ARTIFACT_SKIP_SYMLINK, 0, &st, target);
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = -1;

                        if (depth + 1 >= ARTIFACTS_MAX_DEPTH) {
                                skip(c, path, ARTIFACT_SKIP_TOO_DEEP, 0, &st, NULL);
                                continue;
                        }
                        sub = openat(dirfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                skip(c, path, ARTIFACT_SKIP_UNREADABLE, -errno, &st, NULL);
                                continue;
                        }
                        r = walk(c, sub, path, depth + 1);
                        if (r == -EACCES || r == -EIO) {
                                skip(c, path, ARTIFACT_SKIP_UNREADABLE, r, &st, NULL);
                                continue;
                        }
                        free(path);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!S_ISREG(st.st_mode)) {
                        skip(c, path, ARTIFACT_SKIP_SPECIAL, 0, &st, NULL);
                        continue;
                }
                r = collect_file(c, dirfd, *n, path, &st);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cmp_item(const void *a, const void *b)
{
        return fs_path_compare(((const struct artifact *)a)->path, ((const struct artifact *)b)->path);
}

int artifacts_collect(int out_fd, struct blobstore *bs, const struct artifacts_limits *lim,
                      struct artifact_list *ret)
{
        struct collector c = {
                .bs = bs,
                .max_files = lim && lim->max_files ? lim->max_files : ARTIFACTS_DEFAULT_MAX_FILES,
                .max_bytes = lim && lim->max_bytes ? lim->max_bytes : ARTIFACTS_DEFAULT_MAX_BYTES,
                .max_skipped = lim && lim->max_skipped_listed ? lim->max_skipped_listed
                                                              : ARTIFACTS_DEFAULT_MAX_SKIPPED_LISTED,
                .deadline = lim ? lim->deadline : (struct timespec){ 0 },
        };
        int r;

        r = walk(&c, out_fd, "", 0);
        if (r < 0) {
                struct artifact_list tmp = { .items = c.v, .n = c.n };
                artifact_list_done(&tmp);
                return r;
        }
        /* readdir order per level is sorted already; the tree order puts
         * "a/x" before "a.b", which plain per-level order does not */
        if (c.n > 1)
                qsort(c.v, c.n, sizeof(*c.v), cmp_item);
        *ret = (struct artifact_list){
                .items = c.v,
                .n = c.n,
                .n_collected = c.n_collected,
                .bytes = c.bytes,
                .n_unlisted = c.n_unlisted,
        };
        return 0;
}

void artifact_list_done(struct artifact_list *l)
{
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].path);
                free(l->items[i].link_target);
        }
        free(l->items);
        memset(l, 0, sizeof(*l));
}

/* ---- MIME ---------------------------------------------------------------- */

struct signature {
        size_t offset;
        const char *magic;
        size_t len;
        const char *mime;
};

#define SIG(off, m, type) { off, m, sizeof(m) - 1, type }
static const struct signature signatures[] = {
        SIG(0, "\x89PNG\r\n\x1a\n", "image/png"),
        SIG(0, "\xff\xd8\xff", "image/jpeg"),
        SIG(0, "GIF87a", "image/gif"),
        SIG(0, "GIF89a", "image/gif"),
        SIG(0, "%PDF-", "application/pdf"),
        SIG(0, "PK\x03\x04", "application/zip"),
        SIG(0, "PK\x05\x06", "application/zip"),       /* empty archive */
        SIG(0, "\x1f\x8b", "application/gzip"),
        SIG(0, "\x7f" "ELF", "application/x-executable"),
        SIG(0, "\0asm", "application/wasm"),
        SIG(0, "BZh", "application/x-bzip2"),
        SIG(0, "\xfd" "7zXZ\0", "application/x-xz"),
        SIG(0, "\x28\xb5\x2f\xfd", "application/zstd"),
        SIG(0, "SQLite format 3\0", "application/vnd.sqlite3"),
        SIG(257, "ustar", "application/x-tar"),
};

struct extension {
        const char *ext;
        const char *mime;
};

/* for text content */
static const struct extension text_extensions[] = {
        { "json", "application/json" }, { "md", "text/markdown" },
        { "csv", "text/csv" },         { "tsv", "text/tab-separated-values" },
        { "html", "text/html" },       { "htm", "text/html" },
        { "css", "text/css" },         { "js", "text/javascript" },
        { "mjs", "text/javascript" },  { "xml", "application/xml" },
        { "svg", "image/svg+xml" },    { "yaml", "application/yaml" },
        { "yml", "application/yaml" }, { "toml", "application/toml" },
        { "py", "text/x-python" },     { "c", "text/x-c" },
        { "h", "text/x-c" },           { "sh", "application/x-sh" },
        { "ipynb", "application/x-ipynb+json" },
};

/* for anything else (signatures did not match) */
static const struct extension binary_extensions[] = {
        { "png", "image/png" },        { "jpg", "image/jpeg" },
        { "jpeg", "image/jpeg" },      { "gif", "image/gif" },
        { "webp", "image/webp" },      { "pdf", "application/pdf" },
        { "zip", "application/zip" },  { "gz", "application/gzip" },
        { "tar", "application/x-tar" }, { "wasm", "application/wasm" },
        { "parquet", "application/vnd.apache.parquet" },
        { "npy", "application/octet-stream" },
};

static const char *by_extension(const char *name, const struct extension *table, size_t n)
{
        const char *dot = name ? strrchr(name, '.') : NULL;

        if (!dot || dot == name)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(dot + 1, table[i].ext) == 0)
                        return table[i].mime;
        return NULL;
}

/* Valid UTF-8 with no NUL and no control characters other than \t \n
 * \v \f \r and ESC. A sequence cut by the end of an incomplete head is
 * accepted. */
static bool looks_like_text(const unsigned char *p, size_t n, bool complete)
{
        size_t i = 0;

        while (i < n) {
                unsigned char b = p[i];
                size_t len;

                if (b < 0x80) {
                        if (b < 0x20 && b != '\t' && b != '\n' && b != '\v' && b != '\f' &&
                            b != '\r' && b != 0x1b)
                                return false;
                        if (b == 0x7f)
                                return false;
                        i++;
                        continue;
                }
                if (b >= 0xc2 && b <= 0xdf)
                        len = 2;
                else if (b >= 0xe0 && b <= 0xef)
                        len = 3;
                else if (b >= 0xf0 && b <= 0xf4)
                        len = 4;
                else
                        return false;
                if (i + len > n)
                        return !complete;
                for (size_t k = 1; k < len; k++)
                        if ((p[i + k] & 0xc0) != 0x80)
                                return false;
                /* overlongs and surrogates */
                if ((b == 0xe0 && p[i + 1] < 0xa0) || (b == 0xed && p[i + 1] >= 0xa0) ||
                    (b == 0xf0 && p[i + 1] < 0x90) || (b == 0xf4 && p[i + 1] >= 0x90))
                        return false;
                i += len;
        }
        return true;
}

static bool is_space(unsigned char b)
{
        return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

/* Starts like a JSON object or array: '{' then '"' or '}', or '[' then a
 * JSON value's first character; if the head is the whole file, it must
 * also end with the matching bracket. */
static bool looks_like_json(const unsigned char *p, size_t n, bool complete)
{
        size_t i = 0, j = n;
        unsigned char open, next;

        if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
                i = 3;  /* BOM */
        while (i < n && is_space(p[i]))
                i++;
        if (i >= n || (p[i] != '{' && p[i] != '['))
                return false;
        open = p[i++];
        while (i < n && is_space(p[i]))
                i++;
        if (i >= n)
                return !complete;
        next = p[i];
        if (open == '{' && next != '"' && next != '}')
                return false;
        if (open == '[' && !strchr("{[\"]-0123456789tfn", next))
                return false;
        if (complete) {
                while (j > 0 && is_space(p[j - 1]))
                        j--;
                if (j == 0 || p[j - 1] != (open == '{' ? '}' : ']'))
                        return false;
        }
        return true;
}

const char *artifacts_guess_mime(const void *head, size_t n, bool complete, const char *name)
{
        const unsigned char *p = head;
        const char *m;

        for (size_t i = 0; i < ELEMENTSOF(signatures); i++) {
                const struct signature *s = &signatures[i];
                if (n >= s->offset + s->len && memcmp(p + s->offset, s->magic, s->len) == 0)
                        return s->mime;
        }
        if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
                return "image/webp";

        if (n > 0 && looks_like_text(p, n, complete)) {
                if (looks_like_json(p, n, complete))
                        return "application/json";
                m = by_extension(name, text_extensions, ELEMENTSOF(text_extensions));
                return m ? m : "text/plain";
        }
        m = by_extension(name, binary_extensions, ELEMENTSOF(binary_extensions));
        if (!m && n == 0)
                m = by_extension(name, text_extensions, ELEMENTSOF(text_extensions));
        return m ? m : "application/octet-stream";
}

const char *artifact_skip_to_string(enum artifact_skip s)
{
        static const char *const names[_ARTIFACT_SKIP_MAX] = {
                [ARTIFACT_SKIP_NONE] = NULL,
                [ARTIFACT_SKIP_SYMLINK] = "symlink",
                [ARTIFACT_SKIP_SPECIAL] = "special",
                [ARTIFACT_SKIP_MAX_FILES] = "max_files",
                [ARTIFACT_SKIP_MAX_BYTES] = "max_bytes",
                [ARTIFACT_SKIP_UNREADABLE] = "unreadable",
                [ARTIFACT_SKIP_TOO_DEEP] = "too_deep",
                [ARTIFACT_SKIP_TIME] = "time",
                [ARTIFACT_SKIP_SECRET] = "secret",
        };
        return s >= 0 && s < _ARTIFACT_SKIP_MAX ? names[s] : NULL;
}
