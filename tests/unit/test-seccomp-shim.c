/* test-seccomp-shim.c - unit tests for the id shim (seccomp-idshim.c)
 * alone and as the job loads it, at the head of the policy's argument
 * filter (seccomp_job_load()), and for the personality test in front of
 * that filter. Like test-seccomp.c, the checks run in forked children
 * that attach the filters for real.
 *
 * Needs HUTCH_DATADIR pointing at the source tree's share/ (make check sets it).
 */
#include "config.h"

#include <fcntl.h>
#include <seccomp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/sched.h>

#include "sandbox/seccomp.h"
#include "sandbox/seccomp-internal.h"
#include "lib/util.h"
#include "test-seccomp.h"

/* The id shim: another id is EPERM, our own id and -1 reach the kernel
 * (fchown on fd -1 then says EBADF: the call got through). The shim is
 * loaded with ids one past ours, so "ours" in the filter is not the
 * process's real id and both branches run without privileges. */
static void id_shim_checks(uint32_t uid, uint32_t gid, uint32_t own_uid, uint32_t own_gid)
{
        CHECK_ERRNO(syscall(SYS_fchown, -1, uid, -1), EPERM);
        CHECK_ERRNO(syscall(SYS_fchown, -1, -1, gid), EPERM);
        CHECK_ERRNO(syscall(SYS_fchown, -1, own_uid, own_gid), EBADF);
        CHECK_ERRNO(syscall(SYS_fchown, -1, -1, -1), EBADF);
        CHECK_ERRNO(syscall(SYS_fchownat, -1, "", uid, -1, AT_EMPTY_PATH), EPERM);
        CHECK_ERRNO(syscall(SYS_setresuid, -1, uid, -1), EPERM);
        CHECK_ERRNO(syscall(SYS_setregid, gid, -1), EPERM);
        CHECK_ERRNO(syscall(SYS_setuid, uid), EPERM);
        /* every call of the shim's table */
        CHECK_ERRNO(syscall(SYS_setgid, gid), EPERM);
        CHECK_ERRNO(syscall(SYS_setreuid, -1, uid), EPERM);
        CHECK_ERRNO(syscall(SYS_setresgid, gid, -1, -1), EPERM);
#ifdef SYS_chown
        CHECK_ERRNO(syscall(SYS_chown, "/nonexistent-hutch", uid, -1), EPERM);
        CHECK_ERRNO(syscall(SYS_chown, "/nonexistent-hutch", own_uid, own_gid), ENOENT);
#endif
#ifdef SYS_lchown
        CHECK_ERRNO(syscall(SYS_lchown, "/nonexistent-hutch", -1, gid), EPERM);
        CHECK_ERRNO(syscall(SYS_lchown, "/nonexistent-hutch", -1, -1), ENOENT);
#endif
        CHECK_ERRNO(syscall(SYS_fchownat, AT_FDCWD, "/nonexistent-hutch", own_uid, -1, 0), ENOENT);
        /* ids are uid_t to the kernel: the upper half of the register
         * does not count, so it cannot smuggle a match */
        CHECK_ERRNO(syscall(SYS_fchown, -1, (1UL << 32) | uid, -1), EPERM);
        CHECK_OK(syscall(SYS_setresuid, -1, -1, -1));
        CHECK_OK(syscall(SYS_getpid));
}

static void id_shim_child(void)
{
        uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid();

        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHECK(seccomp_id_shim_load(uid + 1, gid + 1) == 0);
        id_shim_checks(uid, gid, uid + 1, gid + 1);
}

/* Fork, run fn in the child, expect a clean exit. */
static void in_child(void (*fn)(void))
{
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                fn();
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_exited_ok(status);
}

static void id_shim(void **state)
{
        struct sock_filter insns[ID_SHIM_MAX_INSNS];
        size_t n = 0;

        assert_int_equal(seccomp_id_shim_build(1000, 1000, false, insns, ELEMENTSOF(insns), &n), 0);
        assert_true(n > 4 && n <= ELEMENTSOF(insns));
        /* too small a buffer is an error, not a truncated filter */
        assert_int_equal(seccomp_id_shim_build(1000, 1000, false, insns, n - 1, &n), -E2BIG);

        in_child(id_shim_child);
}

