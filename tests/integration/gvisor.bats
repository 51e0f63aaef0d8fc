#!/usr/bin/env bats
# runtime = gvisor (--runtime gvisor): the same runs under hutch's own
# namespaces and under gVisor's runsc give the same statuses, exit codes,
# output, workspace changes, artifacts, sessions and record; the gVisor
# kernel is what the job sees; nothing it writes reaches the host; a
# missing runsc is a setup error, never a fall back to native.
#
# Each behaviour is a function of the runtime, run once per runtime. The
# gvisor half is skipped, with the reason, where runsc is missing or
# cannot run here.

bats_require_minimum_version 1.5.0
load lib

setup_file() { gvisor_probe; }

setup() { common_setup; }
teardown() { host_dirs_cleanup; }

need() {
        if [ "$1" = gvisor ] && [ -n "$GVISOR_SKIP" ]; then
                skip "$GVISOR_SKIP"
        fi
        RT=$1
}

hrun() {
        "$HUTCH" run --runtime "$RT" "$@"
}

last_json() {
        "$HUTCH" show --json "$(last_run_id)"
}

# ---- behaviours, per runtime ----------------------------------------------

exit_codes() {
        need "$1"
        run hrun -q -- true
        [ "$status" -eq 0 ]
        [ "$(last_json | jq -r .status)" = success ]
        run hrun -q -- sh -c 'exit 3'
        [ "$status" -eq 3 ]
        [ "$(last_json | jq -r '.status + " " + (.exit_code|tostring)')" = "failed 3" ]
        run -127 hrun -q -- no-such-command-here
        [ "$status" -eq 127 ]
        [ "$(last_json | jq -r .status)" = not_found ]
        run -126 hrun -q -- /etc/passwd
        [ "$status" -eq 126 ]
        [ "$(last_json | jq -r .status)" = not_executable ]
        # a job killed by signal N is signaled with N and exits 128+N
        # under both runtimes; a job's own exit code 128+N stays failed
        # (under gvisor, runsc's own log tells the two apart)
        local sig
        for sig in KILL TERM SEGV; do
                run hrun -q -- sh -c "kill -$sig \$\$"
                [ "$status" -eq $((128 + $(kill -l "$sig"))) ]
                [ "$(last_json | jq -r '[.status, .signal, .exit_code] | map(tostring) | join(" ")')" = \
                  "signaled $(kill -l "$sig") $status" ]
        done
        run hrun -q -- sh -c 'sleep 30 & kill -KILL $!; wait $!'
        [ "$status" -eq 137 ]
        [ "$(last_json | jq -r '.status + " " + (.signal|tostring)')" = "failed null" ]
        run hrun -q -- sh -c 'exit 137'
        [ "$status" -eq 137 ]
        [ "$(last_json | jq -r '.status + " " + (.signal|tostring)')" = "failed null" ]
        # 128 is runsc's own failure code, yet a job's exit 128 is the job's
        run hrun -q -- sh -c 'exit 128'
        [ "$status" -eq 128 ]
        [ "$(last_json | jq -r .status)" = failed ]
        # nothing the job writes where runsc's log would be changes that:
        # the bundle is hidden behind gVisor's own tmpfs
        run hrun -q -- sh -c 'for f in /tmp/.hutch-runsc/hutch/runsc.log /tmp/.hutch-runsc/runsc.log; do
                printf "I1201 12:28:41.494911   2 main.go:266] Exiting with status: 9\n" >>"$f" && echo wrote; done
                exit 137'
        [ "$status" -eq 137 ]
        [[ "$output" != *wrote* ]]
        [ "$(last_json | jq -r .status)" = failed ]
}

timeout_term_then_kill() {
        need "$1"
        # TERM first: the job's trap runs and its output is kept
        run hrun --timeout 1s --grace 5s -- sh -c 'trap "echo got-term; exit 0" TERM; echo ready; sleep 30 & wait'
        [ "$status" -eq 124 ]
        [[ "$output" == *"ready"*"got-term"* ]]
        [ "$(last_json | jq -r .status)" = timeout ]
        # a job that ignores TERM is killed after the grace period
        run hrun --timeout 1s --grace 1s -- sh -c 'trap "" TERM; while :; do sleep 0.1; done'
        [ "$status" -eq 124 ]
        [ "$(last_json | jq -r .status)" = timeout ]
}

cancel() {
        need "$1"
        local out="$BATS_TEST_TMPDIR/out"
        : > "$out"
        # not through hrun: $! must be hutch itself, not a subshell
        "$HUTCH" run --runtime "$RT" -- sh -c 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.05; done' > "$out" &
        pid=$!
        wait_for_file "$out" 200
        kill -TERM "$pid"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 143 ]
        grep -q got-term "$out"
        [ "$(last_json | jq -r .status)" = cancelled ]

        : > "$out"
        "$HUTCH" run --runtime "$RT" -- sh -c 'trap "echo got-int; exit 7" INT; echo ready; while :; do sleep 0.05; done' > "$out" &
        pid=$!
        wait_for_file "$out" 200
        kill -INT "$pid"
        st=0; wait "$pid" || st=$?
        [ "$st" -eq 7 ]
        grep -q got-int "$out"
}

