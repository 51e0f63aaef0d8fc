# closure.awk - the dependency closure of a few Debian packages, for
# tests/vm/run-systemd (host side). Reads the output of
#   apt-cache depends --recurse --no-recommends --no-suggests \
#       --no-conflicts --no-breaks --no-replaces --no-enhances SEEDS...
# and prints one package name a line: the seeds and, for every
# Depends/PreDepends group of a package in the closure that no package
# in it (or in the skip list) satisfies, the group's first alternative
# (the first provider when that is a virtual package), as apt would.
# apt-cache --recurse itself follows every alternative of every group,
# which would drag in cdebconf, dbus-broker and the like.
#
#   awk -v seeds="PKG..." -v skip="PKG..." -f closure.awk
#
# skip names packages to treat as present (and not follow): those that
# only maintainer scripts need. Exits 1 when a dependency has no
# candidate.
function provided(name,   k, n, p) {
        if (name in chosen || name in skipped) return 1
        n = split(prov[name], p, " ")
        for (k = 1; k <= n; k++) if (p[k] in chosen || p[k] in skipped) return 1
        return 0
}
function pick(name,   p) {
        if (!(name in isvirt)) return name
        split(prov[name], p, " ")
        return p[1]
}
BEGIN {
        n = split(skip, s, " "); for (i = 1; i <= n; i++) skipped[s[i]] = 1
}
/^[^ ]/ {
        cur = $0
        if (cur ~ /^</) { gsub(/[<>]/, "", cur); isvirt[cur] = 1 }
        ngroups[cur] = ngroups[cur] + 0
        open = 0
        next
}
/^ [ |][A-Za-z]+: / {
        name = $2
        if (name ~ /^</) { gsub(/[<>]/, "", name); isvirt[name] = 1 }
        sub(/:any$/, "", name)
        if (!open) { ngroups[cur]++; group[cur, ngroups[cur]] = "" }
        group[cur, ngroups[cur]] = group[cur, ngroups[cur]] " " name
        open = substr($0, 2, 1) == "|"
        last = name
        next
}
/^    / {
        if (index(" " prov[last] " ", " " $1 " ") == 0) prov[last] = prov[last] " " $1
        next
}
END {
        nq = split(seeds, queue, " ")
        for (i = 1; i <= nq; i++) chosen[queue[i]] = 1
        for (qi = 1; qi <= nq; qi++) {
                p = queue[qi]
                for (g = 1; g <= ngroups[p]; g++) {
                        na = split(group[p, g], alts, " ")
                        ok = 0
                        for (a = 1; a <= na; a++) if (provided(alts[a])) { ok = 1; break }
                        if (ok) continue
                        c = pick(alts[1])
                        if (c == "") { print "unresolved " alts[1] " for " p > "/dev/stderr"; bad = 1; continue }
                        chosen[c] = 1
                        queue[++nq] = c
                }
        }
        for (c in chosen) print c
        exit bad
}
