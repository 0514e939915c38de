#!/bin/busybox sh
# PID 1 of a check-kernels VM (tests/kernels/check_kernels.py packs it as /init): loads the
# virtio and 9p modules the kernel package builds as modules, mounts the host's root
# read-only over 9p with writable tmpfs where tests write, chroots into it and runs the
# command named on the kernel command line (bpfsight.run=), then powers off. Results go
# to the writable "out" share, mounted at /tmp/kernels-out inside the chroot.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod "/modules/$m.ko" || echo "init: insmod $m failed"
done
ifconfig lo 127.0.0.1 up
h=/host
mkdir -p $h
# cache=loose: the host's files do not change while the VM runs, and TCG pays for every
# round trip to QEMU's 9p server.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 host $h ||
	{ echo "init: cannot mount the host's root"; poweroff -f; }
for d in tmp run var/tmp root/.cache; do
	[ -d $h/$d ] && mount -t tmpfs tmpfs $h/$d
done
mount -t proc proc $h/proc
mount -t sysfs sys $h/sys
mount -t devtmpfs dev $h/dev
mkdir -p $h/dev/pts $h/dev/shm
mount -t devpts devpts $h/dev/pts
mount -t tmpfs tmpfs $h/dev/shm
mount -t bpf bpf $h/sys/fs/bpf
mount -t debugfs debugfs $h/sys/kernel/debug
mount -t tracefs tracefs $h/sys/kernel/tracing 2>/dev/null
mkdir -p $h/tmp/kernels-out
mount -t 9p -o trans=virtio,version=9p2000.L out $h/tmp/kernels-out ||
	echo "init: cannot mount the results share"
run=$(sed -n 's/.*bpfsight\.run=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "init: up in $(cut -d' ' -f1 /proc/uptime) s; running $run"
# BPFSIGHT_TEST_SLOWDOWN: TCG runs this guest about ten times slower than the host; tests
# that bound a latency (a dlopen seen within 300 ms) scale the bound by it.
chroot $h /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 BPFSIGHT_TEST_SLOWDOWN=10 \
	/bin/sh "$run"
echo "init: done (rc $?)"
sync
poweroff -f
