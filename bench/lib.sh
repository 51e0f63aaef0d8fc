# shellcheck shell=bash
# shellcheck disable=SC2154 # names and run_named come from the bench that sources this
# bench/lib.sh - what the bash benches share: timing one command with
# $EPOCHREALTIME, the order of each round, the statistics, and the table
# and ratio lines of their reports. Sourced, not run:
#
#   . "$(dirname "$0")/lib.sh"
#
# The bench defines `names` (its commands, in report order) and
# run_named NAME, which runs that command once with its output on
# stdout. Times are whole microseconds, one "NAME MICROSECONDS" line per
# run; the reports give milliseconds.

bench_prog=bench/${0##*/}

# the formats of the reports: the width of the name column, of each
# number of the table, and the decimal places of the milliseconds and of
# the ratios (the milliseconds are rounded first, and the ratios taken
# of what the table shows)
bench_name_width=8 bench_number_width=6 bench_ms_decimals=2 bench_ratio_decimals=2
# NAME_WIDTH NUMBER_WIDTH MS_DECIMALS RATIO_DECIMALS
bench_format() {
        bench_name_width=$1 bench_number_width=$2 bench_ms_decimals=$3 bench_ratio_decimals=$4
}

bench_need_epochrealtime() {
        [ -n "${EPOCHREALTIME:-}" ] || { echo "$bench_prog: needs bash 5 (\$EPOCHREALTIME)" >&2; exit 77; }
}

# COMMAND HINT: skip the bench (77) without COMMAND, saying where it comes from
bench_need() {
        command -v "$1" >/dev/null || { echo "$bench_prog: $1 not installed ($2)" >&2; exit 77; }
}

# "N cpus, load average A B C": what else the host was doing
bench_host() {
        echo "$(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# HINT: every command runs once, or the bench ends (1) naming the one
# that cannot, HINT (if not empty) after
bench_check_runs() {
        local n
        for n in "${names[@]}"; do
                run_named "$n" >/dev/null || { echo "$bench_prog: $n cannot run here${1:+ $1}" >&2; exit 1; }
        done
}

# ROUNDS: unrecorded rounds first: the page cache, the compiled
# filter's cache
bench_warm_up() {
        local i n
        for ((i = 0; i < $1; i++)); do
                for n in "${names[@]}"; do run_named "$n" >/dev/null; done
        done
}

# NAME: one timed run, "NAME MICROSECONDS" on stdout. $EPOCHREALTIME is
# read in this shell, so no timer process runs inside the span.
bench_timed() {
        local t0 t1
        t0=$EPOCHREALTIME
        run_named "$1" >/dev/null
        t1=$EPOCHREALTIME
        echo "$1 $(( ${t1/./} - ${t0/./} ))"
}

# the order of a round, in $order. shuffle: a fresh random permutation
# of names; a rotation keeps each command's predecessor fixed within a
# round, and the command after a second copy of hutch then runs on the
# pages it just warmed. rotate I: names from the (I mod N)th on, the
# order that round I of a rotating bench has always had.
bench_shuffle() {
        local i j t
        order=("${names[@]}")
        for ((i = ${#order[@]} - 1; i > 0; i--)); do
                j=$((RANDOM % (i + 1)))
                t=${order[i]} order[i]=${order[j]} order[j]=$t
        done
}
bench_rotate() {
        local k nn=${#names[@]}
        order=()
        for ((k = 0; k < nn; k++)); do order+=("${names[($1 + k) % nn]}"); done
}

# ROUNDS shuffle|rotate FUNCTION: ROUNDS rounds, each calling FUNCTION
# NAME for every name, in that round's order
bench_pass() {
        local i n
        for ((i = 0; i < $1; i++)); do
                case $2 in
                shuffle) bench_shuffle ;;
                rotate) bench_rotate "$i" ;;
                esac
                for n in "${order[@]}"; do "$3" "$n"; done
        done
}

# NAME FILE -> "median mean p99" in ms of NAME's lines in FILE; "0 0 0"
# without any
bench_stats() {
        awk -v n="$1" '$1 == n { print $2 }' "$2" | sort -n | awk -v d="$bench_ms_decimals" '
                { v[NR] = $1; s += $1 }
                END {
                        if (NR == 0) { print "0 0 0"; exit }
                        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                        p = int(NR * 0.99 + 0.999); if (p > NR) p = NR; if (p < 1) p = 1
                        f = "%." d "f"
                        printf f " " f " " f "\n", m / 1000, s / NR / 1000, v[p] / 1000
                }'
}

# VALUE...: their median (of the two middle ones, the mean)
bench_median() {
        printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# FILE: the table of FILE's times, a row per name: median, mean, p99
bench_table() {
        local n m a p w=$bench_name_width nw=$bench_number_width d=$bench_ms_decimals
        printf "  %-${w}s %$((nw + 3))s %$((nw + 3))s %$((nw + 3))s\n" "" median mean p99
        for n in "${names[@]}"; do
                read -r m a p < <(bench_stats "$n" "$1")
                printf "  %-${w}s %${nw}.${d}f ms %${nw}.${d}f ms %${nw}.${d}f ms\n" "$n" "$m" "$a" "$p"
        done
}

# LEAD: the name column of a line under the table ("ratio" on the first)
bench_lead() {
        printf "  %-${bench_name_width}s " "$1"
}

# LEAD FILE A B OP TARGET: "A/B of the medians (target OP TARGET)" and
# OVER TARGET when the ratio misses it; OP is <= or <
bench_target() {
        awk -v lead="$(bench_lead "$1")" -v a="$(bench_stats "$3" "$2")" -v b="$(bench_stats "$4" "$2")" \
            -v label="$3/$4" -v op="$5" -v t="$6" -v d="$bench_ratio_decimals" 'BEGIN {
                split(a, A, " "); split(b, B, " ")
                r = A[1] / B[1]
                ok = (op == "<") ? (r < t) : (r <= t)
                printf "%s%." d "f %s of the medians (target %s %s)%s\n", lead, r, label, op, t, ok ? "" : "  OVER TARGET"
        }'
}

# LEAD FILE A B [LABEL]: "A/B of the medians, ... of the p99s" (LABEL
# instead of A/B)
bench_versus() {
        awk -v lead="$(bench_lead "$1")" -v a="$(bench_stats "$3" "$2")" -v b="$(bench_stats "$4" "$2")" \
            -v label="${5:-$3/$4}" -v d="$bench_ratio_decimals" 'BEGIN {
                split(a, A, " "); split(b, B, " ")
                f = "%." d "f"
                printf "%s" f " %s of the medians, " f " of the p99s\n", lead, A[1] / B[1], label, A[3] / B[3]
        }'
}
