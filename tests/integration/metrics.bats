#!/usr/bin/env bats
# hutch stats --openmetrics: the history as the metrics a monitor scrapes.
# A store with runs of every status (the ones this host can produce run
# for real; oom, cpu_timeout, cancelled, setup_error, not_executable,
# compile_error and orphaned come in through hutch import), checked by
# promtool (Debian's prometheus package) and against hutch stats --json.

bats_require_minimum_version 1.5.0

load lib

setup() {
        common_setup
}

# Runs that end with each status this host gives for real, then the
# rest imported: every status of hutch.result/1 but running.
make_history() {
        "$HUTCH" run -- true
        run "$HUTCH" run -- false
        run "$HUTCH" run --label task=build -- sh -c 'echo hi'
        run "$HUTCH" run --timeout 1s -- sleep 5
        [ "$status" -eq 124 ]
        run -127 "$HUTCH" run -- no-such-command-here
        [ "$status" -eq 127 ]
        run "$HUTCH" run -- sh -c 'kill -9 $$'
        [ "$status" -eq 137 ]
        "$HUTCH" export > "$BATS_TEST_TMPDIR/one.jsonl"
        python3 - "$BATS_TEST_TMPDIR/one.jsonl" > "$BATS_TEST_TMPDIR/more.jsonl" <<'EOF'
import json, sys
base = json.loads(open(sys.argv[1]).readline())
alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
statuses = ["oom", "cpu_timeout", "cancelled", "setup_error", "not_executable", "compile_error", "orphaned"]
for i, st in enumerate(statuses):
    o = dict(base)
    o["id"] = "01M9ZZZZZZZZZZZZZZZZZZZZ" + alphabet[i] + "0"
    o["status"] = st
    o["profile"] = "imported\"profile\\x"
    o["node"] = "elsewhere"
    o["labels"] = {"task": "test"}
    print(json.dumps(o))
EOF
        "$HUTCH" import "$BATS_TEST_TMPDIR/more.jsonl"
}

# The Python expression $1 over m (family -> [(labels dict, value)])
# and stats (hutch stats --json), from the metrics text on stdin.
check_metrics() {
        python3 -c '
import json, re, sys
stats = json.loads(open(sys.argv[2]).read())
m = {}
line_re = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
label_re = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?")
text = sys.stdin.read()
assert text.endswith("# EOF\n"), "no # EOF at the end"
for line in text.splitlines():
    if line.startswith("#"):
        continue
    name, labels, value = line_re.match(line).groups()
    d = dict(label_re.findall(labels or ""))
    m.setdefault(name, []).append((d, float(value)))
assert eval(sys.argv[1]), sys.argv[1]
' "$1" "$BATS_TEST_TMPDIR/stats.json"
}

@test "stats --openmetrics: promtool accepts the metrics of every status" {
        command -v promtool >/dev/null || skip "promtool not installed (Debian: prometheus)"
        make_history
        run "$HUTCH" stats --openmetrics --label-key task
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" = "# EOF" ]
        printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/metrics.txt"
        run promtool check metrics < "$BATS_TEST_TMPDIR/metrics.txt"
        echo "$output"
        [ "$status" -eq 0 ]
        # every status of hutch.result/1 but running has a series
        for st in success failed signaled timeout cpu_timeout oom cancelled setup_error \
                  not_found not_executable compile_error orphaned; do
                grep -q "^hutch_runs_total{status=\"$st\"," "$BATS_TEST_TMPDIR/metrics.txt"
        done
        # a profile name with a quote and a backslash, escaped
        grep -qF 'profile="imported\"profile\\x"' "$BATS_TEST_TMPDIR/metrics.txt"
}

@test "stats --openmetrics: the numbers are those of stats --json" {
        make_history
        "$HUTCH" stats --json > "$BATS_TEST_TMPDIR/stats.json"
        "$HUTCH" stats --openmetrics --label-key task > "$BATS_TEST_TMPDIR/metrics.txt"
        c() { check_metrics "$1" < "$BATS_TEST_TMPDIR/metrics.txt"; }
        # by status, summed over profiles and labels
        c 'all(sum(v for d, v in m["hutch_runs_total"] if d["status"] == s) == n
               for s, n in stats["by_status"].items() if s != "running")'
        c 'sum(v for d, v in m["hutch_runs_total"]) + m["hutch_runs_running"][0][1] == stats["runs"]'
        c 'm["hutch_runs_running"][0][1] == stats["by_status"].get("running", 0)'
        # the labels asked for
        c 'sum(v for d, v in m["hutch_runs_total"] if d["label_task"] == "test") == 7'
        c 'sum(v for d, v in m["hutch_runs_total"] if d["label_task"] == "build") == 1'
        # histograms: cumulative, +Inf is the count, the count is the runs measured
        for h in hutch_run_duration_seconds hutch_run_cpu_seconds hutch_run_peak_memory_bytes; do
                c "[v for d, v in m['${h}_bucket']] == sorted(v for d, v in m['${h}_bucket'])"
                c "m['${h}_bucket'][-1] == ({'le': '+Inf'}, m['${h}_count'][0][1])"
                c "m['${h}_count'][0][1] == stats['runs']"
        done
        # the max duration (the 1 s timeout) is in the 5 s bucket, not the 1 s one
        c 'stats["duration_ms"]["max"] > 1000'
        c '[v for d, v in m["hutch_run_duration_seconds_bucket"] if d["le"] == "1"][0] < stats["runs"]'
        c 'm["hutch_store_size_bytes"][0][1] > 0'
}

