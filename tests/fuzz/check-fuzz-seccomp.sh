#!/bin/sh
# check-fuzz-seccomp.sh - the syscall-groups-file fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" seccomp