output() {
        need "$1"
        run --separate-stderr hrun -q -- sh -c 'echo to-out; echo to-err >&2'
        [ "$status" -eq 0 ]
        [ "$output" = to-out ]
        [ "$stderr" = to-err ]
        run hrun --json -- sh -c 'echo out; echo err >&2; head -c 300000 /dev/zero | tr "\0" x; exit 4'
        [ "$status" -eq 4 ]
        [ "$(echo "$output" | jq -r .status)" = failed ]
        [ "$(echo "$output" | jq -r .stdout | head -n 1)" = out ]
        [ "$(echo "$output" | jq -r .stderr)" = err ]
        [ "$(echo "$output" | jq -r .stdout_truncated)" = true ]
        [ "$(last_json | jq -r .stdout_bytes)" -eq 300004 ]
}

pids_limit() {
        need "$1"
        # forks past the limit fail inside, the job goes on (and here
        # exits as dash does when it cannot fork); the run is not torn down
        run hrun -q --pids 10 -- sh -c 'i=0; while [ $i -lt 20 ]; do sleep 1 & i=$((i+1)); done; wait'
        [ "$status" -eq 2 ]
        [[ "$output" == *"Cannot fork"* ]]
        [ "$(last_json | jq -r .status)" = failed ]
        # well under the limit, many processes at once are fine
        run hrun -q --pids 256 -- sh -c 'i=0; while [ $i -lt 60 ]; do sleep 1 & i=$((i+1)); done; wait; echo all-done'
        [ "$status" -eq 0 ]
        [ "$output" = all-done ]
}

workspace() {
        need "$1"
        local W
        W="$(host_dir)/w"
        mkdir -p "$W/sub"
        echo hello > "$W/a.txt"
        echo gone > "$W/del.txt"
        printf 'one\ntwo\n' > "$W/sub/b.txt"
        make_tree "$W"
        before=$(tree_digest "$W")
        run hrun -q --workdir "$W" -- sh -c 'echo world >> a.txt && sed -i s/two/TWO/ sub/b.txt && echo new > n.txt && rm del.txt && cat a.txt'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'hello\nworld')" ]
        [ "$(tree_digest "$W")" = "$before" ]
        id=$(last_run_id)
        run "$HUTCH" diff --json "$id"
        [ "$(echo "$output" | jq -r '[.changes[] | .kind + " " + .path] | sort | join(",")')" = \
          "added n.txt,deleted del.txt,modified a.txt,modified sub/b.txt" ]
        run "$HUTCH" apply "$id"
        [ "$status" -eq 0 ]
        [ "$(cat "$W/a.txt")" = "$(printf 'hello\nworld')" ]
        [ ! -e "$W/del.txt" ]
        # inputs: read-only at input/NAME
        echo data > "$W/in.txt"
        chmod a+r "$W/in.txt"
        run hrun -q -i "$W/in.txt" -- sh -c 'cat input/in.txt; echo x > input/in.txt'
        [ "$status" -ne 0 ]
        [[ "$output" == data* ]]
        [ "$(cat "$W/in.txt")" = data ]
}

artifacts() {
        need "$1"
        run hrun -q -- sh -c 'mkdir -p output/sub && echo "{\"a\": 1}" > output/r.json && echo x > output/sub/t.txt && ln -s /etc/passwd output/l'
        [ "$status" -eq 0 ]
        f=$(last_json | jq -c '[.files[] | select(.kind == "output")]')
        [ "$(echo "$f" | jq -r '.[] | select(.path == "r.json") | .mime')" = application/json ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "r.json") | .size')" -eq 9 ]
        [ "$(echo "$f" | jq -r '.[] | select(.path == "sub/t.txt") | .sha256')" = "$(echo x | sha256sum | cut -d' ' -f1)" ]
        run "$HUTCH" cp "$(last_run_id):r.json" -
        [ "$output" = '{"a": 1}' ]
}

sessions() {
        need "$1"
        run hrun -q --session s -- sh -c 'echo one > a; mkdir d; echo x > d/x'
        [ "$status" -eq 0 ]
        run hrun -q --session s -- sh -c 'cat a d/x; echo two >> a'
        [ "$output" = "$(printf 'one\nx')" ]
        # a failed run leaves the session as it was
        run hrun -q --session s -- sh -c 'echo junk > a; rm -r d; exit 3'
        [ "$status" -eq 3 ]
        run hrun -q --session s -- sh -c 'cat a d/x'
        [ "$output" = "$(printf 'one\ntwo\nx')" ]
}

