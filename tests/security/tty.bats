#!/usr/bin/env bats
# tty.bats - terminal injection. script(1) gives hutch a real terminal, as
# an interactive shell would; the job tries to push keystrokes into it
# (TIOCSTI, TIOCLINUX paste); then the *host* shell on that terminal
# reads a line, and must read nothing the job typed.

load lib

setup() {
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        command -v script >/dev/null || skip "script(1) (util-linux) is not installed"
        M=$(marker)
}

# on_terminal HUTCH-RUN-ARGS... -- CMD...: run the sandbox under script(1),
# then read one line on the same terminal from the host side.
# script(1)'s stdin is a FIFO it holds open for writing too, so it never
# reads EOF: at EOF script sends the terminal's EOF character, and one
# sent while -t holds the terminal raw stays queued as a literal ^D that
# the host shell's read then takes for typed input.
on_terminal() {
        local cmd
        cmd=$(sandbox_cmd "$@")
        rm -f "$BATS_TEST_TMPDIR/stdin"
        mkfifo "$BATS_TEST_TMPDIR/stdin"
        run script -qec "$cmd; IFS= read -r -t 2 line; echo \"host-read:[\$line]\"" /dev/null \
                0<>"$BATS_TEST_TMPDIR/stdin"
}

assert_nothing_typed() {
        [[ "$output" == *"host-read:[]"* ]] || {
                echo "the host shell read input the job typed:" >&2
                printf '%s' "$output" | od -c | head -20 >&2
                return 1
        }
}

@test "tty: TIOCSTI from a job on the caller's terminal types nothing into the host shell" {
        on_terminal -- "$PROBE" inject "typed$M"$'\n'
        [[ "$output" == *EPERM* || "$output" == *EIO* || "$output" == *ENOTTY* ]] || {
                echo "probe: $output" >&2
                false
        }
        assert_nothing_typed
}

@test "tty: TIOCSTI from a job with its own pty (-t) types nothing into the host shell" {
        on_terminal -t -- "$PROBE" inject "typed$M"$'\n'
        [[ "$output" != *OK* ]] || selftest || { echo "probe: $output" >&2; false; }
        assert_nothing_typed
}

@test "tty: TIOCSTI through /dev/tty types nothing into the host shell" {
        on_terminal -- sh -c "exec $PROBE inject typed$M </dev/tty"
        assert_nothing_typed
}

@test "tty: TIOCLINUX paste-selection is refused and types nothing" {
        on_terminal -- "$PROBE" paste
        [[ "$output" != *OK* ]]
        assert_nothing_typed
}

@test "tty: the job has no controlling terminal to inject into without -t" {
        on_terminal -- sh -c 'exec 3</dev/tty && echo HAS-CTTY; true'
        [[ "$output" != *HAS-CTTY* ]]
        assert_nothing_typed
}

@test "tty: terminal modes the job changes on the caller's terminal are restored" {
        # without -t the job's stdin is the caller's terminal itself
        local cmd
        cmd=$(sandbox_cmd -- sh -c 'stty -echo -icanon -isig 2>/dev/null; exec python3 -c "import termios; termios.tcflow(0, termios.TCOOFF)" 2>/dev/null; true')
        run timeout 20 script -qec "$cmd; stty -a" /dev/null </dev/null
        [ "$status" -eq 0 ] || { echo "status $status (host terminal output stopped?): $output" >&2; false; }
        [[ "$output" == *iexten* ]] || { echo "no stty -a output: $output" >&2; false; }
        ! echo "$output" | grep -qw -e -echo -e -icanon -e -isig || {
                echo "the caller's terminal was left changed: $output" >&2
                false
        }
}

@test "tty: exclusive mode the job sets on the caller's terminal is cleared" {
        command -v python3 >/dev/null || skip "python3 is not installed (host-side TIOCGEXCL)"
        local cmd get
        cmd=$(sandbox_cmd -- python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCEXCL)')
        # TIOCGEXCL (0x80045440): is the terminal now exclusive?
        get='python3 -c "import fcntl, struct; print(\"exclusive\", struct.unpack(\"i\", fcntl.ioctl(0, 0x80045440, bytes(4)))[0])"'
        run timeout 20 script -qec "$cmd; $get" /dev/null </dev/null
        [[ "$output" == *"exclusive 0"* ]] || {
                echo "the caller's terminal was left exclusive (no new open will succeed): $output" >&2
                false
        }
}