/* Every syscall number through the shim: with foreign ids in every
 * argument only the id calls are refused, with our own ids none is. */
static void id_shim_every_number(void **state)
{
        static const int id_nrs[] = {
                SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid, SYS_setresgid,
#ifdef SYS_chown
                SYS_chown,
#endif
#ifdef SYS_lchown
                SYS_lchown,
#endif
                SYS_fchown, SYS_fchownat,
        };
        struct sock_filter insns[ID_SHIM_MAX_INSNS];
        size_t n = 0;

        (void)state;
        assert_int_equal(seccomp_id_shim_build(1000, 1000, false, insns, ELEMENTSOF(insns), &n), 0);
        for (int nr = 0; nr < 1024; nr++) {
                bool id_call = false;
                for (size_t i = 0; i < ELEMENTSOF(id_nrs); i++)
                        id_call |= id_nrs[i] == nr;
                struct seccomp_data sd = { .nr = nr, .arch = seccomp_arch_native() };
                for (int i = 0; i < 6; i++)
                        sd.args[i] = 1000;
                assert_int_equal(bpf_run(insns, n, &sd), SECCOMP_RET_ALLOW);
                for (int i = 0; i < 6; i++)
                        sd.args[i] = 1001;
                uint32_t want = id_call ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_ALLOW;
                if (bpf_run(insns, n, &sd) != want)
                        fail_msg("syscall %d: %#x, not %#x", nr, bpf_run(insns, n, &sd), want);
        }
}

static void *policy_blob;
static size_t policy_blob_len;

/* As the job loads it: one program of shim + argument filter, then the
 * name filter. The shim answers as it does alone, and the argument
 * filter behind it still holds (a chained shim that allowed instead of
 * going on would let TIOCSTI and any persona through). */
static void chained_child(void)
{
        uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid();

        CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHECK(seccomp_job_load(policy_blob, policy_blob_len, uid + 1, gid + 1) == 0);
        id_shim_checks(uid, gid, uid + 1, gid + 1);
        int fd = open("/dev/null", O_RDONLY);
        CHECK(fd >= 0);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI, NULL), EPERM);
        CHECK_ERRNO(syscall(SYS_ioctl, fd, (unsigned long)TCGETS, NULL), ENOTTY);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)PER_LINUX32), EPERM);
        CHECK_ERRNO(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE), EPERM);
        CHECK_OK(syscall(SYS_personality, 0xffffffffUL));
        /* and the name filter, the other program */
        CHECK_ERRNO(syscall(SYS_setns, -1, 0), EPERM);     /* EBADF unfiltered */
}

static void id_shim_chained(void **state)
{
        struct seccomp_settings s;
        struct sock_filter insns[ID_SHIM_MAX_INSNS];
        size_t n_alone = 0, n_chained = 0;
        _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;

        /* chained, the shim ends where the next program starts: no
         * instruction of it returns "allow" any more */
        assert_int_equal(seccomp_id_shim_build(1000, 1000, false, insns, ELEMENTSOF(insns), &n_alone), 0);
        assert_int_equal(seccomp_id_shim_build(1000, 1000, true, insns, ELEMENTSOF(insns), &n_chained), 0);
        assert_int_equal(n_chained, n_alone - 1);
        for (size_t i = 0; i < n_chained; i++) {
                assert_false(insns[i].code == (BPF_RET | BPF_K) && insns[i].k == SECCOMP_RET_ALLOW);
                if (insns[i].code == (BPF_JMP | BPF_JA))
                        assert_true(i + 1 + insns[i].k == n_chained);
        }

        seccomp_settings_default(&s);
        assert_int_equal(seccomp_policy_build(&s, &p, NULL, NULL), 0);
        assert_int_equal(seccomp_policy_export(p, &policy_blob, &policy_blob_len), 0);
        in_child(chained_child);
        free(policy_blob);
        policy_blob = NULL;
        seccomp_settings_done(&s);
}

/* The fast test's answer alone: its own, or FELL_THROUGH where it
 * goes on to the program behind it. */
#define FELL_THROUGH 0x0badf00du
static uint32_t fast_alone(const struct sock_filter *prog, size_t n_fast, uint32_t nr)
{
        struct sock_filter with_end[FAST_PREFIX_MAX + 1];
        memcpy(with_end, prog, n_fast * sizeof(*prog));
        with_end[n_fast] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, FELL_THROUGH);
        struct seccomp_data sd = { .nr = (int)nr, .arch = seccomp_arch_native() };
        return bpf_run(with_end, n_fast + 1, &sd);
}

