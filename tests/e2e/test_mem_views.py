"""The mem family in the live and summary views: monitor's metrics as a real Prometheus scrapes
them, top's memory columns, the report's memory timelines and peaks, the flight recorder's
`--trigger mem:oom`, and nothing left in the job after `monitor -t mem` and `top -t mem`.

The workload (tests/workloads/mem_hold.py, Debian's torch on /usr/bin/python3) allocates CPU
tensors of known sizes when told, frees the last ones, and provokes a real CPU OOM (1 PiB:
alloc_cpu fails and calls c10::ProfiledCPUMemoryReporter::OutOfMemory): the bytes it holds
are known exactly. GPU tensors come from synthetic records (synth.py): no GPU here.
"""
import html
import os
import re
import signal
import threading

import pymods
import synth
from helpers import (BPFSIGHT, Skip, alone, check, dump, eq, info, need_root, run, spawn, tell,
                     tmpdir, wait_for)
from monitor_prom import PROMTOOL, Monitor, Prometheus, metric, start_prometheus

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 60

PY = "/usr/bin/python3"
HOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                    "mem_hold.py")
SIZE = 3_000_000  # bytes per tensor: 7 are 20.0M in top's units, 5 are 14.3M
MIB = 1 << 20



def rss_bound():
    """How far the RSS the mem family recorded may be from /proc's VmRSS, and no more: less
    than a --mem-step (1M) since the last record, and the kernel's percpu counters (6.2+),
    whose shared count BPF reads while /proc sums the CPUs' deltas too: up to a batch
    (max(32, 2 x CPUs) pages) per CPU for each of the 3 counters."""
    ncpu = os.cpu_count()
    return MIB + 3 * ncpu * max(32, 2 * ncpu) * 4096

def need_torch():
    if not pymods.has(PY, "torch"):
        raise Skip(f"no torch for {PY} (make deps installs python3-torch)")


class Hold:
    """mem_hold.py, told what to allocate and free."""

    def __init__(self):
        need_torch()
        self.p = spawn([PY, HOLD])
        self.pid = int(self.p.stdout.readline().split()[1])

    def do(self, cmd):
        tell(self.p, cmd)
        eq(self.p.stdout.readline().strip(), "ok", f"the workload did '{cmd}'")

    def vm_rss(self):
        with open(f"/proc/{self.pid}/status") as f:
            return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024

    def quit(self):
        tell(self.p, "q")
        eq(self.p.wait(30), 0, "the workload's exit status")


