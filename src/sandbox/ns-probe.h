/* ns-probe.h - does this host give the namespace tier what it needs?
 * (`--isolation auto`, DESIGN §10). */
#pragma once

#include <stdbool.h>

/* Make what the namespace tier makes, in a throwaway child, and stop at
 * the first refusal: clone into new user, mount, pid, ipc, uts (and,
 * unless net_host, net) namespaces; write its one-id maps from here, as
 * sandbox_spawn() does; mount a tmpfs inside. So each refusal hutch
 * knows is met where it would meet the run: a container's seccomp
 * profile or user.max_*_namespaces = 0 at the clone, Ubuntu's AppArmor
 * restriction at the map or the mount (the namespace exists, but no
 * capability holds in it).
 *
 * Returns 0 when everything worked, or -errno with *ret_step naming what
 * was refused ("clone namespaces", "write uid/gid map", "mount in the
 * user namespace"). About a millisecond. */
int ns_probe_userns(bool net_host, const char **ret_step);
