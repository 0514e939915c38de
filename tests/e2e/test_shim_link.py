"""The cupti-shim channel's record side (bpf/shim.bpf.c, user/shim_channel/shim_*.c) on the real kernel.

The producer is tests/workloads/shim_fake.c: it has the shim's USDT probes and semaphores and
sends hand-made batches, so every record is known exactly, and it also sends what a real shim
never does (bad batches, holes in its sequence numbers). It prints the semaphores as it sees
them, which is how the per-process attach is checked. BPFSIGHT_SHIM points launch mode at it.
"""
import os
import signal

from helpers import (BPFSIGHT, Recorder, alone, check, dump, eq, info, need_root, run, spawn,
                     tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 6

FAKE = workload("shim_fake")
SHIM_KINDS = ("shim_status", "gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_api", "nvtx_range",
              "nvtx_mark", "nvtx_name")


def need_fake():
    need_root()
    check(os.path.exists(FAKE), f"{FAKE} missing: run make test-build")


def record_fake(scenario, *opts, families="gpu,nvtx", extra_env=None):
    out = os.path.join(tmpdir(), "t.bst")
    env = dict(os.environ, BPFSIGHT_SHIM=FAKE, **(extra_env or {}))
    p = run([BPFSIGHT, "record", "-o", out, "-t", families, *opts, "--", FAKE, scenario],
            env=env, timeout=60)
    eq(p.returncode, 0, f"record exit ({p.stderr[-600:]})")
    return p, out


def parse(stdout):
    """The fake's report: pid, semaphores at start and end, batches sent [(seq, nrec)]."""
    r = {"sent": []}
    for line in stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "pid":
            r["pid"] = int(f[1])
        elif f[0] in ("sem", "end"):
            r[f[0]] = {k: int(v) for k, v in (x.split("=") for x in f[1:])}
        elif f[0] == "sent":
            r["sent"].append((int(f[1]), int(f[2])))
    return r


def shim_events(events, pid):
    return [e for e in events if e["pid"] == pid and e["kind"] in SHIM_KINDS]


def lost(path):
    return info(path)["lost"]


def test_basic_batch_exact():
    need_fake()
    p, out = record_fake("basic")
    f = parse(p.stdout)
    pid = f["pid"]
    eq(f["sem"], {"batch": 1, "gpu": 1, "nvtx": 1, "sync": 0, "drain": 0}, "semaphores")
    eq(f["sent"], [(1, 13)], "batches")
    got = [(e["kind"], e["ts"], e["dur"], e["tid"], e["name"], e["args"])
           for e in shim_events(dump(out), pid)]
    state = ["nvtx_injected", "nvtx_on"]
    status = dict(state=state, cupti_result=0, detail="", seq=0, cupti_version=0)
    exp = [
        ("shim_status", 1, 0, pid, "attach", dict(status, dropped=0)),
        ("nvtx_range", 1000000, 500, pid, "fake range",
         dict(domain="fakedom", style="PushPop", depth=1, end_tid=pid, category=0)),
        ("nvtx_mark", 1100000, 0, pid, "fake range", dict(domain="", category=0)),
        ("nvtx_name", 1200000, 0, pid, "worker", dict(what="thread", key=pid, domain="")),
        ("gpu_api", 2000000, 100, pid, "cudaLaunchKernel_v7000",
         dict(correlation=7, cbid=211, domain="runtime", ret=0)),
        # linked through CUPTI's API record (no cuda family): its thread and start
        ("gpu_kernel", 3000000, 4000, pid, "kernel(float*, int)",
         dict(device=1, context=0, stream=13, correlation=7, grid=[4, 0, 0],
              block=[128, 0, 0], shmem_dynamic=0, shmem_static=0, registers=0,
              call_ts=2000000, link="api")),
        ("shim_status", 1, 0, pid, "dropped", dict(status, dropped=5)),
        # no API record for correlation 9: written unlinked once the recording ends
        ("gpu_memcpy", 3100000, 50, 0, "[CUDA memcpy Host-to-Device]",
         dict(bytes=4096, copy_kind="HtoD", src_kind="unknown", dst_kind="unknown",
              async_=False, device=0, context=0, stream=0, correlation=9, src_device=0,
              dst_device=0, link="none")),
    ]
    exp = [(k, ts, d, t, n, {("async" if a == "async_" else a): v for a, v in args.items()})
           for k, ts, d, t, n, args in exp]
    eq(got, exp, "records of the batch")
    eq(lost(out), {"shim_dropped": 5}, "the STATUS's dropped count is a loss")
    ev = info(out)["events"]
    check(not any(k.startswith("unknown") or k == "shim_batch" for k in ev),
          f"raw batches never reach the file: {ev}")


def test_only_the_selected_family():
    need_fake()
    for fams, keep in (("nvtx", "nvtx_"), ("gpu", "gpu_")):
        p, out = record_fake("basic", families=fams)
        f = parse(p.stdout)
        kinds = {e["kind"] for e in shim_events(dump(out), f["pid"])} - {"shim_status"}
        check(kinds and all(k.startswith(keep) for k in kinds), f"-t {fams}: {kinds}")
        sem = f["sem"]
        eq((sem["gpu"], sem["nvtx"]), (int(fams == "gpu"), int(fams == "nvtx")),
           f"-t {fams}: only its semaphore is raised")


def test_bad_batches_dropped_and_counted():
    need_fake()
    p, out = record_fake("bad")
    f = parse(p.stdout)
    marks = [e["ts"] for e in shim_events(dump(out), f["pid"]) if e["kind"] == "nvtx_mark"]
    eq(marks, [5000, 7000], "only the good batches' marks")
    eq(lost(out), {"shim_dropped": 15}, "5 bad batches of 3 records")
    check("dropped a cupti-shim batch" in p.stderr and "magic or version" in p.stderr,
          f"one warning names the first bad batch: {p.stderr[-500:]}")
    eq(p.stderr.count("dropped a cupti-shim batch"), 1, "warned once")


def test_sequence_holes_counted():
    need_fake()
    p, out = record_fake("gaps")
    f = parse(p.stdout)
    eq([s for s, _ in f["sent"]], [1, 2, 3, 6, 7, 9, 11, 10], "what was sent")
    marks = sorted(e["ts"] for e in shim_events(dump(out), f["pid"]) if e["kind"] == "nvtx_mark")
    eq(marks, list(range(8000, 8008)), "every batch sent arrived")
    # 4, 5 and 8 never came; 10 came after 11 (reordered, not lost)
    eq(lost(out), {"shim_dropped": 3}, "holes in the sequence")


def start_fakes(n, scenario, wait_file, hold_file):
    procs = [spawn([FAKE, scenario, "--wait-file", wait_file, "--hold-file", hold_file])
             for _ in range(n)]
    pids = [int(p.stdout.readline().split()[1]) for p in procs]
    return procs, pids


def finish(procs, hold_file):
    open(hold_file, "w").close()
    outs = []
    for p in procs:
        eq(p.wait(30), 0, "fake exit")
        outs.append(parse(p.stdout.read()))
    return outs


def test_pid_attach_touches_only_that_process():
    """-p A: A's semaphores go up, B's (same file) stay 0; the drain is answered at stop."""
    need_fake()
    d = tmpdir()
    wait_file, hold = os.path.join(d, "go"), os.path.join(d, "hold")
    procs, (a, b) = start_fakes(2, "basic", wait_file, hold)
    r = Recorder("-t", "gpu,nvtx", "-p", str(a))
    r.wait_ready()
    open(wait_file, "w").close()
    # the semaphores as each saw them once told to go
    lines = [p.stdout.readline() for p in procs]
    sems = [parse(line)["sem"] for line in lines]
    eq(sems[0], {"batch": 1, "gpu": 1, "nvtx": 1, "sync": 0, "drain": 0}, "traced process")
    eq(sems[1], {"batch": 0, "gpu": 0, "nvtx": 0, "sync": 0, "drain": 0}, "other process")
    # its batch fired (in the ring: stop drains it)
    eq(parse(procs[0].stdout.readline())["sent"], [(1, 13)], "the traced process's batch")
    eq(r.stop(signal.SIGINT), 0, f"recorder exit ({r.stderr})")
    outs = finish(procs, hold)
    eq(outs[0]["end"], {"batch": 0, "gpu": 0, "nvtx": 0, "sync": 0, "drain": 0},
       "detached at the end: the shim goes idle")
    eq(outs[1]["end"]["batch"], 0, "the other process never saw a tracer")
    evs = shim_events(dump(r.out), a)
    eq([e["name"] for e in evs if e["kind"] == "shim_status"], ["attach", "dropped", "drained"],
       "statuses, the drain confirmed last")
    eq(len([e for e in evs if e["kind"] == "gpu_kernel"]), 1, "kernel")
    check(not shim_events(dump(r.out), b), "nothing from the other process")
    check("did not confirm" not in r.stderr, r.stderr)


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_system_wide_attaches_every_process():
    """-a: processes started later get the semaphores (one link per file), and every one
    that sent something is drained at stop."""
    need_fake()
    d = tmpdir()
    hold = os.path.join(d, "hold")
    r = Recorder("-a", "-t", "gpu,nvtx")
    r.wait_ready()
    procs = [spawn([FAKE, "basic", "--hold-file", hold]) for _ in range(2)]
    pids = [int(p.stdout.readline().split()[1]) for p in procs]
    sems = [parse(p.stdout.readline())["sem"] for p in procs]
    for pid, sem in zip(pids, sems):
        eq((sem["batch"], sem["gpu"], sem["nvtx"]), (1, 1, 1), f"-a: pid {pid} attached")
    for p in procs:
        eq(parse(p.stdout.readline())["sent"], [(1, 13)], "its batch")
    eq(r.stop(), 0, f"recorder exit ({r.stderr})")
    outs = finish(procs, hold)
    for o in outs:
        eq(o["end"]["batch"], 0, "-a detached at the end")
    events = dump(r.out)
    for pid in pids:
        st = [e["name"] for e in shim_events(events, pid) if e["kind"] == "shim_status"]
        eq(st, ["attach", "dropped", "drained"], f"pid {pid}: statuses")
    # confirmed, not timed out (how long it took depends on the machine's load)
    check("did not confirm" not in r.stderr, r.stderr)


def test_pid_without_shim_warns():
    need_root()
    env_other = dict(os.environ, CUDA_INJECTION64_PATH="/opt/some/injection.so")
    for env, what in ((None, "was not started with the cupti-shim"),
                      (env_other, "has CUDA_INJECTION64_PATH=/opt/some/injection.so")):
        s = spawn(["sleep", "30"], env=env)
        out = os.path.join(tmpdir(), "t.bst")
        p = run([BPFSIGHT, "record", "-o", out, "-t", "gpu", "-p", str(s.pid), "-d", "300ms"])
        eq(p.returncode, 0, f"record exit ({p.stderr[-300:]})")
        check(what in p.stderr and "CUDA_INJECTION64_PATH" in p.stderr,
              f"warning '{what}': {p.stderr}")
        s.kill()


def test_capture_range_nvtx_needs_nvtx_family():
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "gpu", "--capture-range=nvtx:step", "--",
             "true"])
    eq(p.returncode, 1, "exit status")
    check("needs the nvtx family" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no file written")
    p = run([BPFSIGHT, "record", "-o", out, "--capture-range=nvtx:", "--", "true"])
    eq(p.returncode, 1, "empty name")
    check("bad --capture-range" in p.stderr, p.stderr)


def test_launch_sets_the_injection_variables():
    need_fake()
    cmd = ["sh", "-c", 'echo "cuda=$CUDA_INJECTION64_PATH nvtx=$NVTX_INJECTION64_PATH"']
    for fams, exp in (("gpu,nvtx", f"cuda={FAKE} nvtx={FAKE}"), ("gpu", f"cuda={FAKE} nvtx="),
                      ("nvtx", f"cuda= nvtx={FAKE}"), ("osrt", "cuda= nvtx=")):
        out = os.path.join(tmpdir(), "t.bst")
        p = run([BPFSIGHT, "record", "-o", out, "-t", fams, "--", *cmd],
                env=dict(os.environ, BPFSIGHT_SHIM=FAKE))
        eq(p.returncode, 0, f"-t {fams}: exit ({p.stderr[-300:]})")
        eq(p.stdout.strip(), exp, f"-t {fams}: CMD's environment")
    # a user's own injection library is kept, with a warning saying what it costs
    env = dict(os.environ, BPFSIGHT_SHIM=FAKE, NVTX_INJECTION64_PATH="/opt/other/libnvtx.so")
    p = run([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), "-t", "gpu,nvtx", "--",
             *cmd], env=env)
    eq(p.stdout.strip(), f"cuda={FAKE} nvtx=/opt/other/libnvtx.so", "kept the user's")
    check("NVTX_INJECTION64_PATH is already set" in p.stderr and "BPFSIGHT_NVTX_CHAIN" in p.stderr,
          p.stderr)
    # BPFSIGHT_SHIM that does not exist: a clear error, CMD does not run
    p = run([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), "-t", "gpu", "--",
             *cmd], env=dict(os.environ, BPFSIGHT_SHIM="/nonexistent/shim.so"))
    eq(p.returncode, 1, "missing BPFSIGHT_SHIM")
    check("BPFSIGHT_SHIM=/nonexistent/shim.so" in p.stderr and not p.stdout, p.stderr)