def test_monitor_mem_bytes_exact_in_prometheus():
    """Prometheus's answers for a process holding 7 tensors of 3,000,000 bytes: exactly their
    bytes, 7 allocations; 2 freed: 5 tensors' bytes, the peak still 7's, 2 frees; the OOM
    counter there from 0, then 1 after a real OOM; RSS as /proc says (to --mem-step). Its
    bytes go at its exit, its peak stays for the grace; promtool accepts the exposition."""
    need_root()
    start_prometheus()  # its first look for targets is 5 s away: while torch imports
    h, other = Hold(), Hold()
    mon = Monitor("-t", "mem", "-p", f"{h.pid},{other.pid}", "--exit-grace", "4s")
    prom = Prometheus(mon.target)

    def q(name, kind=None, pid=h.pid):
        return f'{name}{{pid="{pid}",device="cpu"' + (f',kind="{kind}"' if kind else "") + "}"

    def seen(query, want, what):
        try:
            wait_for(lambda: prom.value(query) == want, 30, f"{what}: {query} == {want}")
        except AssertionError as e:
            raise AssertionError(f"{e}: it is {prom.value(query)}; {mon.metrics()[-1500:]}")

    h.do(f"alloc 7 {SIZE}")
    other.do("alloc 1 1000000")
    seen(q("bpfsight_memory_bytes", "allocated"), 7 * SIZE, "7 tensors held")
    seen(q("bpfsight_memory_allocations_total"), 7, "allocations")
    seen(q("bpfsight_memory_ooms_total"), 0, "the OOM counter, from 0")
    seen(q("bpfsight_memory_bytes", "allocated", other.pid), 1000000, "the other process's")
    h.do("free 2")
    seen(q("bpfsight_memory_bytes", "allocated"), 5 * SIZE, "5 tensors held")
    seen(q("bpfsight_memory_frees_total"), 2, "frees")
    eq(prom.value(q("bpfsight_memory_peak_bytes", "allocated")), 7 * SIZE, "the peak: 7")
    eq(prom.value(q("bpfsight_memory_bytes", "reserved")), None, "no reserve on the CPU")
    h.do("oom")
    seen(q("bpfsight_memory_ooms_total"), 1, "the OOM")
    eq(prom.value(f'min_over_time({q("bpfsight_memory_ooms_total")}[5m])'), 0,
       "a 0 before the OOM: increase() sees it")
    # The alert docs/MEMORY.md and PRODUCTION.md show fires for it, and only for it.
    fired = prom.query("increase(bpfsight_memory_ooms_total[10m]) > 0")
    eq([r["metric"]["pid"] for r in fired], [str(h.pid)], "the documented OOM alert")
    eq(prom.query('bpfsight_memory_bytes{kind="reserved"} - ignoring(kind) '
                  'bpfsight_memory_bytes{kind="allocated"}'), [], "no cache on the CPU")
    # Resident memory: recorded each time it moved by --mem-step (1M); the process is idle.
    bound = rss_bound()
    rss, vm = prom.value(q("bpfsight_memory_bytes", "rss")), h.vm_rss()
    check(rss is not None and abs(rss - vm) < bound,
          f"RSS {rss} against /proc's VmRSS {vm} (bound {bound})")
    check(prom.value(q("bpfsight_memory_peak_bytes", "rss")) >= rss, "the RSS peak")
    text = mon.metrics()
    lint = run([PROMTOOL, "check", "metrics"], input=text)
    eq(lint.returncode, 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")

    h.quit()
    wait_for(lambda: f'bpfsight_memory_bytes{{pid="{h.pid}"' not in mon.metrics(), 20,
             "the exited process's bytes to go")
    text = mon.metrics()
    check(metric(text, f'bpfsight_memory_peak_bytes{{pid="{h.pid}",comm="python3",device="cpu",'
                 f'kind="allocated"}}') == 7 * SIZE, f"its peak stays for the grace: {text[-800:]}")
    check(metric(text, f'bpfsight_memory_bytes{{pid="{other.pid}",comm="python3",device="cpu",'
                 f'kind="allocated"}}') == 1000000, f"the other process's bytes stay: {text[-800:]}")
    wait_for(lambda: prom.value(q("bpfsight_memory_bytes", "allocated")) is None, 20,
             "Prometheus: the series stale")
    wait_for(lambda: f'pid="{h.pid}"' not in mon.metrics(), 30, "the grace's end: all of it")
    prom.stop()
    other.quit()
    eq(mon.p.wait(30), 0, f"monitor's exit once its targets exited ({mon.stderr[-400:]})")


class Lines:
    """A process's stdout lines as they come (a reader thread)."""

    def __init__(self, p):
        self.lines, self.lock = [], threading.Lock()
        self.t = threading.Thread(target=self._read, args=(p,), daemon=True)
        self.t.start()

    def _read(self, p):
        for line in p.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def frames(self):
        """The whole frames so far (each ended by an empty line), as lists of lines."""
        with self.lock:
            text = "\n".join(self.lines)
        return [f.splitlines() for f in text.split("\n\n")[:-1] if f.strip()]


def size_of(text):
    """top's 20.0M, 225M, 1.23G in bytes (units of 1024)."""
    m = re.fullmatch(r"([\d.]+)([BKMGT])", text)
    check(m, f"not a size: {text!r}")
    return float(m.group(1)) * 1024 ** "BKMGT".index(m.group(2))


def test_top_mem_columns():
    """top -b -t mem: the process's row holds its live CPU tensors (7 of 3,000,000 bytes:
    20.0M; 2 freed: 14.3M) and its RSS as /proc says it (to top's 3 digits and --mem-step),
    sorted by -s tensors; no GPU column without a GPU; top ends with its target."""
    need_root()
    h = Hold()
    t = spawn([BPFSIGHT, "top", "-b", "-t", "mem", "-p", str(h.pid), "-i", "300ms", "-s",
               "tensors"])
    wait_for(lambda: "Ctrl-C to stop" in t.stderr.readline(), 60, "top's start line")
    out = Lines(t)
    from test_top import rows_of

    def shows(tensors):
        for f in reversed(out.frames()[-3:]):
            r = rows_of(f).get((h.pid, False))
            if r and r.get("TENSORS") == tensors:
                shows.frame, shows.row = f, r
                return True
        return False

    h.do(f"alloc 7 {SIZE}")
    wait_for(lambda: shows("20.0M"), 30, "TENSORS 20.0M")
    check(shows.frame[0].startswith(f"top - pid {h.pid} - sort TENSORS"), shows.frame[0])
    heads = shows.frame[2].split()
    eq(heads, ["ID", "NAME", "CPU%", "RES", "TENSORS"], "the columns: no GPU's without a GPU")
    h.do("free 2")
    wait_for(lambda: shows("14.3M"), 30, "TENSORS 14.3M")
    res, vm = size_of(shows.row["RES"]), h.vm_rss()
    # RES shows 3 or 4 digits (0.5% at most off the bytes), beside what rss_bound says.
    check(abs(res - vm) <= vm * 0.005 + rss_bound(), f"RES {shows.row['RES']} against VmRSS {vm}")
    h.quit()
    eq(t.wait(30), 0, "top's exit once its target exited")
    check("bpfsight top: the targets exited: 0 events lost" in t.stderr.read(), "end line")


def gpu_trace():
    """Two processes on cuda:0 (and one also on cuda:1), the caching allocator's totals in
    every record, one exiting: (path, {what: bytes}) with what the views must show."""
    s = 1_000_000_000
    t = synth.Trace(families="proc,mem", start=s, end=5 * s)
    t.process(100, "train", ts=s)
    t.process(200, "eval", ts=s)
    t.mem_alloc(100, 100, s + 100_000_000, 0xa000, 4 * MIB, device=0, allocated=4 * MIB,
                reserved=8 * MIB)
    t.mem_alloc(100, 101, s + 200_000_000, 0xb000, MIB, device=1, allocated=MIB,
                reserved=2 * MIB)
    t.mem_alloc(200, 200, s + 300_000_000, 0xa000, 2 * MIB, device=0, allocated=2 * MIB,
                reserved=4 * MIB)
    t.mem_rss(100, 100, s + 300_000_000, 300 * MIB)
    t.mem_rss(200, 200, s + 300_000_000, 200 * MIB)
    t.mem_alloc(100, 100, s + 1_000_000_000, 0xa000, 4 * MIB, device=0, free=True,
                allocated=0, reserved=8 * MIB)
    t.mem_oom(200, 200, s + 1_500_000_000, 64 * MIB, device=0, allocated=2 * MIB,
              reserved=4 * MIB)
    t.exit(100, 100, s + 2_000_000_000, group_dead=1)
    return t.write(tmpdir()), {"cuda:0 allocated": 6 * MIB, "cuda:0 reserved": 12 * MIB}


def test_top_mem_replays_gpu_records():
    """top FILE of GPU records: each process's GPU-MEM and GPU-RSV are its allocator's totals,
    every device summed (train: 4M + 1M on two GPUs), as they stood in each frame."""
    path, _ = gpu_trace()
    p = run([BPFSIGHT, "top", path, "-i", "500ms"], check=True)
    frames = [f.splitlines() for f in p.stdout.split("\n\n") if f.strip()]
    from test_top import rows_of
    r = rows_of(frames[0])
    eq({k: (v["GPU-MEM"], v["GPU-RSV"], v["RES"]) for k, v in r.items() if not k[1]},
       {(100, False): ("5.00M", "10.0M", "300M"), (200, False): ("2.00M", "4.00M", "200M")},
       f"the first frame: {frames[0]}")
    r = rows_of(frames[1])  # cut at 2.5 s: train freed its cuda:0 block at 2.0 s
    eq((r[100, False]["GPU-MEM"], r[100, False]["GPU-RSV"]), ("1.00M", "10.0M"),
       f"train after its free: {frames[1]}")



def polyline_values(body, label, top):
    """The values of the line LABEL of a timeline (its points' heights on a scale 0..TOP), in
    drawing order: report_html.c's plot is 110 px high, its bottom at y = 120."""
    m = re.search(r'<polyline class="s\d" points="([^"]*)"><title>%s</title>' %
                  re.escape(html.escape(label)), body)
    check(m, f"a line {label!r}")
    ys = [float(p.split(",")[1]) for p in m.group(1).split()]
    return [(120 - y) / 110 * top for y in ys]


def test_report_mem_page_of_a_real_trace():
    """A recording of 7 tensors of 3,000,000 bytes, 2 freed, 3 of 1,000,000 more: the page's
    tensor memory timeline draws the CPU's line up to its peak, 21,000,000 bytes (the scale's
    top, 20.03 MiB), the RSS timeline the process, and the peaks table says both peaks, the
    tensors' at the 7th allocation's time; the browser renders it without a console message."""
    need_root()
    need_torch()
    from test_report import check_browser, check_page, chromium, figure, report
    chromium()
    out = os.path.join(tmpdir(), "mem.bst")
    # osrt too: its reports are the tables check_browser wants (mem has none of its own yet)
    p = run([BPFSIGHT, "record", "-t", "osrt,mem", "-o", out, "--", PY, HOLD],
            input=f"alloc 7 {SIZE}\nfree 2\nalloc 3 1000000\nq\n")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    pid = int(p.stdout.split()[1])
    path, page = report(out)
    check_page(out, page)
    cls, body = figure(page, "tl-mem")
    eq(re.findall(r'<li class="s\d">(.*?)</li>', body), ["cpu tensors"], "the CPU's line")
    check(">20.03 MiB</text>" in body, f"the scale's top: the peak {body[:900]}")
    check(abs(max(polyline_values(body, "cpu tensors", 7 * SIZE)) - 7 * SIZE) < 0.01 * SIZE,
          "the line reaches the peak")
    eq(re.findall(r'<li class="s\d">(.*?)</li>', figure(page, "tl-rss")[1]),
       [f"pid {pid} (python3)"], "RSS: the process")
    events = [e for e in dump(out) if e["pid"] == pid]
    allocs = [e for e in events if e["kind"] == "mem_alloc" and e["name"] == "alloc"]
    eq([e["args"]["bytes"] for e in allocs], [SIZE] * 7 + [1000000] * 3, "the allocations")
    rss = max(e["args"]["rss"] for e in events if e["kind"] in ("mem_rss", "mem_grow"))
    start = info(out)["start_monotonic_ns"]
    sec = re.search(r'<section id="mem-peaks">(.*?)</section>', page, re.S)
    check(sec, "the peaks table")
    # Each cell's text and hover (the exact bytes behind human units).
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*?(?: title=\"([^\"]*)\")?>(.*?)</td>",
                                                   r) for c in c]
            for r in re.findall(r"<tr>(.*?)</tr>", sec.group(1)) if "<td" in r]
    eq([r[:6] for r in rows], [["", f"pid {pid} (python3)", "", "rss", f"{rss} B", rows[0][5]],
                               ["", f"pid {pid} (python3)", "", "cpu tensors",
                                f"{7 * SIZE} B", "20.0 MiB"]], "the peaks, highest first")
    check(abs(float(rows[1][7]) - (allocs[6]["ts"] - start) / 1e9) < 0.0006,
          f"the tensors' peak at the 7th allocation: {rows[1]}")
    check_browser(path, {"tl-mem": 1, "tl-rss": 1})


