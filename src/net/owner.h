/* owner.h - which process of the sandbox holds the other end of a
 * captured connection, for the record ("job pid"). Read from /proc on
 * the host side: the sandbox's TCP table (/proc/INIT/net/tcp*) gives the
 * socket's inode, the fds of the processes in the sandbox's pid
 * namespace give its holder. Best effort: a socket closed or passed on
 * meanwhile has no owner to report.
 */
#pragma once

#include <sys/types.h>

#include "net/rules.h"

/* The pid, as the sandbox sees it, of the process holding the TCP
 * socket whose local end is job:job_port and whose remote end is
 * dest:dest_port, in the network and pid namespaces of init_pid. 0 when
 * it cannot be told. */
pid_t egress_socket_owner(pid_t init_pid, const struct egress_addr *job, uint16_t job_port,
                          const struct egress_addr *dest, uint16_t dest_port);