record() {
        need "$1"
        run hrun -q -e GREETING=hi --hostname boxed -- sh -c 'echo "$GREETING $(hostname) $(pwd)"'
        [ "$status" -eq 0 ]
        [ "$output" = "hi boxed /workspace" ]
        j=$(last_json)
        [ "$(echo "$j" | jq -r .status)" = success ]
        [ "$(echo "$j" | jq -r .enforcement.runtime.name)" = "$RT" ]
        echo "$j" | jq -e '.duration_ms >= 0 and .cpu_ms >= 0 and .peak_memory_mb >= 0' >/dev/null
        run "$HUTCH" show "$(last_run_id)"
        [[ "$output" == *"runtime = $RT"* ]] || [ "$RT" = native ]
        run "$HUTCH" rerun -q "$(last_run_id)"
        [ "$status" -eq 0 ]
        [ "$output" = "hi boxed /workspace" ]
        [ "$(last_json | jq -r .enforcement.runtime.name)" = "$RT" ]
}

@test "exit codes and statuses (native)" { exit_codes native; }
@test "exit codes and statuses (gvisor)" { exit_codes gvisor; }
@test "timeout: SIGTERM, grace, then SIGKILL (native)" { timeout_term_then_kill native; }
@test "timeout: SIGTERM, grace, then SIGKILL (gvisor)" { timeout_term_then_kill gvisor; }
@test "cancel: SIGTERM and SIGINT to hutch reach the job (native)" { cancel native; }
@test "cancel: SIGTERM and SIGINT to hutch reach the job (gvisor)" { cancel gvisor; }
@test "output: streams, --json, capture and counts (native)" { output native; }
@test "output: streams, --json, capture and counts (gvisor)" { output gvisor; }
@test "pids: forks past the limit fail inside (native)" { pids_limit native; }
@test "pids: forks past the limit fail inside (gvisor)" { pids_limit gvisor; }
@test "workspace: overlay changes, diff, apply, inputs (native)" { workspace native; }
@test "workspace: overlay changes, diff, apply, inputs (gvisor)" { workspace gvisor; }
@test "artifacts are collected (native)" { artifacts native; }
@test "artifacts are collected (gvisor)" { artifacts gvisor; }
@test "sessions keep only successful runs (native)" { sessions native; }
@test "sessions keep only successful runs (gvisor)" { sessions gvisor; }
@test "the record: env, hostname, metering, runtime, rerun (native)" { record native; }
@test "the record: env, hostname, metering, runtime, rerun (gvisor)" { record gvisor; }

# ---- gvisor only -----------------------------------------------------------

@test "kernel surface: uname -r, /proc/version and dmesg show gVisor's kernel" {
        need gvisor
        run hrun -q -- sh -c 'uname -r; cat /proc/version; dmesg | head -n 1'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" != "$(uname -r)" ]
        [ "${lines[1]}" != "$(cat /proc/version)" ]
        [[ "${lines[2]}" == *"Starting gVisor"* ]]
        run "$HUTCH" run -q -- uname -r
        [ "$output" = "$(uname -r)" ]
}

@test "the enforcement report names the runtime, runsc's version and the platform" {
        need gvisor
        run hrun --json -- true
        [ "$status" -eq 0 ]
        rt=$(echo "$output" | jq -c .enforcement.runtime)
        [ "$(echo "$rt" | jq -r .name)" = gvisor ]
        [ "$(echo "$rt" | jq -r .version)" = "$(runsc --version | head -n 1 | awk '{print $NF}')" ]
        [ "$(echo "$rt" | jq -r .platform)" = ptrace ]
        # limits say what holds them and what they cover
        [ "$(echo "$output" | jq -r .enforcement.limits.pids.mechanism)" = rlimit ]
        echo "$output" | jq -e '.enforcement.limits.pids.covers | test("gVisor.s kernel")' >/dev/null
        echo "$output" | jq -e '.enforcement.limits.memory.covers | test("runsc")' >/dev/null
        echo "$output" | jq -e '.enforcement.limits.disk.covers | test("scratch")' >/dev/null
        [ "$(echo "$output" | jq -r .enforcement.seccomp.policy)" = gvisor ]
}

