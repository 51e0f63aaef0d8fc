#!/usr/bin/env bats
# Shell completion (contrib/completion/): bash's _hutch called as
# bash-completion calls it, with COMP_WORDS and COMP_CWORD set, and zsh's
# with the completion system's builtins replaced by stubs that print what
# they would offer. Both ask the hutch being completed ($HUTCH, the
# first word), so what they offer is checked against that hutch.

load lib

setup() {
        common_setup
        bash_completion="$TESTS_DIR/../contrib/completion/hutch.bash"
        zsh_completion="$TESTS_DIR/../contrib/completion/_hutch"
        [ -f "$bash_completion" ] || skip "contrib/completion/ is not beside these tests (a copy of tests/ alone)"
}

# complete WORD... : the last word is the one being completed; prints
# the candidates, one a line, sorted
complete_bash() {
        bash -c '
                [ -f /usr/share/bash-completion/bash_completion ] && [ "$USE_BC" = 1 ] &&
                        . /usr/share/bash-completion/bash_completion
                . "$0"
                COMP_WORDS=("$@")
                COMP_CWORD=$(($# - 1))
                COMP_LINE="$*"
                COMP_POINT=${#COMP_LINE}
                _hutch hutch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                printf "%s\n" "${COMPREPLY[@]}" | sort' "$bash_completion" "$@"
}

complete_zsh() {
        zsh -f -c '
                compadd() {
                        local suffix= arr=
                        while [[ $1 == -* ]]; do
                                case $1 in
                                -S) suffix=$2; shift 2 ;;
                                -a) arr=$2; shift 2 ;;
                                --) shift; break ;;
                                *) shift ;;
                                esac
                        done
                        if [[ -n $arr ]]; then print -l -- ${^${(P)arr}}$suffix; else print -l -- "$@"; fi
                }
                _describe() { print -l -- ${(P)${@[-1]}}; }
                _alternative() { compadd -a values; }
                _files() { :; }
                _command_names() { :; }
                _normal() { :; }
                words=("$@")
                CURRENT=$#
                PREFIX=${words[CURRENT]}
                source "$0"' "$zsh_completion" "$@" | sort
}

# the verbs `hutch --help` lists
help_verbs() {
        "$HUTCH" --help | sed -n '/^Verbs:/,/^$/p' | sed -n 's/^  \([a-z]*\) .*/\1/p' | sort
}

@test "bash: the verbs are exactly those hutch --help lists, each a real verb" {
        run complete_bash "$HUTCH" ""
        [ "$status" -eq 0 ]
        [ "$output" = "$(help_verbs)" ]
        [[ "$output" == *run* && "$output" == *doctor* && "$output" == *session* ]]
        for verb in $output; do
                "$HUTCH" "$verb" --help >/dev/null
        done
        run complete_bash "$HUTCH" se
        [ "$output" = session ]
}

@test "bash: options of run, and only the verb's own" {
        run complete_bash "$HUTCH" run --ti
        [ "$output" = "--timeout" ]
        run complete_bash "$HUTCH" run --pro
        [ "$output" = "--profile" ]
        # --limit is ls's, not run's
        run complete_bash "$HUTCH" run --lim
        [ -z "$output" ]
        run complete_bash "$HUTCH" ls --lim
        [ "$output" = "--limit" ]
}

@test "bash: profile names after -p and profile show" {
        run complete_bash "$HUTCH" run -p str
        [ "$output" = strict ]
        run complete_bash "$HUTCH" run --profile ""
        [[ "$output" == *default* && "$output" == *python* ]]
        run complete_bash "$HUTCH" profile show py
        [ "$output" = python ]
}

@test "bash: run ids of recorded runs, and session names" {
        "$HUTCH" run --session compl-s -- true
        id=$("$HUTCH" ls --limit 1 | awk 'NR == 2 { print $1 }')
        [ -n "$id" ]
        run complete_bash "$HUTCH" show "${id:0:8}"
        [ "$output" = "$id" ]
        run complete_bash "$HUTCH" cp "${id:0:8}"
        [ "$output" = "$id:" ]
        run complete_bash "$HUTCH" session rm compl
        [ "$output" = compl-s ]
        run complete_bash "$HUTCH" ls --session ""
        [ "$output" = compl-s ]
}

