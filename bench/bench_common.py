# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What every section of the benchmark (bench/run_bench.py) shares: statistics and number
formatting, the machine description, goals and their regression flags, running commands,
and writing one section of bench/RESULTS.md between its <!-- NAME:begin/end --> markers.
Python standard library only."""

import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TITLE = ("# bpfsight benchmark results\n\n"
         "Every figure below comes with the command that measured it and the machine it ran "
         "on. `make bench` (full, < 10 min on 2 cores) rewrites the sections it ran; `make "
         "bench BENCH_ARGS=--quick` (< 1 min) only prints, unless given `--results FILE`.\n")


class BenchError(Exception):
    """The benchmark itself could not run (not a figure past its goal)."""


def die(msg):
    print(f"run_bench: {msg}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------- statistics, formatting

def spread(values):
    """(median, min, max) of the values that are not None, or (None, None, None)."""
    values = [v for v in values if v is not None]
    if not values:
        return (None, None, None)
    return (statistics.median(values), min(values), max(values))


def median(values):
    return spread(values)[0]


def fmt_num(v, unit="", digits=0):
    if v is None:
        return "n/a"
    if unit == "/s" or (abs(v) >= 10000 and digits == 0):
        if abs(v) >= 999_500:
            return f"{v / 1e6:.2f} M{unit}"
        if abs(v) >= 1e3:
            return f"{v / 1e3:.0f} k{unit}"
    return f"{v:,.{digits}f}{unit}"


def fmt_spread(values, unit="", digits=0):
    """'median (min .. max)' of the runs, or 'v (all N runs)' when they agree."""
    med, lo, hi = spread(values)
    if med is None:
        return "n/a"
    n = len([v for v in values if v is not None])
    if lo == hi:
        return f"{fmt_num(med, unit, digits)} (all {n} runs)"
    return f"{fmt_num(med, unit, digits)} ({fmt_num(lo, unit, digits)} .. " \
           f"{fmt_num(hi, unit, digits)})"


def fmt_ns(v):
    """A duration in ns, in the unit that reads best."""
    if v is None:
        return "n/a"
    if abs(v) >= 10_000:
        return f"{v / 1000:,.1f} us"
    return f"{v:,.0f} ns"


def fmt_ns_spread(values):
    med, lo, hi = spread(values)
    if med is None:
        return "n/a"
    return f"{fmt_ns(med)} ({fmt_ns(lo)} .. {fmt_ns(hi)})"


def fmt_ratio_spread(values, digits=2):
    med, lo, hi = spread(values)
    if med is None:
        return "n/a"
    return f"{med:.{digits}f}x ({lo:.{digits}f} .. {hi:.{digits}f})"


def flag(ok):
    """A goal's verdict; a figure past its goal is a regression flag, never a failure."""
    return "met" if ok else "**REGRESSION**"


# ---------------------------------------------------------------- goals

class Goals:
    """Every figure that has a goal, and whether this run met it. A figure past its goal is
    a regression flag: printed at the end and marked in RESULTS.md, never fatal."""

    def __init__(self):
        self.items = []

    def check(self, section, figure, value, goal, met):
        """Record one goal; returns the cell text for a results table."""
        self.items.append({"section": section, "figure": figure, "value": value,
                           "goal": goal, "met": bool(met)})
        return f"{goal}: {'met' if met else '**REGRESSION**'}"

    def skipped(self, section, figure, why):
        self.items.append({"section": section, "figure": figure, "value": None,
                           "goal": why, "met": None})

    def regressions(self):
        return [g for g in self.items if g["met"] is False]


# ---------------------------------------------------------------- the machine

def machine():
    model = "unknown"
    virt = "no"
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        if m:
            model = m.group(1).strip()
        if re.search(r"^flags\s*:.*\bhypervisor\b", text, re.M):
            virt = "yes"
    except OSError:
        pass
    try:
        version = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True).stdout.strip() or "unknown"
    except OSError:
        version = "unknown"
    return {
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "cpu": model,
        "virt": virt,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": version,
    }


def machine_line(m):
    return (f"Machine: `uname -r` {m['kernel']}, `nproc` {m['nproc']}, CPU {m['cpu']}, "
            f"hypervisor: {m['virt']}.")


