#!/bin/sh
# check-fuzz-peek.sh - the egress proxy's ClientHello/HTTP peek fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" peek
