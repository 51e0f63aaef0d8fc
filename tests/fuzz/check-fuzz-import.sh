#!/bin/sh
# check-fuzz-import.sh - the import reader fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" import
