/* test-userns-diag.c - unit tests for the diagnosis of refused user
 * namespaces (sandbox/userns-diag.c): gathering from a fake /proc,
 * AppArmor securityfs and /etc/apparmor.d built under a temporary
 * directory, and classifying each host the issue names from the facts. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/userns-diag.h"
#include "lib/util.h"
#include "fstest.h"
#include "tap-skip.h"

/* CapEff of an unprivileged caller, and of root (CAP_SYS_ADMIN is bit 21) */
#define CAPS_NONE "0000000000000000"
#define CAPS_ROOT "000001ffffffffff"

struct host {
        const char *restrict_userns;    /* NULL: the file is absent */
        const char *userns_clone;
        const char *max_user_ns;
        const char *seccomp;
        const char *capeff;
        bool initial_userns;
        bool apparmor;                  /* securityfs dir exists */
        const char *profiles;           /* its profiles file */
        const char *label;              /* attr/apparmor/current */
        bool profile_file;              /* /etc/apparmor.d/hutch */
        int roots;                      /* 0: no mountinfo; 1: a mount at "/"; 2: none (chroot) */
};

static char *base;

static void build(const struct host *h, struct userns_roots *roots)
{
        if (base)
                fst_rm_rf(base);
        free(base);
        base = fst_mkdtemp("userns-diag");
        assert_non_null(base);
        assert_int_equal(fst_mkdir(base, "proc", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/self", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/self/attr", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/self/attr/apparmor", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/sys", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/sys/kernel", 0755), 0);
        assert_int_equal(fst_mkdir(base, "proc/sys/user", 0755), 0);
        assert_int_equal(fst_mkdir(base, "etc", 0755), 0);
        _cleanup_free_ char *status = xasprintf("Name:\thutch\nCapEff:\t%s\nSeccomp:\t%s\nSeccomp_filters:\t1\n",
                                                h->capeff ? h->capeff : CAPS_NONE, h->seccomp ? h->seccomp : "0");
        assert_int_equal(fst_write(base, "proc/self/status", status, 0644), 0);
        assert_int_equal(fst_write(base, "proc/self/uid_map",
                                   h->initial_userns ? "         0          0 4294967295\n"
                                                     : "         0       1000          1\n", 0644), 0);
        assert_int_equal(fst_symlink("/opt/hutch/bin/hutch", base, "proc/self/exe"), 0);
        if (h->restrict_userns)
                assert_int_equal(fst_write(base, "proc/sys/kernel/apparmor_restrict_unprivileged_userns",
                                           h->restrict_userns, 0644), 0);
        if (h->userns_clone)
                assert_int_equal(fst_write(base, "proc/sys/kernel/unprivileged_userns_clone", h->userns_clone, 0644), 0);
        assert_int_equal(fst_write(base, "proc/sys/user/max_user_namespaces",
                                   h->max_user_ns ? h->max_user_ns : "127431\n", 0644), 0);
        if (h->label)
                assert_int_equal(fst_write(base, "proc/self/attr/apparmor/current", h->label, 0644), 0);
        if (h->apparmor) {
                assert_int_equal(fst_mkdir(base, "apparmor", 0755), 0);
                assert_int_equal(fst_write(base, "apparmor/profiles", h->profiles ? h->profiles : "", 0644), 0);
        }
        if (h->profile_file)
                assert_int_equal(fst_write(base, "etc/hutch", "profile hutch /usr/bin/hutch {}\n", 0644), 0);
        if (h->roots)
                assert_int_equal(fst_write(base, "proc/self/mountinfo", h->roots == 1
                        ? "21 1 0:20 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
                          "22 21 0:5 / /proc rw - proc proc rw\n"
                        /* chroot(8) into /srv/root: the mounts under it only */
                        : "40 21 0:5 / /proc rw - proc proc rw\n"
                          "41 21 0:6 / /dev rw - devtmpfs udev rw\n", 0644), 0);
        roots->proc = fst_path(base, "proc");
        roots->apparmorfs = fst_path(base, "apparmor");
        roots->apparmor_d = fst_path(base, "etc");
}

static enum userns_cause classify(const struct host *h, int error, bool at_clone, struct userns_facts *f)
{
        struct userns_roots roots;
        build(h, &roots);
        userns_facts_gather(f, error, at_clone, &roots);
        free((char *)roots.proc);
        free((char *)roots.apparmorfs);
        free((char *)roots.apparmor_d);
        return userns_classify(f);
}

static const struct host ubuntu = {
        .restrict_userns = "1\n", .max_user_ns = "62811\n", .apparmor = true,
        .profiles = "unprivileged_userns (enforce)\nbwrap (unconfined)\n", .label = "unconfined\n",
};

static void gathers_what_the_files_say(void **state)
{
        struct userns_facts f;
        struct host h = ubuntu;
        h.seccomp = "2";
        classify(&h, EPERM, false, &f);
        assert_int_equal(f.error, EPERM);
        assert_int_equal(f.seccomp, 2);
        assert_int_equal(f.restrict_userns, 1);
        assert_int_equal(f.userns_clone, -1);
        assert_int_equal(f.max_user_ns, 62811);
        assert_true(f.apparmor_active);
        assert_false(f.profile_loaded);
        assert_false(f.profile_file);
        assert_false(f.privileged);
        assert_string_equal(f.label, "unconfined");
        assert_string_equal(f.exe, "/opt/hutch/bin/hutch");
}

static void ubuntu_without_the_profile_is_apparmor(void **state)
{
        struct userns_facts f;
        char text[512], fix[1024];
        /* the uid map write or a mount fails: not clone itself */
        assert_int_equal(classify(&ubuntu, EPERM, false, &f), USERNS_CAUSE_APPARMOR);
        assert_non_null(userns_cause_text(USERNS_CAUSE_APPARMOR, &f, text, sizeof(text)));
        assert_string_equal(text, "AppArmor restricts unprivileged user namespaces "
                            "(kernel.apparmor_restrict_unprivileged_userns=1) and no AppArmor profile for hutch is loaded");
        assert_non_null(userns_cause_fix(USERNS_CAUSE_APPARMOR, &f, fix, sizeof(fix)));
        /* the profile for this binary first, never the sysctl */
        assert_non_null(strstr(fix, "profile hutch /opt/hutch/bin/hutch flags=(unconfined)"));
        assert_non_null(strstr(fix, "sudo apparmor_parser -r /etc/apparmor.d/hutch"));
        assert_null(strstr(fix, "sysctl"));
        /* with the restrict_unprivileged_unconfined variant clone itself fails */
        assert_int_equal(classify(&ubuntu, EPERM, true, &f), USERNS_CAUSE_APPARMOR);
}

static void ubuntu_with_an_installed_unloaded_profile_loads_it(void **state)
{
        struct userns_facts f;
        char fix[1024];
        struct host h = ubuntu;
        h.profile_file = true;
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_APPARMOR);
        userns_cause_fix(USERNS_CAUSE_APPARMOR, &f, fix, sizeof(fix));
        assert_string_equal(fix, "load hutch's installed profile: sudo apparmor_parser -r /etc/apparmor.d/hutch");
}

static void ubuntu_with_the_profile_for_another_path(void **state)
{
        struct userns_facts f;
        char fix[1024];
        struct host h = ubuntu;
        h.profiles = "hutch (unconfined)\nunprivileged_userns (enforce)\n";
        h.profile_file = true;
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_APPARMOR_UNATTACHED);
        userns_cause_fix(USERNS_CAUSE_APPARMOR_UNATTACHED, &f, fix, sizeof(fix));
        /* a second profile, so the installed one keeps working */
        assert_non_null(strstr(fix, "/etc/apparmor.d/hutch-local"));
}

