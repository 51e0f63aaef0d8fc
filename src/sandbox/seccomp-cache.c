/* seccomp-cache.c - the compiled policy as one blob of classic BPF (see
 * seccomp.h): exporting a built policy to a blob, installing a blob with
 * two seccomp(2) calls, and the cache of blobs keyed by content that
 * seccomp_policy_compile() reads and writes.
 *
 * A cache file is named by a digest of everything that decides the
 * filter (cache_key()), so a changed input is a miss, never a stale hit.
 * Files are written under a temporary name and renamed into place; a
 * cache that cannot be read or written is ignored.
 */
#include "config.h"

#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "lib/digest.h"
#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

/* Blob layout: magic, instruction counts of the argument filter and the
 * name filter, then both programs back to back (argument filter first,
 * the order seccomp_policy_load() installs them in). */
#define BLOB_MAGIC 0x68757463u  /* "hutc" */
struct blob_header {
        uint32_t magic;
        uint32_t n_args;
        uint32_t n_names;
};

static int export_one(scmp_filter_ctx ctx, int memfd, size_t *ret_insns)
{
        off_t start = lseek(memfd, 0, SEEK_END);
        if (start < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, memfd);
        if (r < 0)
                return r;
        off_t end = lseek(memfd, 0, SEEK_END);
        if (end < 0)
                return -errno;
        if ((end - start) % (off_t)sizeof(struct sock_filter))
                return -EIO;
        *ret_insns = (size_t)(end - start) / sizeof(struct sock_filter);
        return 0;
}

int seccomp_policy_export(const struct seccomp_policy *p, void **ret, size_t *ret_len)
{
        size_t n_args, n_names;
        int r;

        if (!p || !p->names || !p->args)
                return -EINVAL;
        _cleanup_close_ int fd = memfd_create("hutch-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct blob_header h = { .magic = BLOB_MAGIC };
        r = write_all(fd, &h, sizeof(h));
        if (r < 0)
                return r;
        r = export_one(p->args, fd, &n_args);
        if (r < 0)
                return r;
        r = export_one(p->names, fd, &n_names);
        if (r < 0)
                return r;
        size_t len = sizeof(h) + (n_args + n_names) * sizeof(struct sock_filter);
        char *buf = xmalloc(len);
        if (pread(fd, buf, len, 0) != (ssize_t)len) {
                free(buf);
                return -EIO;
        }
        h.n_args = (uint32_t)n_args;
        h.n_names = (uint32_t)n_names;
        memcpy(buf, &h, sizeof(h));
        *ret = buf;
        *ret_len = len;
        return 0;
}

int seccomp_blob_load(const void *blob, size_t len)
{
        struct blob_header h;

        if (!blob || len < sizeof(h))
                return -EINVAL;
        memcpy(&h, blob, sizeof(h));
        /* BPF_MAXINSNS bounds each program; the kernel checks the rest */
        if (h.magic != BLOB_MAGIC || h.n_args == 0 || h.n_names == 0 ||
            h.n_args > BPF_MAXINSNS || h.n_names > BPF_MAXINSNS ||
            len != sizeof(h) + ((size_t)h.n_args + h.n_names) * sizeof(struct sock_filter))
                return -EINVAL;
        /* the programs start 12 bytes in: copy them to aligned memory */
        size_t n = (size_t)h.n_args + h.n_names;
        _cleanup_free_ struct sock_filter *insns = xmalloc(n * sizeof(*insns));
        memcpy(insns, (const char *)blob + sizeof(h), n * sizeof(*insns));
        struct sock_fprog args = { .len = (unsigned short)h.n_args, .filter = insns };
        struct sock_fprog names = { .len = (unsigned short)h.n_names, .filter = insns + h.n_args };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &args) < 0)
                return -errno;
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &names) < 0)
                return -errno;
        return 0;
}

static const char *native_arch_name(void)
{
        switch (seccomp_arch_native()) {
        case SCMP_ARCH_X86_64: return "x86_64";
        case SCMP_ARCH_AARCH64: return "aarch64";
        case SCMP_ARCH_X86: return "x86";
        case SCMP_ARCH_ARM: return "arm";
        case SCMP_ARCH_PPC64LE: return "ppc64le";
        case SCMP_ARCH_S390X: return "s390x";
        case SCMP_ARCH_RISCV64: return "riscv64";
        }
        return "native";
}

static void key_add(struct digest *d, const char *label, const char *value)
{
        digest_update(d, label, strlen(label) + 1);
        if (value)
                digest_update(d, value, strlen(value) + 1);
        else
                digest_update(d, "\x01null", 6);
}

static void key_add_list(struct digest *d, const char *label, char **list)
{
        key_add(d, label, NULL);
        for (char **p = list; p && *p; p++)
                key_add(d, "item", *p);
}

/* The cache key of s, or -errno when an input cannot be looked at (then
 * nothing is cached). */
