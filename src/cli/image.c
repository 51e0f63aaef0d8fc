/* cli/image.c - `hutch image import|ls|inspect|rm`: the image store
 * (image/image.h) for people and, with --json, for programs. The gc of
 * unreferenced layers is cli_image_gc(), called by `hutch gc`.
 */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/cli.h"
#include "config/profile.h"
#include "config/run-config.h"
#include "image/image.h"
#include "lib/exit-codes.h"
#include "lib/log.h"
#include "lib/util.h"
#include "sandbox/ns.h"

static void help(void)
{
        printf("Usage: hutch image import [-p PROFILE] [--json] SOURCE [NAME[:TAG]]\n"
               "       hutch image ls [--json]\n"
               "       hutch image inspect [--json] NAME[:TAG]\n"
               "       hutch image rm NAME[:TAG]...\n"
               "\n"
               "Keep OCI images for hutch run --image. SOURCE is one of\n"
               "  oci:DIR[:TAG]                    an OCI image layout directory\n"
               "  oci-archive:FILE[:TAG]           the same as a tar archive\n"
               "  docker-archive:FILE[:NAME:TAG]   what docker save / podman save write\n"
               "hutch pulls nothing; fetch an image with skopeo first:\n"
               "  skopeo copy docker://docker.io/library/debian:12 oci:debian:12\n"
               "  hutch image import oci:debian:12 deb12\n"
               "Every blob is checked against its digest and every layer unpacked once,\n"
               "as hostile input, within the profile's [image] max_layer_size and\n"
               "max_image_size. rm removes the layers no other image uses.\n"
               "\n"
               "  -p, --profile NAME  the profile whose [image] bounds apply (default: default)\n"
               "  --json              one JSON object (ls: one per line)\n"
               "  -h, --help          this text\n");
}

static int image_import_verb(const char *profile, bool json, char **args)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        _cleanup_free_ char *err = NULL, *perr = NULL;
        struct image_import_result res;
        struct run_config cfg;
        char size[32];

        if (!args[0] || (args[1] && args[2])) {
                log_error("image import: expected SOURCE [NAME[:TAG]] (see hutch image --help)");
                return EXIT_USAGE;
        }
        _cleanup_free_ char *name = args[1] ? image_ref_normalize(args[1]) : NULL;
        if (args[1] && !name) {
                log_error("image import: '%s' is not an image name (NAME[:TAG]: letters, digits, . _ - /)", args[1]);
                return EXIT_USAGE;
        }
        if (!startswith(args[0], "oci:") && !startswith(args[0], "oci-archive:") &&
            !startswith(args[0], "docker-archive:")) {
                log_error("image import: '%s': expected oci:DIR[:TAG], oci-archive:FILE[:TAG] or "
                          "docker-archive:FILE[:NAME:TAG] (hutch pulls nothing: skopeo copy docker://REF "
                          "oci:DIR:TAG, then hutch image import oci:DIR:TAG)", args[0]);
                return EXIT_USAGE;
        }
        run_config_init(&cfg);
        int r = profile_load(&cfg, profile, &perr);
        /* the files are the sandbox user's: for real root, host uid 65534
         * (reached only through root's own 0700 state dir) */
        struct image_limits lim = { cfg.image_max_layer_bytes, cfg.image_max_image_bytes,
                                    ns_real_root() ? ns_host_uid() : (uid_t)-1,
                                    ns_real_root() ? ns_host_gid() : (gid_t)-1 };
        run_config_done(&cfg);
        if (r < 0) {
                log_error("image import: %s", perr);
                return EXIT_SETUP;
        }
        r = cli_image_open("import", true, true, &st);
        if (r != EXIT_OK)
                return r;
        r = image_import(st, args[0], args[1], &lim, &res, &err);
        if (r < 0) {
                log_error("image import: %s: %s", args[0], err ? err : strerror(-r));
                return EXIT_FAILURE_GENERIC;
        }
        if (json) {
                json_t *j = json_pack("{s:s, s:s+, s:i, s:i, s:I, s:I, s:I, s:I}", "image", res.name, "manifest",
                                      "sha256:", res.manifest, "layers", res.layers, "layers_unpacked",
                                      res.layers_unpacked, "bytes", (json_int_t)res.bytes, "specials_skipped",
                                      (json_int_t)res.skipped_specials, "setid_dropped", (json_int_t)res.setid_dropped,
                                      "xattrs_dropped", (json_int_t)res.xattrs_dropped);
                json_dumpf(j, stdout, JSON_COMPACT);
                putchar('\n');
                json_decref(j);
                return EXIT_OK;
        }
        printf("imported %s sha256:%.12s: %u layer%s (%u unpacked now, %u shared), %s\n", res.name, res.manifest,
               res.layers, res.layers == 1 ? "" : "s", res.layers_unpacked, res.layers - res.layers_unpacked,
               cli_human_size(res.bytes, size, sizeof(size)));
        if (res.skipped_specials || res.setid_dropped || res.xattrs_dropped)
                printf("left out: %llu device node%s, FIFO%s or socket%s; %llu set-id bit%s; %llu xattr%s\n",
                       (unsigned long long)res.skipped_specials, res.skipped_specials == 1 ? "" : "s",
                       res.skipped_specials == 1 ? "" : "s", res.skipped_specials == 1 ? "" : "s",
                       (unsigned long long)res.setid_dropped, res.setid_dropped == 1 ? "" : "s",
                       (unsigned long long)res.xattrs_dropped, res.xattrs_dropped == 1 ? "" : "s");
        return EXIT_OK;
}

