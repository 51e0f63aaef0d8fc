#!/bin/sh
# check-bare-bang.sh - `make check` lint (TAP): no assertion in the bats
# tests, or in the helpers they load, is a bare `! cmd` that bats'
# errexit ignores (see bare-bang.py). Files are named from the source
# tree's top, as tests/integration/foo.bats:LINE.
set -u
cd "${TESTS_DIR:?}/.." || exit 1
# tests/vm/initramfs is built by the VM tests from Debian's packages
# (bats-core among them): not ours to lint
exec python3 tests/lint/bare-bang.py $(find tests -path tests/vm/initramfs -prune -o \( -name '*.bats' -o -name '*.bash' \) -type f -print | LC_ALL=C sort)
