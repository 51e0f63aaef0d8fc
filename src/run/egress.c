/* run/egress.c - `network = allow` for the run verb: the rules
 * parsed once, the socket the sandbox sends its capture fds on, the
 * egress helper started beside the supervisor and its decisions
 * recorded with the run (net/egress.h). Nothing here runs for the other
 * network modes.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "run/run-internal.h"
#include "config/run-config.h"
#include "lib/redact.h"
#include "lib/util.h"
#include "net/netns.h"
#include "record/store.h"

/* Ports the capture listens on at most (one listener each). */
#define EGRESS_MAX_PORTS 128
/* How long the helper may take to hand over its record after the run. */
#define EGRESS_REPORT_MS 5000

static bool env_has(char *const *env, const char *name)
{
        size_t n = strlen(name);
        for (; env && *env; env++)
                if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
                        return true;
        return false;
}

/* Drop NAME=... from env (owned strings). */
static void env_unset(char **env, const char *name)
{
        size_t n = strlen(name), j = 0;
        for (size_t i = 0; env && env[i]; i++) {
                if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
                        free(env[i]);
                else
                        env[j++] = env[i];
        }
        if (env)
                env[j] = NULL;
}

/* The landlock tier's proxy: a listener on the host's 127.0.0.1 at a
 * port the kernel picks, sent to the helper over the capture socket as
 * the namespace tier's sandbox sends its own; the job never reaches it
 * itself, its init connects it for the job (connect-notify.h). Returns
 * the port, or -errno. */
static int landlock_proxy(int sock)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, SOMAXCONN) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        struct netns_fd_info info = { .kind = NETNS_FD_PROXY, .port = ntohs(sa.sin_port) };
        int r = netns_capture_send(sock, &fd, &info, 1);
        return r < 0 ? r : (int)info.port;
}

int run_egress_prepare(struct run_config *cfg, bool landlock, struct run_egress *e, char **ret_error)
{
        const char *bad = NULL;
        int pair[2], r;

        *e = (struct run_egress) { .sandbox_fd = -1, .helper_fd = -1, .helper = { .ctl_fd = -1 },
                                   .job_uid = (uid_t)-1, .job_gid = (gid_t)-1 };
        if (cfg->net != NET_ALLOW)
                return 0;
        r = egress_rules_parse(cfg->net_allow, cfg->net_deny, cfg->net_hosts, &e->rules, &bad);
        if (r < 0) {
                *ret_error = xasprintf("network: bad rule \"%s\"", bad);
                return r;
        }
        r = egress_rules_ports(&e->rules, EGRESS_MAX_PORTS, &e->ports);
        if (r < 0) {
                *ret_error = xasprintf("network: the allow rules open more than %d ports; the capture listens "
                                       "on each port a rule names, so name ports or narrow ranges",
                                       EGRESS_MAX_PORTS);
                return r;
        }
        e->n_ports = (size_t)r;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
                r = -errno;
                *ret_error = xasprintf("network: egress socket: %s", strerror(errno));
                return r;
        }
        e->sandbox_fd = pair[0];
        e->helper_fd = pair[1];
        e->active = true;
        int port = NETNS_PROXY_PORT;
        if (landlock) {
                /* no capture: the proxy is the only way out, so its
                 * variables are set whatever the caller's say */
                port = landlock_proxy(e->sandbox_fd);
                close(TAKE_FD(e->sandbox_fd));
                if (port < 0) {
                        *ret_error = xasprintf("network: the landlock tier's egress proxy: %s", strerror(-port));
                        return port;
                }
                e->proxy_port = (uint16_t)port;
                static const char *const own[] = { "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                                   "ALL_PROXY", "all_proxy" };
                for (size_t i = 0; i < ELEMENTSOF(own); i++)
                        env_unset(cfg->env, own[i]);
        }

        /* Clients that prefer a proxy get one (the helper's CONNECT
         * port); the rest are caught anyway. Unless the rules took its
         * port for themselves, or the user set their own. */
        bool proxy = true;
        for (size_t i = 0; !landlock && i < e->n_ports; i++)
                proxy = proxy && e->ports[i] != NETNS_PROXY_PORT;
        if (proxy) {
                _cleanup_free_ char *url = xasprintf("http://127.0.0.1:%d", port);
                const char *vars[] = { "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY" };
                for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                        if (!env_has(cfg->env, vars[i])) {
                                _cleanup_free_ char *kv = xasprintf("%s=%s", vars[i], url);
                                cfg->env = strv_append(cfg->env, kv);
                        }
                /* the namespace tier's loopback is the sandbox's own; the
                 * Landlock tier's is the host's, reachable through the
                 * proxy alone (a direct connect() is refused), so there
                 * nothing is exempt from it */
                if (!landlock && !env_has(cfg->env, "no_proxy") && !env_has(cfg->env, "NO_PROXY")) {
                        cfg->env = strv_append(cfg->env, "no_proxy=localhost,127.0.0.1,::1");
                        cfg->env = strv_append(cfg->env, "NO_PROXY=localhost,127.0.0.1,::1");
                }
        }
        return 0;
}

int run_egress_start(const struct run_config *cfg, pid_t init_pid, struct run_egress *e)
{
        if (!e->active)
                return 0;
        /* the sandbox has its copy: the helper must see EOF if it dies */
        close(TAKE_FD(e->sandbox_fd));
        e->params = (struct egress_params) {
                .rules = &e->rules, .max_connections = cfg->net_max_connections,
                .max_bytes = cfg->net_max_bytes, .max_records = EGRESS_MAX_RECORDS,
                .init_pid = init_pid, .job_uid = e->job_uid, .job_gid = e->job_gid,
                .job_only = e->proxy_port != 0,
        };
        int r = egress_start(&e->params, e->helper_fd, &e->helper);
        close(TAKE_FD(e->helper_fd));
        return r;
}

/* The job chooses what a connection's record holds (the name it looked
 * up, the Host or CONNECT line it sent, the TLS SNI), so a secret's
 * value can be there as well as in its output: replaced the same way. */
static void redact_connections(json_t *conns, char *const *secrets)
{
        size_t i;
        json_t *row;

        if (!secrets || !secrets[0])
                return;
        json_array_foreach(conns, i, row) {
                const char *key;
                json_t *v;
                json_object_foreach(row, key, v) {
                        if (!json_is_string(v))
                                continue;
                        size_t len;
                        _cleanup_free_ char *clean = redact(json_string_value(v), json_string_length(v), secrets,
                                                            &len);
                        if (clean)
                                json_object_set_new(row, key, json_stringn(clean, len));
                }
        }
}

int run_egress_record(struct store *store, const char *run_id, struct run_egress *e, char *const *secrets)
{
        json_t *conns = NULL;
        int r;

        if (!e->active || e->helper.pid <= 0)
                return 0;
        r = egress_finish(&e->helper, EGRESS_REPORT_MS, &conns);
        redact_connections(conns, secrets);
        int w = store_connections_add(store, run_id, conns);
        json_decref(conns);
        return r < 0 ? r : w;
}

void run_egress_done(struct run_egress *e)
{
        egress_abort(&e->helper);
        if (e->sandbox_fd >= 0)
                close(e->sandbox_fd);
        if (e->helper_fd >= 0)
                close(e->helper_fd);
        free(e->ports);
        egress_rules_done(&e->rules);
        *e = (struct run_egress) { .sandbox_fd = -1, .helper_fd = -1, .helper = { .ctl_fd = -1 } };
}