def block_head(ctx, name, title):
    """A section block's first lines: its marker, title, the run that measured it, the
    machine."""
    return [begin(name), f"## {title}", "", measured_line(ctx.machine, ctx.invocation, ctx.quick),
            "", machine_line(ctx.machine), ""]


def block_end(ctx, name, out, meaning):
    """A section block from its lines OUT: then whether other tracers disturbed its runs,
    what its figures mean, its end marker."""
    return "\n".join(out + [ctx.quiet.sentence(), "", "What this means: " + meaning,
                            end(name)]) + "\n"


def skipped_block(ctx, name, out, figure, why):
    """A section block that measured nothing (OUT: its head), FIGURE's goal marked skipped
    for WHY."""
    ctx.goals.skipped(name, figure, why)
    return block_end(ctx, name, out + [f"Not measured: {why}.", ""], "nothing was measured.")


def measured_line(m, invocation, quick):
    """INVOCATION is markdown (the command in backticks)."""
    return (f"Measured {m['date']} by {invocation}, bpfsight {m['version']}."
            + (" **Quick run: indicative only.**" if quick else ""))


# ---------------------------------------------------------------- running things

class Runner:
    """Paths of the binaries under test, a scratch directory, and command helpers."""

    def __init__(self, build):
        self.build_arg = build
        self.build = build if os.path.isabs(build) else os.path.join(REPO, build)
        self.bpfsight = os.path.join(self.build, "bpfsight")
        self.tmp = tempfile.mkdtemp(prefix="bpfsight-bench-")
        self.nfile = 0

    def bench_bin(self, name):
        return os.path.join(self.build, "bench", name)

    def tmpfile(self, suffix):
        self.nfile += 1
        return os.path.join(self.tmp, f"f{self.nfile}{suffix}")

    def rel(self, path):
        r = os.path.relpath(path, REPO)
        return path if r.startswith("..") else r

    def show_cmd(self, cmd, placeholders=None):
        """The command as RESULTS.md shows it: repo-relative paths, temporary files named
        by placeholders (T.bst, OUT.json, ...)."""
        out = []
        for a in cmd:
            for tmp, name in (placeholders or {}).items():
                a = a.replace(tmp, name)
            if a.startswith(self.tmp):
                a = "T" + os.path.splitext(a)[1]
            a = a.replace(REPO + os.sep, "")
            out.append(a)
        return shlex.join(out)

    def run(self, cmd, timeout=300, check=True, **kw):
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=timeout, **kw)
        except subprocess.TimeoutExpired as e:
            raise BenchError(f"{shlex.join(cmd)} ran past {timeout} s") from e
        if check and r.returncode:
            raise BenchError(f"{shlex.join(cmd)} exited {r.returncode}:\n"
                             f"{(r.stderr or r.stdout).strip()[-2000:]}")
        return r

    def json_of(self, cmd, **kw):
        r = self.run(cmd, **kw)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return last_json(r.stdout, cmd)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class LineServer:
    """A process spoken to a line at a time: a command on its stdin, a JSON line back (a
    benchmark's long-lived target: bench_torch.py's loop, bench_cost.py's step proxy)."""

    def __init__(self, cmd, env=None):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)

    def ask(self, cmd):
        """CMD's answer (None: the line the process says first)."""
        if cmd:
            self.p.stdin.write(cmd + "\n")
            self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise BenchError(f"{shlex.join(self.cmd)} ended (exit {self.p.wait()})")
        return json.loads(line)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(30)


def last_json(text, cmd=None):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise BenchError(f"no JSON from {shlex.join(cmd) if cmd else 'a command'}:\n{text[-1000:]}")


def read_json(path, cmd=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"no result in {path} from "
                         f"{shlex.join(cmd) if cmd else 'a command'}: {e}") from e


# ---------------------------------------------------------------- other tracers

_BPF_NR = {"x86_64": 321, "aarch64": 280}.get(platform.machine())
BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD, BPF_LINK_GET_FD_BY_ID = 13, 15, 30
LINK_TYPE_UPROBE_MULTI = 12


