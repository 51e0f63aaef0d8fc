/* userns-nocaps.c - run a command as Ubuntu 24.04 runs an unconfined
 * program: user namespaces can be created, but no capability holds in
 * them (see userns-nocaps.bpf.c). For the tests; run as root.
 *
 *   userns-nocaps PROG.bpf.o CMD [ARG...]
 *
 * Loads and attaches the BPF LSM program, marks itself as the root of
 * the tree it applies to, runs CMD as its child and exits with its
 * status (128+N for a signal). The program is detached when this process
 * exits. Exit 77 (skip) with the reason on stderr where the BPF LSM is
 * not active or the program cannot be loaded.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_SKIP 77

static int bpf_lsm_active(void)
{
        char buf[512] = { 0 };
        FILE *f = fopen("/sys/kernel/security/lsm", "re");
        if (!f && errno == ENOENT &&
            mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL) == 0)
                f = fopen("/sys/kernel/security/lsm", "re");  /* a VM's bare /sys */
        if (!f)
                return 0;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        for (char *tok = strtok(buf, ",\n"); tok; tok = strtok(NULL, ",\n"))
                if (strcmp(tok, "bpf") == 0)
                        return 1;
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: userns-nocaps PROG.bpf.o CMD [ARG...]\n");
                return 2;
        }
        if (!bpf_lsm_active()) {
                fprintf(stderr, "userns-nocaps: the BPF LSM is not active (/sys/kernel/security/lsm)\n");
                return EXIT_SKIP;
        }
        libbpf_set_print(NULL);
        struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
        if (!obj) {
                fprintf(stderr, "userns-nocaps: %s: %s\n", argv[1], strerror(errno));
                return EXIT_SKIP;
        }
        if (bpf_object__load(obj) < 0) {
                fprintf(stderr, "userns-nocaps: cannot load %s: %s\n", argv[1], strerror(errno));
                return EXIT_SKIP;
        }
        struct bpf_map *map = bpf_object__find_map_by_name(obj, "marker");
        struct bpf_program *prog = bpf_object__find_program_by_name(obj, "strip_userns_caps");
        if (!map || !prog) {
                fprintf(stderr, "userns-nocaps: %s lacks the marker map or the program\n", argv[1]);
                return EXIT_SKIP;
        }
        unsigned key = 0, root = (unsigned)getpid();
        if (bpf_map__update_elem(map, &key, sizeof(key), &root, sizeof(root), BPF_ANY) < 0) {
                fprintf(stderr, "userns-nocaps: marker: %s\n", strerror(errno));
                return EXIT_SKIP;
        }
        struct bpf_link *link = bpf_program__attach_lsm(prog);
        if (!link) {
                fprintf(stderr, "userns-nocaps: cannot attach to the capable hook: %s\n", strerror(errno));
                return EXIT_SKIP;
        }
        pid_t pid = fork();
        if (pid < 0) {
                perror("userns-nocaps: fork");
                return 1;
        }
        if (pid == 0) {
                execvp(argv[2], argv + 2);
                fprintf(stderr, "userns-nocaps: %s: %s\n", argv[2], strerror(errno));
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return 1;
        bpf_link__destroy(link);
        bpf_object__close(obj);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
