/* test-landlock.c - unit tests for the landlock tier's parts: the rights
 * and the missing list per ABI (pure), the plan built over a test tree
 * (masks, symlinks, network, scopes), the plan applied for real in a
 * forked child (a write outside the scratch is denied), the socket
 * families filter (interpreted, then loaded), the reaper ending a
 * setsid() daemon, and the scratch's upper dir.
 */
#include "config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "limits/du.h"
#include "sandbox/landlock.h"
#include "sandbox/reaper.h"
#include "sandbox/seccomp.h"
#include "workspace/scratch.h"
#include "workspace/snapshot.h"
#include "lib/fsutil.h"
#include "lib/util.h"
#include "test-seccomp.h"

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REFER (1ULL << 13)
#define FS_TRUNCATE (1ULL << 14)
#define FS_IOCTL_DEV (1ULL << 15)

static void rights_by_abi(void **state)
{
        (void)state;
        assert_int_equal(landlock_fs_rights(0), 0);
        assert_int_equal(landlock_fs_rights(1), (1ULL << 13) - 1);
        assert_int_equal(landlock_fs_rights(2), ((1ULL << 13) - 1) | FS_REFER);
        assert_int_equal(landlock_fs_rights(3), ((1ULL << 13) - 1) | FS_REFER | FS_TRUNCATE);
        /* ABI 4 adds network rights only */
        assert_int_equal(landlock_fs_rights(4), landlock_fs_rights(3));
        assert_int_equal(landlock_fs_rights(5), landlock_fs_rights(3) | FS_IOCTL_DEV);
        assert_int_equal(landlock_fs_rights(7), landlock_fs_rights(5));
        assert_int_equal(landlock_file_rights(1), FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE);
        assert_int_equal(landlock_file_rights(5),
                         FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV);
}

static bool mentions(char **v, const char *word)
{
        for (char **p = v; p && *p; p++)
                if (strstr(*p, word))
                        return true;
        return false;
}

static void missing_by_abi(void **state)
{
        (void)state;
        char **v = landlock_missing(7, LANDLOCK_NET_NONE, NULL);
        assert_null(v);
        v = landlock_missing(6, LANDLOCK_NET_PROXY, NULL);
        assert_null(v);
        v = landlock_missing(5, LANDLOCK_NET_NONE, NULL);
        assert_int_equal(strv_length(v), 2);
        assert_true(mentions(v, "abstract unix sockets"));
        assert_true(mentions(v, "signals"));
        strv_free(v);
        v = landlock_missing(3, LANDLOCK_NET_NONE, NULL);
        assert_true(mentions(v, "TCP"));
        assert_true(mentions(v, "ioctl"));
        assert_false(mentions(v, "truncation"));
        strv_free(v);
        /* with the host's network nothing of TCP was asked for */
        v = landlock_missing(3, LANDLOCK_NET_HOST, NULL);
        assert_false(mentions(v, "TCP"));
        strv_free(v);
        v = landlock_missing(1, LANDLOCK_NET_NONE, NULL);
        assert_int_equal(strv_length(v), 6);
        assert_true(mentions(v, "EXDEV"));
        assert_true(mentions(v, "truncation"));
        strv_free(v);
}

/* The test tree: R/{sub/{secret,ok},link->/,top}, W/, and a symlink
 * to R (S). */
struct tree {
        char base[64];
        char r[96], w[96], s[96], secret[128], ok[128], sub[128], link[128], top[128];
};

