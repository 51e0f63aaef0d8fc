/* confine.h - what the egress helper may still do once it reads the
 * job's bytes: no capabilities, no_new_privs, and a seccomp allow-list
 * of the syscalls its loop, its relay, the stub DNS, the owner lookup
 * in /proc and glibc's name resolution make (confine.c argues each).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Confine the calling process, the egress helper, for the rest of its
 * life: drop every capability (the bounding and ambient sets too when
 * it may), as root take the host uid and gid of the sandbox whose init
 * is init_pid, set no_new_privs, load the allow-list. Call it once
 * everything that needs more (receiving the capture fds, reading the
 * host's addresses, loading the resolver's configuration) is done. 0,
 * or -errno: then the helper must not go on. */
int egress_confine(pid_t init_pid);
/* The same with the sandbox's host ids given (the landlock tier, whose
 * init keeps the caller's uid); (uid_t)-1 reads them from init. */
int egress_confine_as(pid_t init_pid, uid_t job_uid, gid_t job_gid);

/* The syscalls the allow-list names, by name, NULL-terminated (some are
 * allowed only with the arguments confine.c gives). For tests and
 * documentation; the filter is built from the same table. */
const char *const *egress_confine_allowed(void);

/* Whether the allow-list names syscall `name` at all. */
bool egress_confine_allows(const char *name);
