"""Loss is never silent: a ring buffer too small for the load, a full target map, a full
thread-state map, probes the kernel refuses, a full disk: each loses events and says how many,
by cause."""
import ctypes
import os
import re
import struct
import subprocess

from helpers import (BPFSIGHT, alone, check, dump, eq, info, need_root, record, stats, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

SYSCALLS = workload("syscalls")
CALLS = 500_000
# Enough to overflow a 4 KiB ring many times over (thousands lost in every run seen); every
# event kept is read back by dump.
RING_CALLS = 50_000


def test_ringbuf_overflow_is_counted_exactly():
    need_root()
    # One event per call into a 4 KiB ring: many are lost, and each loss is counted.
    p, out = record([SYSCALLS, str(RING_CALLS), "0"], "-t", "osrt", "--osrt-threshold", "0",
                    "--buffer-size", "4096")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    meta = info(out)
    lost = meta["lost"].get("ringbuf_full", 0)
    check(lost > 0, f"a 4 KiB ring under {RING_CALLS} calls loses events: {meta['lost']}")
    eq(meta["lost_total"], sum(meta["lost"].values()), "lost_total is the sum of causes")
    evs = dump(out)
    recorded = sum(1 for e in evs if e["kind"] == "syscall" and e["pid"] == pid
                   and e["name"] == "getppid")
    check(recorded < RING_CALLS, "some getppid events lost")
    # Every record the BPF side failed to reserve is in `lost`: what was recorded plus what
    # was lost covers every call (the few extra are the workload's other syscalls and
    # lifecycle records that were lost too).
    check(RING_CALLS <= recorded + lost <= RING_CALLS + 200,
          f"recorded {recorded} + lost {lost} vs {RING_CALLS} calls")
    check("events lost" in p.stderr and str(meta["lost_total"]) in p.stderr,
          f"the end-of-run line says how many were lost: {p.stderr}")
    losses = [e for e in evs if e["kind"] == "loss"]
    eq(sum(e["args"]["count"] for e in losses), meta["lost_total"], "loss events add up")


def test_default_threshold_keeps_counts_exact_without_events():
    need_root()
    # Under the 1 us threshold getppid is only aggregated in the kernel: no events, exact
    # count, and nothing lost even with a small ring.
    p, out = record([SYSCALLS, str(CALLS), "0"], "-t", "osrt", "--buffer-size", "64K")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    rows = stats(out, "osrt_sum")["osrt_sum"]
    gp = [r for r in rows if r["name"] == "getppid"]
    eq([r["count"] for r in gp], [CALLS], "getppid: one row, the count from in-kernel aggregates")
    # the workload made CALLS getppid and nothing that slow: no event of them
    eq(sum(1 for e in dump(out) if e["kind"] == "syscall" and e["name"] == "getppid"
           and e["dur"] < 1000), 0, "no getppid event under the threshold")
    eq(info(out)["lost_total"], 0, "nothing lost")


def test_full_disk_is_never_a_clean_file():
    """A trace on a full filesystem (a small tmpfs): the recorder fails with the reason, and
    the file either holds every record, or reads as not closed cleanly (its complete chunks
    recovered), or is closed with a write_failed loss counting what it dropped (the
    recording ends at the failure); never a clean file silently missing records. A 64 KiB
    tmpfs left with 8 KiB fills while recording; 200 KiB is about the size of the whole trace
    on an idle machine, so it fills at the last chunk as the recording closes, or just fits:
    then the file must be whole. The calls take 1.7 bytes a record here idle but as little as
    0.04 on a loaded machine (regular bursts compress that well: 200,000 once fit in 8 KiB),
    so a run that did not fill its disk is run again with ten times the calls."""
    need_root()
    full = 0
    for size, n in (("64k", 200000), ("64k", 2000000), ("200k", 200000)):
        if size == "64k" and full:
            continue
        mnt = tmpdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                       check=True)
        try:
            if size == "64k":
                st = os.statvfs(mnt)
                with open(os.path.join(mnt, "filler"), "wb") as f:
                    f.write(b"\0" * (st.f_bavail * st.f_frsize - 8192))
            p, out = record([SYSCALLS, str(n), "0"], "-t", "osrt", "--osrt-threshold", "0",
                            out=os.path.join(mnt, "t.bst"))
            st = os.statvfs(mnt)
            check(os.path.ismount(mnt) and st.f_blocks * st.f_frsize <= 200 << 10,
                  f"{size}: {mnt} is no longer the small tmpfs ({st.f_blocks} blocks)")
            i = info(out, check=False)
            got = sum(1 for e in dump(out, check=False)
                      if e["kind"] == "syscall" and e["name"] == "getppid")
        finally:
            subprocess.run(["umount", mnt], check=True)
        if p.returncode == 0:
            eq((got, i["clean_close"], i["lost_total"]), (n, True, 0),
               f"{size}: it fit: every call, closed cleanly, nothing lost")
            continue
        full += size == "64k"
        eq(p.returncode, 1, f"{size}: exit status ({p.stderr[-300:]})")
        check("No space left on device" in p.stderr, f"{size}: {p.stderr[-300:]}")
        check(got == n or not i["clean_close"] or i["lost"].get("write_failed", 0) > 0,
              f"{size}: a clean file with {got} of {n} calls and no write_failed loss "
              f"(lost {i['lost']})")
        check(got < n, f"{size}: the disk was full ({got} calls)")
    check(full, "the 64 KiB disk never filled")


