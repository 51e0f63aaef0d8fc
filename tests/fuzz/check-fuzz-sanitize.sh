#!/bin/sh
# check-fuzz-sanitize.sh - the output sanitiser fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" sanitize
