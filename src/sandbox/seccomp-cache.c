/* seccomp-cache.c - the compiled policy as one blob of classic BPF (see
 * seccomp.h): exporting a built policy to a blob, installing a blob with
 * two seccomp(2) calls (and a built policy through its blob), and the
 * cache of blobs keyed by content that seccomp_policy_compile() reads
 * and writes.
 *
 * A cache file is named by a digest of everything that decides the
 * filter (cache_key()), so a changed input is a miss, never a stale hit,
 * and carries a CRC-64 of its key, counts and compiled bytes, checked on
 * every read (cache_read()): an entry that does not verify is compiled
 * and written again. Files are private (0600, checked on read), written
 * under a temporary name and renamed into place; a cache that cannot be
 * read or written is ignored.
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

#include "lib/buildid.h"
#include "lib/digest.h"
#include "lib/log.h"
#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"

/* Blob layout: magic, instruction counts of the argument filter, of the
 * fast test at its head (seccomp-fast.c, counted in n_args) and of the
 * name filter, then both programs back to back (argument filter first,
 * the order seccomp_policy_load() installs them in). */
#define BLOB_MAGIC 0x68757464u  /* "hutd" */
struct blob_header {
        uint32_t magic;
        uint32_t n_args;
        uint32_t n_fast;
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
        /* the argument filter: its personality test, then libseccomp's */
        struct sock_filter pers[PERSONALITY_PREFIX_MAX];
        size_t n_pers;
        seccomp_personality_prefix(&p->personality, pers, &n_pers);
        r = write_all(fd, pers, n_pers * sizeof(*pers));
        if (r < 0)
                return r;
        r = export_one(p->args, fd, &n_args);
        if (r < 0)
                return r;
        n_args += n_pers;
        /* the name filter: its future range's test, then libseccomp's */
        struct sock_filter prefix[FUTURE_PREFIX_MAX];
        size_t n_prefix;
        seccomp_future_prefix(&p->future, prefix, &n_prefix);
        r = write_all(fd, prefix, n_prefix * sizeof(*prefix));
        if (r < 0)
                return r;
        r = export_one(p->names, fd, &n_names);
        if (r < 0)
                return r;
        n_names += n_prefix;
        if (n_names > BPF_MAXINSNS)
                return -E2BIG;
        size_t body = (n_args + n_names) * sizeof(struct sock_filter);
        _cleanup_free_ struct sock_filter *progs = xmalloc(body);
        if (pread(fd, progs, body, sizeof(h)) != (ssize_t)body)
                return -EIO;
        /* the fast test goes in front of the argument filter; the id
         * shim, put in behind it at load time, answers its calls */
        struct sock_filter fast[FAST_PREFIX_MAX];
        int shim_nrs[ID_SHIM_MAX_CALLS];
        size_t n_fast, n_shim_nrs = seccomp_id_shim_numbers(shim_nrs, ELEMENTSOF(shim_nrs));
        r = seccomp_fast_prefix(progs, n_args, shim_nrs, n_shim_nrs, fast, ELEMENTSOF(fast), &n_fast);
        if (r < 0)
                return r;
        if (n_args + n_fast + ID_SHIM_MAX_INSNS > BPF_MAXINSNS)
                n_fast = 0;
        size_t len = sizeof(h) + (n_fast + n_args + n_names) * sizeof(struct sock_filter);
        char *buf = xmalloc(len);
        h.n_args = (uint32_t)(n_fast + n_args);
        h.n_fast = (uint32_t)n_fast;
        h.n_names = (uint32_t)n_names;
        memcpy(buf, &h, sizeof(h));
        memcpy(buf + sizeof(h), fast, n_fast * sizeof(*fast));
        memcpy(buf + sizeof(h) + n_fast * sizeof(*fast), progs, body);
        *ret = buf;
        *ret_len = len;
        return 0;
}

int seccomp_blob_programs(const void *blob, size_t len, const struct sock_filter *front, size_t n_front,
                          struct sock_filter **ret, size_t *ret_n_args, size_t *ret_n_fast, size_t *ret_n_names)
{
        struct blob_header h;

        if (!blob || len < sizeof(h))
                return -EINVAL;
        memcpy(&h, blob, sizeof(h));
        /* BPF_MAXINSNS bounds each program; the kernel checks the rest */
        if (h.magic != BLOB_MAGIC || h.n_args == 0 || h.n_names == 0 ||
            h.n_args > BPF_MAXINSNS || h.n_names > BPF_MAXINSNS || h.n_fast >= h.n_args ||
            len != sizeof(h) + ((size_t)h.n_args + h.n_names) * sizeof(struct sock_filter))
                return -EINVAL;
        if (n_front + h.n_args > BPF_MAXINSNS)
                return -E2BIG;
        /* the programs start 16 bytes in: copy them to aligned memory,
         * front behind the fast test, where its jumps past it land */
        const struct sock_filter *in = (const void *)((const char *)blob + sizeof(h));
        size_t n = (size_t)h.n_args + h.n_names;
        struct sock_filter *insns = xmalloc((n_front + n) * sizeof(*insns));
        memcpy(insns, in, h.n_fast * sizeof(*insns));
        if (n_front)
                memcpy(insns + h.n_fast, front, n_front * sizeof(*insns));
        memcpy(insns + h.n_fast + n_front, in + h.n_fast, (n - h.n_fast) * sizeof(*insns));
        *ret = insns;
        *ret_n_args = n_front + h.n_args;
        *ret_n_fast = h.n_fast;
        *ret_n_names = h.n_names;
        return 0;
}