def test_a_child_the_full_target_map_cannot_hold_is_counted():
    """A process whose child cannot be followed: the target map (BPFSIGHT_MAP_ENTRIES shrinks
    it to the one entry CMD takes) is full when CMD forks, so the child is not traced, and
    that is one target_map_full loss: the parent's calls exact, none of the child's."""
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--osrt-threshold", "0",
                        "--", SYSCALLS, "--fork", "300", "5", "500"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, BPFSIGHT_MAP_ENTRIES="targets=1"))
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    parent = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    child = int(re.search(r"^child (\d+)", p.stdout, re.M).group(1))
    eq(info(out)["lost"], {"target_map_full": 1}, "losses")
    evs = [e for e in dump(out) if e["kind"] == "syscall"]
    eq(sum(e["name"] == "getppid" for e in evs if e["pid"] == parent), 300, "parent's getppid")
    eq([e for e in evs if e["pid"] == child], [], "the child's calls (not followed)")
    check("1 events lost" in p.stderr, f"the end-of-run line says so: {p.stderr}")
    # Without the cap the same run follows the child: the loss above is the map's.
    p = subprocess.run([BPFSIGHT, "record", "-f", "-o", out, "-t", "osrt", "--osrt-threshold",
                        "0", "--", SYSCALLS, "--fork", "300", "5", "500"], capture_output=True,
                       text=True, timeout=120)
    child = int(re.search(r"^child (\d+)", p.stdout, re.M).group(1))
    eq(info(out)["lost"], {}, "losses with the default cap")
    eq(sum(e["name"] == "getppid" for e in dump(out) if e["kind"] == "syscall"
           and e["pid"] == child), 300, "the child's getppid with the default cap")


