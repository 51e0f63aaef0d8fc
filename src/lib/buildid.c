/* buildid.c - the identity of the running hutch binary, for caches whose
 * contents depend on hutch's own code (the compiled seccomp policy: its
 * argument rules are C, not data, so two builds of one version can
 * compile the same settings into different filters).
 *
 * The linker's GNU build-id note names the exact build. Without one (a
 * build with --build-id=none), the executable's device, inode, size and
 * mtime stand in: coarser, but a rebuilt binary still gets a new name.
 */
#include "config.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/buildid.h"

struct note_search {
        char *out;
        size_t size;
        bool found;
};

static void hex_into(char *out, size_t size, const unsigned char *bytes, size_t n)
{
        size_t o = 0;
        for (size_t i = 0; i < n && o + 3 <= size; i++, o += 2)
                snprintf(out + o, 3, "%02x", bytes[i]);
        out[o < size ? o : size - 1] = '\0';
}

/* dl_iterate_phdr() visits the main program first; its notes are mapped,
 * so reading them needs no file access. */
static int find_note(struct dl_phdr_info *info, size_t info_size, void *data)
{
        struct note_search *s = data;

        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_NOTE)
                        continue;
                const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
                const char *end = p + ph->p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                        const char *name = p + sizeof(*nh);
                        const char *desc = name + ((nh->n_namesz + 3) & ~3u);
                        const char *next = desc + ((nh->n_descsz + 3) & ~3u);
                        if (next > end)
                                break;
                        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                                hex_into(s->out, s->size, (const unsigned char *)desc, nh->n_descsz);
                                s->found = true;
                                return 1;
                        }
                        p = next;
                }
        }
        return 1;       /* only the main program counts */
}

int build_id(char *out, size_t size)
{
        struct note_search s = { .out = out, .size = size };
        struct stat st;

        if (size < 2)
                return -EINVAL;
        dl_iterate_phdr(find_note, &s);
        if (s.found)
                return 0;
        if (stat("/proc/self/exe", &st) < 0)
                return -errno;
        snprintf(out, size, "exe:%llu:%llu:%llu:%lld.%09ld", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        return 0;
}
