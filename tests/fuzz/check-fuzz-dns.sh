#!/bin/sh
# check-fuzz-dns.sh - the stub DNS's query parser fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" dns
