/* profile-search.c - where profiles come from: the search path, which
 * files are trusted, profile names, and the listing of every profile.
 *
 * Trust: profiles found by name in the search path, and files given by a
 * path that lies inside one of those directories, are trusted. Any other
 * file may not ask for writable host binds (rw): a profile handed to hutch
 * by someone else must not be able to open the host for writing (STYLE
 * convention 6). The command line is the user and is always honoured.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "config/profile-internal.h"
#include "config/profile.h"
#include "lib/util.h"

/* ---- the search path and trust ------------------------------------------ */

char **profile_search_dirs(void)
{
        char **dirs = NULL;
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        const char *path = getenv("HUTCH_PROFILE_PATH");

        if (xdg && xdg[0] == '/') {
                _cleanup_free_ char *d = xasprintf("%s/hutch/profiles", xdg);
                dirs = strv_append(dirs, d);
        } else if (home && home[0] == '/') {
                _cleanup_free_ char *d = xasprintf("%s/.config/hutch/profiles", home);
                dirs = strv_append(dirs, d);
        }
        dirs = strv_append(dirs, "/etc/hutch/profiles");
        if (!streq(HUTCH_SYSCONFDIR, "/etc"))
                dirs = strv_append(dirs, HUTCH_SYSCONFDIR "/hutch/profiles");
        if (path) {
                _cleanup_free_ char *copy = xstrdup(path);
                char *save = NULL;
                for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                        if (!profile_strv_contains(dirs, d))
                                dirs = strv_append(dirs, d);
        } else
                dirs = strv_append(dirs, HUTCH_DATADIR "/profiles");
        return dirs;
}

bool profile_path_is_trusted(const char *path)
{
        _cleanup_free_ char *real = realpath(path, NULL);
        _cleanup_strv_ char **dirs = NULL;

        if (!real)
                return false;
        dirs = profile_search_dirs();
        for (char **d = dirs; *d; d++) {
                _cleanup_free_ char *rd = realpath(*d, NULL);
                size_t n;
                if (!rd)
                        continue;
                n = strlen(rd);
                if (strncmp(real, rd, n) == 0 && (real[n] == '/' || (n == 1 && rd[0] == '/')))
                        return true;
        }
        return false;
}

bool profile_valid_name(const char *s)
{
        if (!s || !*s || *s == '.' || strlen(s) > 64)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
                        return false;
        return true;
}

bool profile_is_path(const char *s)
{
        size_t n = strlen(s);
        return strchr(s, '/') || (n >= 4 && streq(s + n - 4, ".ini"));
}

char *profile_dirs_text(char *const *dirs)
{
        char *out = NULL;
        for (; dirs && *dirs; dirs++) {
                char *t = xasprintf("%s%s%s", out ? out : "", out ? ", " : "", *dirs);
                free(out);
                out = t;
        }
        return out ? out : xstrdup("nowhere");
}

/* Find NAME.ini in the search path, skipping the file `skip` (a realpath;
 * so that ~/.config/hutch/profiles/python.ini can extend the python profile
 * further down the path). Returns 0 with *ret_path, or -ENOENT. */
int profile_find(const char *name, const char *skip, char **ret_path)
{
        _cleanup_strv_ char **dirs = profile_search_dirs();

        for (char **d = dirs; *d; d++) {
                _cleanup_free_ char *p = xasprintf("%s/%s.ini", *d, name);
                _cleanup_free_ char *real = NULL;
                struct stat st;

                if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (skip && (real = realpath(p, NULL)) && streq(real, skip))
                        continue;
                *ret_path = TAKE_PTR(p);
                return 0;
        }
        return -ENOENT;
}

char *profile_basename(const char *p)
{
        const char *s = strrchr(p, '/');
        return xstrdup(s ? s + 1 : p);
}

/* "python" from ".../python.ini" */
char *profile_name_of(const char *path)
{
        char *b = profile_basename(path);
        size_t n = strlen(b);
        if (n > 4 && streq(b + n - 4, ".ini"))
                b[n - 4] = '\0';
        return b;
}

/* ---- listing ------------------------------------------------------------- */

int profile_list(char ***ret_names, char ***ret_paths)
{
        _cleanup_strv_ char **dirs = profile_search_dirs();
        _cleanup_strv_ char **names = NULL, **paths = NULL;
        size_t n;

        for (char **d = dirs; *d; d++) {
                DIR *dir = opendir(*d);
                struct dirent *de;
                char **found = NULL;

                if (!dir)
                        continue;
                while ((de = readdir(dir))) {
                        size_t len = strlen(de->d_name);
                        if (len <= 4 || !streq(de->d_name + len - 4, ".ini"))
                                continue;
                        found = strv_append(found, de->d_name);
                }
                closedir(dir);
                if (found)
                        qsort(found, strv_length(found), sizeof(char *), profile_cmp_str);
                for (char **f = found; f && *f; f++) {
                        _cleanup_free_ char *name = strndup(*f, strlen(*f) - 4);
                        _cleanup_free_ char *path = xasprintf("%s/%s", *d, *f);
                        struct stat st;
                        if (!name || !profile_valid_name(name) || profile_strv_contains(names, name))
                                continue;
                        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                                continue;
                        names = strv_append(names, name);
                        paths = strv_append(paths, path);
                }
                strv_free(found);
        }

        /* sort both by name, keeping them parallel */
        n = strv_length(names);
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                        char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
                        t = paths[j]; paths[j] = paths[j - 1]; paths[j - 1] = t;
                }
        if (!names) {
                names = xcalloc(1, sizeof(char *));
                paths = xcalloc(1, sizeof(char *));
        }
        *ret_names = TAKE_PTR(names);
        *ret_paths = TAKE_PTR(paths);
        return (int)n;
}