static int cache_key(const struct seccomp_settings *s, char hex[DIGEST_HEX_SIZE])
{
        _cleanup_free_ char *path = seccomp_groups_path();
        const struct scmp_version *v = seccomp_version();
        struct stat st;
        struct digest d;
        char buf[160];

        if (stat(path, &st) < 0)
                return -errno;
        digest_init(&d);
        /* bumped whenever the same settings build a different policy
         * (2: allow_ptrace lets ADDR_NO_RANDOMIZE through), so no run
         * picks up a blob an older build cached */
        key_add(&d, "format", "hutch-bpf-cache 2");
        key_add(&d, "hutch", PACKAGE_VERSION);
        snprintf(buf, sizeof(buf), "%u.%u.%u", v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0);
        key_add(&d, "libseccomp", buf);
        key_add(&d, "arch", native_arch_name());
        key_add(&d, "groups", path);
        snprintf(buf, sizeof(buf), "%llu:%llu:%llu:%lld.%09ld", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        key_add(&d, "groups-stat", buf);
        key_add(&d, "action", s->default_action);
        snprintf(buf, sizeof(buf), "%d%d%d%d", s->allow_list_mode, s->allow_ptrace, s->allow_io_uring,
                 s->allow_namespaces);
        key_add(&d, "switches", buf);
        key_add_list(&d, "deny", s->deny);
        key_add_list(&d, "allow", s->allow);
        digest_final_hex(&d, hex);
        return 0;
}

/* Cache file: "hutch-bpf <syscalls> <rules>\n" then the blob. */
static int cache_read(const char *path, void **ret_blob, size_t *ret_len, unsigned *ret_syscalls,
                      unsigned *ret_rules)
{
        _cleanup_free_ char *data = NULL;
        size_t len;
        unsigned syscalls, rules;
        int r = read_file(path, &data, &len);
        if (r < 0)
                return r;
        char *nl = memchr(data, '\n', len);
        if (!nl || sscanf(data, "hutch-bpf %u %u", &syscalls, &rules) != 2)
                return -EBADMSG;
        size_t off = (size_t)(nl + 1 - data);
        size_t blob_len = len - off;
        struct blob_header h;
        if (blob_len < sizeof(h))
                return -EBADMSG;
        memcpy(&h, data + off, sizeof(h));
        if (h.magic != BLOB_MAGIC ||
            blob_len != sizeof(h) + ((size_t)h.n_args + h.n_names) * sizeof(struct sock_filter))
                return -EBADMSG;
        void *blob = xmalloc(blob_len);
        memcpy(blob, data + off, blob_len);
        *ret_blob = blob;
        *ret_len = blob_len;
        *ret_syscalls = syscalls;
        *ret_rules = rules;
        return 0;
}

static void cache_write(const char *dir, const char *path, const void *blob, size_t len,
                        unsigned syscalls, unsigned rules)
{
        char head[64];
        _cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());

        if (mkdir_p(dir, 0700) < 0)
                return;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        snprintf(head, sizeof(head), "hutch-bpf %u %u\n", syscalls, rules);
        bool ok = write_all(fd, head, strlen(head)) == 0 && write_all(fd, blob, len) == 0;
        ok = close(fd) == 0 && ok;
        /* rename: readers see the old file or the whole new one */
        if (!ok || rename(tmp, path) < 0)
                (void)unlink(tmp);
}

int seccomp_policy_compile(const struct seccomp_settings *s, const char *cache_dir,
                           void **ret_blob, size_t *ret_len, struct seccomp_report *ret_report,
                           char **ret_error)
{
        char key[DIGEST_HEX_SIZE];
        _cleanup_free_ char *path = NULL;
        struct seccomp_report report = { 0 };
        uint32_t action;
        const char *action_name;
        int r;

        if (seccomp_parse_action(s->default_action, &action, &action_name) < 0)
                return seccomp_fail(ret_error, -EINVAL, "unknown action \"%s\" (use errno, kill or log)",
                                    s->default_action);
        if (cache_dir && cache_key(s, key) == 0) {
                unsigned syscalls, rules;
                path = xasprintf("%s/seccomp-%s.bpf", cache_dir, key);
                if (cache_read(path, ret_blob, ret_len, &syscalls, &rules) == 0) {
                        if (ret_report) {
                                snprintf(report.policy, sizeof(report.policy), "%s", s->name ? s->name : "custom");
                                report.action = action_name;
                                report.mode = s->allow_list_mode ? "allow-list" : "deny-list";
                                report.arch = native_arch_name();
                                report.syscalls = syscalls;
                                report.rules = rules;
                                *ret_report = report;
                        }
                        return 0;
                }
        }

        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
        r = seccomp_policy_build(s, &p, &report, ret_error);
        if (r < 0)
                return r;
        void *blob;
        size_t len;
        r = seccomp_policy_export(p, &blob, &len);
        if (r < 0)
                return seccomp_fail(ret_error, r, "cannot export the filter: %s", strerror(-r));
        if (path)
                cache_write(cache_dir, path, blob, len, report.syscalls, report.rules);
        *ret_blob = blob;
        *ret_len = len;
        if (ret_report)
                *ret_report = report;
        return 0;
}
