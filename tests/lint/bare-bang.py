#!/usr/bin/env python3
"""bare-bang.py FILE... - find assertions in bats files that cannot fail.

bats runs a test with errexit, and bash's errexit ignores a command whose
status is inverted with `!` (ShellCheck SC2314/SC2315): a line such as

    ! grep -q secret "$out"

checks nothing unless it is the last command of the test, whose status
is the test's. The same holds in any function the tests call (setup,
helpers in lib.bash): there a bare `!` line matters only as the
function's last command, which is its return status.

For every `@test ... {` block and every function body, this reports each
line that starts with `!` and is not the block's last command, as
FILE:LINE, in TAP (one test per file). `! cmd || false`, `! cmd || {...}`
and `run ! cmd` are real checks and are not reported; neither is `!` in
`if`, `while`, `until` or `&&`/`||` conditions, which are not assertions.
Heredoc bodies and backslash continuations are understood; nested blocks
(if/for/while/case bodies, subshells) are checked against the enclosing
test's or function's end: a `!` line ending an `if` body still is not the
test's last command.
"""
import re
import sys

BLOCK_START = re.compile(r'^\s*(@test\s+.*|(function\s+)?[A-Za-z_][A-Za-z0-9_:-]*\s*\(\)\s*|function\s+[A-Za-z_][A-Za-z0-9_:-]*\s*)\{\s*$')
HEREDOC = re.compile(r'<<-?\s*([\'"]?)([A-Za-z_][A-Za-z0-9_]*)\1')
BANG = re.compile(r'^\s*!\s')
GUARDED = re.compile(r'\|\|\s*(false|exit|return|\{|fail\b|echo\b.*>&2)')


def logical_lines(path):
    """Yield (first line number, text) of each logical line, heredoc
    bodies dropped and backslash continuations joined."""
    with open(path, encoding='utf-8', errors='replace') as f:
        raw = f.read().split('\n')
    i = 0
    while i < len(raw):
        start, text = i + 1, raw[i]
        # a trailing backslash, ||, && or | continues the command (a
        # condition written over several lines)
        while i + 1 < len(raw) and (text.endswith('\\') or (not text.lstrip().startswith('#') and
                                                            re.search(r'(\|\||&&|\|)\s*$', text))):
            i += 1
            text = (text[:-1] if text.endswith('\\') else text) + ' ' + raw[i].strip()
        i += 1
        m = HEREDOC.search(text)
        if m and not text.lstrip().startswith('#'):
            tag = m.group(2)
            while i < len(raw) and raw[i].strip() != tag:
                i += 1
            i += 1
        yield start, text


def check(path):
    bad = []
    block = None        # [(line, text), ...] of the open block's commands
    for no, text in logical_lines(path):
        s = text.strip()
        if block is None:
            if BLOCK_START.match(text):
                block = []
            continue
        if text.startswith('}'):        # a block's closing brace is in column 0
            cmds = [(n, t) for n, t in block if t and not t.startswith('#')
                    and t not in ('fi', 'done', 'esac', '}', ')', ';;', 'else', 'then', 'do')]
            last = cmds[-1][0] if cmds else None
            for n, t in block:
                if BANG.match(t) and n != last and not GUARDED.search(t):
                    bad.append((n, t))
            block = None
            continue
        block.append((no, s))
    return bad


SAMPLE = """@test "sample" {
        ! grep -q a f
        run ! true
        ! grep -q b f || false
        if ! true; then
                ! false
        fi
        ! grep -q c \\
                f
        if ! a ||
           ! b; then
                true
        fi
        cat <<EOF
! not a command
EOF
        ! last
}

helper() {
        ! in_helper
        true
}
"""


def self_test():
    """The lint must find what it is for: lines 2, 6, 8 and 21 of SAMPLE
    (not the continued condition at 10-11)."""
    import os
    import tempfile
    with tempfile.NamedTemporaryFile('w', suffix='.bats', delete=False) as f:
        f.write(SAMPLE)
    try:
        return [n for n, _ in check(f.name)]
    finally:
        os.unlink(f.name)


def main(files):
    print('1..%d' % (len(files) + 1))
    found = self_test()
    if found == [2, 6, 8, 21]:
        print('ok 1 - the lint finds the bare `!` lines of its sample')
        failed = 0
    else:
        print('not ok 1 - the lint finds the bare `!` lines of its sample (found lines %s)' % found)
        failed = 1
    for i, path in enumerate(files, 2):
        bad = check(path)
        if bad:
            failed += 1
            print('not ok %d - %s: a bare `!` that is not the last command checks nothing' % (i, path))
            for n, t in bad:
                print('# %s:%d: %s' % (path, n, t))
            print('# write `run ! cmd`, `! cmd || false`, or `run cmd; [ "$status" -ne 0 ]`')
        else:
            print('ok %d - %s' % (i, path))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