/* Attach the blob's two programs, the argument filter first (the order
 * seccomp_policy_load() always used); front, if any, runs at the head of
 * the argument filter, in the same program, behind its fast test. */
static int load_blob(const void *blob, size_t len, const struct sock_filter *front, size_t n_front)
{
        _cleanup_free_ struct sock_filter *insns = NULL;
        size_t n_args, n_fast, n_names;
        int r = seccomp_blob_programs(blob, len, front, n_front, &insns, &n_args, &n_fast, &n_names);
        if (r < 0)
                return r;
        struct sock_fprog args = { .len = (unsigned short)n_args, .filter = insns };
        struct sock_fprog names = { .len = (unsigned short)n_names, .filter = insns + n_args };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &args) < 0)
                return -errno;
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &names) < 0)
                return -errno;
        return 0;
}

int seccomp_blob_load(const void *blob, size_t len)
{
        return load_blob(blob, len, NULL, 0);
}

/* Each attached program costs the kernel a conversion, a JIT compile
 * and a pass over every syscall number for its cache of constant
 * answers: about 11 us even for one instruction, measured. The shim
 * and the argument filter answer disjoint syscalls (set*id and chown
 * there, clone, unshare, ioctl and personality here), so running one
 * after the other in a single program gives every call the answer the
 * two separate programs gave. */
int seccomp_job_load(const void *blob, size_t len, uint32_t uid, uint32_t gid)
{
        struct sock_filter shim[ID_SHIM_MAX_INSNS];
        size_t n_shim;
        int r = seccomp_id_shim_build(uid, gid, true, shim, ELEMENTSOF(shim), &n_shim);
        if (r < 0)
                return r;
        return load_blob(blob, len, shim, n_shim);
}

int seccomp_policy_load(const struct seccomp_policy *p)
{
        _cleanup_free_ void *blob = NULL;
        size_t len;

        if (!p || !p->names || !p->args)
                return -EINVAL;
        /* through the exported form, the one hutch run installs: the
         * name filter's future range is only there (here, not in
         * seccomp.c, so that the policy's builder links without the
         * blob code, as the fuzzer does) */
        int r = seccomp_policy_export(p, &blob, &len);
        return r < 0 ? r : seccomp_blob_load(blob, len);
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
         * (2: allow_ptrace lets ADDR_NO_RANDOMIZE through; 3: the future
         * range is one test; 4: so is the personality rule; 5: the fast
         * test in front of the argument filter), so no run
         * picks up a blob an older build cached */
        key_add(&d, "format", "hutch-bpf-cache 5");
        key_add(&d, "hutch", PACKAGE_VERSION);
        /* the argument rules are code: a rebuilt hutch of the same
         * version may compile the same settings differently */
        if (build_id(buf, sizeof(buf)) == 0)
                key_add(&d, "build", buf);
        else
                key_add(&d, "build", NULL);
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

/* Cache file: a cache_header, then the blob. The header names the key
 * the file was written for and the counts of the policy the blob was
 * compiled from, and its check covers all of that and the blob: a file
 * that was damaged, truncated, renamed onto another key or edited by
 * hand is a miss (and is written again), never a filter to load or a
 * count to record.
 * Why a CRC-64 and not a sha256 (which cost 260,000 instructions, 7% of
 * the supervisor's work, on every run): the check is there for what can
 * happen to a file, not for someone who writes it on purpose. Against
 * damage a CRC-64 is as good: it catches every burst of up to 64 bits
 * and misses random damage with odds of 2^-64. Against a writer neither
 * is a defence, since anyone who can write the file can compute either
 * (the sha256 had no key). What keeps writers out is unchanged: the
 * entry must be a regular file of this user with no group or other
 * bits, opened without following a link, in the user's private state
 * dir, which no sandbox is given; its name is the digest of every input
 * of the filter, so a changed input is a miss, never a stale hit. */
#define CACHE_MAGIC "hutchbpf"
#define CACHE_FORMAT 5u
struct cache_header {
        char magic[8];
        uint32_t format;
        uint32_t syscalls;      /* seccomp_report of the compile */
        uint32_t rules;
        uint32_t blob_len;
        char key[DIGEST_HEX_SIZE - 1];  /* cache_key(), no NUL */
        uint64_t check;         /* CRC-64 of the header (this field zero) and the blob */
};

/* CRC-64/XZ (ECMA-182 polynomial, reflected), table-driven */
#define CRC64_POLY 0xc96c5795d7870f42ull

static uint64_t crc64_update(uint64_t crc, const uint64_t table[256], const void *data, size_t n)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < n; i++)
                crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
        return crc;
}

