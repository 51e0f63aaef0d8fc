#!/bin/sh
# check-folders.sh - hold src/ to the folder map at the top of src/README.
#
# Builds the folder include matrix from the `#include "folder/..."` lines
# of src/*/**.c and src/*/**.h (src/main.c sits above every folder and is
# left out) and reports, in TAP:
#   - a folder of src/ that the map does not describe;
#   - an include the map does not allow ("cli/ -> mcp run lib" lines);
#   - every include cycle between folders, named with one include line
#     for each of its steps.
# Any of them fails the test. The map's own allowed sets must be acyclic
# too, so a map that allows a cycle is reported as well.
#
# Usage: check-folders.sh [SRCDIR]   (default: $srcdir/src, or the src/
# next to this script)
set -eu

if [ $# -ge 1 ]; then
        src=$1
elif [ -n "${srcdir:-}" ] && [ -d "$srcdir/src" ]; then
        src=$srcdir/src
else
        src=$(dirname "$0")/../src
fi
[ -f "$src/README" ] || { echo "1..0 # SKIP no $src/README"; exit 0; }

# One "FROM TO WHERE" line per folder include: FROM the folder of the file,
# TO the included folder, WHERE "from/file.c:12 includes to/x.h".
edges=$(cd "$src" && find . -mindepth 2 -path './.*' -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print | sort |
        sed 's|^\./||' | xargs grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z0-9_-]*/' |
        sed -n 's|^\(\([^/:]*\)/[^:]*\):\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*"\(\([^/"]*\)/[^"]*\)".*|\2 \5 \1:\3 includes \4|p')
folders=$(cd "$src" && find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sed 's|^\./||' | sort)

# The map: lines "    name/   what it owns   -> allowed folders" (indented
# by four spaces, "-> nothing" for none) in src/README.
map=$(sed -n 's|^    \([a-z0-9_-]*\)/[[:space:]].*->[[:space:]]*\(.*\)$|\1 \2|p' "$src/README")

printf '%s\n' "$edges" | awk -v folders="$folders" -v map="$map" '
function tap(ok, what) {
        n++
        printf "%s %d - %s\n", ok ? "ok" : "not ok", n, what
        if (!ok)
                failed = 1
}
# Shortest path from a to b in the graph e (e[x SUBSEP y] set), as
# "a b c"; "" when there is none.
function path(e, a, b,    q, head, tail, prev, seen, x, y, p) {
        delete q; delete prev; delete seen
        head = tail = 0
        q[tail++] = a; seen[a] = 1
        while (head < tail) {
                x = q[head++]
                if (x == b)
                        break
                for (y in node)
                        if ((x, y) in e && !(y in seen)) {
                                seen[y] = 1; prev[y] = x; q[tail++] = y
                        }
        }
        if (!(b in seen))
                return ""
        p = b
        for (x = b; x != a; x = prev[x])
                p = prev[x] " " p
        return p
}
# Every cycle of graph e, one per edge that lies on one (the shortest
# cycle through that edge), each once: rotated to start at its smallest
# folder. Reported with the witness include of each step when w is set.
function cycles(e, kind, w,    k, ab, a, b, p, c, m, i, j, start, rot, why, found) {
        found = 0
        for (k in e) {
                split(k, ab, SUBSEP); a = ab[1]; b = ab[2]
                p = path(e, b, a)
                if (p == "")
                        continue
                m = split(a " " p, c, " ")      # a b ... a: m-1 folders
                start = 1
                for (i = 2; i < m; i++)
                        if (c[i] < c[start])
                                start = i
                rot = ""; why = ""
                for (i = 0; i < m; i++) {
                        j = (start - 1 + i) % (m - 1) + 1
                        rot = rot (i ? " -> " : "") c[j]
                        if (i < m - 1)
                                why = why (i ? "; " : "") w[c[j], c[j % (m - 1) + 1]]
                }
                if (rot in reported)
                        continue
                reported[rot] = 1; found = 1
                tap(0, kind ": " rot (why ~ /[^; ]/ ? " (" why ")" : ""))
        }
        return found
}
BEGIN {
        nf = split(folders, f, "\n")
        for (i = 1; i <= nf; i++)
                node[f[i]] = 1
        nm = split(map, lines, "\n")
        for (i = 1; i <= nm; i++) {
                k = split(lines[i], words, " ")
                mapped[words[1]] = 1
                node[words[1]] = 1
                for (j = 2; j <= k; j++)
                        if (words[j] != "nothing") {
                                allowed[words[1], words[j]] = 1
                                node[words[j]] = 1
                        }
        }
}
NF >= 3 {
        from = $1; to = $2
        if (from == to)
                next
        where = $0; sub(/^[^ ]+ [^ ]+ /, "", where)
        node[to] = 1
        if (!((from, to) in inc)) {
                inc[from, to] = 1
                witness[from, to] = where
        }
        if (!((from, to) in allowed) && !((from, to) in refused)) {
                refused[from, to] = 1
                refusals[++nr] = from "/ may not include " to "/ (" where ")"
        }
}
END {
        unmapped = 0
        for (i = 1; i <= nf; i++)
                if (!(f[i] in mapped)) {
                        tap(0, "folder " f[i] "/ is not in the map of src/README")
                        unmapped++
                }
        if (map == "")
                tap(0, "src/README holds no folder map (\"    name/  what  -> folders\" lines)")
        else if (!unmapped)
                tap(1, "every folder of src/ is in the map of src/README")
        for (i = 1; i <= nr; i++)
                tap(0, refusals[i])
        if (nr == 0)
                tap(1, "every folder include is one the map allows")
        if (!cycles(inc, "include cycle", witness))
                tap(1, "no include cycle between folders")
        delete reported
        if (!cycles(allowed, "the map of src/README allows a cycle", nothing))
                tap(1, "the map allows no cycle")
        printf "1..%d\n", n
        exit failed
}'
