/* owner.c - the sandbox process behind a captured connection (see
 * owner.h).
 *
 * Cost: one read of the sandbox's TCP table and a walk of init's
 * descendants and their fds, once per connection (tens of syscalls for
 * a small job). It runs in the egress helper after the upstream dial
 * has started, so it overlaps the connect, and never in the supervisor.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/util.h"
#include "net/owner.h"

/* "0100007F:1F90" (IPv4) or 32 hex digits ":PORT" (IPv6), each 32-bit
 * word in host byte order, as the kernel prints them. */
static bool parse_proc_addr(const char *s, struct egress_addr *a, uint16_t *port)
{
        size_t n = strcspn(s, ":");
        unsigned p;
        if (s[n] != ':' || (n != 8 && n != 32) || sscanf(s + n + 1, "%x", &p) != 1)
                return false;
        uint8_t raw[16];
        for (size_t w = 0; w < n / 8; w++) {
                char word[9];
                memcpy(word, s + w * 8, 8);
                word[8] = '\0';
                uint32_t v = (uint32_t)strtoul(word, NULL, 16);
                memcpy(raw + w * 4, &v, 4);
        }
        char text[64];
        struct egress_addr tmp = { .family = n == 8 ? AF_INET : AF_INET6 };
        memcpy(tmp.bytes, raw, n / 2);
        /* normalise v4-mapped addresses the way rules.c does */
        egress_addr_text(&tmp, text, sizeof(text));
        if (egress_addr_parse(text, a) < 0)
                return false;
        *port = (uint16_t)p;
        return true;
}

static unsigned long find_inode(pid_t init_pid, const struct egress_addr *job, uint16_t job_port,
                                const struct egress_addr *dest, uint16_t dest_port)
{
        for (int v6 = 0; v6 < 2; v6++) {
                char path[64], line[512];
                snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)init_pid, v6 ? "tcp6" : "tcp");
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof(line), f)) {
                        char local[64], remote[64];
                        unsigned long inode;
                        struct egress_addr la, ra;
                        uint16_t lp, rp;
                        if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, remote, &inode) != 3)
                                continue;
                        if (!parse_proc_addr(local, &la, &lp) || !parse_proc_addr(remote, &ra, &rp))
                                continue;
                        if (lp == job_port && rp == dest_port && egress_addr_equal(&la, job) &&
                            egress_addr_equal(&ra, dest) && inode != 0)
                                return inode;
                }
        }
        return 0;
}

/* The last NSpid of pid: its pid in the innermost namespace. */
static pid_t inner_pid(const char *pid)
{
        char path[64], line[256];
        pid_t inner = 0;
        snprintf(path, sizeof(path), "/proc/%s/status", pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (startswith(line, "NSpid:")) {
                        char *save = NULL;
                        for (char *t = strtok_r(line + 6, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
                                inner = (pid_t)atoi(t);
                }
        return inner;
}

/* Whether process pid holds an fd naming want ("socket:[INODE]"). */
static bool holds(pid_t pid, const char *want)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        DIR *fds = opendir(path);
        bool found = false;
        if (!fds)
                return false;
        for (struct dirent *fe; !found && (fe = readdir(fds));) {
                char fdpath[96], target[64];
                if (fe->d_name[0] == '.')
                        continue;
                snprintf(fdpath, sizeof(fdpath), "/proc/%d/fd/%s", (int)pid, fe->d_name);
                ssize_t n = readlink(fdpath, target, sizeof(target) - 1);
                if (n <= 0)
                        continue;
                target[n] = '\0';
                found = streq(target, want);
        }
        closedir(fds);
        return found;
}

/* Append the children of every thread of pid to *list. */
static void add_children(pid_t pid, pid_t **list, size_t *n)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *tasks = opendir(path);
        if (!tasks)
                return;
        for (struct dirent *te; (te = readdir(tasks));) {
                if (te->d_name[0] == '.')
                        continue;
                char cpath[96];
                snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid, te->d_name);
                _cleanup_fclose_ FILE *f = fopen(cpath, "re");
                int child;
                while (f && fscanf(f, "%d", &child) == 1 && *n < 65536) {
                        *list = xrealloc(*list, (*n + 1) * sizeof(**list));
                        (*list)[(*n)++] = child;
                }
        }
        closedir(tasks);
}

pid_t egress_socket_owner(pid_t init_pid, const struct egress_addr *job, uint16_t job_port,
                          const struct egress_addr *dest, uint16_t dest_port)
{
        char want[64];

        unsigned long inode = find_inode(init_pid, job, job_port, dest, dest_port);
        if (!inode)
                return 0;
        snprintf(want, sizeof(want), "socket:[%lu]", inode);
        /* The sandbox's processes are init's descendants: walk them from
         * init (a handful), not the host's whole /proc. */
        _cleanup_free_ pid_t *list = xmalloc(sizeof(pid_t));
        size_t n = 0;
        list[n++] = init_pid;
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && holds(list[i], want)) {
                        char name[16];
                        snprintf(name, sizeof(name), "%d", (int)list[i]);
                        return inner_pid(name);
                }
                add_children(list[i], &list, &n);
        }
        return 0;
}
