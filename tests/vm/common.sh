# common.sh - the host side shared by hutch's VM suites (sourced by bash:
# tests/vm/run and tests/vm/run-systemd). It finds the built tree, QEMU,
# a static busybox and Debian's cloud kernel (fetched into the cache
# with apt-get download on first use), copies programs with their shared
# libraries into an initramfs tree, packs that tree, boots it and turns
# the serial console into TAP.
#
# The caller sets $here (the directory of the calling script) before
# sourcing, and $root (the initramfs tree) before add_program and
# vm_pack_initrd. Everything here skips ("1..0 # SKIP reason", exit 0)
# when something cannot be had, and bails out (exit 1) when the tree is
# not built or a step that should work fails.

srcdir=$(cd "$here/../.." && pwd)

skip() {
        echo "1..0 # SKIP $*"
        exit 0
}
bail() {
        echo "Bail out! $*"
        exit 1
}

# vm_paths: sets builddir, work (BUILDDIR/tests/vm), cache and timeout
# from VM_BUILDDIR, $HUTCH, the current directory, VM_CACHE and VM_TIMEOUT.
vm_paths() {
        if [ -n "${VM_BUILDDIR:-}" ]; then
                builddir=$VM_BUILDDIR
        elif [ -n "${HUTCH:-}" ] && [ -x "$HUTCH" ]; then
                builddir=$(cd "$(dirname "$HUTCH")/.." && pwd)
        elif [ -x src/hutch ]; then
                builddir=$(pwd)
        else
                builddir=$srcdir
        fi
        work=$builddir/tests/vm
        cache=${VM_CACHE:-$work/cache}
        timeout=${VM_TIMEOUT:-900}
}

# vm_tools: sets qemu, busybox (a static one: the initramfs has no C
# library of its own for it) and busybox_cpio (yes when busybox's cpio
# writes newc archives), or skips.
vm_tools() {
        local b cpio_help
        [ "$(uname -m)" = x86_64 ] || skip "the VM suite boots an amd64 kernel; this host is $(uname -m)"
        qemu=$(command -v qemu-system-x86_64) ||
                skip "qemu-system-x86_64 not installed (Debian package qemu-system-x86)"
        busybox=""
        for b in "${VM_BUSYBOX:-}" /bin/busybox /usr/bin/busybox "$(command -v busybox 2>/dev/null)"; do
                [ -n "$b" ] && [ -x "$b" ] || continue
                if ! ldd "$b" >/dev/null 2>&1; then
                        busybox=$b
                        break
                fi
        done
        [ -n "$busybox" ] || skip "no static busybox (Debian package busybox-static)"
        # (help text captured first: with pipefail, grep -q closing the pipe
        # early would make the check fail at random)
        cpio_help=$("$busybox" cpio --help 2>&1)
        busybox_cpio=no
        case $cpio_help in *"-H"*) busybox_cpio=yes ;; esac
        [ $busybox_cpio = yes ] || command -v cpio >/dev/null ||
                skip "no cpio that writes newc archives (busybox cpio -o or the cpio package)"
        command -v gzip >/dev/null || skip "gzip not installed"
}

# vm_lock, vm_unlock: hold the cache's lock while filling it, so that
# the VM suites `make -j check` starts together do not fetch into the
# same place at once (without flock, they go ahead unlocked).
vm_lock() {
        mkdir -p "$cache" || bail "cannot create $cache"
        command -v flock >/dev/null || return 0
        exec 9>"$cache/.lock" && flock 9
}
vm_unlock() { exec 9>&-; }

