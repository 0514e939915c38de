"""Whole native stacks through code without frame pointers: unwind tables (.eh_frame) walked in
BPF (docs/STACKS.md, "Unwind tables"), for stacks on events, cpu samples and `bpfsight
stacks`. Workload: tests/workloads/unwind_qsort.c, built with -O2 -fomit-frame-pointer:
main -> level_a -> level_b -> level_c -> libc's qsort -> compare_cb, which calls the real
libcudart's cudaStreamQuery and getppid (mode calls), spins (spin), or, on thread "reader",
blocks in read() while thread "sleeper" sleeps under nest_x -> nest_y (sleep). Truths: the
program's own call chain, gdb's unwind of the same threads, and perf's DWARF unwind."""
import collections
import functools
import json
import os
import re
import shutil
import struct
import subprocess

import pymods
from helpers import (BPFSIGHT, SLOWDOWN, Skip, check, dump, eq, info, need_root, record, run,
                     spawn, stats, tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 25

PROG = workload("unwind_qsort")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
TORCH_IDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                          "torch_idle.py")
ROUNDS = 20
# The chain from the comparator up, as the program calls it: libc's sort frames between
# compare_cb and level_c, libc's start frames between main and _start.
CALLERS = ["compare_cb", "LIBC", "level_c", "level_b", "level_a", "main", "LIBC", "_start"]


def shape(stack):
    """A dump stack's native frames as CALLERS' words: runs of libc frames become one
    "LIBC"; a marker is "CUT:reason"."""
    out = []
    for f in stack:
        func = f.get("func", "")
        if func.startswith("[unwind stopped"):
            out.append("CUT:" + func)
        elif os.path.basename(f.get("file") or "").startswith("libc.so"):
            if not out or out[-1] != "LIBC":
                out.append("LIBC")
        else:
            out.append(func)
    return out