def test_report_mem_page_of_gpu_records():
    """Synthetic GPU records: each device's line is every process's sum (cuda:0: 4 + 2 MiB
    allocated at the peak, 8 + 4 reserved, the scale's top), an exit takes the process's bytes
    off its devices; the peaks table has each process's device peaks. A trace without mem's
    records has no memory on its page."""
    from test_report import figure, report
    path, want = gpu_trace()
    _, page = report(path)
    _, body = figure(page, "tl-mem")
    eq(sorted(re.findall(r'<li class="s\d">(.*?)</li>', body)),
       ["cuda:0 allocated", "cuda:0 reserved", "cuda:1 allocated", "cuda:1 reserved"],
       "a line per device and kind")
    check(">12.00 MiB</text>" in body, "the scale's top: cuda:0's reserve, 8 + 4 MiB")
    for what, peak in want.items():
        v = polyline_values(body, what, 12 * MIB)
        check(abs(max(v) - peak) < 0.01 * MIB, f"{what}: its peak {max(v)} ~ {peak}")
    left = polyline_values(body, "cuda:0 reserved", 12 * MIB)[-1]
    check(abs(left - 4 * MIB) < 0.01 * MIB, f"after train's exit, eval's 4 MiB: {left}")
    rows = re.findall(r'<tr><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td><td class="n" title="(\d+) B">',
                      page)
    eq(rows[:3], [("pid 100 (train)", "rss", str(300 * MIB)),
                  ("pid 200 (eval)", "rss", str(200 * MIB)),
                  ("pid 100 (train)", "cuda:0 reserved", str(8 * MIB))], "the highest peaks")
    check(("pid 100 (train)", "cuda:1 allocated", str(MIB)) in rows, "train's cuda:1")
    t = synth.Trace(families="proc,mem", start=1000, end=2000)
    t.process(100, "idle", ts=1000)
    _, page = report(t.write(tmpdir()))
    check('id="tl-mem"' not in page and 'id="mem-peaks"' not in page, "no memory drawn")