def _bpf(cmd, attr):
    """bpf(2) with ATTR (a ctypes object): its result, negative on failure. bpftool would
    do for a snapshot; these calls are for what it cannot: holding a program's fd, reading
    a link's file."""
    import ctypes
    if _BPF_NR is None:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(_BPF_NR, cmd, ctypes.byref(attr), ctypes.sizeof(attr))


def _obj_info(fd, info):
    """BPF_OBJ_GET_INFO_BY_FD into INFO (a zeroed ctypes array, pointers set): 0 or -1."""
    import ctypes
    attr = (ctypes.c_uint32 * 32)()
    attr[0] = fd
    attr[1] = ctypes.sizeof(info)
    ptr = ctypes.cast(info, ctypes.c_void_p).value
    attr[2], attr[3] = ptr & 0xffffffff, ptr >> 32
    return 0 if _bpf(BPF_OBJ_GET_INFO_BY_FD, attr) >= 0 else -1


def _fd_by_id(cmd, obj_id):
    import ctypes
    attr = (ctypes.c_uint32 * 32)()
    attr[0] = obj_id
    return _bpf(cmd, attr)


def uprobe_multi_path(link_id):
    """The file a uprobe_multi link probes (bpf_link_info.uprobe_multi.path, Linux 6.8+),
    read with the raw bpf(2) commands (bpftool 7.1 does not decode these links); None when
    the link is gone or the kernel does not say."""
    import ctypes
    fd = _fd_by_id(BPF_LINK_GET_FD_BY_ID, link_id)
    if fd < 0:
        return None
    try:
        path = ctypes.create_string_buffer(4096)
        info = (ctypes.c_uint64 * 32)()  # struct bpf_link_info, zeroed
        info[2] = ctypes.cast(path, ctypes.c_void_p).value   # uprobe_multi.path (offset 16)
        info[6] = 4096                                        # uprobe_multi.path_size (48)
        if _obj_info(fd, info):
            return None
        return path.value.decode(errors="replace") or None
    finally:
        os.close(fd)


def link_exists(link_id):
    """Whether BPF link LINK_ID still exists (its owner may have exited: bpfsight-detach
    holds a recorder's links until the kernel let their probes go)."""
    fd = _fd_by_id(BPF_LINK_GET_FD_BY_ID, link_id)
    if fd < 0:
        return False
    os.close(fd)
    return True


