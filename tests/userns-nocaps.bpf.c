/* userns-nocaps.bpf.c - a BPF LSM program that reproduces Ubuntu 24.04's
 * refusal of unprivileged user namespaces (apparmor_restrict_unprivileged_userns=1)
 * for one process tree, on a test host with the BPF LSM active.
 *
 * Ubuntu lets an unconfined program create a user namespace, and AppArmor
 * then confines what runs inside it (the unprivileged_userns profile):
 * no capability holds there, so mounting, bringing lo up or writing its
 * own uid map from inside fails, while the clone itself succeeds. This
 * program does the same on the `capable` hook: a task whose credentials
 * belong to a user namespace other than the initial one gets no
 * capability, for the tasks that descend from the loader
 * (userns-nocaps.c puts its tgid in the map), and for no one else. The
 * creator itself, still in the initial namespace, keeps what it had, as
 * under AppArmor (a parent may still write its child's maps).
 *
 * Built by the tests (clang -target bpf, with a vmlinux.h that bpftool
 * dumps from the running kernel's BTF); not part of hutch.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define EPERM 1
#define MAX_DEPTH 32

char LICENSE[] SEC("license") = "GPL";

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u32);
} marker SEC(".maps");

static __always_inline int in_tree(void)
{
        __u32 key = 0;
        __u32 *root = bpf_map_lookup_elem(&marker, &key);
        if (!root || !*root)
                return 0;
        /* BTF pointers, read directly: a kernel in lockdown
         * (confidentiality) refuses bpf_probe_read_kernel() */
        struct task_struct *t = bpf_get_current_task_btf();
        for (int i = 0; i < MAX_DEPTH && t; i++) {
                __u32 tgid = t->tgid;
                if (tgid == *root)
                        return 1;
                if (tgid <= 1)
                        return 0;
                t = t->real_parent;
        }
        return 0;
}

SEC("lsm/capable")
int BPF_PROG(strip_userns_caps, const struct cred *cred, struct user_namespace *ns, int cap, unsigned int opts,
             int ret)
{
        if (ret)
                return ret;
        /* the subject's own namespace, not the target's: creating the
         * namespaces, and the creator's work on them, are untouched */
        if (cred->user_ns->level == 0)
                return 0;
        return in_tree() ? -EPERM : 0;
}