def test_flight_mem_oom_trigger_dumps_the_window_before_it():
    """record --flight-recorder --trigger mem:oom on a job that allocates 5 tensors of 1 MiB
    and then asks for 1 PiB (a real OOM in alloc_cpu): one dump, holding the OOM (1 PiB, the
    CPU, OutOfMemory and the Python line in its stack) and the 5 allocations before it."""
    need_root()
    need_torch()
    d = tmpdir()
    p = run([BPFSIGHT, "record", "-t", "mem", "-o", os.path.join(d, "fr.bst"),
             "--flight-recorder", "30s", "--trigger", "mem:oom", "--", PY, HOLD],
            input=f"alloc 5 {MIB}\noom\nq\n")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    pid = int(p.stdout.split()[1])
    dumps = re.findall(r"flight recorder: wrote (\S+):", p.stderr)
    eq(dumps, [os.path.join(d, "fr-1.bst")], f"one dump ({p.stderr[-600:]})")
    check(f"triggered by mem:oom (pid {pid} tid {pid})" in p.stderr, p.stderr[-600:])
    check("mem:oom" in info(dumps[0])["options"], "the trigger in the dump's options")
    events = [e for e in dump(dumps[0]) if e["pid"] == pid]
    ooms = [e for e in events if e["kind"] == "mem_oom"]
    eq(len(ooms), 1, "the OOM in the dump")
    eq((ooms[0]["name"], ooms[0]["args"]["device"], ooms[0]["args"]["bytes"]),
       ("out_of_memory", "cpu", 1 << 50), "what was asked")
    frames = [f.get("func", "") for f in ooms[0].get("stack", [])]
    check(any("ProfiledCPUMemoryReporter::OutOfMemory" in f for f in frames) and
          any(f.get("file", "").endswith("mem_hold.py") for f in ooms[0]["stack"]),
          f"the OOM's stack: the reporter and the Python line: {ooms[0].get('stack')}")
    before = [e for e in events if e["kind"] == "mem_alloc" and e["name"] == "alloc" and
              e["ts"] < ooms[0]["ts"]]
    eq([e["args"]["bytes"] for e in before], [MIB] * 5, "the allocations that led to it")


