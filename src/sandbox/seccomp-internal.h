/* seccomp-internal.h - internal to the seccomp module: the types and
 * helpers that seccomp.c (the policy), seccomp-rules.c (the filters'
 * rules) and seccomp-cache.c (the compiled blob and its cache) share.
 * Not an API: nothing outside those files includes it. The public API is
 * sandbox/seccomp.h.
 */
#pragma once

#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>

#include "sandbox/seccomp.h"
#include "lib/util.h"

/* The syscalls newer than libseccomp, [first, first + n), answered with
 * `action` by a range test in front of the name filter (see
 * seccomp_build_names_filter()); n == 0: none, or they are rules. */
struct future_range {
        int first;
        int n;
        uint32_t action;
};

/* The personality rule, answered by a test in front of the argument
 * filter (see seccomp_build_args_filter()): the native arch's
 * personality() with a persona other than 0 and 0xffffffff (and
 * ADDR_NO_RANDOMIZE alone when aslr_off_ok) takes `action`. */
struct personality_rule {
        bool on;
        bool aslr_off_ok;
        uint32_t action;
};

struct seccomp_policy {
        scmp_filter_ctx names;  /* deny-list or allow-list by syscall number */
        scmp_filter_ctx args;   /* argument rules only; default allow */
        struct future_range future;
        struct personality_rule personality;
};

/* Classic BPF for the future range: at most this many instructions,
 * written to insns; *ret_n is 0 when there is no range. */
#define FUTURE_PREFIX_MAX 6
struct sock_filter;
void seccomp_future_prefix(const struct future_range *f, struct sock_filter *insns, size_t *ret_n);

/* The offset of the low 32 bits of argument i in struct seccomp_data,
 * for the hand-written tests (the kernel reads int-sized arguments
 * there). */
#include <linux/seccomp.h>
#include <stddef.h>
static inline uint32_t seccomp_arg_low_offset(unsigned i)
{
        uint32_t off = (uint32_t)offsetof(struct seccomp_data, args) + 8 * i;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        off += 4;
#endif
        return off;
}

/* The fast test for the front of the argument program prog (n
 * instructions; seccomp-fast.c): at most FAST_PREFIX_MAX instructions
 * that allow the native numbers prog allows without looking at their
 * arguments, special[] excepted, and go on to the instruction after
 * the test for everything else. *ret_n is 0 when no test pays (then
 * out is unused). 0 or -E2BIG (max too small). */
#define FAST_PREFIX_MAX 132
int seccomp_fast_prefix(const struct sock_filter *prog, size_t n, const int *special, size_t n_special,
                        struct sock_filter *out, size_t max, size_t *ret_n);

/* The syscall numbers the id shim answers, into out; their count. */
#define ID_SHIM_MAX_CALLS 16
size_t seccomp_id_shim_numbers(int *out, size_t max);

/* A blob's programs as they are attached, front (the id shim, or none)
 * put in behind the fast test: the argument program (*ret_n_args, the
 * first *ret_n_fast of them the fast test), then the name program. For
 * the loader and its tests. 0 or -EINVAL (not a blob), -E2BIG. */
int seccomp_blob_programs(const void *blob, size_t len, const struct sock_filter *front, size_t n_front,
                          struct sock_filter **ret, size_t *ret_n_args, size_t *ret_n_fast, size_t *ret_n_names);

/* Classic BPF for the personality rule, likewise (0 when it is off). */
#define PERSONALITY_PREFIX_MAX 9
void seccomp_personality_prefix(const struct personality_rule *p, struct sock_filter *insns, size_t *ret_n);

/* A set of native syscall numbers. Native numbers are small and dense
 * (x86_64: < 512); a bitmap grows to the largest member. */
struct sysset {
        uint64_t *words;
        size_t n;
};

/* One filter being built: its context, its default action and how many
 * rules were added to it (for the report). */
struct builder {
        scmp_filter_ctx ctx;
        uint32_t default_action;
        unsigned rules;
};

/* seccomp.c */

/* Whether nr is in s (false for negative numbers). */
bool seccomp_sysset_has(const struct sysset *s, int nr);

/* Set *ret_error (if wanted) to "seccomp: " + message, return error. */
int seccomp_fail(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);

/* The groups file's path, $HUTCH_DATADIR/seccomp.ini; malloc'd. */
char *seccomp_groups_path(void);

/* Parse an action name ("errno" or NULL, "kill", "log") into the
 * libseccomp action and its static name. 0, or -EINVAL for another. */
int seccomp_parse_action(const char *s, uint32_t *ret, const char **ret_name);

/* seccomp-rules.c */

/* A new filter for the native architecture only, foreign ones taking
 * `deny`; NULL on failure. */
scmp_filter_ctx seccomp_filter_new(uint32_t default_action, uint32_t deny);

/* Add the argument filter's rules to b; the personality rule goes to
 * *ret_personality (counted in b->rules as the rules it stands for).
 * 0 or a libseccomp -errno. */
int seccomp_build_args_filter(struct builder *b, const struct seccomp_settings *s, uint32_t deny,
                              struct personality_rule *ret_personality);

/* Add the name filter's rules for base (the mode's syscall set) to b,
 * plus clone3's ENOSYS; the future syscalls' ENOSYS goes to *ret_future
 * (counted in b->rules as the rules it stands for). 0 or -errno. */
int seccomp_build_names_filter(struct builder *b, const struct seccomp_settings *s,
                               const struct sysset *base, uint32_t deny, uint32_t enosys,
                               struct future_range *ret_future);