@test "bash: with bash-completion loaded, and the job's own words after --" {
        [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
        export USE_BC=1
        run complete_bash "$HUTCH" run --ti
        [ "$output" = "--timeout" ]
        run complete_bash "$HUTCH" run -- --ti
        [[ "$output" != *--timeout* ]]
        run complete_bash "$HUTCH" ""
        [ "$output" = "$(help_verbs)" ]
}

@test "zsh: verbs, run's options, profile names, run ids, sessions" {
        command -v zsh >/dev/null || skip "zsh is not installed"
        run complete_zsh "$HUTCH" ""
        [ "$output" = "$(help_verbs)" ]
        run complete_zsh "$HUTCH" run --ti
        [[ "$output" == *--timeout* ]]
        [[ "$output" != *--limit* ]]
        run complete_zsh "$HUTCH" profile show ""
        [[ "$output" == *strict* && "$output" == *default* ]]
        "$HUTCH" run --session compl-z -- true
        id=$("$HUTCH" ls --limit 1 | awk 'NR == 2 { print $1 }')
        run complete_zsh "$HUTCH" show ""
        [[ "$output" == *"$id"* ]]
        run complete_zsh "$HUTCH" cp ""
        [[ "$output" == *"$id:"* ]]
        run complete_zsh "$HUTCH" session rm ""
        [ "$output" = compl-z ]
}

@test "bash and zsh: image names after --image and image inspect/rm, image's subcommands" {
        [ -x /bin/busybox ] || skip "needs busybox-static at /bin/busybox"
        command -v jq >/dev/null || skip "needs jq"
        load image-lib
        busybox_image "$BATS_TEST_TMPDIR/img" 1 > /dev/null
        "$HUTCH" image import "oci:$BATS_TEST_TMPDIR/img/oci:1" compl-img > /dev/null
        run complete_bash "$HUTCH" run --image comp
        [ "$output" = compl-img:latest ]
        run complete_bash "$HUTCH" image rm ""
        [ "$output" = compl-img:latest ]
        run complete_bash "$HUTCH" image i
        [ "$output" = "$(printf 'import\ninspect')" ]
        run complete_zsh "$HUTCH" run --image ""
        [[ "$output" == *compl-img:latest* ]]
        run complete_zsh "$HUTCH" image ""
        [[ "$output" == *inspect* && "$output" == *import* ]]
}

@test "bash: sandbox's subcommands and start's options, exec's options, live sandbox names, --kernel" {
        run complete_bash "$HUTCH" sandbox ""
        [ "$output" = "$(printf 'fork\nls\nstart\nstop')" ]
        # start takes run's options and its own; ls only --json
        run complete_bash "$HUTCH" sandbox start --mem
        [ "$output" = "$(printf -- '--memory\n--memory-high')" ]
        run complete_bash "$HUTCH" sandbox start sb --idle
        [ "$output" = "--idle-timeout" ]
        run complete_bash "$HUTCH" sandbox start --pub
        [ "$output" = "--publish" ]
        # not those of run's that start refuses
        run complete_bash "$HUTCH" sandbox start --id
        [ "$output" = "--idle-timeout" ]
        run complete_bash "$HUTCH" sandbox start --
        [[ "$output" == *--timeout* && "$output" != *--json* && "$output" != *--lang* && "$output" != *--tty* ]]
        run complete_bash "$HUTCH" sandbox ls --
        [ "$output" = "--json" ]
        run complete_bash "$HUTCH" exec --
        [ "$output" = "$(printf -- '--code\n--events\n--file\n--help\n--json\n--kernel\n--stdin\n--stdin-file\n--timeout')" ]
        run complete_bash "$HUTCH" exec sb --kernel ""
        [ "$output" = "$(printf 'node\npython')" ]
        run complete_bash "$HUTCH" exec sb --timeout ""
        [ -z "$output" ]
        # names of the running sandboxes, from hutch sandbox ls
        run complete_bash "$HUTCH" exec ""
        [ -z "$output" ]
        "$HUTCH" sandbox start compl-sb >/dev/null
        run complete_bash "$HUTCH" exec ""
        [ "$output" = compl-sb ]
        run complete_bash "$HUTCH" sandbox stop compl
        [ "$output" = compl-sb ]
        run complete_bash "$HUTCH" sandbox fork c
        [ "$output" = compl-sb ]
        # the new name and exec's command are not sandbox names
        run complete_bash "$HUTCH" sandbox fork compl-sb c
        [ -z "$output" ]
        run complete_bash "$HUTCH" exec compl-sb -- compl-s
        [[ "$output" != *compl-sb* ]]
        "$HUTCH" sandbox stop compl-sb
}

@test "zsh: sandbox and exec" {
        command -v zsh >/dev/null || skip "zsh is not installed"
        run complete_zsh "$HUTCH" sandbox ""
        [ "$output" = "$(printf 'fork\nls\nstart\nstop')" ]
        run complete_zsh "$HUTCH" sandbox start --
        [[ "$output" == *--idle-timeout* && "$output" == *--publish* && "$output" == *--memory* ]]
        [[ "$output" != *--json* ]]
        run complete_zsh "$HUTCH" exec --
        [[ "$output" == *--kernel* && "$output" == *--timeout* && "$output" == *--json* ]]
        run complete_zsh "$HUTCH" exec sb --kernel ""
        [ "$output" = "$(printf 'node\npython')" ]
        "$HUTCH" sandbox start compl-zsb >/dev/null
        run complete_zsh "$HUTCH" exec ""
        [ "$output" = compl-zsb ]
        run complete_zsh "$HUTCH" sandbox fork ""
        [ "$output" = compl-zsb ]
        run complete_zsh "$HUTCH" sandbox fork compl-zsb ""
        [ -z "$output" ]
        "$HUTCH" sandbox stop compl-zsb
}
