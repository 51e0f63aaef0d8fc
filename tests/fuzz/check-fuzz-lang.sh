#!/bin/sh
# check-fuzz-lang.sh - the languages-file fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" lang
