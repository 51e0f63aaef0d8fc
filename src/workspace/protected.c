/* protected.c - the protected workspace paths (protected.h).
 *
 * Data shape: a change set has up to max_changes (default 10,000)
 * entries of at most max_path bytes; each is checked against ~45 rules by
 * one walk over its components, so the cost is linear in the path and
 * the list. No allocation except for a symlink target, resolved as text.
 *
 * Why refuse and not "clean": git alone reads hooks, config (hooksPath,
 * fsmonitor, sshCommand, pager, editor, credential helpers, filters,
 * aliases), info/attributes, modules/, objects/info/alternates and packed
 * refs from .git/; no subset of a .git change is known to be safe, so all
 * of .git/ is protected, at any depth (a nested repository's hooks run
 * as soon as the user works in it). The rest of the list is the same
 * class: files a tool the user runs, or their shell, editor, agent or CI,
 * executes or turns into a command line without asking.
 */
#include "config.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "workspace/protected.h"
#include "lib/util.h"

#define GIT_REASON "git runs hooks and config from it (hooks/, core.hooksPath, core.fsmonitor, " \
                   "core.sshCommand, filters, aliases)"
#define SHELL_REASON "a shell runs it at start or exit"
#define VIM_REASON "vim and neovim run it (exrc)"

/* A trailing '*' in a name matches any rest of the component. */
static const struct protected_rule rules[] = {
        { ".git", GIT_REASON },
        { ".gitmodules", "git runs submodule update commands and fetches the URLs it names" },
        { ".gitattributes", "git runs the filter and diff drivers it names" },
        { ".gitconfig", "git configuration (hooks, fsmonitor, aliases, credential helpers)" },
        { ".hg", "Mercurial runs hooks from .hg/hgrc" },
        { ".envrc", "direnv runs it when you enter the directory" },
        { ".env", "direnv, mise, compose and dotenv loaders put it into the environment "
                  "(LD_PRELOAD, NODE_OPTIONS, ...)" },
        { ".env.*", "dotenv loaders put it into the environment" },
        { ".bashrc", SHELL_REASON },
        { ".bash_profile", SHELL_REASON },
        { ".bash_login", SHELL_REASON },
        { ".bash_logout", SHELL_REASON },
        { ".profile", SHELL_REASON },
        { ".zshrc", SHELL_REASON },
        { ".zshenv", SHELL_REASON },
        { ".zprofile", SHELL_REASON },
        { ".zlogin", SHELL_REASON },
        { ".zlogout", SHELL_REASON },
        { ".kshrc", SHELL_REASON },
        { ".cshrc", SHELL_REASON },
        { ".tcshrc", SHELL_REASON },
        { ".inputrc", "readline binds keys to commands from it" },
        { ".exrc", VIM_REASON },
        { ".vimrc", VIM_REASON },
        { ".nvimrc", VIM_REASON },
        { ".nvim.lua", VIM_REASON },
        { ".vscode", "VS Code runs its tasks (runOn: folderOpen) and the programs its settings name" },
        { ".idea", "JetBrains IDEs run its run configurations, external tools and startup tasks" },
        { ".devcontainer", "dev container tools run its lifecycle commands" },
        { ".mcp.json", "agents start the MCP server commands it names" },
        { ".claude", "agent settings, hooks and MCP servers" },
        { ".cursor", "agent settings, rules and MCP servers" },
        { ".github/workflows", "CI runs it with the repository's secrets once pushed" },
        { ".gitlab-ci.yml", "CI runs it with the repository's secrets once pushed" },
        { ".pre-commit-config.yaml", "pre-commit runs its hooks at git commit" },
        { ".tool-versions", "asdf and mise choose the programs run in this directory from it" },
        { ".mise.toml", "mise runs its env, tasks and hooks when you enter the directory" },
        { "mise.toml", "mise runs its env, tasks and hooks when you enter the directory" },
        { ".mise", "mise configuration and tasks" },
        { ".npmrc", "npm takes script-shell, node-options and the registry from it" },
        { ".yarnrc", "yarn takes the registry and yarn-path from it" },
        { ".yarnrc.yml", "yarn runs the file its yarnPath names" },
        { ".pypirc", "upload credentials and repository URLs" },
        { ".ssh", "ssh keys, authorized_keys and config (ProxyCommand)" },
        { ".bash_aliases", "bash runs it at start (Debian's and Ubuntu's .bashrc source it)" },
        { ".config/git", "git configuration (hooks, fsmonitor, aliases, credential helpers)" },
        { ".config/fish", SHELL_REASON },
        { ".config/autostart", "the desktop session starts its entries at login" },
        { ".config/nvim", "neovim runs its init.lua and plugins at start" },
        { ".aws", "the AWS CLI and SDKs run its credential_process" },
        { ".docker", "docker runs the credential helpers its config names" },
        { ".cargo/config*", "cargo runs the rustc wrappers, runners and aliases it names" },
        { ".husky", "git runs its hooks where core.hooksPath points (husky)" },
        { ".githooks", "git runs its hooks where core.hooksPath points" },
        { "lefthook.yml", "lefthook runs its commands at git commit" },
        { ".lefthook.yml", "lefthook runs its commands at git commit" },
        { "lefthook-local.yml", "lefthook runs its commands at git commit" },
        { NULL, NULL },
};