static void make_tree(struct tree *t)
{
        snprintf(t->base, sizeof(t->base), "/tmp/hutch-test-ll-XXXXXX");
        assert_non_null(mkdtemp(t->base));
        snprintf(t->r, sizeof(t->r), "%s/R", t->base);
        snprintf(t->w, sizeof(t->w), "%s/W", t->base);
        snprintf(t->s, sizeof(t->s), "%s/S", t->base);
        snprintf(t->sub, sizeof(t->sub), "%s/sub", t->r);
        snprintf(t->secret, sizeof(t->secret), "%s/secret", t->sub);
        snprintf(t->ok, sizeof(t->ok), "%s/ok", t->sub);
        snprintf(t->link, sizeof(t->link), "%s/link", t->r);
        snprintf(t->top, sizeof(t->top), "%s/top", t->r);
        assert_int_equal(mkdir(t->r, 0755), 0);
        assert_int_equal(mkdir(t->w, 0755), 0);
        assert_int_equal(mkdir(t->sub, 0755), 0);
        assert_int_equal(write_file(t->secret, "secret\n", 0644), 0);
        assert_int_equal(write_file(t->ok, "ok\n", 0644), 0);
        assert_int_equal(write_file(t->top, "top\n", 0644), 0);
        assert_int_equal(symlink("/", t->link), 0);
        assert_int_equal(symlink(t->r, t->s), 0);
}

static void remove_tree(struct tree *t)
{
        (void)fs_remove_tree_at(AT_FDCWD, t->base);
}

static const struct landlock_rule *find_rule(const struct landlock_plan *p, const char *path)
{
        for (size_t i = 0; i < p->n_rules; i++)
                if (streq(p->rules[i].path, path))
                        return &p->rules[i];
        return NULL;
}

static void plan_masks_and_symlinks(void **state)
{
        (void)state;
        struct tree t;
        make_tree(&t);
        /* the read dir is named through a symlink: masks still apply */
        char *read_dirs[] = { t.s, "/nonexistent-hutch-dir", NULL };
        char *write_paths[] = { t.w, NULL };
        char *masks[] = { t.secret, NULL };
        struct landlock_request req = { .read_dirs = read_dirs, .write_paths = write_paths, .masks = masks };
        struct landlock_plan p;
        assert_int_equal(landlock_plan_build(&req, 7, &p, NULL), 0);
        assert_int_equal(p.abi, 7);
        assert_null(find_rule(&p, t.r));        /* holds a masked path */
        assert_null(find_rule(&p, t.sub));
        assert_null(find_rule(&p, t.secret));
        assert_null(find_rule(&p, t.link));     /* never a symlink's target */
        assert_null(find_rule(&p, "/"));
        const struct landlock_rule *ok = find_rule(&p, t.ok), *top = find_rule(&p, t.top);
        assert_non_null(ok);
        assert_non_null(top);
        assert_int_equal(ok->access, FS_EXECUTE | FS_READ_FILE);
        const struct landlock_rule *w = find_rule(&p, t.w);
        assert_non_null(w);
        assert_int_equal(w->access, landlock_fs_rights(7));
        assert_non_null(find_rule(&p, "/proc"));
        assert_non_null(find_rule(&p, "/dev/null"));
        assert_null(find_rule(&p, "/dev/tty"));
        assert_int_equal(p.net_handled, 3);
        assert_int_equal(p.connect_port, 0);
        assert_int_equal(p.scoped, 3);
        assert_null(p.missing);
        landlock_plan_done(&p);

        /* without masks the read dir is one rule, at its real path */
        req.masks = NULL;
        assert_int_equal(landlock_plan_build(&req, 7, &p, NULL), 0);
        assert_non_null(find_rule(&p, t.r));
        assert_null(find_rule(&p, t.s));
        landlock_plan_done(&p);
        remove_tree(&t);
}

