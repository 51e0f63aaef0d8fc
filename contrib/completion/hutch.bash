# bash completion for hutch                                  -*- shell-script -*-
#
# Verbs come from `hutch --help` and each verb's options from `hutch VERB
# --help`, asked of the hutch being completed, so the completion cannot
# drift from the program. Profile names come from `hutch profile list`,
# run ids from `hutch ls` (the newest 50), session names from `hutch
# session ls`, live sandbox names from `hutch sandbox ls`, asked afresh
# at each completion (a few ms each).
# Installed as bash-completion's completions/hutch.
# shellcheck disable=SC2207 # COMPREPLY=($(compgen ...)) is the idiom: words have no spaces

# the verbs, one a line
_hutch_verbs()
{
    "${_hutch_bin:-hutch}" --help 2>/dev/null |
        awk '/^Verbs:/ { v = 1; next } v && /^  [a-z]/ { print $1 } v && /^$/ { exit }'
}

# the long and short options `hutch VERB --help` lists: those that start
# a line of its option table, and those of its Usage lines
_hutch_options()
{
    "${_hutch_bin:-hutch}" "$1" --help 2>/dev/null | awk '
        /^Usage:/ { usage = 1 }
        usage && /^$/ { usage = 0 }
        usage { while (match($0, /[[|(](--[a-z][a-z0-9-]*|-[a-zA-Z])/)) {
                    print substr($0, RSTART + 1, RLENGTH - 1); $0 = substr($0, RSTART + RLENGTH) } next }
        /^ +-[-a-zA-Z]/ { sub(/^ +/, ""); sub(/  .*/, ""); n = split($0, w, /[ ,]+/)
                          for (i = 1; i <= n; i++) if (w[i] ~ /^(--[a-z][a-z0-9-]*|-[a-zA-Z])$/) print w[i] }' | sort -u
}

# the first column of a table, header left out
_hutch_first_column()
{
    "${_hutch_bin:-hutch}" "$@" 2>/dev/null | awk 'NR > 1 && $1 != "" { print $1 }'
}

_hutch_profiles() { _hutch_first_column profile list; }
_hutch_run_ids() { _hutch_first_column ls --limit 50; }
_hutch_sessions() { _hutch_first_column session ls; }
_hutch_images() { _hutch_first_column image ls; }
_hutch_sandboxes() { _hutch_first_column sandbox ls; }
# run's options that sandbox start refuses (a live sandbox has no job of its own)
_hutch_not_live='--(lang|code|file|request|id|id-wait|apply|detach|json|events|secret|tty)|-c'

_hutch()
{
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion -n : || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local _hutch_bin=${words[0]}

    # the verb: the first word that is not a global option
    local i verb='' verb_at=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        -*) ;;
        *) verb=${words[i]}; verb_at=$i; break ;;
        esac
    done
    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_hutch_verbs)" -- "$cur"))
        fi
        return
    fi

    # after --, the job's own command line
    for ((i = verb_at + 1; i < cword; i++)); do
        if [[ ${words[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done

    # an option's value
    case $prev in
    -p | --profile)
        COMPREPLY=($(compgen -W "$(_hutch_profiles)" -- "$cur"))
        [[ $cur == */* || $cur == .* ]] && COMPREPLY+=($(compgen -f -- "$cur"))
        return ;;
    --session)
        COMPREPLY=($(compgen -W "$(_hutch_sessions)" -- "$cur"))
        return ;;
    --image)
        COMPREPLY=($(compgen -W "$(_hutch_images)" -- "$cur"))
        return ;;
    --file | --stdin-file | --request | --workdir | -w | --to | --ro | --rw | --output | -o)
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    --status)
        COMPREPLY=($(compgen -W 'running success failed signaled timeout cpu_timeout oom cancelled
            setup_error not_found not_executable compile_error orphaned disk_limit' -- "$cur"))
        return ;;
    --net)
        COMPREPLY=($(compgen -W 'none host allow' -- "$cur"))
        return ;;
    --kernel)
        COMPREPLY=($(compgen -W 'python node' -- "$cur"))
        return ;;
    --timeout | --idle-timeout | --publish | -c | --code)
        return ;;
    esac

    local sub=${words[verb_at + 1]}
    if [[ $cur == -* && $verb == sandbox ]]; then
        # start takes run's options besides its own
        case $sub in
        start) COMPREPLY=($(compgen -W "$(_hutch_options run; _hutch_options sandbox)" -- "$cur" | grep -vxE -- "$_hutch_not_live")) ;;
        ls) COMPREPLY=($(compgen -W '--json' -- "$cur")) ;;
        esac
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_hutch_options "$verb")" -- "$cur"))
        return
    fi

    # positional arguments
    case $verb in
    show | logs | diff | apply | kill | wait | rerun)
        COMPREPLY=($(compgen -W "$(_hutch_run_ids)" -- "$cur")) ;;
    cp)
        if ((cword == verb_at + 1)) || [[ $cur != */* && ${words[cword - 1]} != *:* ]]; then
            COMPREPLY=($(compgen -W "$(_hutch_run_ids | sed 's/$/:/')" -- "$cur"))
            compopt -o nospace 2>/dev/null
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    session)
        if ((cword == verb_at + 1)); then
            COMPREPLY=($(compgen -W 'ls rm' -- "$cur"))
        elif [[ $sub == rm ]]; then
            COMPREPLY=($(compgen -W "$(_hutch_sessions)" -- "$cur"))
        fi ;;
    profile)
        if ((cword == verb_at + 1)); then
            COMPREPLY=($(compgen -W 'list show' -- "$cur"))
        elif [[ $sub == show ]]; then
            COMPREPLY=($(compgen -W "$(_hutch_profiles)" -- "$cur"))
        fi ;;
    import)
        COMPREPLY=($(compgen -f -- "$cur")) ;;
    image)
        if ((cword == verb_at + 1)); then
            COMPREPLY=($(compgen -W 'import ls inspect rm' -- "$cur"))
        elif [[ $sub == inspect || $sub == rm ]]; then
            COMPREPLY=($(compgen -W "$(_hutch_images)" -- "$cur"))
        elif [[ $sub == import ]]; then
            COMPREPLY=($(compgen -W 'oci: oci-archive: docker-archive:' -- "$cur"))
            compopt -o nospace 2>/dev/null
        fi ;;
    sandbox)
        if ((cword == verb_at + 1)); then
            COMPREPLY=($(compgen -W 'start ls stop fork' -- "$cur"))
        elif ((cword == verb_at + 2)) && [[ $sub == stop || $sub == fork ]]; then
            COMPREPLY=($(compgen -W "$(_hutch_sandboxes)" -- "$cur"))
        fi ;;
    exec)
        ((cword == verb_at + 1)) && COMPREPLY=($(compgen -W "$(_hutch_sandboxes)" -- "$cur")) ;;
    run)
        COMPREPLY=($(compgen -c -- "$cur")) ;;
    esac
}
complete -F _hutch hutch hutch-static
