#!/usr/bin/env bats
# boundary.bats - the job gets nothing of the caller's but what it was
# given: no inherited descriptor or terminal, and a supervisor it cannot
# stall. Each case is an attack from inside (or a reader misbehaving
# outside); the test then looks at the host: the victim file, the
# terminal's state, what the job read, the record, leftover processes.
# The terminal cases run on a real pseudo-terminal (ptyrun.py).

load lib

setup() {
        require_sandbox
        command -v python3 >/dev/null || skip "python3 is not installed (the pty harness)"
        M=$(marker)
        PTYRUN="$BATS_TEST_DIRNAME/ptyrun.py"
}

# status_of ID-PREFIX-less: the newest run's status, as recorded
newest_status() {
        "$HUTCH" ls | awk 'NR == 2 { print $5 }'
}

@test "boundary: a job cannot write the caller's stdin file through /proc/self/fd/0" {
        local victim="$BATS_TEST_TMPDIR/notes.txt"
        echo "precious $M" >"$victim"
        # writable by the sandbox's host uid too, so only the boundary
        # stands between the job and the file, as root and as a user
        chmod 666 "$victim"
        run "$HUTCH" run -- sh -c 'echo X > /proc/self/fd/0; echo X >> /proc/self/fd/0; echo X > /proc/1/fd/0; readlink /proc/self/fd/0; [ -p /proc/self/fd/0 ] && echo fd0-is-a-pipe' <"$victim"
        [ "$(cat "$victim")" = "precious $M" ] || { echo "victim now: $(cat "$victim")" >&2; false; }
        if under_gvisor; then
                # gVisor names a descriptor runsc handed in "host:[N]"; it
                # is the supervisor's pipe all the same
                [[ "$output" == *"host:["*"fd0-is-a-pipe"* ]] || { echo "fd 0 inside: $output" >&2; false; }
        else
                [[ "$output" == *"pipe:["*"fd0-is-a-pipe"* ]] || { echo "fd 0 inside: $output" >&2; false; }
        fi
}

@test "boundary: stdin is relayed in full, and its EOF reaches the job" {
        run sh -c "head -c 3000000 /dev/zero | tr '\\0' x | '$HUTCH' run -- wc -c"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 3000000 ]
        # a job that never reads stdin ends at once, even with endless input
        run timeout 20 sh -c "yes | '$HUTCH' run -- true"
        [ "$status" -eq 0 ]
}

@test "boundary: without -t nothing inside is a terminal, even on the caller's terminal" {
        run python3 "$PTYRUN" -- "$HUTCH" run -- sh -c 'for fd in 0 1 2; do [ -t $fd ] && echo "TTY$fd"; done; ls -l /proc/self/fd/ /proc/1/fd/ 2>&1; true'
        [[ "$output" == *"status 0"* ]] || { echo "$output" >&2; false; }
        [[ "$output" != *TTY* ]] || { echo "$output" >&2; false; }
        [[ "$output" != *"/dev/pts"* ]] || { echo "a caller's terminal reached the sandbox: $output" >&2; false; }
}

@test "boundary: output the job sends to fd 0 does not reach the caller's terminal past -q, --json and >/dev/null" {
        run python3 "$PTYRUN" -- sh -c "'$HUTCH' run -q --json -- sh -c 'printf \"\\033]52;c;$M\\007\\033]0;title$M\\007\" >&0; printf \"\\033]0;t2$M\\007\" >/dev/tty' >/dev/null 2>&1"
        [[ "$output" == *"status "* ]]
        [[ "$output" != *"$M"* ]] || { echo "escape sequences reached the terminal: $output" >&2; false; }
}

@test "boundary: a backgrounded run does not read what is typed at the prompt" {
        local out="$BATS_TEST_TMPDIR/job.out"
        # an interactive shell with job control: the run goes to the
        # background and the shell reads the next line from the terminal
        run python3 "$PTYRUN" --keys "2:typed$M\r" --timeout 30 -- bash -c "
                set -m
                '$HUTCH' run --timeout 6s -- sh -c 'read -r l; echo \"job:[\$l]\"' >'$out' 2>&1 &
                sleep 1
                IFS= read -r -t 8 x; echo \"shell:[\$x]\"
                wait"
        [[ "$output" == *"shell:[typed$M"* ]] || { echo "$output; job: $(cat "$out")" >&2; false; }
        ! grep -q "typed$M" "$out" || { echo "the job read the keys: $(cat "$out")" >&2; false; }
}