static void plan_network_and_abi(void **state)
{
        (void)state;
        struct tree t;
        make_tree(&t);
        char *write_paths[] = { t.w, NULL };
        struct landlock_request req = { .write_paths = write_paths, .net = LANDLOCK_NET_PROXY,
                                        .proxy_port = 3128, .tty = true };
        struct landlock_plan p;
        assert_int_equal(landlock_plan_build(&req, 4, &p, NULL), 0);
        assert_int_equal(p.net_handled, 3);
        assert_int_equal(p.connect_port, 3128);
        assert_int_equal(p.scoped, 0);
        assert_true(mentions(p.missing, "signals"));
        assert_non_null(find_rule(&p, "/dev/tty"));
        landlock_plan_done(&p);

        req.net = LANDLOCK_NET_HOST;
        assert_int_equal(landlock_plan_build(&req, 7, &p, NULL), 0);
        assert_int_equal(p.net_handled, 0);
        landlock_plan_done(&p);

        /* ABI 3: no network rights; the plan says what it lacks */
        req.net = LANDLOCK_NET_NONE;
        assert_int_equal(landlock_plan_build(&req, 3, &p, NULL), 0);
        assert_int_equal(p.net_handled, 0);
        assert_int_equal(p.fs_handled, landlock_fs_rights(3));
        assert_true(mentions(p.missing, "TCP"));
        landlock_plan_done(&p);

        /* a newer kernel is used at the ABI we know */
        assert_int_equal(landlock_plan_build(&req, 99, &p, NULL), 0);
        assert_int_equal(p.abi, LANDLOCK_ABI_KNOWN);
        landlock_plan_done(&p);

        /* a --ro path must exist, and is named */
        char *gone[] = { "/nonexistent-hutch-ro", NULL };
        req.read_paths = gone;
        const char *failed = NULL;
        assert_int_equal(landlock_plan_build(&req, 7, &p, &failed), -ENOENT);
        assert_string_equal(failed, "/nonexistent-hutch-ro");
        assert_int_equal(landlock_plan_build(&req, 0, &p, &failed), -EINVAL);
        remove_tree(&t);
}

/* For real: in a forked child, apply a plan that reads the test tree
 * (secret masked) and writes W, then try. */