const struct protected_rule *protected_builtin_list(void)
{
        return rules;
}

const char *protected_pattern_check(const char *pattern)
{
        static const char expect[] = "a relative path or glob (no leading '/', no control characters)";

        if (!pattern[0] || pattern[0] == '/' || strlen(pattern) >= PATH_MAX)
                return expect;
        for (const char *p = pattern; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        return expect;
        return NULL;
}

/* Does component [s, s+n) match name (case folded; trailing '*' = any rest)? */
static bool component_is(const char *s, size_t n, const char *name)
{
        size_t m = strlen(name);

        if (m && name[m - 1] == '*')
                return n >= m - 1 && strncasecmp(s, name, m - 1) == 0;
        return n == m && strncasecmp(s, name, n) == 0;
}

/* Does rule (one or two components) match at component s of path? */
static bool rule_matches_at(const char *s, const char *rule)
{
        const char *slash = strchr(rule, '/');
        size_t n = strcspn(s, "/");

        if (!slash)
                return component_is(s, n, rule);
        _cleanup_free_ char *first = xasprintf("%.*s", (int)(slash - rule), rule);
        if (!component_is(s, n, first) || s[n] != '/')
                return false;
        return rule_matches_at(s + n + 1, slash + 1);
}

static bool extra_matches(const char *path, const char *pattern)
{
        _cleanup_free_ char *pat = xstrdup(pattern);
        _cleanup_free_ char *prefix = NULL;
        size_t len = strlen(pat);
        const int flags = FNM_CASEFOLD | FNM_PATHNAME;

        while (len > 1 && pat[len - 1] == '/')
                pat[--len] = '\0';
        /* the path and every leading part of it: a directory's subtree */
        for (const char *p = path;; p++) {
                if (*p == '/' || *p == '\0') {
                        free(prefix);
                        prefix = xasprintf("%.*s", (int)(p - path), path);
                        if (fnmatch(pat, prefix, flags) == 0)
                                return true;
                }
                if (!*p)
                        break;
        }
        if (strchr(pat, '/'))
                return false;
        /* a bare name: any component, like a .gitignore pattern */
        for (const char *s = path; *s;) {
                size_t n = strcspn(s, "/");
                _cleanup_free_ char *comp = xasprintf("%.*s", (int)n, s);
                if (fnmatch(pat, comp, flags) == 0)
                        return true;
                s += n;
                s += *s == '/';
        }
        return false;
}

const char *protected_path_reason(const char *path, char *const *extra)
{
        for (const char *s = path; *s;) {
                for (const struct protected_rule *r = rules; r->name; r++)
                        if (rule_matches_at(s, r->name))
                                return r->reason;
                s += strcspn(s, "/");
                s += *s == '/';
        }
        for (size_t i = 0; extra && extra[i]; i++)
                if (extra_matches(path, extra[i]))
                        return "matches [apply] protect";
        return NULL;
}

/* The path a symlink at link_path with target names, read as text:
 * relative targets from the link's directory, ".." dropping a component
 * (or nothing, above the top), "." and empty components skipped. An
 * absolute target keeps its components from the root. */
static char *lexical_target(const char *link_path, const char *target)
{
        size_t cap = strlen(link_path) + strlen(target) + 2, len = 0;
        char *out = xcalloc(cap, 1);

        if (target[0] != '/') {
                const char *slash = strrchr(link_path, '/');
                if (slash) {
                        len = (size_t)(slash - link_path);
                        memcpy(out, link_path, len);
                }
        }
        for (const char *s = target; *s;) {
                size_t n = strcspn(s, "/");
                if (n == 2 && s[0] == '.' && s[1] == '.') {
                        char *cut = len ? strrchr(out, '/') : NULL;
                        len = cut ? (size_t)(cut - out) : 0;
                        out[len] = '\0';
                } else if (n && !(n == 1 && s[0] == '.')) {
                        if (len)
                                out[len++] = '/';
                        memcpy(out + len, s, n);
                        len += n;
                        out[len] = '\0';
                }
                s += n;
                s += *s == '/';
        }
        return out;
}

const char *protected_change_reason(const struct change *c, char *const *extra)
{
        const char *why = protected_path_reason(c->path, extra);

        if (why)
                return why;
        if (c->kind != CHANGE_DELETED && S_ISLNK(c->mode) && c->link_target) {
                _cleanup_free_ char *t = lexical_target(c->path, c->link_target);
                if (*t && protected_path_reason(t, extra))
                        return "symlink to a protected path";
        }
        return NULL;
}

/* Names git finds in a repository directory: a change below one of them
 * may be a change to a repository not called .git. */
static bool git_dir_part(const char *s, size_t n)
{
        static const char *const names[] = { "HEAD", "config", "hooks", "objects", "refs", "info", "packed-refs",
                                             "modules", "worktrees", "commondir", "logs", NULL };
        for (const char *const *name = names; *name; name++)
                if (strlen(*name) == n && strncmp(s, *name, n) == 0)
                        return true;
        return false;
}

/* Does path name a file (want_dir false) or directory (true) once the
 * change set is applied: in cs (not deleted), or else on the host? */
static bool will_have(const struct changeset *cs, int host_fd, const char *path, bool want_dir)
{
        const struct change *c = changeset_find(cs, path);
        struct stat st;
        if (c)
                return c->kind != CHANGE_DELETED && (want_dir ? S_ISDIR(c->mode) : S_ISREG(c->mode));
        if (host_fd < 0 || fstatat(host_fd, *path ? path : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        return want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

/* git's own test for a repository directory: HEAD, objects/ and refs/. */
static bool is_git_dir(const struct changeset *cs, int host_fd, const char *dir)
{
        char p[PATH_MAX];
        const char *sep = *dir ? "/" : "";
        return snprintf(p, sizeof(p), "%s%sHEAD", dir, sep) < (int)sizeof(p) && will_have(cs, host_fd, p, false) &&
               snprintf(p, sizeof(p), "%s%sobjects", dir, sep) < (int)sizeof(p) && will_have(cs, host_fd, p, true) &&
               snprintf(p, sizeof(p), "%s%srefs", dir, sep) < (int)sizeof(p) && will_have(cs, host_fd, p, true);
}

const char *protected_repo_reason(const struct changeset *cs, const struct change *c, int host_fd)
{
        char dir[PATH_MAX];
        size_t len = strlen(c->path);

        if (len >= sizeof(dir))
                return NULL;
        /* each component git would read in a repository: is what comes
         * before it one (by git's test, after the change set)? */
        for (size_t at = 0; at < len;) {
                size_t n = strcspn(c->path + at, "/");
                if (git_dir_part(c->path + at, n)) {
                        size_t dlen = at ? at - 1 : 0;
                        memcpy(dir, c->path, dlen);
                        dir[dlen] = '\0';
                        if (is_git_dir(cs, host_fd, dir))
                                return "a git repository without the name .git (HEAD, objects/, refs/): git runs its "
                                       "config and hooks when you work in it";
                }
                at += n;
                at += c->path[at] == '/';
        }
        return NULL;
}

const char *protected_changeset_reason(const struct changeset *cs, const struct change *c, int host_fd,
                                       char *const *extra)
{
        const char *why = protected_change_reason(c, extra);
        return why ? why : protected_repo_reason(cs, c, host_fd);
}