# ---- the kernel ------------------------------------------------------------
# Debian's cloud kernel: small, boots in seconds under TCG, and has the
# cgroup v2 controllers, user namespaces and virtio. apt-cache names the
# real package behind the metapackage; apt-get download fetches it into
# the cache without installing anything; dpkg -x unpacks it there.
fetch_kernel() {
        local pkg deb
        command -v apt-cache >/dev/null && command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
                skip "no kernel cached in $cache and no apt-get/dpkg to fetch one (or set VM_KERNEL)"
        pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
                awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-cloud-amd64$/ { print $2; exit }')
        [ -n "$pkg" ] || skip "apt-cache knows no linux-image-cloud-amd64 (apt-get update?)"
        mkdir -p "$cache/download" || bail "cannot create $cache"
        # apt drops to user _apt for downloads when it can; let it write here
        chmod 0777 "$cache/download" 2>/dev/null
        (cd "$cache/download" && apt-get download -q "$pkg") >"$cache/download.log" 2>&1 ||
                skip "apt-get download $pkg failed (see $cache/download.log)"
        deb=$(ls "$cache/download/${pkg}"_*.deb 2>/dev/null | head -n1)
        [ -n "$deb" ] || skip "apt-get download $pkg left no .deb"
        rm -rf "$cache/kernel.new"
        dpkg -x "$deb" "$cache/kernel.new" || bail "dpkg -x $deb failed"
        rm -rf "$cache/kernel" && mv "$cache/kernel.new" "$cache/kernel"
        rm -rf "$cache/download"
        echo "$pkg" >"$cache/kernel/PACKAGE"
}