# The terminal modes a case runs in: without and with -t; only without
# under gvisor, which refuses -t (125; gvisor.bats checks that).
tty_modes() {
        if under_gvisor; then
                echo ""
        else
                printf '%s\n' "" -t
        fi
}

@test "boundary: a backgrounded run never stops itself and records its run" {
        local t
        while IFS= read -r t; do
                run python3 "$PTYRUN" --timeout 30 -- bash -c "
                        set -m
                        '$HUTCH' run $t -- sh -c 'sleep 0.5; echo done$M' &
                        wait \$!; echo \"rc=\$?\""
                [[ "$output" == *"rc=0"* ]] || { echo "with '$t': $output" >&2; false; }
                [ "$(newest_status)" = success ] || { echo "with '$t': $("$HUTCH" ls)" >&2; false; }
        done < <(tty_modes)
}

@test "boundary: a reader that stopped reading does not stop the deadline" {
        local secs
        secs=$(unique_secs)
        # the terminal takes nothing for 12 s; the job floods it
        python3 "$PTYRUN" --stall 12 --timeout 40 -- "$HUTCH" run --timeout 2s --memory 64M -- \
                sh -c "yes flood$secs" >"$BATS_TEST_TMPDIR/pty.out" &
        local harness=$!
        # timeout 2 s + grace 2 s: the record is final and the job gone
        # while the terminal still takes nothing (looked at until 11 s,
        # for a loaded machine's slow start)
        local st procs start=$SECONDS
        while :; do
                sleep 0.5
                st=$(newest_status)
                procs=$(pgrep -f "^yes flood$secs" || true)
                [ "$st" = timeout ] && [ -z "$procs" ] && break
                [ $((SECONDS - start)) -ge 11 ] && break
        done
        wait "$harness" || true
        [ "$st" = timeout ] || { echo "status at 11 s: $st; $(cat "$BATS_TEST_TMPDIR/pty.out")" >&2; false; }
        [ -z "$procs" ] || { echo "job still alive at 11 s: $procs" >&2; false; }
}

@test "boundary: a job that stops the caller's terminal output does not stall the supervisor" {
        local secs
        secs=$(unique_secs)
        run python3 "$PTYRUN" --timeout 40 -- "$HUTCH" run --timeout 2s -- sh -c "
                stty -ixon -isig 2>/dev/null
                python3 -c 'import termios; termios.tcflow(0, termios.TCOOFF)' 2>/dev/null
                yes flood$secs"
        [[ "$output" == *"status 124"* ]] || { echo "${output:0:400}" >&2; false; }
        [ -z "$(pgrep -f "^yes flood$secs" || true)" ]
}

@test "boundary: the job cannot leave the caller's terminal broken (line discipline, O_NONBLOCK, size)" {
        local job='import fcntl, os, struct, termios
for fd in (0, 1, 2):
    for what, f in (("setd", lambda: fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", 27))),
                    ("nonblock", lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)),
                    ("winsz", lambda: fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 7, 0, 0))),
                    ("echo", lambda: termios.tcsetattr(fd, termios.TCSANOW,
                        termios.tcgetattr(fd)[:3] + [termios.tcgetattr(fd)[3] & ~termios.ECHO] + termios.tcgetattr(fd)[4:]))):
        try:
            f()
        except Exception:
            pass'
        local t
        while IFS= read -r t; do
                run python3 "$PTYRUN" -- "$HUTCH" run $t -- python3 -c "$job"
                [[ "$output" == *"status 0"* ]] || { echo "with '$t': $output" >&2; false; }
                [[ "$output" == *"ldisc 0"* ]] || { echo "with '$t': $output" >&2; false; }
                [[ "$output" == *"nonblock 0"* ]] || { echo "with '$t': $output" >&2; false; }
                [[ "$output" == *"winsize 24x80"* ]] || { echo "with '$t': $output" >&2; false; }
                [[ "$output" == *"lflag-echo 1"* ]] || { echo "with '$t': $output" >&2; false; }
        done < <(tty_modes)
}

