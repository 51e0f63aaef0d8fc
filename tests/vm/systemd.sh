#!/bin/sh
# systemd.sh - `make check`'s entry for the VM suite with systemd as PID 1:
# runs tests/vm/run-systemd (bash) from the source tree against the build
# tree. That script prints TAP and skips ("1..0 # SKIP reason") when QEMU,
# a static busybox, the kernel or the systemd packages cannot be had;
# HUTCH_VM_TESTS=no skips it.
here=$(dirname "$0")
if ! command -v bash >/dev/null 2>&1; then
        echo "1..0 # SKIP bash not installed"
        exit 0
fi
exec bash "$here/run-systemd"