@test "stats --openmetrics --output: the file is replaced whole, readable by a collector" {
        "$HUTCH" run -- true
        local dir="$BATS_TEST_TMPDIR/textfile"
        mkdir "$dir"
        echo "old" > "$dir/hutch.prom"
        run "$HUTCH" stats --openmetrics --output "$dir/hutch.prom"
        [ "$status" -eq 0 ]
        [ -z "$output" ]
        [ "$(tail -n 1 "$dir/hutch.prom")" = "# EOF" ]
        grep -q '^hutch_runs_total{status="success",profile="default"} 1$' "$dir/hutch.prom"
        [ "$(stat -c %a "$dir/hutch.prom")" = 644 ]
        # no temporary file left beside it
        [ "$(ls -A "$dir")" = hutch.prom ]
        # a directory that does not exist: one line, exit 1, nothing made
        run "$HUTCH" stats --openmetrics --output "$BATS_TEST_TMPDIR/nope/hutch.prom"
        [ "$status" -eq 1 ]
        [[ "$output" == *"--output $BATS_TEST_TMPDIR/nope/hutch.prom"* ]]
}

@test "stats --openmetrics: run labels are opt-in and bounded" {
        for i in $(seq 1 23); do
                "$HUTCH" run --label "task=t$i" -- true
        done
        "$HUTCH" run --label 'task=a"b\c' -- true
        run "$HUTCH" stats --openmetrics
        [ "$status" -eq 0 ]
        [[ "$output" != *label_* ]]
        run "$HUTCH" stats --openmetrics --label-key task
        [ "$status" -eq 0 ]
        # 24 values: 20 keep their name, the rest are "other"
        local names
        names=$(grep -c '^hutch_runs_total{' <<< "$output")
        [ "$names" -eq 21 ]
        grep -q 'label_task="other"} 4$' <<< "$output"
        # a key that is no label name, and too many keys
        run "$HUTCH" stats --openmetrics --label-key 'bad-key'
        [ "$status" -eq 2 ]
        [[ "$output" == *"--label-key"* ]]
        run "$HUTCH" stats --openmetrics --label-key a --label-key b --label-key c --label-key d --label-key e
        [ "$status" -eq 2 ]
        run "$HUTCH" stats --label-key a
        [ "$status" -eq 2 ]
        run "$HUTCH" stats --json --openmetrics
        [ "$status" -eq 2 ]
}

@test "stats --openmetrics: a running run is a gauge with its sandbox's memory" {
        "$HUTCH" run -- sleep 30 &
        local pid=$! i cgroup
        for ((i = 0; i < 100; i++)); do
                [ "$("$HUTCH" ps --json | wc -l)" -ge 1 ] && break
                sleep 0.1
        done
        cgroup=$("$HUTCH" ps --json | python3 -c '
import json, sys
print(json.loads(sys.stdin.readline())["enforcement"]["cgroup"]["path"] or "")')
        run "$HUTCH" stats --openmetrics
        kill "$pid"
        wait "$pid" || true
        [ "$status" -eq 0 ]
        grep -q '^hutch_runs_running 1$' <<< "$output"
        if [ -n "$cgroup" ]; then
                grep -q '^hutch_sandbox_memory_bytes{run="[0-9A-Z]\{26\}",profile="default"} [1-9]' <<< "$output"
        else
                # no cgroup on this host: no sandbox series, and the test says so
                echo "# no cgroup for the run here: only the absence of sandbox series is checked" >&3
                ! grep -q '^hutch_sandbox_memory_bytes{' <<< "$output" || false
        fi
}

@test "the example alert rules load, and fire on the series they are about" {
        command -v promtool >/dev/null || skip "promtool not installed (Debian: prometheus)"
        cp "$HUTCH_DATADIR/examples/hutch-alerts.yml" "$TESTS_DIR/integration/hutch-alerts.test.yml" \
           "$BATS_TEST_TMPDIR/"
        run promtool check rules "$BATS_TEST_TMPDIR/hutch-alerts.yml"
        echo "$output"
        [ "$status" -eq 0 ]
        run promtool test rules "$BATS_TEST_TMPDIR/hutch-alerts.test.yml"
        echo "$output"
        [ "$status" -eq 0 ]
}