def test_flight_mem_trigger_options():
    """mem offers `oom` with no duration; another name, or a duration-less trigger of a family
    that offers none, is refused saying what there is."""
    d = tmpdir()
    for bad, msg in ((["--trigger", "mem:boom"], "with no duration: mem:oom"),
                     (["--trigger", "osrt:nanosleep"], "use FAMILY:NAME>DUR"),
                     (["--trigger", "mem:"], "use FAMILY:NAME>DUR")):
        p = run([BPFSIGHT, "record", "-o", os.path.join(d, "fr.bst"), "--flight-recorder",
                 "10s", *bad, "--", "true"])
        eq(p.returncode, 1, f"{bad}: exit status")
        check(msg in p.stderr, f"{bad}: {msg!r} in {p.stderr.strip()!r}")
    eq(os.listdir(d), [], "nothing written")


@alone("reads the job's code for breakpoints: another recording's uprobes would be there too")
def test_monitor_and_top_mem_leave_nothing_behind():
    """monitor -t mem and top -t mem on a running job: while they run, PyTorch's allocator
    code in the job carries their breakpoints; once each has stopped, none is left, none of
    their BPF programs and links exists, and the job allocates on."""
    need_root()
    from test_detach import bpf_exists, bpf_ids, code_changes as changes, settle

    def code_changes(pid):  # mem probes PyTorch's libc10 only (others may probe python)
        return changes(pid, only="/libc10")

    h = Hold()
    if code_changes(h.pid):
        raise Skip(f"another tracer probes the job already: {sorted(code_changes(h.pid))}")
    for cmd in ("monitor", "top"):
        if cmd == "monitor":
            tool = Monitor("-t", "mem", "-p", str(h.pid))
            p = tool.p
        else:
            p = spawn([BPFSIGHT, "top", "-b", "-t", "mem", "-p", str(h.pid), "-i", "200ms"])
            wait_for(lambda: "Ctrl-C to stop" in p.stderr.readline(), 60, "top's start line")
        ids = bpf_ids(p.pid)
        check(any(k == "link" for k, _ in ids), f"{cmd} holds links: {ids}")
        wait_for(lambda: code_changes(h.pid), 30,
                 f"{cmd}: breakpoints in libc10 while it runs")
        h.do("alloc 1 4096")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(60), 0, f"{cmd}'s exit status after SIGTERM")
        settle(lambda: code_changes(h.pid), {}, f"{cmd}: no breakpoint left in the job's code")
        settle(lambda: [(k, i) for k, i in sorted(ids) if bpf_exists(k, i)], [],
               f"{cmd}: none of its programs and links is left")
        h.do("alloc 1 4096")
    h.quit()
