#!/bin/sh
# check-fuzz-request.sh - the hutch.request/1 reader fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" request
