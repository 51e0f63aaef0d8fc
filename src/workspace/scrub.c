/* scrub.c - secrets' values kept out of a run's recorded files (see
 * scrub.h).
 *
 * A change set has at most a few thousand entries and a run a few
 * secrets: a redact() per name and a read of each blob that could hold
 * a value is all it takes.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/redact.h"
#include "lib/util.h"
#include "record/blobstore.h"
#include "workspace/scrub.h"

/* Replace *s by its redacted copy; whether a value was there. */
static bool scrub_name(char **s, char *const *secrets)
{
        size_t len;
        char *clean;

        if (!*s || !(clean = redact(*s, strlen(*s), secrets, &len)))
                return false;
        explicit_bzero(*s, strlen(*s));
        free(*s);
        *s = clean;
        return true;
}

/* Remove blob hex from bs if it holds a value; whether it did. A blob
 * is shared by content: one holding a value goes for every run. */
static bool drop_blob(struct blobstore *bs, const char *hex, char *const *secrets)
{
        if (!bs || !hex[0])
                return false;
        _cleanup_close_ int fd = blobstore_open_blob(bs, hex);
        if (fd < 0 || !redact_find_fd(fd, secrets))
                return false;
        _cleanup_free_ char *rel = blobstore_relpath(hex);
        /* best effort: a blob that cannot go is found again by the
         * caller's scan of new content, or by gc once no row names it */
        return rel && unlinkat(blobstore_dirfd(bs), rel, 0) == 0;
}

static void skip_secret(struct changeset *cs, struct change *c)
{
        c->sha256[0] = '\0';
        if (c->skip == CHANGE_SKIP_NONE)
                cs->n_carried--;
        c->skip = CHANGE_SKIP_SECRET;
        c->error = 0;
}

static bool in_list(char (*list)[DIGEST_HEX_SIZE], size_t n, const char *hex)
{
        for (size_t i = 0; i < n; i++)
                if (streq(list[i], hex))
                        return true;
        return false;
}

size_t scrub_changeset(struct changeset *cs, struct blobstore *bs, char *const *secrets)
{
        size_t skipped = 0, n_dropped = 0;

        if (!secrets || !secrets[0])
                return 0;
        _cleanup_free_ char (*dropped)[DIGEST_HEX_SIZE] = xcalloc(cs->n + 1, sizeof(*dropped));
        for (size_t i = 0; i < cs->n; i++) {
                struct change *c = &cs->entries[i];
                bool named = scrub_name(&c->path, secrets);
                named |= scrub_name(&c->link_target, secrets);
                if (named) {
                        (void)drop_blob(bs, c->sha256, secrets);
                        skip_secret(cs, c);
                        skipped++;
                }
                /* the user's old version: the job may have read the
                 * value from it, or written it there in a run before */
                if (c->old_sha256[0] && S_ISREG(c->old_mode) && drop_blob(bs, c->old_sha256, secrets))
                        memcpy(dropped[n_dropped++], c->old_sha256, DIGEST_HEX_SIZE);
        }
        /* A file the job only renamed, linked or chmod'ed has the old
         * version's content, so its blob was that one, just dropped: the
         * caller's scan of new content could no longer open it and would
         * leave a row that names a missing blob and, as its hash, the
         * hash of the value. It is skipped like a file that holds one. */
        for (size_t i = 0; n_dropped && i < cs->n; i++) {
                struct change *c = &cs->entries[i];
                if (c->sha256[0] && in_list(dropped, n_dropped, c->sha256)) {
                        skip_secret(cs, c);
                        skipped++;
                }
        }
        return skipped;
}

size_t scrub_artifacts(struct artifact_list *al, struct blobstore *bs, char *const *secrets)
{
        size_t skipped = 0;

        if (!secrets || !secrets[0])
                return 0;
        for (size_t i = 0; i < al->n; i++) {
                struct artifact *a = &al->items[i];
                bool named = scrub_name(&a->path, secrets);
                named |= scrub_name(&a->link_target, secrets);
                if (!named)
                        continue;
                if (a->skip == ARTIFACT_SKIP_NONE) {
                        al->n_collected--;
                        al->bytes -= MIN(al->bytes, a->size);
                }
                (void)drop_blob(bs, a->sha256, secrets);
                a->sha256[0] = '\0';
                a->mime = NULL;
                a->skip = ARTIFACT_SKIP_SECRET;
                a->error = 0;
                skipped++;
        }
        return skipped;
}