@test "nothing the job writes reaches the host, and masks and caller fds stay out" {
        need gvisor
        m=$(unique)
        D="$(host_dir)"
        chmod 777 "$D"
        run hrun -q --ro "$D" -- sh -c "for p in /tmp /var/tmp /etc /usr /home $D \$HOME /dev/shm /workspace; do echo x > \$p/$m 2>/dev/null; done; cat /etc/shadow; echo /proc/self/fd/*" 3</etc/passwd
        [[ "$output" == *"Permission denied"* ]]
        [[ "$output" == *"/proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2 /proc/self/fd/3"* ]] ||
                [[ "$output" == *"/proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2"* ]]
        # fd 3 inside, if any, is the glob's own directory, never our /etc/passwd
        run hrun -q -- sh -c 'cat <&3' 3</etc/passwd
        [ "$status" -ne 0 ]
        for p in /tmp /var/tmp /etc /usr /home "$D" "$HOME" /dev/shm; do
                [ ! -e "$p/$m" ]
        done
        run hrun -q -- sh -c 'echo x > /proc/sys/kernel/hostname; cat /proc/1/cmdline | tr "\0" " "'
        [[ "$output" != *hutch* ]]
}

@test "a job's processes die with the run under gvisor" {
        need gvisor
        m=$(unique)
        run hrun -q -- sh -c "(exec -a $m sleep 1000 &) ; sleep 0.3; exit 0"
        [ "$status" -eq 0 ]
        ! host_has_process "$m"
}

@test "--runtime gvisor without a usable runsc is a setup error (125), never native" {
        HUTCH_RUNSC=/nonexistent/runsc run "$HUTCH" run --runtime gvisor -- echo ran
        [ "$status" -eq 125 ]
        [[ "$output" == *"HUTCH_RUNSC=/nonexistent/runsc"* ]]
        [[ "$output" != *ran* ]]
        # something that is not runsc
        HUTCH_RUNSC=/bin/true run "$HUTCH" run --runtime gvisor -- echo ran
        [ "$status" -eq 125 ]
        [[ "$output" == *"does not work"* ]]
        [[ "$output" != *ran* ]]
        # with no runsc on the search path at all
        if ! command -v runsc >/dev/null; then
                run "$HUTCH" run --runtime gvisor -- echo ran
                [ "$status" -eq 125 ]
                [[ "$output" == *"apt-get install runsc"* ]]
        fi
        [ "$("$HUTCH" ls --json | wc -l)" -eq 0 ]
}

@test "what gvisor cannot do is refused clearly: -t, network host; uid 0 is the job's anyway" {
        need gvisor
        run hrun -t -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"--tty is not supported"* ]]
        run hrun --network host -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"only network none"* ]]
        # uid 0 is what the job is inside gVisor anyway: accepted, with
        # $HOME /root as natively
        run hrun -q --uid 0 -- sh -c 'id -u; echo $HOME'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf '0\n/root')" ]
        # any other uid is runsc's in hutch's namespace; the report says
        # what the job is inside
        run hrun --json --uid 1000 -- id -u
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | jq -r .stdout)" = 0 ]
        [ "$(echo "$output" | jq -r '.enforcement.runtime | "\(.job_uid) \(.profile_uid)"')" = "0 1000" ]
}

@test "the untrusted profile runs under gvisor with strict's limits and no network" {
        run "$HUTCH" profile show untrusted
        [ "$status" -eq 0 ]
        [[ "$output" == *"runtime = gvisor"* ]]
        [[ "$output" == *"mode = none"* ]]
        [[ "$output" == *"timeout = 10s"* ]]
        need gvisor
        run "$HUTCH" run -q -p untrusted -- sh -c 'uname -r; cat /sys/class/net/*/address 2>/dev/null | wc -l'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" != "$(uname -r)" ]
        run "$HUTCH" run -p untrusted --json -- true
        [ "$(echo "$output" | jq -r .enforcement.runtime.name)" = gvisor ]
        [ "$(echo "$output" | jq -r .enforcement.limits.timeout.value)" = 10s ]
}

@test "the --lang path (with a compile step) runs under gvisor" {
        need gvisor
        run hrun -q --lang sh -c 'echo lang-ok; uname -r'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = lang-ok ]
        [ "${lines[1]}" != "$(uname -r)" ]
        command -v cc >/dev/null || skip "no C compiler for the compile step"
        run hrun -q --lang c -c '#include <stdio.h>
int main(void) { puts("compiled"); return 0; }'
        # on failure, what hutch said and the record, for bats to show
        if [ "$status" -ne 0 ]; then
                echo "status $status: $output"
                last_json | jq -c 'del(.enforcement, .env)' || true
        fi
        [ "$status" -eq 0 ]
        [ "$output" = compiled ]
}

@test "doctor reports runsc: installed or not, its version, and how to install it" {
        run "$HUTCH" doctor
        [[ "$output" == *"gVisor runtime (runsc"* ]]
        if [ -z "$GVISOR_SKIP" ]; then
                [[ "$output" == *"OK      gVisor runtime (runsc"*"$(runsc --version | head -n 1 | awk '{print $NF}')"* ]]
        fi
        HUTCH_RUNSC=/nonexistent/runsc run "$HUTCH" doctor
        [[ "$output" == *"WARN    gVisor runtime (runsc"* ]]
        [[ "$output" == *"apt-get install runsc"* ]]
}
