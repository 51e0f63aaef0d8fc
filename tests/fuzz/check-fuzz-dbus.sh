#!/bin/sh
# check-fuzz-dbus.sh - the D-Bus message reader fuzz target under `make check` (see check-fuzz.sh).
exec sh "$(dirname "$0")/check-fuzz.sh" dbus
