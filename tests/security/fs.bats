#!/usr/bin/env bats
# fs.bats - filesystem escapes. The job tries to write, rename, chmod,
# link and traverse its way to host files; after each attempt the host
# side is inspected (fingerprints taken before and after, markers looked
# for where the job tried to create them). Canary files in host system
# dirs are only planted when the suite runs as root (as another user the
# dirs are not ours to write, so the kernel's DAC is the only thing that
# would stop an escape, and a plain marker is checked instead).

load lib

setup() {
        # before require_sandbox: teardown runs after a skipped setup too,
        # and with M empty it would remove /dev/* and /tmp/*-?
        M=$(marker)
        CANARIES=()
        require_sandbox
        export HUTCH_STATE_DIR="$BATS_TEST_TMPDIR/state"
        # binds are resolved by the sandbox's own (unprivileged) host
        # uid: bats' 0700 temp dirs are out of its reach
        WORK=$(mktemp -d /tmp/hutchsec.XXXXXX)
        chmod 0755 "$WORK"
        CANARIES+=("$WORK")
}

teardown() {
        local c
        [ -n "${M:-}" ] || return 0
        for c in "${CANARIES[@]}"; do
                rm -rf -- "$c"
        done
        rm -rf /tmp/"$M"-? 2>/dev/null || true
        rm -f "/tmp/$M" "/usr/$M" "/etc/$M" "/opt/$M" "/$M" "/$M-x" /tmp/"$M"-? /dev/"$M"* \
                /dev/shm/"$M"-? 2>/dev/null || true
}

# plant_canary DIR: a host file the job will attack (root only, but
# DIR=$WORK, the suite's own dir, works for anyone).
plant_canary() {
        local f="$1/hutch-canary-$M"
        { am_root || [ "$1" = "$WORK" ]; } && [ -d "$1" ] || return 1
        echo "canary $M" >"$f"
        chmod 0644 "$f"
        CANARIES+=("$f")
        echo "$f"
}

@test "fs: the job cannot create files in any host dir it sees (/usr /etc /opt / /tmp)" {
        sandboxed -- sh -c "for d in /usr /usr/local /etc /opt / /tmp /var /root; do
                touch \$d/$M 2>/dev/null && echo \"created \$d\"; done; true"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        for d in /usr /usr/local /etc /opt / /var /root; do
                [ ! -e "$d/$M" ] || { echo "host $d/$M exists" >&2; false; }
        done
        # /tmp inside is the sandbox's own: the host's must not see the file
        [ ! -e "/tmp/$M" ]
}

@test "fs: host system files cannot be overwritten, truncated, chmod'ed, renamed or removed" {
        am_root || skip "canaries in /usr /etc /opt need root on the host"
        local targets=() t
        for d in /usr/local /etc /opt; do
                t=$(plant_canary "$d") && targets+=("$t")
        done
        before=$(fingerprint "${targets[@]}")
        sandboxed --uid 0 -- sh -c 'for f in "$@"; do
                echo pwned >"$f"; true >"$f"; chmod 0777 "$f"; chown 0:0 "$f"
                mv "$f" "$f.moved"; rm -f "$f"; ln -sf /dev/null "$f"
                done 2>/dev/null; true' sh "${targets[@]}"
        after=$(fingerprint "${targets[@]}" "${targets[@]/%/.moved}")
        [ "$before" = "$(fingerprint "${targets[@]}")" ]
        [[ "$after" != *"moved "*"regular"* ]]
}

@test "fs: /proc/sys is read-only: a global sysctl keeps its host value" {
        local f=/proc/sys/vm/stat_interval
        [ -e "$f" ] || skip "$f not on this host"
        old=$(cat "$f")
        sandboxed --uid 0 -- sh -c "echo $((old + 1)) >$f"
        now=$(cat "$f")
        if [ "$now" != "$old" ]; then
                am_root && echo "$old" >"$f"
                echo "host $f changed from $old to $now" >&2
                false
        fi
        [ "$status" -ne 0 ]
}

