#!/usr/bin/env bats
# hutch run --lang: languages as data, compile_error, and hutch rerun.

load lib

setup() { common_setup; }

# the JSON field $2 of object $1
field() {
        python3 -c 'import json, sys; v = json.loads(sys.argv[1])[sys.argv[2]]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

have() {
        command -v "$1" >/dev/null || skip "$1 not installed on this host"
}

last_id() {
        "$HUTCH" ls --json --limit 1 | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["id"])'
}

@test "python: -c, --file and stdin" {
        have python3
        # each run's answer, shown when an assertion fails
        run "$HUTCH" run --lang python -c 'print(6*7)'
        echo "-c: $status: $output"
        [ "$status" -eq 0 ]
        [ "$output" = 42 ]
        f=$(mktemp /tmp/hutch-lang.XXXXXX.py)
        echo 'import sys; print("args", sys.argv[1:])' > "$f"
        run "$HUTCH" run --lang python --file "$f" -- a b
        echo "--file: $status: $output"
        rm -f "$f"
        [ "$output" = "args ['a', 'b']" ]
        run sh -c "echo 'print(\"from stdin\")' | '$HUTCH' run --lang python -"
        echo "stdin: $status: $output"
        [ "$output" = "from stdin" ]
}

@test "each shipped language runs its hello world" {
        for spec in "sh:echo hi-sh" "bash:echo hi-\${BASH_VERSION%%.*}" "perl:print qq(hi-perl\\n);" \
                    "node:console.log('hi-node')"; do
                lang=${spec%%:*}
                code=${spec#*:}
                case $lang in
                node) command -v node >/dev/null || continue ;;
                perl) command -v perl >/dev/null || continue ;;
                esac
                run "$HUTCH" run --lang "$lang" -c "$code"
                [ "$status" -eq 0 ]
                [[ "$output" == hi-* ]]
        done
}

@test "c: compiled then run; a failed compile is compile_error with the compiler's messages" {
        have cc
        run "$HUTCH" run --lang c -c '#include <stdio.h>
int main(void) { puts("compiled"); return 3; }'
        [ "$status" -eq 3 ]
        [ "$output" = compiled ]
        run "$HUTCH" run --json --lang c -c 'int main(void) { return 1 + ; }'
        [ "$status" -ne 0 ]
        [ "$(field "$output" status)" = compile_error ]
        [[ "$(field "$output" stderr)" == *error* ]]
        [[ "$(field "$output" message)" == *"compile step failed"* ]]
}

@test "the program failing is not a compile error" {
        have python3
        run "$HUTCH" run --json --lang python -c 'raise SystemExit(4)'
        [ "$status" -eq 4 ]
        [ "$(field "$output" status)" = failed ]
}

@test "an unknown language or a missing interpreter is a clear error" {
        run "$HUTCH" run --lang cobol-2099 -c 'x'
        [ "$status" -eq 125 ]
        [[ "$output" == *cobol-2099* ]]
        d=$(mktemp -d)
        printf '[ghost]\ncommand = ghost-interpreter-hutch {file}\nextension = .g\n' > "$d/languages.ini"
        cp "$HUTCH_DATADIR/seccomp.ini" "$d/"
        HUTCH_DATADIR=$d run "$HUTCH" run --lang ghost -c 'x'
        rm -rf "$d"
        [ "$status" -eq 125 ]
        [[ "$output" == *'"ghost-interpreter-hutch" not found'* ]]
}

@test "--lang needs exactly one source of code" {
        run "$HUTCH" run --lang python
        [ "$status" -eq 2 ]
        run "$HUTCH" run --lang python -c 'print(1)' --file /etc/hostname
        [ "$status" -eq 2 ]
        run "$HUTCH" run -c 'print(1)' -- true
        [ "$status" -eq 2 ]
}

@test "--json prints one result object and no passthrough" {
        run "$HUTCH" run --json -- sh -c 'echo out; echo err >&2; exit 2'
        [ "$status" -eq 2 ]
        [ "$(echo "$output" | wc -l)" -eq 1 ]
        [ "$(field "$output" schema)" = hutch.result/1 ]
        [ "$(field "$output" status)" = failed ]
        [ "$(field "$output" exit_code)" = 2 ]
        [ "$(field "$output" stdout)" = "out" ]
        [ "$(field "$output" stderr)" = "err" ]
        [ "$(field "$(field "$output" enforcement)" no_new_privs)" = true ]
}