def prog_ids(pid, field="prog_id"):
    """The ids of the BPF programs (FIELD "map_id": maps) process PID holds (its fds'
    fdinfo), each once (an object can have several fds)."""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                m = re.search(rf"^{field}:\s+(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return sorted(ids)


def links_gone(ids, timeout=60):
    """Wait until none of the BPF links IDS exists: a recorder hands its links to
    bpfsight-detach, which drops them once the kernel let the probes go; the next
    configuration must start without them."""
    end = time.monotonic() + timeout
    while True:
        left = sum(link_exists(i) for i in ids)
        if not left:
            return
        if time.monotonic() > end:
            raise BenchError(f"{left} of the recorder's BPF links still there {timeout} s after "
                             "it exited")
        time.sleep(0.05)


class ProgStats:
    """The kernel's BPF stats (run_cnt, run_time_ns: kernel.bpf_stats_enabled) of the
    programs named NAMES (None: every one) that process PID holds, still readable after PID
    exits: this holds an fd of each. A recorder's programs go when it exits, and it exits as
    soon as its target does: a snapshot by id after the target would race it."""

    def __init__(self, pid, names):
        self.fds = []
        for i in prog_ids(pid):
            fd = _fd_by_id(BPF_PROG_GET_FD_BY_ID, i)
            if fd < 0:
                continue
            if names is None or self._info(fd)[0] in names:
                self.fds.append(fd)
            else:
                os.close(fd)

    @staticmethod
    def _info(fd):
        """(name, run_cnt, run_time_ns) of program FD (struct bpf_prog_info: name at 64,
        run_time_ns at 192, run_cnt at 200)."""
        import ctypes
        info = (ctypes.c_uint64 * 29)()  # 232 bytes, zeroed: no arrays asked for
        if _obj_info(fd, info):
            return (None, 0, 0)
        name = bytes(info)[64:80].split(b"\0")[0].decode(errors="replace")
        return (name, info[25], info[24])

    def read(self):
        """(run_cnt, run_time_ns), summed over the programs."""
        cnt = ns = 0
        for fd in self.fds:
            _, c, n = self._info(fd)
            cnt, ns = cnt + c, ns + n
        return (cnt, ns)

    def per_name(self):
        """{name: (run_cnt, run_time_ns)}, summed over the programs of each name."""
        out = {}
        for fd in self.fds:
            name, c, n = self._info(fd)
            r, t = out.get(name, (0, 0))
            out[name] = (r + c, t + n)
        return out

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def recorded(cmd, progs, timeout=None, env=None):
    """Run recorder command CMD to its end (TIMEOUT s at most): (its stdout, its stderr, its exit status, {name:
    (runs, ns)} of its BPF programs named in PROGS over the run, empty without
    kernel.bpf_stats_enabled's figures). The programs are read once the probes are attached
    (the recorder's "Ctrl-C" line), through fds of their own: they go when it exits."""
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    head = ""
    while "Ctrl-C" not in head:
        line = rec.stderr.readline()
        if not line:
            break
        head += line
    stats = ProgStats(rec.pid, progs)
    before = {fd: stats._info(fd) for fd in stats.fds}
    stdout, stderr = rec.communicate(timeout=timeout)
    per = {}
    for fd, (name, c0, t0) in before.items():
        _, c1, t1 = stats._info(fd)
        r, t = per.get(name, (0, 0))
        per[name] = (r + c1 - c0, t + t1 - t0)
    stats.close()
    return stdout, head + stderr, rec.returncode, per


@contextlib.contextmanager
def bpf_stats():
    """kernel.bpf_stats_enabled on meanwhile (each program run then reads the clock twice),
    put back as it was; yields whether it could be turned on."""
    knob = "/proc/sys/kernel/bpf_stats_enabled"
    try:
        with open(knob) as f:
            old = f.read().strip()
        with open(knob, "w") as f:
            f.write("1")
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with open(knob, "w") as f:
            f.write(old)


def cpu_ns(pid):
    """CPU time process PID has used so far, in ns (its threads' schedstat, ns precision,
    where /proc/PID/stat counts clock ticks); None once it is gone."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total

class Quiet:
    """Other tracers on this machine skew a run: a program anyone attaches to sys_enter puts
    every process's syscalls on the slow path, and a uprobe on a library traps in every
    process that calls it. Before a run, wait (up to WAIT s) until no other process has a
    program on the attach points the run measures; after it, look again. A run that was
    not quiet on both sides is done once more, then kept and counted as disturbed."""

    TRACEPOINTS = {"syscalls": ("sys_enter", "sys_exit"),
                   "sched": ("sched_switch", "sched_waking")}

    def __init__(self, wait_s, budget_s):
        self.wait_s = wait_s
        self.budget_s = budget_s  # waiting in all; then runs go ahead at once
        self.runs = 0
        self.disturbed = []     # (label, what was attached)
        self.retried = 0
        self.waited_s = 0.0
        self.bpftool = shutil.which("bpftool")

    def foreign(self, kinds):
        """Attachments of other processes to KINDS ('syscalls', 'sched', or a file path
        for its uprobes), as short descriptions."""
        if not self.bpftool:
            return []
        r = subprocess.run([self.bpftool, "perf", "list", "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        try:
            entries = json.loads(r.stdout or "[]") if not r.returncode else None
        except ValueError:
            entries = None
        if entries is None:
            # Unknown is not quiet: the listing fails when a process goes away under it.
            return [f"`bpftool perf list` failed ({r.returncode}: "
                    f"{(r.stderr.strip().splitlines() or ['no message'])[-1]})"]
        files = {}
        for k in kinds:
            if k.startswith("/"):
                try:
                    st = os.stat(k)
                    files[(st.st_dev, st.st_ino)] = k
                except OSError:
                    pass
        out = []
        if files:
            # uprobe_multi links are not perf events: `bpftool perf list` misses them.
            r = subprocess.run([self.bpftool, "link", "show", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                links = json.loads(r.stdout or "[]")
            except ValueError:
                links = []
            for link in links:
                if link.get("type") not in (LINK_TYPE_UPROBE_MULTI, "uprobe_multi"):
                    continue
                path = uprobe_multi_path(link.get("id", 0))
                try:
                    st = os.stat(path) if path else None
                except OSError:
                    st = None
                if st is None or (st.st_dev, st.st_ino) in files:
                    out.append(f"uprobe_multi link {link.get('id')} on "
                               f"{os.path.basename(path) if path else 'an unknown file'}")
        for e in entries:
            tp = e.get("tracepoint") or ""
            for k in kinds:
                if any(t in tp for t in self.TRACEPOINTS.get(k, ())):
                    out.append(f"pid {e.get('pid')}: {e.get('fd_type')} {tp}")
            fn = e.get("filename")
            if fn and files and e.get("fd_type") in ("uprobe", "uretprobe"):
                try:
                    st = os.stat(fn)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in files:
                    out.append(f"pid {e.get('pid')}: {e.get('fd_type')} on "
                               f"{os.path.basename(files[(st.st_dev, st.st_ino)])}")
        return sorted(set(out))

    def wait(self, kinds):
        t0 = time.monotonic()
        while True:
            f = self.foreign(kinds)
            if not f or time.monotonic() - t0 >= self.wait_s or \
                    self.waited_s + time.monotonic() - t0 >= self.budget_s:
                self.waited_s += time.monotonic() - t0
                return f
            time.sleep(0.25)

    def run(self, kinds, fn, label, clean=None):
        """fn() on a quiet machine if it can be had; returns its result. CLEAN(result), if
        given, returns what disturbed the run that the result itself shows, or None."""
        self.runs += 1
        for attempt in range(2):
            before = self.wait(kinds)
            res = fn()
            after = self.foreign(kinds)
            seen = clean(res) if clean else None
            if seen:
                after = after + [seen]
            if not before and not after:
                return res
            if attempt == 0:
                self.retried += 1
                print(f"    (another tracer is attached: {', '.join(before or after)}; "
                      f"running {label} again)", flush=True)
        self.disturbed.append((label, sorted(set(before + after))))
        return res

    def sentence(self):
        if not self.bpftool:
            return "Other tracers were not checked for (no bpftool)."
        s = (f"Other tracers: before and after each of the {self.runs} runs, no other "
             f"process may have a BPF program on the attach points the run measures "
             f"(`bpftool perf list`; uprobe_multi links by the file they probe), and an "
             f"untraced run of a probe target must find no breakpoint on its probe sites; "
             f"the suite waited up to {self.wait_s:g} s for that ({self.waited_s:.0f} s in "
             f"all) and ran {self.retried} run(s) again.")
        if self.disturbed:
            s += (f" **{len(self.disturbed)} run(s) were disturbed anyway** (kept): "
                  + "; ".join(f"{label} ({', '.join(w)})" for label, w in
                              self.disturbed[:5]) + ".")
        else:
            s += " No figure of this section comes from a disturbed run."
        return s


# ---------------------------------------------------------------- RESULTS.md

def begin(name):
    return f"<!-- {name}:begin -->"


def end(name):
    return f"<!-- {name}:end -->"


def write_block(path, name, block, order=()):
    """Replace the NAME section of PATH, leaving every other one as it is. A new section
    goes before the first present one that ORDER puts after it (else at the end); the text
    before the first section is the file's title."""
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        old = TITLE
    first = old.find("<!-- ")
    if first >= 0:
        old = TITLE + "\n" + old[first:]
    pat = re.compile(re.escape(begin(name)) + r".*?" + re.escape(end(name)) + r"\n?", re.S)
    if pat.search(old):
        new = pat.sub(lambda _: block, old, count=1)
    else:
        later = list(order)[list(order).index(name) + 1:] if name in order else []
        at = min([old.find(begin(n)) for n in later if old.find(begin(n)) >= 0] or [-1])
        if at >= 0:
            new = old[:at] + block + "\n" + old[at:]
        else:
            new = old.rstrip("\n") + "\n\n" + block
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)
