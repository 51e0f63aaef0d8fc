#!/bin/sh
# check-fuzz-redact.sh - the secret redactor fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" redact