@test "rerun repeats the command and the resolved profile, and points back" {
        run "$HUTCH" run --timeout 7s -e GREETING=hello -- sh -c 'echo $GREETING'
        [ "$output" = hello ]
        first=$(last_id)
        run "$HUTCH" rerun --json "$first"
        [ "$status" -eq 0 ]
        [ "$(field "$output" stdout)" = hello ]
        [ "$(field "$output" rerun_of)" = "$first" ]
        [ "$(field "$output" argv)" = '["sh", "-c", "echo $GREETING"]' ]
        second=$(field "$output" id)
        a=$("$HUTCH" show --json "$first" | python3 -c 'import json,sys; print(json.load(sys.stdin)["profile_sha256"])')
        b=$("$HUTCH" show --json "$second" | python3 -c 'import json,sys; print(json.load(sys.stdin)["profile_sha256"])')
        [ "$a" = "$b" ]
        [ "$(field "$("$HUTCH" show --json "$second")" limits | python3 -c 'import json,sys; print(json.load(sys.stdin)["timeout_ms"])')" = 7000 ]
}

@test "rerun of a --lang run runs the same code" {
        have python3
        run "$HUTCH" run --lang python -c 'import sys; print("code", sys.argv[1:])' -- x
        first=$(last_id)
        [ -n "$first" ]
        run "$HUTCH" rerun "$first"
        echo "rerun of $first: status $status, output: $output"
        [ "$status" -eq 0 ]
        [ "$output" = "code ['x']" ]
}

@test "rerun refuses a run whose request gave it stdin or files, saying why" {
        run -0 "$HUTCH" run --request - <<< '{"argv":["cat"],"stdin":"hello"}'
        run -1 "$HUTCH" rerun "$(last_id)"
        [[ "$output" == *"read a stdin its request gave"* ]]
        run -0 "$HUTCH" run --request - <<< '{"argv":["cat","in.txt"],"files":{"in.txt":"x"}}'
        run -1 "$HUTCH" rerun "$(last_id)"
        [[ "$output" == *"read files its request gave"* ]]
        # a request without them reruns as before
        run -0 "$HUTCH" run --request - <<< '{"argv":["echo","plain"]}'
        run -0 "$HUTCH" rerun "$(last_id)"
        [[ "$output" == *plain* ]]
}

@test "rerun of an unknown run exits 1" {
        run "$HUTCH" rerun ZZZZZZZZ
        [ "$status" -eq 1 ]
        [[ "$output" == *"no run matches"* ]]
}

@test "each language imports from the workspace: a module one session call wrote, the next imports" {
        have python3
        run "$HUTCH" run --session imp --lang python -c 'open("helper.py", "w").write("def hi():\n    return 42\n")'
        [ "$status" -eq 0 ]
        run "$HUTCH" run --session imp --lang python -c 'import sys, helper; print(helper.hi(), sys.argv[0], __name__)'
        [ "$status" -eq 0 ]
        [ "$output" = "42 /run/hutch/code/main.py __main__" ]
        # -I still holds: PYTHON* variables are ignored
        run "$HUTCH" run --env PYTHONPATH=/nonexistent-hutch --lang python -c 'import sys; print("/nonexistent-hutch" in sys.path)'
        [ "$output" = False ]
        # the code did not land in the workspace
        run "$HUTCH" run --session imp --lang python -c 'import os; print(sorted(os.listdir(".")))'
        [[ "$output" != *main.py* ]]
        if command -v node >/dev/null; then
                run "$HUTCH" run --session imp --lang node -c 'const fs = require("fs");
fs.writeFileSync("h.js", "module.exports = 7");
fs.mkdirSync("node_modules/x", { recursive: true });
fs.writeFileSync("node_modules/x/index.js", "module.exports = 8");'
                [ "$status" -eq 0 ]
                run "$HUTCH" run --session imp --lang node -c 'console.log(require("./h"), require("x"), require.main === module, __filename)'
                [ "$status" -eq 0 ]
                [ "$output" = "7 8 true /run/hutch/code/main.js" ]
        fi
        if command -v perl >/dev/null; then
                run "$HUTCH" run --session imp --lang perl -c 'open(my $f, ">", "L.pm"); print $f "package L; sub v { 5 } 1;\n";'
                run "$HUTCH" run --session imp --lang perl -c 'use L; print L::v(), "\n";'
                [ "$output" = 5 ]
        fi
        if command -v cc >/dev/null; then
                run "$HUTCH" run --session imp --lang sh -c 'echo "#define U 9" > u.h'
                run "$HUTCH" run --session imp --lang c -c '#include <stdio.h>
#include "u.h"
int main(void) { printf("%d\n", U); return 0; }'
                [ "$output" = 9 ]
        fi
}