def perf_uprobe(path, offset):
    """What `perf probe` does: a uprobe (perf event, no BPF) at OFFSET in PATH, without a
    reference counter. The kernel keeps one uprobe per (file, offset), with one counter or
    none: a USDT probe with a semaphore at the same place can no longer be attached."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/sys/bus/event_source/devices/uprobe/type") as f:
        pmu = int(f.read())
    name = ctypes.create_string_buffer(path.encode())
    attr = bytearray(136)  # struct perf_event_attr: type, size, config.., flags, .., config1/2
    struct.pack_into("IIQQQQQIIQQ", attr, 0, pmu, len(attr), 0, 0, 0, 0, 1,  # disabled
                     0, 0, ctypes.addressof(name), offset)
    fd = libc.syscall(298, (ctypes.c_char * len(attr)).from_buffer(attr), -1, 0, -1, 0)
    check(fd >= 0, f"perf_event_open(uprobe {path}:{offset:#x}): errno {ctypes.get_errno()}")
    return fd


def usdt_location(path, name):
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(rf"Name: {name}\s+Location: (0x[0-9a-f]+)", notes)
    check(m, f"USDT probe {name} in {path}")
    return int(m.group(1), 16)


@alone("a plain uprobe on shim_fake's batch site makes the kernel refuse every other tracer's "
       "probe there")
def test_a_probe_the_kernel_refuses_is_counted_and_the_process_unharmed():
    """attach_failed for real: another tracer holds a plain uprobe where the cupti-shim's
    bpfsight:batch USDT probe is (the fake shim's: its address is also its file offset), so the
    kernel refuses bpfsight's probes with their semaphores. Each probe of the link is one
    loss, the warning says what and the likely reason, the program runs as it would."""
    need_root()
    fake = workload("shim_fake")
    fd = perf_uprobe(fake, usdt_location(fake, "batch"))
    try:
        d = tmpdir()
        out, go = os.path.join(d, "t.bst"), os.path.join(d, "go")
        # The fake's cue to go is there already: it does not wait (10 s) for a semaphore
        # that cannot come (launch mode attached, or failed to, before it ran).
        open(go, "w").close()
        p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "gpu,nvtx", "--", fake, "basic",
                            "--wait-file", go], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, BPFSIGHT_SHIM=fake))
    finally:
        os.close(fd)
    eq(p.returncode, 0, f"record exit ({p.stderr[-600:]})")
    probes = int(re.search(r"cannot attach (\d+) cupti-shim probes", p.stderr).group(1))
    check("without the semaphore?" in p.stderr, f"the likely reason: {p.stderr}")
    got = info(out)
    eq(got["lost"], {"attach_failed": probes}, "losses: one per probe not attached")
    # the channel's own losses are the family's whose struct family_shim says channel
    eq(got["lost_by_family"], {"gpu": {"attach_failed": probes}}, "losses by family")
    check(re.search(r"^end batch=0 ", p.stdout, re.M), f"the fake saw no semaphore: {p.stdout}")
    # The other tracer gone, the same run attaches and loses nothing.
    p = subprocess.run([BPFSIGHT, "record", "-f", "-o", out, "-t", "gpu,nvtx", "--", fake,
                        "basic"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BPFSIGHT_SHIM=fake))
    eq(info(out)["lost"].get("attach_failed", 0), 0, "attach_failed without the other tracer")


def test_threads_the_full_state_map_cannot_hold_are_counted():
    """task_map_full for real: without task storage (forced, as on kernels before 5.11) the
    sched family keeps each thread's state in a hash, here shrunk to one entry
    (BPFSIGHT_MAP_ENTRIES). Four workers each block in 5 sleeps: at most the thread holding
    the entry (and one taking it after that one exits) is timed; every block of a thread
    without one is a task_map_full loss, none is silent."""
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    env = dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="task_storage",
               BPFSIGHT_MAP_ENTRIES="thread_sched=1")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "sched", "--", SYSCALLS,
                        "--threads", "4", "10", "5", "20000"], capture_output=True, text=True,
                       timeout=120, env=env)
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    lost = info(out)["lost"]
    timed = {e["tid"] for e in dump(out) if e["kind"] == "offcpu"}
    # Each worker blocks 5 times; those of the threads never timed (at least 2 of the 5
    # threads with the main one) are each a loss.
    check(len(timed) <= 3, f"threads timed with one entry: {timed}")
    check(lost.get("task_map_full", 0) >= 2 * 5, f"losses: {lost}")
    check("events lost" in p.stderr, f"the end-of-run line says so: {p.stderr}")
