/* fuzz-request.c - libFuzzer target: arbitrary bytes as a hutch.request/1
 * document (config/request.c), what an agent or an MCP client sends.
 * The reader must never crash, leak or read out of bounds; a refused
 * document names a JSON pointer and gives a one-line error starting
 * "request: "; an accepted one has the command or the language and code
 * (both or neither), relative file paths without "..", and overrides in
 * key/value pairs. Nothing is run and no file is touched.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/request.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "request: %s\n", what);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct request req;
        char *pointer = NULL, *error = NULL;
        int r = request_parse((const char *)data, size, &req, &pointer, &error);

        if (r < 0) {
                check(r == -EINVAL || r == -EPROTONOSUPPORT, "unexpected error code");
                check(pointer && error, "refused without a pointer and an error");
                check(pointer[0] == '\0' || pointer[0] == '/', "pointer is not a JSON pointer");
                check(strncmp(error, "request: ", 9) == 0, "error does not start with \"request: \"");
                check(!strchr(error, '\n'), "error is more than one line");
        } else {
                check(!pointer && !error, "accepted with an error set");
                check(!req.language == !req.code, "language without code or code without language");
                check(req.language || strv_length(req.argv) > 0, "accepted without a command");
                check(strv_length(req.overrides) % 2 == 0, "overrides not in pairs");
                for (size_t i = 0; i < req.n_files; i++) {
                        const char *p = req.files[i].path;
                        check(p && p[0] && p[0] != '/', "file path empty or absolute");
                        check(strcmp(p, "..") && strncmp(p, "../", 3) && !strstr(p, "/../") &&
                              !(strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0),
                              "file path with ..");
                        check(!req.files[i].data != !req.files[i].host_path, "file with neither or both sources");
                }
                for (char **l = req.labels; l && *l; l++)
                        check(strchr(*l, '=') != NULL, "label without =");
        }
        free(pointer);
        free(error);
        request_done(&req);
        return 0;
}
