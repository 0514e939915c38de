"""The mem family's records against what the workloads did (docs/MEMORY.md): PyTorch's CPU
allocator with Debian's torch (every tensor, its size, the line that made it, its free), the
CUDA caching allocator without a GPU (libfake_c10_cuda.so: c10's report functions and torch's
USDT probe, segments from real cudart calls), resident growth by line, OOMs; in launch mode,
with -p (the USDT semaphore raised only while recording) and with -a."""
import json
import os
import signal

import pymods
from helpers import (BPFSIGHT, BUILD, ROOT, SLOWDOWN, Recorder, alone, check, dump, eq,
                     need_root, record, run, spawn, tmpdir)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40

DEBIAN_PY = "/usr/bin/python3"
GPU_ALLOC = os.path.join(BUILD, "tests", "cuda", "gpu_alloc")
WORKLOADS = os.path.join(ROOT, "tests", "workloads")
MEM_ALLOC = os.path.join(WORKLOADS, "mem_alloc.py")


def need_torch():
    if not pymods.has(DEBIAN_PY, "torch"):
        from run_tests import Skip
        raise Skip("Debian's python3-torch is not installed (make deps)")


def need_gpu_alloc():
    if not os.path.exists(GPU_ALLOC):
        from run_tests import Skip
        raise Skip(f"{GPU_ALLOC} not built (no CUDA toolkit)")


def line_of(path, marker):
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(f"no line marked {marker} in {path}")


def allocs(events, pid=None, device=None):
    return [e for e in events if e["kind"] == "mem_alloc" and (pid is None or e["pid"] == pid)
            and (device is None or e["args"]["device"] == device)]


def innermost_python(ev):
    for f in ev.get("stack", []):
        if "line" in f:
            return f["file"], f["line"], f["func"]
    return None


def last_json(text):
    return json.loads([l for l in text.splitlines() if l.startswith("{")][-1])


def test_cpu_tensors_exact_with_their_line():
    need_root()
    need_torch()
    n = 7
    p, out = record([DEBIAN_PY, MEM_ALLOC, "tensors", str(n)], "-t", "mem")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    job = last_json(p.stdout)
    events = dump(out)
    mine = allocs(events, job["pid"], "cpu")
    sizes = set(job["sizes"])
    made = [e for e in mine if e["name"] == "alloc" and e["args"]["bytes"] in sizes]
    freed = [e for e in mine if e["name"] == "free" and e["args"]["bytes"] in sizes]
    eq(sorted(e["args"]["bytes"] for e in made), job["sizes"], "every tensor, its size")
    eq(sorted(int(e["args"]["addr"], 16) for e in made), sorted(job["addrs"]), "their addresses")
    eq(sorted(e["args"]["bytes"] for e in freed), job["sizes"], "every free, sized by its alloc")
    check(all(e["args"]["source"] == "cpu_reporter" for e in made + freed), "the CPU reporter")
    at = line_of(MEM_ALLOC, "ALLOC")
    for e in made:
        where = innermost_python(e)
        check(where and where[0].endswith("mem_alloc.py") and where[1] == at,
              f"the tensor's stack names mem_alloc.py:{at}: {e.get('stack')}")
    # Live bytes after each of them: what came before, in order.
    live = [e["args"]["live"] for e in made]
    check(all(b > a for a, b in zip(live, live[1:])), f"live grows: {live}")


def test_stacks_none_and_bad_options():
    need_root()
    need_torch()
    p, out = record([DEBIAN_PY, MEM_ALLOC, "tensors", "2"], "-t", "mem", "--stacks", "none")
    eq(p.returncode, 0, p.stderr[-400:])
    events = dump(out)
    check(allocs(events), "allocations recorded")
    check(not any("stack" in e for e in allocs(events)), "--stacks=none: no stacks")
    for opts, says in ((["--stacks", "mem:lots"], "bad size 'lots' for mem"),
                       (["--mem-step", "12"], "bad --mem-step '12'"),
                       (["--stacks", "mem:1ms"], "bad size '1ms' for mem")):
        p, _ = record(["/bin/true"], "-t", "mem", *opts)
        eq(p.returncode, 1, f"{opts}: exit")
        check(says in p.stderr, f"{opts}: {p.stderr}")