# vm_kernel: sets kernel (a vmlinuz) and moddir (its /lib/modules/VERSION,
# or empty) from VM_KERNEL/VM_MODULES or the cache, fetching on first use.
vm_kernel() {
        if [ -n "${VM_KERNEL:-}" ]; then
                kernel=$VM_KERNEL
                moddir=${VM_MODULES:-}
        else
                kernel=$(ls "$cache"/kernel/boot/vmlinuz-* 2>/dev/null | head -n1)
                if [ -z "$kernel" ]; then
                        vm_lock
                        kernel=$(ls "$cache"/kernel/boot/vmlinuz-* 2>/dev/null | head -n1)
                        [ -n "$kernel" ] || fetch_kernel
                        vm_unlock
                        kernel=$(ls "$cache"/kernel/boot/vmlinuz-* 2>/dev/null | head -n1)
                        [ -n "$kernel" ] || bail "the kernel package has no /boot/vmlinuz-*"
                fi
                moddir=$(ls -d "$cache"/kernel/lib/modules/*/ 2>/dev/null | head -n1)
        fi
        [ -r "$kernel" ] || skip "kernel $kernel not readable"
}

# ---- the initramfs --------------------------------------------------------
# Copy a dynamically linked program and every library ldd names for it
# (and the dynamic loader) to the same paths in the initramfs. A library
# already in the tree, or one in_base says another archive of the
# initramfs has, is kept.
in_base() { return 1; }
add_program() {
        local src=$1 dst=$2 lib libs
        cp "$src" "$root$dst" || bail "cannot copy $src"
        ldd "$src" >/dev/null 2>&1 || return 0     # static
        libs=$(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
        # hutch loads nettle with dlopen() at its first digest: ldd does
        # not list it, every run needs it
        [ "$(basename "$dst")" = hutch ] &&
                libs="$libs $(ldconfig -p | awk '$1 == "libnettle.so.8" && $NF ~ /^\// { print $NF; exit }')"
        for lib in $libs; do
                [ -e "$root$lib" ] && continue
                in_base "$lib" && continue
                mkdir -p "$root$(dirname "$lib")"
                cp -L "$lib" "$root$lib" || bail "cannot copy $lib"
        done
}

# add_module NAME: copies kernel module NAME from $moddir, after the
# modules it depends on (from each module's .modinfo), to
# $root/lib/modules/ and appends its file name to load.list there, which
# the guest's init loads in order with insmod. A module the kernel
# builds in (or does not have) is skipped.
mod_order=()
add_module() {
        local name=$1 file dep
        for dep in "${mod_order[@]}"; do [ "$dep" = "$name" ] && return 0; done
        file=$(grep -E "/$name\.ko(\.xz|\.zst)?$" "$moddir/modules.order" 2>/dev/null | head -n1)
        [ -n "$file" ] && [ -e "$moddir/$file" ] || return 0
        for dep in $("$busybox" strings "$moddir/$file" | sed -n 's/^depends=//p' | tr ',' ' '); do
                add_module "$dep"
        done
        cp "$moddir/$file" "$root/lib/modules/"
        mod_order+=("$name")
        echo "$(basename "$file")" >>"$root/lib/modules/load.list"
}

# vm_pack_initrd FILE: $root as a gzip'd newc cpio archive.
vm_pack_initrd() {
        if [ $busybox_cpio = yes ]; then
                (cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$1"
        else
                (cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$1"
        fi || bail "cannot write $1"
}

# ---- boot -----------------------------------------------------------------
ms_since() { # microsecond timestamps -> ms
        local a=${1/./} b=${2/./}
        echo $(((b - a) / 1000))
}

# vm_boot WHAT CMDLINE [QEMU-ARGS...]: boots $kernel with $initrd, copies
# the serial console to $console (and to stderr with VM_VERBOSE=1) and
# prints TAP: the guest prints "@@VMTAP-BEGIN <note>", then result lines
# without numbers and "# " diagnostics, then "@@VMTAP-END"; this numbers
# the results, shows other console lines between the markers as "# | ",
# reports WHAT ("init": "the VM booted to init in N ms") and timings, and
# writes the plan. Returns 1 when a test failed or the VM did not finish.
#
# TCG by default: it boots this kernel in a few seconds and behaves the
# same everywhere, while a /dev/kvm that exists can still be unusable
# (nested virtualisation) and hang the guest. VM_ACCEL=kvm opts in.
vm_boot() {
        local what=$1 cmdline=$2 accel start booted="" finished="" end line n=0 failed=0
        shift 2
        case ${VM_ACCEL:-tcg} in
        kvm) accel=(-accel kvm -cpu host) ;;
        *) accel=(-accel tcg) ;;
        esac
        : >"$console"
        start=$EPOCHREALTIME

        echo "# kernel: $(basename "$kernel") (${accel[1]}), initramfs $(($(stat -c %s "$initrd") / 1024)) KiB"
        while IFS= read -r line; do
                line=${line//$'\r'/}
                printf '%s\n' "$line" >>"$console"
                [ "${VM_VERBOSE:-0}" = 1 ] && printf '%s\n' "$line" >&2
                case $line in
                *@@VMTAP-BEGIN*)
                        booted=$EPOCHREALTIME
                        echo "# VM booted to $what in $(ms_since "$start" "$booted") ms (${line#*@@VMTAP-BEGIN })"
                        ;;
                *@@VMTAP-END*)
                        finished=$EPOCHREALTIME
                        ;;
                "not ok"* | "ok"*)
                        [ -n "$booted" ] || continue
                        # renumber: every script (and cgtest) counts from 1
                        [[ $line =~ ^(not ok|ok)( [0-9]+)?(.*)$ ]] || continue
                        n=$((n + 1))
                        [ "${BASH_REMATCH[1]}" = ok ] || failed=$((failed + 1))
                        echo "${BASH_REMATCH[1]} $n${BASH_REMATCH[3]}"
                        ;;
                [0-9]*..[0-9]*) ;;                       # a sub-test's own plan
                "#"*)
                        [ -n "$booted" ] && echo "$line"
                        ;;
                *)
                        [ -n "$booted" ] && [ -z "$finished" ] && [ -n "$line" ] && echo "# | $line"
                        ;;
                esac
        done < <(timeout -k 5 "$timeout" "$qemu" -nographic -no-reboot -nodefaults -serial stdio \
                -m 1024 -smp 2 "${accel[@]}" \
                -kernel "$kernel" -initrd "$initrd" -append "$cmdline" \
                "$@" </dev/null 2>&1)
        end=$EPOCHREALTIME

        if [ -z "$finished" ]; then
                n=$((n + 1))
                failed=$((failed + 1))
                if [ -z "$booted" ]; then
                        echo "not ok $n - the VM booted to $what (no start marker within ${timeout}s)"
                else
                        echo "not ok $n - the VM finished the suite (no end marker within ${timeout}s)"
                fi
                echo "# last console lines ($console):"
                tail -n 30 "$console" | sed 's/^/#   /'
        fi
        echo "# VM wall time $(ms_since "$start" "$end") ms"
        echo "1..$n"
        [ "$failed" -eq 0 ]
}