static void ubuntu_confined_by_hutch_is_not_apparmor(void **state)
{
        struct userns_facts f;
        struct host h = ubuntu;
        h.profiles = "hutch (unconfined)\n";
        h.label = "hutch (unconfined)\n";
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_NONE);
        h.label = "hutch-static (unconfined)\n";
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_NONE);
        /* a profile of another program is no help */
        h.label = "hutchinson (enforce)\n";
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_APPARMOR_UNATTACHED);
}

static void root_is_exempt_from_apparmor(void **state)
{
        struct userns_facts f;
        struct host h = ubuntu;
        h.capeff = CAPS_ROOT;
        h.initial_userns = true;
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_NONE);
        assert_true(f.privileged);
        /* root of a user namespace is not */
        h.initial_userns = false;
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_APPARMOR);
}

static void container_seccomp_refusal(void **state)
{
        struct userns_facts f;
        char text[512], fix[1024];
        struct host docker = { .seccomp = "2", .capeff = CAPS_ROOT };
        /* clone3 first: Docker's profile answers ENOSYS */
        assert_int_equal(classify(&docker, ENOSYS, true, &f), USERNS_CAUSE_SECCOMP);
        userns_cause_text(USERNS_CAUSE_SECCOMP, &f, text, sizeof(text));
        assert_non_null(strstr(text, "seccomp filter"));
        userns_cause_fix(USERNS_CAUSE_SECCOMP, &f, fix, sizeof(fix));
        assert_non_null(strstr(fix, "--security-opt seccomp="));
        /* clone/unshare with CLONE_NEWUSER: EPERM */
        assert_int_equal(classify(&docker, EPERM, true, &f), USERNS_CAUSE_SECCOMP);
        /* an EPERM of a later step is not the filter's on clone */
        assert_int_equal(classify(&docker, EPERM, false, &f), USERNS_CAUSE_NONE);
        /* no filter: ENOSYS from clone3 is an old kernel, not a container */
        struct host old = { .seccomp = "0" };
        assert_int_equal(classify(&old, ENOSYS, true, &f), USERNS_CAUSE_NONE);
        /* strict mode (1) is not a filter */
        struct host strict = { .seccomp = "1" };
        assert_int_equal(classify(&strict, EPERM, true, &f), USERNS_CAUSE_NONE);
        /* inside a container on Ubuntu the filter answers first */
        struct host both = ubuntu;
        both.seccomp = "2";
        assert_int_equal(classify(&both, EPERM, true, &f), USERNS_CAUSE_SECCOMP);
}