def test_gpu_allocator_exact():
    """Every malloc, free and OOM the caching allocator reported, with its totals, as the
    program saw them; the USDT probe's stream and requested size beside each block."""
    need_root()
    need_gpu_alloc()
    p, out = record([GPU_ALLOC, "3"], "-t", "cuda,mem")
    eq(p.returncode, 0, p.stderr[-600:])
    lines = [l.split() for l in p.stdout.splitlines()]
    events = dump(out)
    mem = [e for e in events if e["kind"] in ("mem_alloc", "mem_oom", "mem_stream")]
    got, want = [], []
    for e in mem:
        a = e["args"]
        if e["kind"] == "mem_oom":
            got.append(("oom", a["device"], a["bytes"], a["allocated"], a["reserved"]))
        elif e["kind"] == "mem_stream":
            got.append(("stream", a["device"], int(a["addr"], 16), a["requested"], a["stream"]))
        else:
            got.append((e["name"], a["device"], int(a["addr"], 16), a["bytes"],
                        a["allocated"], a["reserved"]))
    for l in lines:
        dev = f"cuda:{l[1]}" if l[0] != "semaphores" else None
        if l[0] == "alloc":
            want.append(("alloc", dev, int(l[2], 16), int(l[4]), int(l[5]), int(l[6])))
            want.append(("stream", dev, int(l[2], 16), int(l[3]), int(l[7])))
        elif l[0] == "free":
            want.append(("free", dev, int(l[2], 16), int(l[3]), int(l[4]), int(l[5])))
        elif l[0] == "oom":
            want.append(("oom", dev, int(l[2]), int(l[3]), int(l[4])))
    eq(got, want, "the allocator's every call, in order, as the program printed it "
       f"({lines[-1]}; {sum(e['kind'] == 'cuda_api' for e in events)} cuda_api events; "
       f"{p.stderr[-600:]})")
    eq(lines[-1], ["semaphores", "1"], "the malloc probe's semaphore was raised")
    # The segments' real cudart calls were traced beside them (and refused: no GPU).
    mallocs = [e for e in events if e["kind"] == "cuda_api" and e["name"] == "cudaMalloc"]
    eq(len(mallocs), 2 * 3, "cudaMalloc per segment")
    check(all(e["stack"] for e in mem if e["kind"] == "mem_oom"), "OOMs carry their stacks")


def test_a_launched_program_already_examined_is_stopped_at_its_exec():
    """Launch mode stops CMD at its exec even when its executable was examined before (here by
    a static -p target that maps it; on a loaded machine, by a scan of CMD in the middle of its
    exec): its libraries are then found before it runs, and every block of the allocator's
    library is recorded (before: none, 4 runs in 36 of three launches at once beside two
    busy loops, and here every time)."""
    need_root()
    need_gpu_alloc()
    holder = spawn([os.path.join(BUILD, "tests", "mem", "map_exec_static"), GPU_ALLOC])
    eq(holder.stdout.readline().strip(), "ready", "the static program maps gpu_alloc")
    p, out = record([GPU_ALLOC, "2"], "-t", "mem", "-p", str(holder.pid))
    holder.stdin.close()
    eq(p.returncode, 0, p.stderr[-600:])
    eq(p.stdout.splitlines()[-1], "semaphores 1", "the malloc probe's semaphore was raised")
    events = dump(out)
    eq(len([e for e in allocs(events, device="cuda:0") if e["name"] == "alloc"]), 2 * 2,
       "every block on cuda:0")


def test_attach_raises_the_semaphore_only_while_recording():
    need_root()
    need_gpu_alloc()
    job = spawn([GPU_ALLOC, "2", "--wait"])
    eq(job.stdout.readline().strip(), "ready", "the job waits")
    r = Recorder("-p", str(job.pid), "-t", "mem")
    r.wait_ready()
    job.send_signal(signal.SIGUSR1)
    lines = []
    while not lines or not lines[-1].startswith("semaphores"):
        lines.append(job.stdout.readline().strip())
    eq(lines[-1], "semaphores 1", "raised while recording")
    eq(r.stop(), 0, r.stderr[-400:])
    job.send_signal(signal.SIGUSR1)
    eq(job.stdout.readline().strip(), "semaphores 0",
       "lowered once the recording ended (and its bpfsight-detach removed its probes)")
    eq(job.wait(30), 0, "the job ends well")
    events = dump(r.out)
    eq(len([e for e in allocs(events, job.pid) if e["name"] == "alloc"]), 2 * 3,
       "every block of a job attached to")
    eq(len([e for e in events if e["kind"] == "mem_stream"]), 2 * 3, "and each one's stream")


