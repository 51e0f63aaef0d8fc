/* ns.c - uid/gid maps, hostname and loopback for the sandbox (ns.h). */
#include "config.h"

#include <fcntl.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "ns.h"
#include "util.h"

#define OVERFLOW_ID 65534

uid_t ns_host_uid(void)
{
        return geteuid() == 0 ? OVERFLOW_ID : geteuid();
}

gid_t ns_host_gid(void)
{
        return geteuid() == 0 ? OVERFLOW_ID : getegid();
}

static int write_proc(pid_t pid, const char *file, const char *text)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* the kernel takes a map in one write() or not at all */
        ssize_t n = write(fd, text, strlen(text));
        if (n < 0)
                return -errno;
        return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

int ns_write_id_maps(pid_t pid, uid_t inside_uid, gid_t inside_gid, uid_t host_uid, gid_t host_gid)
{
        char map[64];
        int r;

        r = write_proc(pid, "setgroups", "deny");
        if (r < 0 && r != -ENOENT)
                return r;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)inside_uid, (unsigned)host_uid);
        r = write_proc(pid, "uid_map", map);
        if (r < 0)
                return r;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)inside_gid, (unsigned)host_gid);
        return write_proc(pid, "gid_map", map);
}

int ns_set_hostname(const char *name)
{
        if (sethostname(name, strlen(name)) < 0)
                return -errno;
        return 0;
}

int ns_loopback_up(void)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = { 0 };

        if (fd < 0)
                return -errno;
        strcpy(ifr.ifr_name, "lo");
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}