@test "boundary: TIOCSETD is denied on the job's own pty" {
        gvisor_skip "-t is refused under gvisor (125, gvisor.bats): there is no pty of the job's"
        run python3 "$PTYRUN" -- "$HUTCH" run -t -- python3 -c '
import fcntl, struct, termios
try:
    fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 27)); print("SETD-ALLOWED")
except OSError as e:
    print("SETD-" + (e.strerror or "").split()[0])'
        [[ "$output" == *"SETD-Operation"* ]] || { echo "$output" >&2; false; }
}

@test "boundary: a closed reader ends the job with SIGPIPE, as a plain pipe does" {
        local start end
        start=$(date +%s)
        run sh -c "'$HUTCH' run --timeout 10s -- yes | head -1"
        end=$(date +%s)
        [ "${lines[0]}" = y ]
        [ $((end - start)) -lt 8 ] || { echo "took $((end - start)) s" >&2; false; }
        if under_gvisor; then
                # gVisor's kernel answers a write to the closed pipe runsc
                # handed in with EPIPE but raises no SIGPIPE: yes ends at
                # once all the same, with its write error (exit 1)
                [ "$(newest_status)" = failed ] || { "$HUTCH" ls >&2; false; }
                "$HUTCH" show "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -q 'exited with code 1' || {
                        "$HUTCH" show "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" >&2
                        false
                }
        else
                [ "$(newest_status)" = signaled ] || { "$HUTCH" ls >&2; false; }
                "$HUTCH" show "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -q '141' || {
                        "$HUTCH" show "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" >&2
                        false
                }
        fi
        # the job's next write after the reader left fails at once
        start=$(date +%s)
        if under_gvisor; then
                # without SIGPIPE the shell would go on: it stops at the
                # first write that fails
                run sh -c "'$HUTCH' run -- sh -c 'for i in 1 2 3 4 5 6; do echo \$i || exit 7; sleep 1; done' | head -1"
                [ "$(newest_status)" = failed ]
        else
                run sh -c "'$HUTCH' run -- sh -c 'for i in 1 2 3 4 5 6; do echo \$i; sleep 1; done' | head -1"
        fi
        end=$(date +%s)
        [ "${lines[0]}" = 1 ]
        [ $((end - start)) -lt 4 ] || { echo "took $((end - start)) s" >&2; false; }
}

@test "boundary: -t has no default timeout; --timeout and a profile's still hold" {
        gvisor_skip "-t is refused under gvisor (125, gvisor.bats)"
        run python3 "$PTYRUN" -- "$HUTCH" run -t -- true
        [[ "$output" == *"status 0"* ]]
        "$HUTCH" show --json "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -q '"timeout_ms": *0' || {
                "$HUTCH" show --json "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -o '"limits"[^}]*' >&2
                false
        }
        run python3 "$PTYRUN" -- "$HUTCH" run -t --timeout 1s -- sleep 20
        [[ "$output" == *"status 124"* ]] || { echo "$output" >&2; false; }
        run python3 "$PTYRUN" -- "$HUTCH" run -t -p strict -- true
        "$HUTCH" show --json "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -q '"timeout_ms": *10000'
        # without -t the built-in default stays
        "$HUTCH" run -- true
        "$HUTCH" show --json "$("$HUTCH" ls | awk 'NR == 2 { print $1 }')" | grep -q '"timeout_ms": *30000'
}

@test "boundary: ~. on the terminal ends an interactive job that ignores SIGINT and SIGQUIT" {
        gvisor_skip "-t is refused under gvisor (125, gvisor.bats), and the escape is read only in raw mode"
        run python3 "$PTYRUN" --keys '1.5:\x03\x1c\r~.' --timeout 30 -- "$HUTCH" run -t -- \
                sh -c 'trap "" INT QUIT; sleep 20'
        [[ "$output" == *"status 130"* ]] || { echo "$output" >&2; false; }
        [ "$(newest_status)" = cancelled ]
}
