/* cli/image-store.c - what verbs other than `hutch image` need of the
 * image store: its directory (run, profile show), opening it, gc's and
 * doctor's lines. Apart from cli/image.c so that nothing here reaches
 * the import code (and libarchive): a binary without `hutch image
 * import` still runs, lists and collects images.
 */
#include "config.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "image/image.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "record/store.h"

/* bytes for people: 1.5M, 117M, 4.2G (cli_human_size() is exact, for profiles) */
const char *cli_human_size(uint64_t bytes, char *buf, size_t len)
{
        static const char units[] = "BKMGTP";
        double v = (double)bytes;
        size_t u = 0;
        while (v >= 1024 && u + 1 < sizeof(units) - 1) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(buf, len, "%lluB", (unsigned long long)bytes);
        else
                snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
        return buf;
}

int cli_image_open(const char *verb, bool create, bool exclusive, struct image_store **ret)
{
        _cleanup_free_ char *db = NULL, *dir = NULL;
        int r = store_default_path(&db);
        if (r < 0) {
                log_error("image %s: no state dir (set HOME, XDG_STATE_HOME or HUTCH_STATE_DIR)", verb);
                return EXIT_SETUP;
        }
        dir = image_store_dir(db);
        r = image_store_open(dir, create, exclusive, ret);
        if (r == -ENOENT && !create)
                return -ENOENT;
        if (r < 0) {
                log_error_errno(r, "image %s: image store %s: %m", verb, dir);
                return EXIT_SETUP;
        }
        return EXIT_OK;
}

int cli_image_gc(bool dry_run)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        unsigned layers = 0, blobs = 0;
        uint64_t bytes = 0;
        char size[32];

        int r = cli_image_open("gc", false, true, &st);
        if (r == -ENOENT)
                return EXIT_OK;
        if (r != EXIT_OK)
                return r;
        r = image_gc(st, dry_run, &layers, &blobs, &bytes);
        if (r == -EBUSY) {
                printf("removed no image layers: a run is using the image store (the next gc will)\n");
                return EXIT_OK;
        }
        if (r < 0) {
                log_error_errno(r, "gc: image store: %m");
                return EXIT_SETUP;
        }
        printf("%s %u image layer%s and %u blob%s no image uses (%s)\n", dry_run ? "would remove" : "removed",
               layers, layers == 1 ? "" : "s", blobs, blobs == 1 ? "" : "s", cli_human_size(bytes, size, sizeof(size)));
        return EXIT_OK;
}

char *cli_image_dir(void)
{
        _cleanup_free_ char *db = NULL;
        return store_default_path(&db) < 0 ? NULL : image_store_dir(db);
}

char *cli_image_usage(void)
{
        _cleanup_free_ char *db = NULL, *dir = NULL;
        uint64_t bytes;
        unsigned images;
        char size[32];

        if (store_default_path(&db) < 0)
                return xstrdup("no state dir");
        dir = image_store_dir(db);
        int r = image_store_usage(dir, &bytes, &images);
        if (r == -ENOENT)
                return xasprintf("%s: none yet", dir);
        if (r < 0)
                return xasprintf("%s: %s", dir, strerror(-r));
        return xasprintf("%s: %u image%s, %s on disk", dir, images, images == 1 ? "" : "s",
                         cli_human_size(bytes, size, sizeof(size)));
}

int cli_image_hold(const char *verb, const struct run_config *cfg, const char *image_dir, int *ret_fd)
{
        *ret_fd = -1;
        if (!profile_root_is_image(cfg->root) || !image_dir)
                return EXIT_OK;
        int fd = image_store_use(image_dir);
        if (fd < 0) {
                log_error_errno(fd, "%s: image store %s: %m", verb, image_dir);
                return EXIT_SETUP;
        }
        /* resolved before the hold: a gc in between may have taken them */
        for (char **d = cfg->root_layers; d && *d; d++) {
                struct stat st;
                if (stat(*d, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        close(fd);
                        log_error("%s: %s was removed as the run started (layer %s)", verb, cfg->root, *d);
                        return EXIT_SETUP;
                }
        }
        *ret_fd = fd;
        return EXIT_OK;
}