@test "fs: /sys is not reachable (no write to a host sysfs knob)" {
        local f=/sys/module/printk/parameters/time
        [ -e "$f" ] || skip "$f not on this host"
        old=$(cat "$f")
        new=N; [ "$old" = N ] && new=Y
        sandboxed --uid 0 -- sh -c "echo $new >$f; ls /sys 2>/dev/null | head -3"
        now=$(cat "$f")
        if [ "$now" != "$old" ]; then
                am_root && echo "$old" >"$f"
                echo "host $f changed from $old to $now" >&2
                false
        fi
}

@test "fs: masked secrets (/etc/shadow, gshadow, sudoers, ssh host keys) read as nothing, even as uid 0" {
        local files=() f write=write
        for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh/ssh_host_*key; do
                [ -f "$f" ] && files+=("$f")
        done
        [ ${#files[@]} -gt 0 ] || skip "no secret files on this host"
        # unconfined, only the reads are tried: the host's real secrets
        # are not ours to damage
        selftest && write=
        before=$(fingerprint "${files[@]}")
        sandboxed --uid 0 -- sh -c 'w=$1; shift; for f in "$@"; do
                cat "$f"
                [ -n "$w" ] && { echo x >>"$f"; chmod 0666 "$f"; umount "$f"; }
                done 2>/dev/null
                cat /etc/sudoers.d/* /etc/ssl/private/* 2>/dev/null; true' sh "$write" "${files[@]}"
        [ "$before" = "$(fingerprint "${files[@]}")" ]
        # nothing of the host's secrets in what the job printed
        [ -z "$(printf '%s' "$output" | tr -d '[:space:]')" ] || {
                echo "the job read: $output" >&2
                false
        }
}

@test "fs: /proc/sysrq-trigger cannot be written" {
        [ -e /proc/sysrq-trigger ] || skip "this kernel has no /proc/sysrq-trigger"
        sandboxed --uid 0 -- sh -c 'echo h >/proc/sysrq-trigger && echo WROTE'
        [[ "$output" != *WROTE* ]]
}

@test "fs: every /proc mask the kernel has is in place: an empty, sealed bind, unreadable as uid 0" {
        landlock_skip "no mount namespace, so no mask over /proc's host-state files (kallsyms, timer_list, keys, kpage*, vmallocinfo, acpi): the job reads what the host lets its unprivileged uid read"
        skip_in_selftest "an unconfined /proc has no masks to look for"
        # the list of mount.c's proc_masked[]; the host's /proc is the
        # same kernel's, so an entry it shows is one the sandbox must hide
        local want=() e gv=
        for e in kcore keys key-users timer_list timer_stats latency_stats sched_debug \
                 sysrq-trigger kallsyms kpagecount kpageflags kpagecgroup vmallocinfo acpi scsi asound; do
                [ -e "/proc/$e" ] && want+=("$e")
        done
        [ ${#want[@]} -gt 0 ] || skip "this kernel has none of the masked /proc entries"
        # under gvisor the job's /proc is gVisor's kernel's: an entry
        # must be absent there or read as nothing, and no mask is needed
        under_gvisor && gv=1
        sandboxed --uid 0 -- sh -c 'gv=$1; shift; for e in "$@"; do
                opts=$(awk -v m="/proc/$e" '"'"'$5 == m { print $4 " " $6 }'"'"' /proc/self/mountinfo | tail -n 1)
                case "$opts" in
                /rw/masks/empty-*" "ro,nosuid,nodev,noexec*) ;;
                *) [ -n "$gv" ] && [ ! -e "/proc/$e" ] && continue
                   [ -z "$gv" ] && { echo "UNMASKED $e: ${opts:-no mount}"; continue; } ;;
                esac
                if [ -d "/proc/$e" ]; then ls -A "/proc/$e" 2>/dev/null; else head -c 64 "/proc/$e" 2>/dev/null; fi
                done; echo done; uname -r' sh "$gv" "${want[@]}"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        if under_gvisor; then
                gvisor_kernel_check
        fi
        [ "${lines[0]}" = done ] && [ ${#lines[@]} -eq 2 ] || { echo "$output" >&2; false; }
}

@test "fs: /proc/kcore and /proc/kmsg give nothing" {
        sandboxed --uid 0 -- sh -c 'head -c 64 /proc/kcore /proc/kmsg 2>/dev/null | od -c | sed 1q | grep -v "^0000000$"; true'
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ -z "$output" ]
}

@test "fs: no device node can be made, and /dev holds only the harmless ones" {
        landlock_skip "no private /dev: the host's /dev cannot be listed, Landlock opens only null, zero, full, random, urandom (and tty with -t) and refuses mknod everywhere"
        local dir="$WORK/rw" list="ls /dev" gvisor_devices="" dev_dir=/dev
        mkdir -p "$dir"
        chmod 0777 "$dir"
        if under_gvisor; then
                # runsc's statx refuses coreutils ls (hutch-run(1)), so
                # the shell lists; gVisor's kernel adds its emulated fuse
                # and net/tun, which need capabilities (the next case).
                # Its /dev is a tmpfs in the sentry's memory, where the
                # job may make nodes, but a node opens only the devices
                # gVisor emulates: each host device number answers ENXIO.
                list='for f in /dev/*; do echo "${f#/dev/}"; done'
                gvisor_devices="fuse net"
                dev_dir=""
                sandboxed --uid 0 -- sh -c '
                        for n in "c 1 1" "c 1 2" "c 1 11" "c 4 1" "c 5 1" "c 10 237" "b 7 0" "b 8 0" "b 253 0" "b 259 0"; do
                                f=/dev/node-$(echo $n | tr " " -)
                                mknod $f $n 2>/dev/null || continue
                                (: <$f) 2>&1 | grep -q "No such device or address" || echo "opened $n"
                                (echo x >$f) 2>&1 | grep -q "No such device or address" || echo "wrote $n"
                        done'
                [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
                [ -z "$output" ] || { echo "$output" >&2; false; }
        fi
        sandboxed --uid 0 --rw "$dir" -- sh -c "
                for d in /tmp /workspace /dev/shm $dev_dir $dir; do
                        mknod \$d/$M-c c 1 3 2>/dev/null && echo \"mknod \$d\"
                        mknod \$d/$M-b b 7 0 2>/dev/null && echo \"mknod \$d\"
                done
                $list"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ ! -e "$dir/$M-c" ] && [ ! -e "$dir/$M-b" ]
        [[ "$output" != *mknod* ]]
        # only null zero full random urandom tty, pts, shm and links
        for name in $output; do
                [[ " $gvisor_devices " == *" $name "* ]] && continue
                case $name in
                null|zero|full|random|urandom|tty|pts|shm|fd|stdin|stdout|stderr|ptmx) ;;
                *) echo "unexpected /dev/$name" >&2; false ;;
                esac
        done
}

@test "fs: no host block or kernel device is reachable under /dev" {
        landlock_skip "no private /dev: the host's device nodes exist at their paths (stat sees them), though Landlock refuses to open any but the harmless ones"
        # presence is the attack surface: with the node absent and /dev
        # read-only there is nothing to write to (never write a real disk,
        # even unconfined in the self-test)
        if under_gvisor; then
                # gVisor's kernel has its own /dev, a tmpfs in the sentry's
                # memory (a file made there is gone with the run and never
                # on the host), and emulates fuse and net/tun: a fuse file
                # system needs mount(2), refused to the job (seccomp.bats),
                # and a tun device TUNSETIFF, which needs CAP_NET_ADMIN
                sandboxed --uid 0 -- sh -c "for d in /dev/sda /dev/vda /dev/nvme0n1 /dev/mem /dev/kmem /dev/port /dev/kmsg /dev/console /dev/tty1 /dev/loop0; do
                        [ -e \$d ] && echo \"present \$d\"; done
                        python3 -c '
import fcntl, os, struct
fd = os.open(\"/dev/net/tun\", os.O_RDWR)
try:
    fcntl.ioctl(fd, 0x400454ca, struct.pack(\"16sH\", b\"hx0\", 1)); print(\"tun up\")
except OSError as e:
    print(\"tun\", os.strerror(e.errno))'
                        (echo x >/dev/$M) 2>/dev/null; true"
                [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
                [ "$output" = "tun Operation not permitted" ] || { echo "$output" >&2; false; }
                [ ! -e "/dev/$M" ]
                return
        fi
        sandboxed --uid 0 -- sh -c "for d in /dev/sda /dev/vda /dev/nvme0n1 /dev/mem /dev/kmem /dev/port /dev/kmsg /dev/console /dev/tty1 /dev/loop0 /dev/fuse /dev/net/tun; do
                [ -e \$d ] && echo \"present \$d\"; done
                (echo x >/dev/$M) 2>/dev/null && echo created; true"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ -z "$output" ] || { echo "$output" >&2; false; }
        [ ! -e "/dev/$M" ]
}

@test "fs: a symlink in /tmp to a host file does not lead to it" {
        # /etc when we may write there, else our own (unbound) dir
        c=$(plant_canary /etc) || c=$(plant_canary "$WORK")
        before=$(fingerprint "$c")
        sandboxed --uid 0 -- sh -c "ln -s $c /tmp/$M-l; echo pwned >/tmp/$M-l; echo pwned >>/tmp/$M-l
                ln -s /proc/1/root$c /tmp/$M-m; echo pwned >/tmp/$M-m
                ln -s /etc /tmp/$M-d; echo pwned >/tmp/$M-d/$M; true" 2>/dev/null
        [ "$before" = "$(fingerprint "$c")" ]
        [ ! -e "/etc/$M" ]
}

@test "fs: a hard link to a host file cannot be made into writable space" {
        c=$(plant_canary "$WORK")
        before=$(fingerprint "$c")
        sandboxed --uid 0 --ro "$WORK" -- sh -c "ln $c /tmp/$M-h && echo LINKED; ln $c /workspace/h && echo LINKED
                ln $c $WORK/h && echo LINKED; echo pwned >>/tmp/$M-h; true" 2>/dev/null
        [[ "$output" != *LINKED* ]]
        [ "$before" = "$(fingerprint "$c")" ]       # includes the link count
}

@test "fs: /proc/1/root, /proc/1/cwd and /proc/self/root lead nowhere on the host" {
        sandboxed --uid 0 -- sh -c "
                for p in /proc/1/root/tmp /proc/1/cwd /proc/self/root/tmp /proc/1/root/proc/1/root/tmp; do
                        touch \$p/$M-x 2>/dev/null
                done
                ls /proc/1/root/ 2>/dev/null; cat /proc/1/root/etc/hostname 2>/dev/null; true"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        CANARIES+=("/tmp/$M-x" "$PWD/$M-x")
        [ ! -e "/tmp/$M-x" ]
        [ ! -e "$PWD/$M-x" ]
        # nothing listed or read through init's root
        [ -z "$output" ]
}

@test "fs: /proc/1/fd of init is not reachable" {
        local secret="$BATS_TEST_TMPDIR/secret" out="$BATS_TEST_TMPDIR/out"
        echo "s3cret-$M" >"$secret"
        : >"$out"
        # the job's parent is init (unconfined: the shell holding 3 and 4)
        cmd=$(sandbox_cmd --uid 0 -- sh -c 'for f in /proc/1/fd/* /proc/$PPID/fd/*; do timeout 1 cat "$f"; echo pwned >"$f"; done 2>/dev/null
                cat /proc/1/fdinfo/* /proc/$PPID/fdinfo/* 2>/dev/null; true')
        run bash -c "$cmd 3<'$secret' 4>>'$out'"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *"s3cret-$M"* ]]
        [ ! -s "$out" ]
}

@test "fs: host fds of hutch's caller never reach the job" {
        local secret="$BATS_TEST_TMPDIR/secret" out="$BATS_TEST_TMPDIR/out"
        echo "s3cret-$M" >"$secret"
        : >"$out"
        cmd=$(sandbox_cmd -- sh -c "$PROBE fds; for n in 3 4 5 6 7 8 9; do cat <&\$n; echo pwned >&\$n; done 2>/dev/null; true")
        run bash -c "$cmd 3<'$secret' 4>>'$out' 7<>'$out'"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        fds=$(echo "$output" | awk '$1 ~ /^[0-9]+$/ { print $1 }' | sort -n | xargs)
        [ "$fds" = "0 1 2" ] || { echo "job fds: $fds; output: $output" >&2; false; }
        [[ "$output" != *"s3cret-$M"* ]]
        [ ! -s "$out" ]
}

@test "fs: open_by_handle_at cannot open a host file by handle" {
        sandboxed --uid 0 -- "$PROBE" handle /etc/hostname
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        assert_refused
}

@test "fs: chroot and pivot_root cannot be used to break out" {
        sandboxed --uid 0 -- sh -c "mkdir -p /tmp/$M-c && chroot /tmp/$M-c /x 2>/dev/null
                $PROBE syscall chroot; $PROBE syscall pivot_root
                cd /tmp/$M-c && chroot ../../../.. touch /tmp/$M 2>/dev/null; true"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *OK* ]]
        [ ! -e "/tmp/$M" ]
}

@test "fs: read-only mounts cannot be remounted writable" {
        skip_in_selftest "unconfined, this would remount the host's filesystems"
        sandboxed --uid 0 -- sh -c "
                for m in / /usr /etc /opt /proc/sys; do
                        mount -o remount,rw \$m 2>/dev/null && echo \"remounted \$m\"
                        mount -o remount,bind,rw \$m 2>/dev/null && echo \"remounted \$m\"
                done
                mount -t tmpfs none /usr/local 2>/dev/null && echo mounted
                touch /usr/$M /etc/$M /$M 2>/dev/null; true"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [[ "$output" != *mount* ]]
        [ ! -e "/usr/$M" ] && [ ! -e "/etc/$M" ] && [ ! -e "/$M" ]
}

@test "fs: an --ro bind cannot be written, chmod'ed, renamed or emptied" {
        am_root || landlock_skip "run by a user other than root, the job is that user, and Landlock holds a file's content, not its metadata: it can chmod the caller's own files (as root the job is uid 65534)"
        local d="$WORK/ro"
        mkdir -p "$d/sub"
        echo keep >"$d/file"
                before=$(fingerprint "$d" "$d/file" "$d/sub")
        sandboxed --uid 0 --ro "$d" -- sh -c 'd=$1
                echo pwned >"$d/file"; echo pwned >>"$d/file"; true >"$d/file"
                chmod 0777 "$d" "$d/file"; touch "$d/new" "$d/sub/new"
                mv "$d/file" "$d/moved"; mv "$d" "$d.moved"; rm -rf "$d/sub" "$d/file"
                ln -s /etc "$d/link"; umount "$d"; true' sh "$d"
        [ "$status" -eq 0 ] || { echo "status $status: $output" >&2; false; }
        [ "$before" = "$(fingerprint "$d" "$d/file" "$d/sub")" ]
        [ ! -e "$d.moved" ] && [ ! -e "$d/new" ] && [ ! -e "$d/link" ]
}

@test "fs: a --ro bind target cannot be swapped from inside (rename of its parent)" {
        local d="$WORK/parent"
        mkdir -p "$d/ro"
        echo keep >"$d/ro/file"
                before=$(fingerprint "$d" "$d/ro" "$d/ro/file")
        sandboxed --uid 0 --ro "$d/ro" -- sh -c 'd=$1
                mv "$d" "$d.x"; mv "$d/ro" "$d/ro2"; rmdir "$d/ro"; true' sh "$d" 2>/dev/null
        [ "$before" = "$(fingerprint "$d" "$d/ro" "$d/ro/file")" ]
        [ ! -e "$d.x" ]
}