static void a_chroot(void **state)
{
        struct userns_facts f;
        char text[512], fix[1024];
        struct host h = { .capeff = CAPS_ROOT, .initial_userns = true, .roots = 2 };
        assert_int_equal(classify(&h, EPERM, true, &f), USERNS_CAUSE_CHROOT);
        assert_true(f.chrooted);
        userns_cause_text(USERNS_CAUSE_CHROOT, &f, text, sizeof(text));
        assert_non_null(strstr(text, "chrooted"));
        userns_cause_fix(USERNS_CAUSE_CHROOT, &f, fix, sizeof(fix));
        assert_non_null(strstr(fix, "pivot_root"));
        /* a mount at "/": the namespace's root, not chrooted */
        h.roots = 1;
        assert_int_equal(classify(&h, EPERM, true, &f), USERNS_CAUSE_NONE);
        assert_false(f.chrooted);
        /* no mountinfo: unknown, not chrooted */
        h.roots = 0;
        assert_int_equal(classify(&h, EPERM, true, &f), USERNS_CAUSE_NONE);
        /* the chroot refuses at clone only */
        h.roots = 2;
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_NONE);
}

static void the_count_limit(void **state)
{
        struct userns_facts f;
        char text[512], fix[1024];
        struct host zero = { .max_user_ns = "0\n" };
        assert_int_equal(classify(&zero, ENOSPC, true, &f), USERNS_CAUSE_MAX_ZERO);
        userns_cause_text(USERNS_CAUSE_MAX_ZERO, &f, text, sizeof(text));
        assert_string_equal(text, "the limit user.max_user_namespaces is 0");
        userns_cause_fix(USERNS_CAUSE_MAX_ZERO, &f, fix, sizeof(fix));
        assert_non_null(strstr(fix, "sysctl -w user.max_user_namespaces=15000"));
        struct host full = { .max_user_ns = "3\n" };
        assert_int_equal(classify(&full, ENOSPC, true, &f), USERNS_CAUSE_USED_UP);
        userns_cause_text(USERNS_CAUSE_USED_UP, &f, text, sizeof(text));
        assert_string_equal(text, "the limit user.max_user_namespaces (3) is used up");
}

static void debians_old_switch(void **state)
{
        struct userns_facts f;
        struct host h = { .userns_clone = "0\n" };
        assert_int_equal(classify(&h, EPERM, true, &f), USERNS_CAUSE_CLONE_KNOB);
        /* the switch refuses in clone, not later */
        assert_int_equal(classify(&h, EPERM, false, &f), USERNS_CAUSE_NONE);
        h.userns_clone = "1\n";
        assert_int_equal(classify(&h, EPERM, true, &f), USERNS_CAUSE_NONE);
}

static void nothing_to_explain(void **state)
{
        struct userns_facts f;
        char buf[64];
        struct host plain = { 0 };
        assert_int_equal(classify(&plain, 0, false, &f), USERNS_CAUSE_NONE);
        assert_int_equal(classify(&plain, EPERM, true, &f), USERNS_CAUSE_NONE);
        assert_int_equal(classify(&plain, EINVAL, true, &f), USERNS_CAUSE_NONE);
        /* AppArmor's switch at 0 restricts nothing */
        struct host off = ubuntu;
        off.restrict_userns = "0\n";
        assert_int_equal(classify(&off, EPERM, false, &f), USERNS_CAUSE_NONE);
        assert_null(userns_cause_text(USERNS_CAUSE_NONE, &f, buf, sizeof(buf)));
        assert_null(userns_cause_fix(USERNS_CAUSE_NONE, &f, buf, sizeof(buf)));
}

static int teardown(void **state)
{
        if (base)
                fst_rm_rf(base);
        free(base);
        base = NULL;
        return 0;
}

int main(void)
{
        tap_skip_filter();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(gathers_what_the_files_say),
                cmocka_unit_test(ubuntu_without_the_profile_is_apparmor),
                cmocka_unit_test(ubuntu_with_an_installed_unloaded_profile_loads_it),
                cmocka_unit_test(ubuntu_with_the_profile_for_another_path),
                cmocka_unit_test(ubuntu_confined_by_hutch_is_not_apparmor),
                cmocka_unit_test(root_is_exempt_from_apparmor),
                cmocka_unit_test(container_seccomp_refusal),
                cmocka_unit_test(a_chroot),
                cmocka_unit_test(the_count_limit),
                cmocka_unit_test(debians_old_switch),
                cmocka_unit_test(nothing_to_explain),
        };
        cmocka_set_message_output(CM_OUTPUT_TAP);
        return cmocka_run_group_tests(tests, NULL, teardown);
}