/* The fast test at the head of the job's argument program
 * (seccomp-fast.c) changes no answer: under every arch, for every
 * number, with the ids and arguments each rule looks at, the program
 * answers what the program behind the test answers. And it is the
 * short way for an ordinary call, not for the calls a rule looks at. */
static void fast_test_same_answers(void **state)
{
        const uint32_t archs[] = { 0, 0x40000003u /* i386 */, seccomp_arch_native() };
        uint64_t vectors[][6] = {
                { 0 }, { 1000, 1000, 1000, 1000, 1000, 1000 }, { 1001, 1001, 1001, 1001, 1001, 1001 },
                { ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull }, { 0, TIOCSTI }, { PER_LINUX32 },
                { CLONE_NEWUSER }, { ADDR_NO_RANDOMIZE, CLONE_NEWNS },
        };
        (void)state;

        for (int strict = 0; strict < 2; strict++) {
                struct seccomp_settings s;
                _cleanup_seccomp_policy_ struct seccomp_policy *p = NULL;
                _cleanup_free_ void *blob = NULL;
                _cleanup_free_ struct sock_filter *prog = NULL;
                struct sock_filter shim[ID_SHIM_MAX_INSNS];
                size_t len, n_shim, n_args, n_fast, n_names;

                assert_int_equal(strict ? seccomp_settings_strict(&s) : seccomp_settings_default(&s), 0);
                assert_int_equal(seccomp_policy_build(&s, &p, NULL, NULL), 0);
                assert_int_equal(seccomp_policy_export(p, &blob, &len), 0);
                assert_int_equal(seccomp_id_shim_build(1000, 1000, true, shim, ELEMENTSOF(shim), &n_shim), 0);
                assert_int_equal(seccomp_blob_programs(blob, len, shim, n_shim, &prog, &n_args, &n_fast, &n_names),
                                 0);
                assert_true(n_fast > 4 && n_fast <= FAST_PREFIX_MAX);
                for (size_t a = 0; a < ELEMENTSOF(archs); a++)
                        for (uint32_t nr = 0; nr < 1100; nr++)
                                for (int x32 = 0; x32 < 2; x32++)
                                        for (size_t v = 0; v < ELEMENTSOF(vectors); v++) {
                                                struct seccomp_data sd = {
                                                        .nr = (int)(nr | (x32 ? 0x40000000u : 0)),
                                                        .arch = archs[a],
                                                };
                                                memcpy(sd.args, vectors[v], sizeof(sd.args));
                                                uint32_t with = bpf_run(prog, n_args, &sd);
                                                uint32_t without = bpf_run(prog + n_fast, n_args - n_fast, &sd);
                                                if (with != without)
                                                        fail_msg("strict %d arch %#x nr %#x args %zu: %#x, not %#x",
                                                                 strict, sd.arch, (unsigned)sd.nr, v, with, without);
                                        }
                /* the short way: most calls allowed by the test itself;
                 * the shim's calls and the argument rules' not */
                unsigned allowed = 0;
                for (uint32_t nr = 0; nr < 1100; nr++)
                        allowed += fast_alone(prog, n_fast, nr) == SECCOMP_RET_ALLOW;
                assert_true(allowed > 250);
                assert_int_equal(fast_alone(prog, n_fast, SYS_getpid), SECCOMP_RET_ALLOW);
                assert_int_equal(fast_alone(prog, n_fast, SYS_read), SECCOMP_RET_ALLOW);
                const int looked_at[] = { SYS_setuid, SYS_setresgid, SYS_fchownat, SYS_ioctl, SYS_personality,
                                          SYS_clone, SYS_unshare };
                for (size_t i = 0; i < ELEMENTSOF(looked_at); i++)
                        assert_int_equal(fast_alone(prog, n_fast, (uint32_t)looked_at[i]), FELL_THROUGH);
                seccomp_settings_done(&s);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(id_shim),
                cmocka_unit_test(id_shim_chained),
                cmocka_unit_test(id_shim_every_number),
                cmocka_unit_test(fast_test_same_answers),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