static void apply_denies_outside_scratch(void **state)
{
        (void)state;
        int abi = landlock_abi();
        if (abi < 1) {
                print_message("# skip: Landlock is not enabled on this kernel\n");
                skip();
        }
        struct tree t;
        make_tree(&t);
        char *read_dirs[] = { t.r, NULL };
        char *write_paths[] = { t.w, NULL };
        char *masks[] = { t.secret, NULL };
        struct landlock_request req = { .read_dirs = read_dirs, .write_paths = write_paths, .masks = masks };
        struct landlock_plan p;
        assert_int_equal(landlock_plan_build(&req, abi, &p, NULL), 0);
        char outside[128], inside[128];
        snprintf(outside, sizeof(outside), "%s/outside", t.base);
        snprintf(inside, sizeof(inside), "%s/inside", t.w);

        /* a listener outside the domain, for the connect check */
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        assert_true(ls >= 0);
        assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(ls, 1), 0);
        assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &len), 0);

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
                const char *failed = NULL;
                CHECK(landlock_plan_apply(&p, &failed) == 0);
                CHECK_OK(open(inside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
                CHECK_ERRNO(open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
                CHECK_ERRNO(open(t.top, O_WRONLY | O_CLOEXEC), EACCES);
                CHECK_ERRNO(open(t.secret, O_RDONLY | O_CLOEXEC), EACCES);
                CHECK_OK(open(t.ok, O_RDONLY | O_CLOEXEC));
                CHECK_ERRNO(open("/etc/hostname", O_RDONLY | O_CLOEXEC), EACCES);
                CHECK_OK(open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC));
                if (abi >= 4) {
                        int s = socket(AF_INET, SOCK_STREAM, 0);
                        CHECK(s >= 0);
                        CHECK_ERRNO(connect(s, (struct sockaddr *)&sa, sizeof(sa)), EACCES);
                        struct sockaddr_in any = { .sin_family = AF_INET,
                                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                        CHECK_ERRNO(bind(s, (struct sockaddr *)&any, sizeof(any)), EACCES);
                }
                if (abi >= 6)
                        CHECK_ERRNO(kill(getppid(), 0), EPERM);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_exited_ok(status);
        close(ls);
        landlock_plan_done(&p);
        assert_int_equal(access(outside, F_OK), -1);
        remove_tree(&t);
}

static uint32_t socket_answer(const struct sock_filter *f, size_t n, int family, int type)
{
        struct seccomp_data d = { .nr = SYS_socket, .arch = seccomp_arch_native() };
        d.args[0] = (uint64_t)family;
        d.args[1] = (uint64_t)type;
        return bpf_run(f, n, &d);
}

#define ALLOW SECCOMP_RET_ALLOW
#define ERR(e) (SECCOMP_RET_ERRNO | (e))

static uint32_t socketpair_answer(const struct sock_filter *f, size_t n, int family, int type)
{
        struct seccomp_data d = { .nr = SYS_socketpair, .arch = seccomp_arch_native() };
        d.args[0] = (uint64_t)family;
        d.args[1] = (uint64_t)type;
        return bpf_run(f, n, &d);
}

static void socket_families(void **state)
{
        (void)state;
        struct sock_filter f[SECCOMP_SOCKETS_MAX_INSNS];
        size_t n;
        assert_int_equal(seccomp_sockets_build(SECCOMP_SOCKETS_NONE, f, ELEMENTSOF(f), &n), 0);
        /* a unix socket could connect to any path: socketpair only */
        assert_int_equal(socket_answer(f, n, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC), ERR(EAFNOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_INET, SOCK_STREAM), ERR(EAFNOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_INET6, SOCK_DGRAM), ERR(EAFNOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_NETLINK, SOCK_RAW), ERR(EAFNOSUPPORT));
        /* a datagram pair's socket sends to any path: stream and seqpacket pairs only */
        for (enum seccomp_sockets m = 0; m < _SECCOMP_SOCKETS_MAX; m++) {
                size_t k;
                struct sock_filter g[SECCOMP_SOCKETS_MAX_INSNS];
                assert_int_equal(seccomp_sockets_build(m, g, ELEMENTSOF(g), &k), 0);
                assert_int_equal(socketpair_answer(g, k, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC), ALLOW);
                assert_int_equal(socketpair_answer(g, k, AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK), ALLOW);
                assert_int_equal(socketpair_answer(g, k, AF_UNIX, SOCK_DGRAM), ERR(EPROTONOSUPPORT));
                assert_int_equal(socketpair_answer(g, k, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC), ERR(EPROTONOSUPPORT));
                assert_int_equal(socketpair_answer(g, k, AF_INET, SOCK_STREAM), ERR(EPROTONOSUPPORT));
        }
        struct seccomp_data other = { .nr = SYS_getpid, .arch = seccomp_arch_native() };
        assert_int_equal(bpf_run(f, n, &other), ALLOW);
        /* network none: a socketpair end bound to an abstract name would
         * hold it in the host's namespace */
        other.nr = SYS_bind;
        assert_int_equal(bpf_run(f, n, &other), ERR(EACCES));
        other.nr = SYS_connect;
        assert_int_equal(bpf_run(f, n, &other), ALLOW);

        assert_int_equal(seccomp_sockets_build(SECCOMP_SOCKETS_TCP, f, ELEMENTSOF(f), &n), 0);
        assert_int_equal(socket_answer(f, n, AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC), ALLOW);
        assert_int_equal(socket_answer(f, n, AF_INET6, SOCK_STREAM), ALLOW);
        assert_int_equal(socket_answer(f, n, AF_INET, SOCK_DGRAM), ERR(EPROTONOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_INET6, SOCK_RAW), ERR(EPROTONOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_NETLINK, SOCK_RAW), ERR(EAFNOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_PACKET, SOCK_RAW), ERR(EAFNOSUPPORT));
        assert_int_equal(socket_answer(f, n, AF_UNIX, SOCK_DGRAM), ERR(EAFNOSUPPORT));
        /* network allow's other calls: connect to init, no bind, listen or TCP Fast Open */
        struct seccomp_data d = { .nr = SYS_connect, .arch = seccomp_arch_native() };
        assert_int_equal(bpf_run(f, n, &d), SECCOMP_RET_USER_NOTIF);
        d.nr = SYS_bind;
        assert_int_equal(bpf_run(f, n, &d), ERR(EACCES));
        d.nr = SYS_listen;
        assert_int_equal(bpf_run(f, n, &d), ERR(EACCES));
        d = (struct seccomp_data){ .nr = SYS_sendmsg, .arch = seccomp_arch_native(), .args = { 3, 0, MSG_FASTOPEN } };
        assert_int_equal(bpf_run(f, n, &d), ERR(EOPNOTSUPP));
        d.args[2] = MSG_NOSIGNAL;
        assert_int_equal(bpf_run(f, n, &d), ALLOW);
        d = (struct seccomp_data){ .nr = SYS_sendto, .arch = seccomp_arch_native(),
                                   .args = { 3, 0, 1, MSG_FASTOPEN | MSG_NOSIGNAL } };
        assert_int_equal(bpf_run(f, n, &d), ERR(EOPNOTSUPP));
        d.args[3] = 0;
        assert_int_equal(bpf_run(f, n, &d), ALLOW);
        d.nr = SYS_sendmmsg;
        d.args[3] = MSG_FASTOPEN;
        assert_int_equal(bpf_run(f, n, &d), ERR(EOPNOTSUPP));
        d = (struct seccomp_data){ .nr = SYS_socket, .arch = seccomp_arch_native(),
                                   .args = { AF_INET, SOCK_STREAM, IPPROTO_SCTP } };
        assert_int_equal(bpf_run(f, n, &d), ERR(EPROTONOSUPPORT));
        d.args[2] = IPPROTO_TCP;
        assert_int_equal(bpf_run(f, n, &d), ALLOW);
        d = (struct seccomp_data){ .nr = SYS_getpid, .arch = seccomp_arch_native() };
        assert_int_equal(bpf_run(f, n, &d), ALLOW);

        assert_int_equal(seccomp_sockets_build(SECCOMP_SOCKETS_ALL_INET, f, ELEMENTSOF(f), &n), 0);
        assert_int_equal(socket_answer(f, n, AF_INET, SOCK_DGRAM), ALLOW);
        assert_int_equal(socket_answer(f, n, AF_NETLINK, SOCK_RAW), ALLOW);
        assert_int_equal(socket_answer(f, n, AF_PACKET, SOCK_RAW), ERR(EAFNOSUPPORT));
        /* network host: inet servers bind */
        d = (struct seccomp_data){ .nr = SYS_bind, .arch = seccomp_arch_native() };
        assert_int_equal(bpf_run(f, n, &d), ALLOW);
        assert_int_equal(seccomp_sockets_build(_SECCOMP_SOCKETS_MAX, f, ELEMENTSOF(f), &n), -EINVAL);

        /* and loaded */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
                int listener = -1;
                CHECK(seccomp_sockets_load(SECCOMP_SOCKETS_TCP, &listener) == 0);
                CHECK(listener >= 0 && (fcntl(listener, F_GETFD) & FD_CLOEXEC));
                CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
                CHECK_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP), EPROTONOSUPPORT);
                int s = socket(AF_INET6, SOCK_STREAM, IPPROTO_TCP);
                CHECK_OK(s);
                CHECK_ERRNO(listen(s, 1), EACCES);
                CHECK_ERRNO(bind(s, (struct sockaddr *)&(struct sockaddr_in6){ .sin6_family = AF_INET6 },
                                 sizeof(struct sockaddr_in6)), EACCES);
                CHECK_ERRNO(sendto(s, "x", 1, MSG_FASTOPEN, NULL, 0), EOPNOTSUPP);
                CHECK_ERRNO(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
                int pair[2];
                CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair));
                CHECK_ERRNO(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), EPROTONOSUPPORT);
                CHECK_ERRNO(socket(AF_INET, SOCK_DGRAM, 0), EPROTONOSUPPORT);
                CHECK_ERRNO(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPROTONOSUPPORT);
                CHECK_ERRNO(socket(AF_NETLINK, SOCK_RAW, 0), EAFNOSUPPORT);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_exited_ok(status);
}