static json_t *strv_json(char **v)
{
        if (!v)
                return json_null();
        json_t *a = json_array();
        for (; *v; v++)
                json_array_append_new(a, json_string(*v));
        return a;
}

static json_t *info_json(const struct image_info *info)
{
        json_t *layers = json_array();
        for (char **d = info->layer_digests; d && *d; d++)
                json_array_append_new(layers, json_pack("s+", "sha256:", *d));
        return json_pack("{s:s, s:s+, s:s+, s:s?, s:s?, s:s?, s:I, s:o, s:o, s:o, s:o, s:s?, s:s?}", "image",
                         info->ref, "manifest", "sha256:", info->manifest, "config", "sha256:", info->config,
                         "architecture", info->architecture, "os", info->os, "created", info->created, "bytes",
                         (json_int_t)info->bytes, "layers", layers, "env", strv_json(info->env), "entrypoint",
                         strv_json(info->entrypoint), "cmd", strv_json(info->cmd), "working_dir", info->working_dir,
                         "user", info->user);
}

static int image_ls(bool json)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        _cleanup_strv_ char **refs = NULL;
        char size[32];

        int r = cli_image_open("ls", false, false, &st);
        if (r == -ENOENT)
                return EXIT_OK;         /* nothing imported yet */
        if (r != EXIT_OK)
                return r;
        r = image_list(st, &refs);
        if (r < 0) {
                log_error_errno(r, "image ls: refs: %m");
                return EXIT_DAMAGED;
        }
        if (!json && refs[0])
                printf("%-40s %-19s %8s %6s\n", "IMAGE", "MANIFEST", "SIZE", "LAYERS");
        for (char **ref = refs; *ref; ref++) {
                _cleanup_image_info_ struct image_info *info = NULL;
                _cleanup_free_ char *err = NULL;
                if (image_resolve(st, *ref, &info, &err) < 0) {
                        if (json)
                                printf("{\"image\":\"%s\",\"error\":\"damaged\"}\n", *ref);
                        else
                                printf("%-40s damaged: %s\n", *ref, err ? err : "?");
                        continue;
                }
                if (json) {
                        json_t *j = info_json(info);
                        json_dumpf(j, stdout, JSON_COMPACT);
                        putchar('\n');
                        json_decref(j);
                } else
                        printf("%-40s sha256:%.12s %8s %6zu\n", *ref, info->manifest,
                               cli_human_size(info->bytes, size, sizeof(size)), strv_length(info->layer_dirs));
        }
        return EXIT_OK;
}

static void print_list(const char *label, char **v)
{
        printf("%-12s", label);
        if (!v)
                printf(" (none)");
        for (; v && *v; v++)
                printf(" %s", *v);
        putchar('\n');
}