def test_resident_growth_is_charged_to_the_line_that_wrote_it():
    need_root()
    need_torch()
    mib = 64
    p, out = record([DEBIAN_PY, MEM_ALLOC, "touch", str(mib)], "-t", "mem")
    eq(p.returncode, 0, p.stderr[-400:])
    job = last_json(p.stdout)
    events = [e for e in dump(out) if e["pid"] == job["pid"]]
    at = line_of(MEM_ALLOC, "TOUCH")
    grow = [e for e in events if e["kind"] == "mem_grow"]
    there = sum(e["args"]["bytes"] for e in grow
                if (innermost_python(e) or ("", 0))[1] == at)
    # Sampled every MiB of growth: the line's share is its touched MiB, within one sample.
    check((mib - 2) << 20 <= there <= (mib + 2) << 20,
          f"growth charged to mem_alloc.py:{at}: {there / (1 << 20):.1f} MiB of {mib}")
    rss = [e["args"]["rss"] for e in events if e["kind"] == "mem_rss"]
    check(max(rss) - rss[0] >= (mib - 1) << 20, f"RSS rose by {mib} MiB: {rss[0]}..{max(rss)}")


def test_an_oom_is_recorded_with_its_line():
    need_root()
    need_torch()
    p, out = record([DEBIAN_PY, MEM_ALLOC, "oom"], "-t", "mem")
    eq(p.returncode, 0, p.stderr[-400:])
    job = last_json(p.stdout)
    ooms = [e for e in dump(out) if e["kind"] == "mem_oom"]
    eq(len(ooms), 1, "one OOM")
    eq((ooms[0]["pid"], ooms[0]["args"]["bytes"], ooms[0]["args"]["device"]),
       (job["pid"], job["oom"], "cpu"), "its process, size and device")
    eq(innermost_python(ooms[0])[1], line_of(MEM_ALLOC, "OOM"), "its line")


def test_dataloader_workers_are_followed():
    """Launch mode: the workers a DataLoader forks allocate too, and are recorded as theirs."""
    need_root()
    need_torch()
    d = tmpdir()
    out = os.path.join(d, "w.bst")
    r = Recorder("-t", "mem", "--", DEBIAN_PY, os.path.join(WORKLOADS, "torch_loader.py"),
                 "--seconds", "4", "--sleep", "0.01", out=out)
    eq(r.wait(120 * SLOWDOWN), 0, r.stderr[-600:])
    events = dump(out)
    pids = {e["pid"] for e in allocs(events)}
    forks = {e["args"]["child_pid"] for e in events if e["kind"] == "fork"
             and e["args"].get("child_pid") == e["args"].get("child_tid")}
    check(len(pids & forks) >= 2, f"workers' allocations: pids {pids}, forked {forks}")


@alone("system-wide: every process's allocations are the test's")
def test_system_wide_finds_the_allocator_in_a_new_process():
    need_root()
    need_gpu_alloc()
    r = Recorder("-a", "-t", "mem", "-d", "30s")
    r.wait_ready()
    p = run([GPU_ALLOC, "1", "--until-traced"])
    eq(p.returncode, 0, p.stderr)
    eq(r.stop(), 0, r.stderr[-400:])
    pid_allocs = [e for e in allocs(dump(r.out)) if e["args"]["device"].startswith("cuda")]
    eq(len([e for e in pid_allocs if e["name"] == "alloc"]), 3, "its three blocks")
    eq(p.stdout.splitlines()[-1], "semaphores 1", "its semaphore raised by the tracer")


def test_a_recorded_gpu_allocator_in_the_memory_snapshot():
    """The snapshot of a real recording (the fake allocator's, with its USDT probe): every
    block's alloc and free with its size and stream, as the program made them, per device."""
    need_root()
    need_gpu_alloc()
    p, out = record([GPU_ALLOC, "2"], "-t", "mem")
    eq(p.returncode, 0, p.stderr[-400:])
    snap = os.path.join(tmpdir(), "s.pickle")
    e = run([BPFSIGHT, "export", out, "--format", "memory-snapshot", "-o", snap])
    eq(e.returncode, 0, e.stderr)
    got = run([DEBIAN_PY, "-c", "import json, pickle, sys; s = pickle.load(open(sys.argv[1], "
               "'rb')); print(json.dumps([[[t['action'], t.get('addr'), t['size'], t['stream']] "
               "for t in d if t['action'] in ('alloc', 'free_completed', 'oom')] "
               "for d in s['device_traces']]))", snap], check=True)
    want, streams = [[], []], {}
    for l in p.stdout.split("\n"):
        w = l.split()
        if w and w[0] == "alloc":
            streams[w[2]] = int(w[7])
            want[int(w[1])].append(["alloc", int(w[2], 16), int(w[4]), int(w[7])])
        elif w and w[0] == "free":
            want[int(w[1])].append(["free_completed", int(w[2], 16), int(w[3]), streams[w[2]]])
        elif w and w[0] == "oom":
            want[int(w[1])].append(["oom", None, int(w[2]), 0])
    eq(json.loads(got.stdout), want, "each device's blocks, sizes and streams, in order")