/* A subreaper whose child starts a setsid() daemon (double fork) and
 * exits: the daemon re-parents to the subreaper, and the reaper ends it. */
static void reaper_ends_daemon(void **state)
{
        (void)state;
        int pipefd[2];
        assert_int_equal(pipe(pipefd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                CHECK(reaper_become() == 0);
                pid_t c = fork();
                CHECK(c >= 0);
                if (c == 0) {
                        setsid();
                        pid_t d = fork();
                        if (d == 0) {
                                char b = 'x';
                                (void)!write(pipefd[1], &b, 1);
                                for (;;)
                                        pause();
                        }
                        _exit(0);
                }
                CHECK(waitpid(c, NULL, 0) == c);
                char b;
                CHECK(read(pipefd[0], &b, 1) == 1);
                pid_t kids[8];
                CHECK(reaper_children(kids, ELEMENTSOF(kids)) == 1);
                pid_t daemon = kids[0];
                CHECK(reaper_end_children(NULL, 0) == 1);
                CHECK(reaper_children(kids, ELEMENTSOF(kids)) == 0);
                CHECK_ERRNO(kill(daemon, 0), ESRCH);
                /* a kept child is left alone */
                pid_t k = fork();
                if (k == 0) {
                        for (;;)
                                pause();
                }
                CHECK(reaper_end_children(&k, 1) == 0);
                CHECK_OK(kill(k, 0));
                kill(k, SIGKILL);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_exited_ok(status);
        close(pipefd[0]);
        close(pipefd[1]);
}

static bool is_whiteout(int dirfd, const char *name)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
                return true;
        return S_ISREG(st.st_mode) && st.st_size == 0;
}

static void scratch_upper(void **state)
{
        (void)state;
        char lower[] = "/tmp/hutch-test-lower-XXXXXX";
        assert_non_null(mkdtemp(lower));
        char p[256];
        static const char *const files[] = { "same", "changed", "gone", "d/inner", "d2/x" };
        snprintf(p, sizeof(p), "%s/d", lower);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/d2", lower);
        assert_int_equal(mkdir(p, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(p, sizeof(p), "%s/%s", lower, files[i]);
                assert_int_equal(write_file(p, "v1\n", 0644), 0);
        }
        struct scratch s;
        assert_int_equal(scratch_create("/tmp", geteuid(), getegid(), &s), 0);
        int lower_fd = open(lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(lower_fd >= 0);
        struct snapshot_limits lim = { 0 };
        struct snapshot_stats st;
        char *failed = NULL;
        assert_int_equal(scratch_fill(&s, lower_fd, &lim, &st, &failed), 0);
        /* the job, once it may start: change one file, delete one file
         * and a dir, add one */
        scratch_settle(&s);
        snprintf(p, sizeof(p), "%s/changed", s.workspace);
        assert_int_equal(write_file(p, "v2\n", 0644), 0);
        snprintf(p, sizeof(p), "%s/gone", s.workspace);
        assert_int_equal(unlink(p), 0);
        snprintf(p, sizeof(p), "%s/d2", s.workspace);
        assert_int_equal(fs_remove_tree_at(AT_FDCWD, p), 0);
        snprintf(p, sizeof(p), "%s/d/new", s.workspace);
        assert_int_equal(write_file(p, "new\n", 0644), 0);
        int upper = -1;
        assert_int_equal(scratch_build_upper(&s, lower_fd, &upper), 0);
        struct stat sb;
        assert_int_equal(fstatat(upper, "changed", &sb, 0), 0);
        assert_int_equal(fstatat(upper, "d/new", &sb, 0), 0);
        assert_int_equal(fstatat(upper, "d", &sb, 0), 0);
        assert_true(S_ISDIR(sb.st_mode));
        assert_true(is_whiteout(upper, "gone"));
        assert_true(is_whiteout(upper, "d2"));
        /* untouched since the copy: not in the upper dir */
        assert_int_equal(fstatat(upper, "same", &sb, AT_SYMLINK_NOFOLLOW), -1);
        assert_int_equal(fstatat(upper, "d/inner", &sb, AT_SYMLINK_NOFOLLOW), -1);
        close(upper);
        close(lower_fd);
        char *dir = xstrdup(s.dir);
        assert_int_equal(scratch_remove(&s), 0);
        assert_int_equal(access(dir, F_OK), -1);
        free(dir);
        (void)fs_remove_tree_at(AT_FDCWD, lower);
        free(failed);
}

/* The landlock tier's disk watch: blocks, not sizes; a file with many
 * links once; every entry; slices that resume; a tree too deep. */
static void disk_usage(void **state)
{
        (void)state;
        char dir[] = "/tmp/hutch-test-du-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char p[512], q[512];
        struct du *d = NULL;
        struct du_sample s;
        assert_int_equal(du_new(dir, &d), 0);
        assert_int_equal(du_step(d, UINT64_MAX, &s), 1);
        uint64_t empty = s.bytes;
        assert_int_equal(s.entries, 0);

        /* a sparse file of 64M takes (almost) nothing */
        snprintf(p, sizeof(p), "%s/sparse", dir);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 64 << 20), 0);
        close(fd);
        /* 1M of data, linked five times */
        snprintf(p, sizeof(p), "%s/data", dir);
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        static char block[64 << 10];
        memset(block, 'x', sizeof(block));
        for (int i = 0; i < 16; i++)
                assert_int_equal(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
        assert_int_equal(fsync(fd), 0);
        close(fd);
        for (int i = 0; i < 4; i++) {
                snprintf(q, sizeof(q), "%s/link%d", dir, i);
                assert_int_equal(link(p, q), 0);
        }
        assert_int_equal(du_step(d, UINT64_MAX, &s), 1);
        assert_int_equal(s.entries, 6);
        assert_true(s.bytes - empty >= (1 << 20));
        assert_true(s.bytes - empty < (1 << 20) + (256 << 10));

        /* many entries: a slice of no time counts a lower bound, and the
         * round goes on where it stopped */
        snprintf(p, sizeof(p), "%s/many", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        for (int i = 0; i < 500; i++) {
                snprintf(q, sizeof(q), "%s/many/f%d", dir, i);
                assert_int_equal(write_file(q, "", 0644), 0);
        }
        int r, slices = 0;
        while ((r = du_step(d, 0, &s)) == 0) {
                assert_true(s.entries <= 507);
                slices++;
        }
        assert_int_equal(r, 1);
        assert_true(slices > 1);
        assert_int_equal(s.entries, 507);

        /* nested past the walk's reach */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (int i = 0; i < DU_MAX_DEPTH + 2; i++) {
                assert_int_equal(mkdirat(dfd, "n", 0755), 0);
                int n = openat(dfd, "n", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(n >= 0);
                close(dfd);
                dfd = n;
        }
        close(dfd);
        assert_int_equal(du_step(d, UINT64_MAX, &s), -ELOOP);
        du_free(d);
        (void)fs_remove_tree_at(AT_FDCWD, dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(rights_by_abi),
                cmocka_unit_test(missing_by_abi),
                cmocka_unit_test(plan_masks_and_symlinks),
                cmocka_unit_test(plan_network_and_abi),
                cmocka_unit_test(apply_denies_outside_scratch),
                cmocka_unit_test(socket_families),
                cmocka_unit_test(reaper_ends_daemon),
                cmocka_unit_test(scratch_upper),
                cmocka_unit_test(disk_usage),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