static int image_inspect(bool json, char **args)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        _cleanup_image_info_ struct image_info *info = NULL;
        _cleanup_free_ char *err = NULL;
        char size[32];

        if (!args[0] || args[1]) {
                log_error("image inspect: expected one NAME[:TAG]");
                return EXIT_USAGE;
        }
        int r = cli_image_open("inspect", false, false, &st);
        if (r == -ENOENT) {
                log_error("image inspect: no image %s (nothing imported yet)", args[0]);
                return EXIT_FAILURE_GENERIC;
        }
        if (r != EXIT_OK)
                return r;
        r = image_resolve(st, args[0], &info, &err);
        if (r < 0) {
                log_error("image inspect: %s", err ? err : strerror(-r));
                return r == -EBADMSG ? EXIT_DAMAGED : r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_GENERIC;
        }
        if (json) {
                json_t *j = info_json(info);
                json_dumpf(j, stdout, JSON_INDENT(2));
                putchar('\n');
                json_decref(j);
                return EXIT_OK;
        }
        printf("image        %s\nmanifest     sha256:%s\nconfig       sha256:%s\nplatform     %s/%s\n", info->ref,
               info->manifest, info->config, info->os ? info->os : "?",
               info->architecture ? info->architecture : "?");
        printf("size         %s unpacked\n", cli_human_size(info->bytes, size, sizeof(size)));
        print_list("entrypoint", info->entrypoint);
        print_list("cmd", info->cmd);
        printf("workdir      %s\nuser         %s\n", info->working_dir ? info->working_dir : "/",
               info->user ? info->user : "(image default: root, run as the sandbox user)");
        print_list("env", info->env);
        for (char **d = info->layer_digests; d && *d; d++)
                printf("layer        sha256:%s\n", *d);
        return EXIT_OK;
}

static int image_rm(char **args)
{
        _cleanup_image_store_ struct image_store *st = NULL;
        int code = EXIT_OK;

        if (!args[0]) {
                log_error("image rm: expected NAME[:TAG]...");
                return EXIT_USAGE;
        }
        int r = cli_image_open("rm", false, true, &st);
        if (r == -ENOENT) {
                log_error("image rm: no image %s (nothing imported yet)", args[0]);
                return EXIT_FAILURE_GENERIC;
        }
        if (r != EXIT_OK)
                return r;
        for (char **a = args; *a; a++) {
                r = image_remove(st, *a);
                if (r == -ENOENT || r == -EINVAL)
                        log_error("image rm: no image %s", *a);
                else if (r < 0)
                        log_error_errno(r, "image rm: %s: %m", *a);
                else {
                        printf(r == 1 ? "removed %s; its layers stay until hutch gc: a run is using the image store\n"
                                      : "removed %s\n", *a);
                        continue;
                }
                code = EXIT_FAILURE_GENERIC;
        }
        return code;
}

int verb_image(int argc, char **argv)
{
        static const struct option options[] = {
                { "json",    no_argument,       NULL, 'j' },
                { "profile", required_argument, NULL, 'p' },
                { "help",    no_argument,       NULL, 'h' },
                {}
        };
        const char *profile = NULL;
        bool json = false;
        int c;

        optind = 1;
        /* options anywhere: "image ls --json" and "image --json ls" */
        while ((c = getopt_long(argc, argv, "hp:", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'p':
                        profile = optarg;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                default:
                        return cli_usage_error("image", argv, options);
                }
        if (optind >= argc) {
                log_error("image: expected import, ls, inspect or rm (see hutch image --help)");
                return EXIT_USAGE;
        }
        const char *sub = argv[optind];
        char **args = argv + optind + 1;
        if (streq(sub, "import"))
                return image_import_verb(profile, json, args);
        if (streq(sub, "ls") || streq(sub, "list")) {
                if (args[0])
                        return cli_no_operands("image ls", argc, argv, optind + 1);
                return image_ls(json);
        }
        if (streq(sub, "inspect"))
                return image_inspect(json, args);
        if (streq(sub, "rm"))
                return image_rm(args);
        log_error("image: unknown command '%s' (expected import, ls, inspect or rm)", sub);
        return EXIT_USAGE;
}