uint64_t seccomp_cache_crc64(const void *a, size_t a_len, const void *b, size_t b_len)
{
        uint64_t table[256];
        for (unsigned i = 0; i < 256; i++) {
                uint64_t c = i;
                for (int k = 0; k < 8; k++)
                        c = c & 1 ? (c >> 1) ^ CRC64_POLY : c >> 1;
                table[i] = c;
        }
        uint64_t crc = crc64_update(~0ull, table, a, a_len);
        return ~crc64_update(crc, table, b, b_len);
}

static uint64_t cache_check(const struct cache_header *h, const void *blob, size_t len)
{
        struct cache_header copy = *h;
        copy.check = 0;
        return seccomp_cache_crc64(&copy, sizeof(copy), blob, len);
}

/* Read and verify the entry for key at path. -ENOENT: none; -EBADMSG
 * (with *ret_why): one that must not be used. */
static int cache_read(const char *path, const char *key, void **ret_blob, size_t *ret_len,
                      unsigned *ret_syscalls, unsigned *ret_rules, const char **ret_why)
{
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = -1;
        struct cache_header h;
        struct stat st;
        size_t len;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* only what we wrote ourselves, as we write it */
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
                *ret_why = "not a private file of this user";
                return -EBADMSG;
        }
        if (st.st_size > (off_t)(sizeof(h) + 2 * (BPF_MAXINSNS + 1) * sizeof(struct sock_filter) + 64)) {
                *ret_why = "too large";
                return -EBADMSG;
        }
        len = (size_t)st.st_size;
        data = xmalloc(len + 1);
        ssize_t got = pread(fd, data, len + 1, 0);
        if (got < 0)
                return -errno;
        *ret_why = "damaged (its check does not match)";
        if ((size_t)got != len || len < sizeof(h))
                return -EBADMSG;
        memcpy(&h, data, sizeof(h));
        if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) != 0 || h.format != CACHE_FORMAT ||
            h.blob_len != len - sizeof(h) || memcmp(h.key, key, sizeof(h.key)) != 0)
                return -EBADMSG;
        if (cache_check(&h, data + sizeof(h), h.blob_len) != h.check)
                return -EBADMSG;
        struct blob_header b;
        if (h.blob_len < sizeof(b))
                return -EBADMSG;
        memcpy(&b, data + sizeof(h), sizeof(b));
        if (b.magic != BLOB_MAGIC ||
            h.blob_len != sizeof(b) + ((size_t)b.n_args + b.n_names) * sizeof(struct sock_filter))
                return -EBADMSG;
        void *blob = xmalloc(h.blob_len);
        memcpy(blob, data + sizeof(h), h.blob_len);
        *ret_blob = blob;
        *ret_len = h.blob_len;
        *ret_syscalls = h.syscalls;
        *ret_rules = h.rules;
        return 0;
}

/* Write the entry atomically: a private temporary, renamed over the
 * old entry, so readers see the old file or the whole new one. */
static void cache_write(const char *dir, const char *path, const char *key, const void *blob, size_t len,
                        unsigned syscalls, unsigned rules)
{
        _cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
        struct cache_header h = {
                .format = CACHE_FORMAT,
                .syscalls = syscalls,
                .rules = rules,
                .blob_len = (uint32_t)len,
        };

        memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
        memcpy(h.key, key, sizeof(h.key));
        h.check = cache_check(&h, blob, len);
        if (mkdir_p(dir, 0700) < 0)
                return;
        (void)unlink(tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        bool ok = write_all(fd, &h, sizeof(h)) == 0 && write_all(fd, blob, len) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) < 0)
                (void)unlink(tmp);
}

char *seccomp_cache_path(const struct seccomp_settings *s, const char *cache_dir)
{
        char key[DIGEST_HEX_SIZE];
        if (!cache_dir || cache_key(s, key) < 0)
                return NULL;
        return xasprintf("%s/seccomp-%s.bpf", cache_dir, key);
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
                unsigned syscalls = 0, rules = 0;
                const char *why = NULL;
                path = xasprintf("%s/seccomp-%s.bpf", cache_dir, key);
                r = cache_read(path, key, ret_blob, ret_len, &syscalls, &rules, &why);
                if (r == 0) {
                        if (ret_report) {
                                snprintf(report.policy, sizeof(report.policy), "%s", s->name ? s->name : "custom");
                                report.action = action_name;
                                report.mode = s->allow_list_mode ? "allow-list" : "deny-list";
                                report.arch = native_arch_name();
                                report.syscalls = syscalls;
                                report.rules = rules;
                                report.cached = true;
                                *ret_report = report;
                        }
                        return 0;
                }
                if (r == -EBADMSG)
                        log_debug("seccomp cache %s: %s; compiling the filter again", path, why);
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
                cache_write(cache_dir, path, key, blob, len, report.syscalls, report.rules);
        *ret_blob = blob;
        *ret_len = len;
        if (ret_report)
                *ret_report = report;
        return 0;
}