def check_stacks(stacks, first, what, callers=CALLERS):
    """Every stack is the whole chain from FIRST, or a cut one whose frames before the marker
    are the whole chain's (never a wrong frame); the last is whole; most are (the first
    ones, before the tables of the program's files are loaded, are cut)."""
    whole = first + callers
    check(stacks, f"{what}: no stack")
    for s in stacks:
        sh = shape(s)
        if sh != whole:
            check(sh[-1].startswith("CUT:") and whole[:len(sh) - 1] == sh[:-1],
                  f"{what}: a stack neither whole nor cut at a marker: {sh}")
    eq(shape(stacks[-1]), whole, f"{what}: the last stack")
    n = sum(shape(s) == whole for s in stacks)
    check(n >= len(stacks) // 2, f"{what}: only {n} of {len(stacks)} stacks whole")


def test_stacks_on_events_are_whole_through_code_without_frame_pointers():
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"{CUDART} is not installed")
    p, out = record([PROG, "calls", CUDART, str(ROUNDS)], "-t", "cuda,osrt,sched",
                    "--stacks=cuda:0,osrt:0,sched:0", "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    recs = dump(out)
    pid = next(r["pid"] for r in recs if r.get("name") == "getppid")
    calls = [r["stack"] for r in recs if r.get("name") == "cudaStreamQuery" and "stack" in r]
    ppids = [r["stack"] for r in recs
             if r.get("name") == "getppid" and r.get("pid") == pid and "stack" in r]
    eq(len(calls), ROUNDS, "cudaStreamQuery calls with a stack")
    eq(len(ppids), ROUNDS, "getppid calls with a stack")
    # The CUDA call's stack begins at its caller; the system call's in libc's wrapper.
    check_stacks(calls, [], "cudaStreamQuery")
    check_stacks(ppids, ["LIBC"], "getppid")
    # Off-CPU: main's usleep between the rounds, blocked in libc's clock_nanosleep.
    sleeps = [r["stack"] for r in recs if r.get("kind") == "offcpu" and r.get("pid") == pid
              and "stack" in r and any(f.get("func") == "usleep" for f in r["stack"])]
    check(len(sleeps) >= ROUNDS // 2, f"{len(sleeps)} off-CPU stacks in usleep")
    check_stacks(sleeps, ["LIBC"], "usleep", callers=["main", "LIBC", "_start"])


def spoiled_copy():
    """A copy of the workload whose .eh_frame entry for compare_cb starts with an opcode no
    DWARF has (0x1b): the rest of the file's unwind information is sound."""
    sections = run(["readelf", "-SW", PROG], check=True).stdout
    m = re.search(r"\] \.eh_frame\s+PROGBITS\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+)", sections)
    addr, off, size = (int(x, 16) for x in m.groups())
    cb = int(re.search(r"([0-9a-f]+) t compare_cb", run(["nm", PROG], check=True).stdout)
             .group(1), 16)
    data = bytearray(open(PROG, "rb").read())
    p = off
    while p < off + size:
        length, cie = struct.unpack_from("<II", data, p)
        if not length:
            break
        if cie:
            begin = addr + p + 8 - off + struct.unpack_from("<i", data, p + 8)[0]
            if begin <= cb < begin + struct.unpack_from("<I", data, p + 12)[0]:
                eq(data[p + 16], 0, "compare_cb's FDE: no augmentation data")
                data[p + 17] = 0x1b  # its first instruction
                break
        p += 4 + length
    else:
        raise AssertionError("no FDE covers compare_cb")
    out = os.path.join(tmpdir(), "unwind_qsort_spoiled")
    with open(out, "wb") as f:
        f.write(data)
    os.chmod(out, 0o755)
    return out


def test_spoiled_unwind_information_stops_the_stack_with_its_reason():
    """A bad table is never followed: the stacks through compare_cb, whose FDE is malformed,
    stop there saying so; the frames before it are right."""
    need_root()
    prog = spoiled_copy()
    out = os.path.join(tmpdir(), "t.bst")
    # Its build id is the workload's: the tables' store (unwind_store.h) would give it the
    # workload's good table, as it gives every copy of a file that claims one.
    p = run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--stacks=osrt:0",
             "--osrt-threshold", "0", "--", prog, "calls", CUDART, str(ROUNDS)],
            env=dict(os.environ, BPFSIGHT_NO_CACHE="1"))
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    ppids = [shape(r["stack"]) for r in dump(out) if r.get("name") == "getppid" and "stack" in r]
    check(len(ppids) >= ROUNDS // 2, f"{len(ppids)} getppid stacks")
    eq(ppids[-1], ["LIBC", "compare_cb", "CUT:[unwind stopped in unwind_qsort_spoiled: "
                   "malformed unwind information]"], "the last getppid stack")
    for s in ppids:
        eq(s[:2], ["LIBC", "compare_cb"], "the frames before the stop")


@functools.lru_cache(maxsize=None)
def spin_trace():
    """One recording of cpu samples of the spinning comparator (shared: the cpu samples' test,
    perf's and info's), read at once: its folder goes with the test that made it."""
    p, out = record([PROG, "spin", "1500"], "-t", "cpu", "--sample-rate", "499")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    return {"recs": dump(out), "cpu_sum": stats(out, "cpu_sum")["cpu_sum"], "stderr": p.stderr,
            "info": run([BPFSIGHT, "info", out], check=True).stdout, "info_json": info(out)}


def test_cpu_samples_are_whole_through_code_without_frame_pointers():
    need_root()
    recs = spin_trace()["recs"]
    spins = [r["stack"] for r in recs
             if r.get("name") == "user" and any(f.get("func") == "spin_here"
                                                for f in r.get("stack", []))]
    # 1.5 s of the spinner's CPU time at 499 Hz: ~700 however loaded the machine; a slower
    # one (QEMU's TCG: 40-80) takes fewer.
    check(len(spins) >= 200 // SLOWDOWN, f"only {len(spins)} samples in spin_here")
    # From spin_here up (clock_gettime's vDSO and libc frames above it when it was there).
    cut = [s[[f.get("func") for f in s].index("spin_here"):] for s in spins]
    check_stacks(cut, ["spin_here"], "cpu samples")
    # cpu_sum: main's total is every sample of the spin (the chain reaches it).
    rows = {r["func"]: r for r in spin_trace()["cpu_sum"]
            if r["file"] == os.path.realpath(PROG)}
    check(rows["main"]["total_samples"] >= rows["spin_here"]["total_samples"] * 9 // 10,
          f"main's total {rows['main']['total_samples']} against spin_here's "
          f"{rows['spin_here']['total_samples']}")


UNWIND_LINE = re.compile(r"unwind tables: +((\d+) files?, ([\d.]+) MiB of rows of the (\d+) MiB "
                         r"reserved, (\d+) built in (\d+) ms, (\d+) read from the store in "
                         r"(\d+) ms; (\d+) files? without one)$", re.M)


def test_info_says_the_unwind_tables_memory_as_the_end_of_run_line():
    """The tables' memory is in the file: `info` and `info --json` say what the recorder's
    end-of-run line said; a recording that took no stacks says nothing of them."""
    need_root()
    spin = spin_trace()
    said = UNWIND_LINE.search(spin["stderr"])
    check(said, f"no end-of-run unwind line: {spin['stderr'][-600:]}")
    shown = UNWIND_LINE.search(spin["info"])
    check(shown, f"no unwind line in info: {spin['info'][-600:]}")
    eq(shown.group(1), said.group(1), "info's unwind line")
    u = spin["info_json"]["unwind_tables"]
    files, mib, reserved, built, ms, read, read_ms, without = said.groups()[1:]
    eq(u["files"], int(files), "files with a table")
    eq(u["files_without"], int(without), "files without one")
    eq(f"{u['bytes'] / 1048576:.1f}", mib, "MiB of rows")
    eq(f"{u['bytes_reserved'] / 1048576:.0f}", reserved, "MiB reserved")
    eq(u["build_ns"] // 1000000, int(ms), "build time")
    eq((u["built"], u["from_store"]), (int(built), int(read)), "tables built, read")
    eq(u["store_read_ns"] // 1000000, int(read_ms), "read time")
    # Each row is 12 bytes (bpf/unwind_table.h).
    check(u["files"] >= 1, f"{u['files']} files with a table")
    check(0 < u["bytes"] <= u["bytes_reserved"], f"{u['bytes']} bytes of {u['bytes_reserved']}")
    eq(u["bytes"], u["rows"] * 12, "bytes of rows")
    check(u["rows"] <= u["rows_reserved"], f"{u['rows']} rows of {u['rows_reserved']}")
    eq(sum(r.get("kind") == "unwind_usage" for r in spin["recs"]), 0, "unwind_usage in dump")
    # No stacks: no table, no line, no record.
    p, plain = record(["/bin/true"], "-t", "osrt")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    check(not UNWIND_LINE.search(p.stderr), f"an unwind line without stacks: {p.stderr}")
    check("unwind_tables" not in info(plain), "info --json's unwind_tables without stacks")
    check("unwind tables" not in run([BPFSIGHT, "info", plain], check=True).stdout,
          "info's unwind line without stacks")


def test_the_recorder_maps_the_rows_its_tables_fill_not_the_cap():
    """The rows' map is the cap on the tables' memory (128 MiB), not what the recorder holds:
    it maps the pages its tables fill as they fill them, so a recording of /bin/true, its
    tables under a MiB, peaks far under the cap in the recorder's own memory (it mapped all
    128 MiB at the start, its peak RSS ~180 MiB)."""
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.Popen([BPFSIGHT, "record", "--force", "-o", out, "--", "/bin/true"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)  # this recorder's own peak (and /bin/true's)
    p.returncode = os.waitstatus_to_exitcode(status)
    eq(p.returncode, 0, f"record: {err[-600:]}")
    said = UNWIND_LINE.search(err)
    check(said, f"no end-of-run unwind line: {err[-600:]}")
    files, mib, reserved = int(said.group(2)), float(said.group(3)), int(said.group(4))
    check(files >= 1 and mib < 8 and reserved >= 128, f"tables: {said.group(1)}")
    check(usage.ru_maxrss < reserved * 1024, f"peak RSS {usage.ru_maxrss} KiB with "
          f"{mib} MiB of rows of the {reserved} MiB reserved")


def test_unwind_option_chooses_the_walk_and_the_tables_memory():
    """--unwind=fp walks by frame pointers alone: the spin's samples stop in the program's
    code without them (none reaches main) and no table is built or reserved.
    --unwind=tables:4M reserves 4 MiB: the tables fit, the samples are whole. tables:64K
    (5,460 rows): libc's 28 k rows do not fit, said once, counted among the files without
    one, and the samples stop in libc's qsort as without a table. A bad value is refused."""
    need_root()

    def spin(how):
        p, out = record([PROG, "spin", "800"], "-t", "cpu", "--sample-rate", "499",
                        f"--unwind={how}")
        eq(p.returncode, 0, f"--unwind={how}: {p.stderr[-600:]}")
        # Every sample of the program in user space (by frame pointers alone, those in
        # clock_gettime's vDSO name nothing below it), not those of the launched child
        # before its exec (bpfsight's own code, its own main: a loaded machine takes some).
        stacks = [[f.get("func") for f in r["stack"]] for r in dump(out)
                  if r.get("name") == "user" and r.get("stack") and
                  not any(os.path.basename(f.get("file", "")) == "bpfsight"
                          for f in r["stack"])]
        # ~400 on a quiet machine; the spin is wall time, so a loaded one takes fewer.
        check(len(stacks) >= 20, f"--unwind={how}: {len(stacks)} samples")
        return p.stderr, stacks, info(out).get("unwind_tables")

    err, stacks, u = spin("fp")
    check(not any("main" in s for s in stacks), f"fp: a stack reached main: {stacks[0]}")
    check(u is None and not UNWIND_LINE.search(err), f"fp: tables: {u} {err[-300:]}")
    err, stacks, u = spin("tables:4M")
    spins = [s for s in stacks if "spin_here" in s]
    check(len(spins) >= 10 and all("main" in s for s in spins[len(spins) // 2:]),
          f"tables:4M: {len(spins)} spins, cut: {[s for s in spins if 'main' not in s][-1:]}")
    eq(u["bytes_reserved"], 4194288, "4 MiB reserved (whole pairs of 12-byte rows)")
    eq(u["files_without"], 0, "files without a table")
    err, stacks, u = spin("tables:64K")
    said = re.findall(r"warning: unwind tables: (\S+)'s (\d+) rows do not fit in the \d+ left "
                      r"of 5460 \(64.0 KiB\): its stacks stop there", err)
    # Said once, for the first file that did not fit: libc's, or under load the launched
    # child's own code before its exec (bpfsight's, when a sample lands there).
    eq(len(said), 1, f"the file that does not fit, said once: {err[-600:]}")
    check(os.path.basename(said[0][0]) in ("libc.so.6", "bpfsight") and int(said[0][1]) > 5460,
          f"the file said: {said}")
    check(u["files_without"] >= 1, f"libc among the files without a table: {u}")
    # The samples in qsort's sort stop there. One that lands in a libc function that has not
    # touched the frame pointer (free, called by qsort) walks on by it to its caller's callers,
    # as it would without a table: it may reach main.
    # libc's own frames: the workload's unwind_qsort (its name has "qsort") reaches main
    # rightly from a sample in its own code, before or after its call (seen under load)
    through = [s for s in stacks if any(str(f) in ("qsort", "qsort_r", "__qsort_r") or
                                        str(f).startswith("msort_with_tmp") for f in s)]
    check(through and not any("main" in s for s in through),
          f"tables:64K: the stacks in qsort stop in libc: {through[-1:]}")
    for bad in ("tables:1K", "tables:2G", "dwarf", "tables:"):
        p, _ = record(["/bin/true"], "-t", "cpu", f"--unwind={bad}")
        eq(p.returncode, 1, f"--unwind={bad} refused")
        check("bad --unwind" in p.stderr, p.stderr)


# gdb's physical frames (not those of functions inlined into them, nor its tail-call guesses)
# of every thread, by pc, with the module mapped there.
GDB_SCRIPT = r"""
python
import gdb
for t in gdb.selected_inferior().threads():
    t.switch()
    f, pcs = gdb.newest_frame(), []
    while f is not None:
        if f.type() in (gdb.NORMAL_FRAME, gdb.SIGTRAMP_FRAME):
            pcs.append("%x:%s" % (f.pc(), f.name()))
        f = f.older()
    print("THREAD %d %s" % (t.ptid[1], " ".join(pcs)))
end
"""


def first_vaddr(path):
    """The ELF address of PATH's offset 0 (its first PT_LOAD's: 0 but in executables that are
    not position-independent, such as Debian's python3.11)."""
    with open(path, "rb") as f:
        eh = f.read(64)
        if eh[:4] != b"\x7fELF":
            return 0
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    for i in range(phnum):
        ptype, _, offset, vaddr = struct.unpack_from("<IIQQ", ph, i * phentsize)
        if ptype == 1 and offset == 0:  # PT_LOAD
            return vaddr
    return 0


def file_maps(pid):
    """PID's file mappings [(start, end, path)] and each file's load bias (runtime address -
    ELF address), from where its offset 0 is mapped."""
    maps, bias = [], {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].strip()
            maps.append((start, end, path))
            if int(parts[2], 16) == 0 and path not in bias:
                bias[path] = start - first_vaddr(path)
    return maps, bias


def gdb_frames(pid, skip=(), timeout=120):
    """{tid: [(file, ELF address)]} of PID's threads as gdb unwinds them now, but SKIP's
    functions."""
    if not shutil.which("gdb"):
        raise Skip("gdb is not installed (apt-get install gdb)")
    maps, bias = file_maps(pid)
    script = os.path.join(tmpdir(), "frames.gdb")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    p = run(["gdb", "-batch", "-nx", "-p", str(pid), "-ex", "set debuginfod enabled off", "-ex", "set backtrace past-main on",
             "-ex", "set backtrace past-entry on",
             "-x", script], timeout=timeout)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"THREAD (\d+) ?(.*)$", line)
        if not m:
            continue
        frames = []
        for k, (pc, name) in enumerate(x.split(":", 1) for x in m.group(2).split()):
            pc = int(pc, 16)
            at = pc - (k > 0)  # a return address's call is the byte before
            path = next((m[2] for m in maps if m[0] <= at < m[1]), None)
            if name not in skip:
                frames.append((path, pc - bias[path]) if path in bias else ("?", pc))
        out[int(m.group(1))] = frames
    check(out, f"gdb read no thread: {p.stdout[-400:]} {p.stderr[-400:]}")
    return out


def ours(pid):
    """{tid: [(file, ELF address)]}: `bpfsight stacks -p PID --json`'s native frames (not the
    Python ones, which stand for the eval loop's frames); a marker fails the comparison as
    ("CUT", its text)."""
    p = run([BPFSIGHT, "stacks", "-p", str(pid), "--json", "--native", "--no-subprocesses"],
            timeout=120)
    eq(p.returncode, 0, f"bpfsight stacks: {p.stderr[-600:]}")
    d = json.loads(p.stdout.splitlines()[0])
    out = {}
    for t in d["threads"]:
        check(not t.get("error"), f"thread {t['tid']}: {t.get('error')}")
        out[t["tid"]] = [("CUT", f["func"]) if f["func"].startswith("[unwind")
                         else (f["file"], int(f["addr"], 16))
                         for f in t["stack"] if "addr" in f]
    return out


def blocked(pid):
    """Every thread of PID asleep in a system call (not running: /proc's syscall file)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            if not f.read().split()[0].isdigit():
                return False
    return True


def compare_with_gdb(pid, skip=()):
    """Ours first, gdb right after (it stops the process; the threads sleep: their stacks do
    not move): every thread's frames equal, SKIP's functions left out of gdb's."""
    mine = ours(pid)
    theirs = gdb_frames(pid, skip)
    eq(sorted(mine), sorted(theirs), "threads")
    for tid in theirs:
        eq(mine[tid], theirs[tid], f"thread {tid}'s frames (file, ELF address)")
    return mine


def test_bpfsight_stacks_equals_gdb_on_sleeping_threads():
    need_root()
    p = spawn([PROG, "sleep"])
    line = p.stdout.readline()
    check(line.startswith("ready"), f"workload: {line!r}")
    wait_for(lambda: blocked(p.pid), 10, "every thread asleep in a system call")
    mine = compare_with_gdb(p.pid)
    names = [[os.path.basename(f) for f, _ in fr] for fr in mine.values()]
    check(any(n.count("unwind_qsort") >= 5 and "libc.so.6" in n[1:] for n in names),
          f"the reader's stack goes through qsort to level_a: {names}")
    p.kill()


def test_bpfsight_stacks_equals_gdb_on_an_idle_torch_job():
    """Debian's torch: libtorch, libgomp, libpthreadpool, libc and the stripped python3.11,
    none built with frame pointers. gdb's eval-loop frames are what our Python frames stand
    for: left out of its list."""
    need_root()
    if not pymods.has("/usr/bin/python3", "torch"):
        raise Skip("Debian's torch is not installed for /usr/bin/python3")
    p = spawn(["/usr/bin/python3", TORCH_IDLE], env=dict(os.environ, OMP_NUM_THREADS="2"))
    line = p.stdout.readline()
    check(line.startswith("ready"), f"workload: {line!r}")
    wait_for(lambda: blocked(p.pid), 20, "every thread asleep in a system call")
    mine = compare_with_gdb(p.pid, skip=("_PyEval_EvalFrameDefault",))
    files = {os.path.basename(f) for fr in mine.values() for f, _ in fr}
    check({"libgomp.so.1.0.0", "libc.so.6", "python3.11"} <= files,
          f"the threads' stacks go through libgomp, libc and python: {files}")
    p.kill()


def top_chain(stacks):
    """The most frequent chain of return addresses [(module, ELF address of the call's last
    byte)] among STACKS (each innermost first, its sampled instruction dropped: where in the
    spinning loop a sample lands varies, its callers do not)."""
    return collections.Counter(tuple(s[1:]) for s in stacks).most_common(1)[0]


def test_cpu_samples_top_stack_equals_perfs_dwarf_unwind():
    """perf record --call-graph dwarf copies 8 KiB of stack per sample and unwinds it with
    .eh_frame afterwards (libdw); ours walks the tables in BPF: the same callers."""
    need_root()
    if not shutil.which("perf"):
        raise Skip("perf is not installed (apt-get install linux-perf)")
    data = os.path.join(tmpdir(), "perf.data")
    p = run(["perf", "record", "-q", "--call-graph", "dwarf", "-F", "499", "-o", data, "--",
             PROG, "spin", "1000"], timeout=120)
    eq(p.returncode, 0, f"perf record: {p.stderr[-600:]}")
    p = run(["perf", "script", "-i", data, "--no-inline", "-F", "ip,dso"], timeout=120)
    theirs, cur = [], []
    for line in p.stdout.splitlines() + [""]:
        m = re.match(r"\s+([0-9a-f]+) \((.*)\)$", line)
        if m and m.group(2) == "[kernel.kallsyms]":
            continue  # ours are user stacks (a sample in the kernel: where it entered it)
        if m:
            # perf gives return addresses less one: the call's last byte.
            cur.append((os.path.basename(m.group(2)), int(m.group(1), 16)))
        elif cur:
            theirs.append(cur)
            cur = []
    recs = spin_trace()["recs"]
    mine = [[(os.path.basename(f["file"]), int(f["addr"], 16) - (k > 0)) if "addr" in f
             else (f["func"], 0) for k, f in enumerate(r["stack"])]
            for r in recs if r.get("name") == "user" and "stack" in r]
    (chain, n), (perf_chain, perf_n) = top_chain(mine), top_chain(theirs)
    if len(perf_chain) < 3:
        # Seen on 6.1 under QEMU: perf's user-space DWARF unwind gave no caller at all.
        raise Skip(f"perf unwound no user-space callers here (its top chain: {perf_chain})")
    check(len(chain) >= 11, f"our top chain is whole up to _start: {chain}")
    eq(list(chain), list(perf_chain), f"the top stack's callers, ours ({n} of {len(mine)} "
       f"samples) and perf's ({perf_n} of {len(theirs)})")
