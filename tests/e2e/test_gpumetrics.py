"""The gpumetrics family end to end, on a machine without a GPU: the sampler process loads the
tests' NVML (tests/workloads/nvml_fake/libnvidia-ml.c, build/tests/nvml/libnvidia-ml.so.1)
through the normal library search, LD_LIBRARY_PATH, as it would load the driver's. The fake
serves scripted values and NVML's failures, and logs every value it served and when it served
each device's energy (once a tick): the truth each test holds the file to.

- every sampled value lands in the file exactly, in the fake's order; a metric NVML does not
  support (or denies) is absent, never 0, and the DEVICE record says which and why; a read that
  failed once leaves its metric out of that sample only;
- the rate: samples equal the fake's reads, and with the ticks counted late they make the
  asked frequency over the fake's own clock within 1%; a slow driver lowers the rate, said;
- a device that stops answering (GPU_IS_LOST) is said and counted, the others go on;
- NVML absent: said once, the rest of the recording as it would be;
- energy per step: the fake's counter is its power times its own clock, so a step's joules are
  that power times the step, and gpu_metrics_step_sum reads them from dump's samples exactly;
  the verdict names a memory-bound and a throttled GPU; top replays SM% and W;
- the exports: Perfetto's counter tracks per device (protoc decodes them), Chrome's counters,
  SQLite's GPU_METRICS as nsys names it; monitor's dcgm-exporter gauges, queried from a real
  Prometheus; nsys's --gpu-metrics-* options on profile and record.
"""
import atexit
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from helpers import (BPFSIGHT, BUILD, Skip, alone, check, docs_query, dump, eq, info, need_root,
                     run, spawn, stats, tell, tmpdir, wait_for, workload)

SECONDS = 22

FAKE_DIR = os.path.join(BUILD, "tests", "nvml")
SLEEPER = workload("syscalls")
STEPS = workload("gpum_steps")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
POWER_MW = 300000  # the fake's default

# The fake's log names of GPM's metrics (its metric ids) -> dump's keys.
GPM = {"gpm2": "sm_active", "gpm3": "sm_occupancy", "gpm1": "gr_active", "gpm5": "tensor_active",
       "gpm7": "tensor_hmma", "gpm9": "tensor_imma", "gpm8": "tensor_dmma",
       "gpm6": "tensor_dfma", "gpm11": "fp64_active", "gpm12": "fp32_active",
       "gpm13": "fp16_active", "gpm4": "int_active", "gpm10": "dram_active",
       "gpm20": "pcie_tx_rate", "gpm21": "pcie_rx_rate"}

_cache = {}


def cache_dir():
    """A directory for the traces the tests of this file share (tmpdir()'s go after each)."""
    if "dir" not in _cache:
        _cache["dir"] = tempfile.mkdtemp(prefix="bpfsight-gpumetrics-")
        atexit.register(shutil.rmtree, _cache["dir"], True)
    return _cache["dir"]


def need_fake():
    """The fake, which LD_LIBRARY_PATH puts before the driver's own where there is one."""
    need_root()
    if not os.path.exists(os.path.join(FAKE_DIR, "libnvidia-ml.so.1")):
        raise Skip(f"{FAKE_DIR}/libnvidia-ml.so.1 missing: run make test-build")


def fake_env(**script):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR)
    env.update({f"FAKE_NVML_{k.upper()}": str(v) for k, v in script.items()})
    return env


def record(cmd, *opts, env, out=None):
    out = out or os.path.join(tmpdir(), "g.bst")
    p = run([BPFSIGHT, "record", "-o", out, *opts, "--", *cmd], env=env, timeout=120)
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    return p, out


def read_log(path):
    """The fake's log: {(device, tick): {metric: value}} and its start (CLOCK_MONOTONIC)."""
    served, start = collections.defaultdict(dict), None
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[0] == "start":
                start = int(w[1])
                continue
            tick, dev, metric = int(w[0]), int(w[1]), w[2]
            if tick == 0 or metric.startswith("proc_") or w[3] == "fail":
                continue  # reads before the first tick (the device opened), processes
            v = w[3]
            served[dev, tick][GPM.get(metric, metric)] = float(v) if metric in GPM else int(v)
    return served, start


def read_counts(path):
    """The fake's FAKE_NVML_COUNTS: {device: (ticks, first_ns, last_ns)}."""
    with open(path) as f:
        return {int(w[0]): tuple(map(int, w[1:])) for w in (l.split() for l in f)}


def samples(events, device):
    return [e for e in events if e["kind"] == "gpu_metrics" and e["args"]["device"] == device]


def values(e):
    a = dict(e["args"])
    del a["device"]
    if "throttle" in a:
        a["throttle"] = int(a["throttle"], 16)
    return a


def lost(trace, cause):
    return info(trace).get("lost", {}).get(cause, 0)


def scripted_trace():
    """Two devices at 500 Hz for a second: temperature unsupported, memory denied, every 5th
    SM clock read failing once."""
    if "scripted" not in _cache:
        need_fake()
        d = cache_dir()
        log, counts = os.path.join(d, "fake.log"), os.path.join(d, "fake.counts")
        env = fake_env(devices=2, log=log, counts=counts, unsupported="temp", denied="mem",
                       flaky=5)
        p, out = record([SLEEPER, "0", "1", "1000000"], "-t", "gpumetrics",
                        "--gpu-metrics-frequency=500", env=env,
                        out=os.path.join(d, "g.bst"))
        _cache["scripted"] = (out, read_log(log)[0], read_counts(counts), p)
    return _cache["scripted"]


def test_gpumetrics_every_value_exact():
    """Each device's samples are the fake's ticks one for one, every value exactly as
    served; temperature (NOT_SUPPORTED) and memory (NO_PERMISSION) never appear, and the
    DEVICE record says why; an SM clock read that failed leaves that sample without it."""
    trace, served, counts, _ = scripted_trace()
    events = dump(trace)
    for dev in (0, 1):
        got = samples(events, dev)
        eq(len(got), counts[dev][0], f"GPU {dev}: samples == the fake's energy reads")
        for i, e in enumerate(got):
            eq(values(e), served[dev, i + 1], f"GPU {dev} sample {i + 1}")
        check(not any("temp" in e["args"] or "mem_used" in e["args"] for e in got),
              "unsupported and denied metrics left out")
        # GPM's counters are refreshed about every 100 ms: read every 200 ms, not each tick
        # (on an H200 at 136 Hz, 95% of the ticks' GPM values were 0).
        gpm = [e["ts"] for e in got if "sm_active" in e["args"]]
        # (a sample's time is its energy read's, a little before its GPM read: 1 ms of slack)
        # As many as 200 ms apart fit in the samples' span (the 1 s recording stretches on a
        # loaded machine: 8 over 1.6 s once), never one a tick.
        span = got[-1]["ts"] - got[0]["ts"]
        check(3 <= len(gpm) <= span // 199_000_000 + 1 and
              all(b - a >= 199_000_000 for a, b in zip(gpm, gpm[1:])),
              f"GPU {dev}: GPM values every 200 ms or more, over {span / 1e9:.2f} s of "
              f"samples: {gpm}")
        fails = [i for i, e in enumerate(got) if "sm_clock" not in e["args"]
                 and "mem_clock" in e["args"]]
        check(fails, f"GPU {dev}: the failed SM clock reads leave samples without it")
        devs = [e for e in events if e["kind"] == "gpu_device" and e["args"]["device"] == dev]
        last = devs[-1]["args"]
        eq(last["model"], f"Fake H100 {dev}", "model")
        eq(last["uuid"], f"GPU-fake-{dev:04d}", "uuid")
        check("temp" in last["unsupported"].split(","), f"unsupported: {last}")
        check({"nvlink_tx", "nvlink_rx"} <= set(last["unsupported"].split(",")), "no NVLink")
        eq(set(last["denied"].split(",")), {"mem_used", "mem_reserved"}, "denied")
    # The summary: the same metrics, exact means; no row for what the device lacks.
    rep = stats(trace, "gpu_metrics_sum")["gpu_metrics_sum"]
    for dev in (0, 1):
        got = samples(events, dev)
        rows = {r["metric"]: r for r in rep if r["device"] == dev}
        keys = {k for e in got for k in values(e)} - {"throttle"}
        eq({m for m in rows if not m.startswith("throttle:")}, keys, f"GPU {dev}'s rows")
        power = [e["args"]["power"] / 1000 for e in got]
        eq(rows["power"]["samples"], len(power), "power samples")
        check(abs(rows["power"]["mean"] - sum(power) / len(power)) < 0.005, "mean power")
        sm = [e["args"]["sm_active"] for e in got if "sm_active" in e["args"]]
        eq(rows["sm_active"]["min"], min(sm), "least SM active")
        eq(rows["sm_active"]["max"], max(sm), "most SM active")


def test_gpumetrics_rate_within_one_percent():
    """At 500 Hz: the samples are the fake's reads, and with the ticks counted late (woken
    after their deadline on a loaded machine) they are 500 a second of the fake's own clock
    from its first read to its last, within 1% (the samples alone never more)."""
    trace, _, counts, p = scripted_trace()
    late = lost(trace, "gpu_metrics_late")
    for dev in (0, 1):
        ticks, first, last = counts[dev]
        due = (last - first) * 500 / 1e9 + 1
        # No tick missed without a word, none taken twice. Late ticks are counted over the
        # whole recording: those of its last moments (the stop, on a loaded machine) fall
        # after the fake's last read, so only the samples bound it from above.
        check(ticks + late >= 0.99 * due and ticks <= 1.01 * due,
              f"GPU {dev}: {ticks} samples + {late} late against {due:.1f} due")
        check(ticks >= 100, f"GPU {dev}: {ticks} samples")
    if late:
        check("gpu_metrics_late" in p.stderr, "the late ticks are said at the end")


def test_gpumetrics_device_lost_said_counted_others_go_on():
    """GPU 1 answers GPU_IS_LOST from its 60th tick: said once, its samples end at 59, every
    later tick of it counted lost; GPU 0 samples to the end; the recording exits 0."""
    need_fake()
    d = tmpdir()
    counts = os.path.join(d, "c")
    p, trace = record([SLEEPER, "0", "1", "800000"], "-t", "gpumetrics",
                      "--gpu-metrics-frequency=200",
                      env=fake_env(devices=2, lost="1:60", counts=counts))
    eq(p.stderr.count("GPU 1 (Fake H100 1) stopped answering NVML (GPU is lost)"), 1,
       f"said once: {p.stderr[-600:]}")
    events = dump(trace)
    ticks = read_counts(counts)[0][0]
    eq(len(samples(events, 1)), 59, "GPU 1: its samples before the loss")
    eq(len(samples(events, 0)), ticks, "GPU 0: every tick")
    eq(lost(trace, "gpu_metrics_lost"), ticks - 59, "GPU 1's ticks from the loss on")
    gone = [e for e in events if e["kind"] == "gpu_device" and e["args"]["lost"]]
    eq([(e["args"]["device"], e["args"]["lost_error"]) for e in gone], [(1, 15)], "lost record")
    # GPU 0 went on after the loss: its samples after the lost record are its ticks from the
    # 60th (or 61st: in one tick GPU 0 is read first) on. Counted in ticks, not in time: a
    # loaded machine starts the sampler late and lowers its rate, and 300 ms of samples after
    # the loss, on a 0.8 s workload, was no bound there (failed once under load).
    after = [e for e in samples(events, 0) if e["ts"] > gone[0]["ts"]]
    check(ticks > 60, f"the sampler ran past GPU 1's loss: {ticks} ticks")
    check(len(after) in (ticks - 60, ticks - 59),
          f"GPU 0 went on after: {len(after)} of {ticks} samples after the loss")


def test_gpumetrics_without_nvml_the_rest_unchanged():
    """No libnvidia-ml.so.1 found: one warning, a STATUS record saying why, no sample, exit 0;
    the osrt family beside it counts the workload's system calls exactly."""
    need_fake()
    if subprocess.run(["sh", "-c", "ldconfig -p | grep -q libnvidia-ml.so.1"]).returncode == 0:
        raise Skip("this machine has NVIDIA's libnvidia-ml.so.1: NVML cannot be absent here "
                   "(tests/gpu/run.sh checks the real one)")
    env = dict(os.environ, LD_LIBRARY_PATH=tmpdir())
    p, trace = record([SLEEPER, "77", "3", "1000"], "-t", "gpumetrics,osrt",
                      "--osrt-threshold", "0", env=env)
    eq(p.stderr.count("gpumetrics: no NVIDIA driver here (libnvidia-ml.so.1"), 1, p.stderr)
    events = dump(trace)
    status = [e for e in events if e["kind"] == "gpu_metrics_status"]
    eq([e["args"]["state"] for e in status], ["no_nvml"], "the sampler's word")
    check(not any(e["kind"] == "gpu_metrics" for e in events), "no sample")
    calls = collections.Counter(e["name"] for e in events if e["kind"] == "syscall")
    eq(calls["getppid"], 77, "getppid, exactly")


def test_gpumetrics_sampler_crash_said_the_recording_goes_on():
    """NVML crashing the sampler: at its start (nothing said yet), or at its 40th tick: one
    warning, a gpu_metrics_status event saying how it ended, the samples before it, exit 0
    and osrt's counts beside it exact."""
    need_fake()
    for crash, state, said in (("0", "no_sampler", "the sampler could not run (killed by "
                                "signal 6)"),
                               ("40", "ended", "the sampler ended (pid ")):
        p, trace = record([SLEEPER, "33", "1", "700000"], "-t", "gpumetrics,osrt",
                          "--osrt-threshold", "0", "--gpu-metrics-frequency=200",
                          env=fake_env(crash=crash))
        eq(p.stderr.count(said), 1, f"crash at {crash}: {p.stderr[-600:]}")
        events = dump(trace)
        st = [e["args"]["state"] for e in events if e["kind"] == "gpu_metrics_status"]
        eq(st[-1], state, f"crash at {crash}: the last status of {st}")
        eq(len(samples(events, 0)), max(0, int(crash) - 1), "the samples before the crash")
        calls = collections.Counter(e["name"] for e in events if e["kind"] == "syscall")
        eq(calls["getppid"], 33, "getppid, exactly")


def test_gpumetrics_processes_of_the_recording_only():
    """NVML names two processes on GPU 0: a child of the launched command (a target, by its
    FORK) and one outside the recording (this test's): only the child's use is written."""
    need_fake()
    d = tmpdir()
    pids = os.path.join(d, "pids")
    with open(pids, "w") as f:
        f.write(f"{os.getpid()}\n")
    p, trace = record(["sh", "-c", f"sleep 0.8 & echo $!,{os.getpid()} > {pids}; wait"],
                      "-t", "gpumetrics", "--gpu-metrics-frequency=100",
                      env=fake_env(pids_file=pids))
    with open(pids) as f:
        child = int(f.read().split(",")[0])
    got = collections.Counter(e["pid"] for e in dump(trace) if e["kind"] == "gpu_process")
    eq(set(got), {child}, f"the processes written ({got})")
    check(got[child] >= 4, f"the child's samples: {got}")


def test_gpumetrics_slow_driver_lowers_the_rate():
    """Energy reads of 3 ms asked at 1000 Hz: the sampler samples at most at 1/(2 x 3 ms) and
    says the rate it took; what it took keeps to its own promise."""
    need_fake()
    d = tmpdir()
    counts = os.path.join(d, "c")
    p, trace = record([SLEEPER, "0", "1", "1500000"], "-t", "gpumetrics",
                      "--gpu-metrics-frequency=1000",
                      env=fake_env(latency_us=3000, counts=counts))
    m = re.findall(r"sampling at (\d+) Hz, not the 1000 asked", p.stderr)
    check(m, f"the lower rate said: {p.stderr[-500:]}")
    hz = int(m[-1])  # the rate it settled at (it may be lowered more than once)
    check(0 < hz <= 167, f"{hz} Hz")
    st = [e["args"] for e in dump(trace) if e["kind"] == "gpu_metrics_status"]
    eq((st[-1]["hz_asked"], st[-1]["hz"]), (1000, hz), "the STATUS record's rates")


def test_gpumetrics_sampler_keeps_to_half_a_core():
    """An H200's driver, as the fake plays it: a tick's energy read and NVML's slow reads
    (utilization...: every 10 ms whatever the rate) each burn 2.3 ms of CPU. Asked 1000 Hz,
    the ticks' median alone allows about 217 Hz, where every tick has its slow reads too: 86%
    of a core on the H200. The sampler lowers its rate until its CPU time is at most half its
    time: over 4 s, its own CPU time as its STOPPED record says it, at most 60% (its first
    rounds, at the rates it left, count too), settled under 150 Hz."""
    need_fake()
    p, trace = record([SLEEPER, "0", "1", "4000000"], "-t", "gpumetrics",
                      "--gpu-metrics-frequency=1000", env=fake_env(spin_us=2300))
    st = [e["args"] for e in dump(trace) if e["kind"] == "gpu_metrics_status"]
    m = re.search(r"(\d+) ticks in ([\d.]+) s; its CPU time ([\d.]+) ms", st[-1]["text"])
    check(m, f"the sampler's stop: {st[-1]}")
    share = float(m.group(3)) / 1000 / float(m.group(2))
    check(share <= 0.60, f"the sampler took {share:.0%} of a core: {st}")
    check(st[-1]["hz"] < 150, f"the rate it settled at: {st[-1]}")


def steps_trace():
    """gpum_steps' three 150 ms cudaProfilerStart..Stop ranges, recorded with -p (the fake
    names the process on GPU 0, not on GPU 1), DRAM at 85% while 30% of the SMs are active."""
    if "steps" not in _cache:
        need_fake()
        if not os.path.exists(CUDART) or not os.path.exists(STEPS):
            raise Skip(f"needs {CUDART} and {STEPS}")
        w = spawn([STEPS, CUDART, "3", "150", "50"])
        pid = int(w.stdout.readline().split()[1])
        env = fake_env(devices=2, pids=pid, dram=85, sm=30)
        out = os.path.join(cache_dir(), "steps.bst")
        r = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-p", str(pid), "-t",
                              "cuda,gpumetrics", "--gpu-metrics-frequency=1000"],
                             stderr=subprocess.PIPE, text=True, env=env)
        wait_for(lambda: "Ctrl-C" in r.stderr.readline(), 60, "the recorder's start line")
        tell(w, "go")
        eq(w.wait(30), 0, "workload exit")
        eq(r.wait(60), 0, "recorder exit")
        _cache["steps"] = (out, pid)
    return _cache["steps"]


def energy_at(series, t):
    """The energy counter at T, read between the samples around it (as the report reads)."""
    for (t0, e0), (t1, e1) in zip(series, series[1:]):
        if t0 <= t <= t1:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    raise AssertionError(f"{t} outside the samples")


def test_gpumetrics_energy_per_step():
    """Each step's joules: the fake's counter (300 W times its own clock) read from dump's
    samples at the step's start and end, exactly; and 300 W times the step, within 1%. Only
    GPU 0, where NVML names the process; memory-bound by its DRAM activity."""
    trace, pid = steps_trace()
    p = run([BPFSIGHT, "stats", trace, "-r", "gpu_metrics_step_sum", "--steps=cudaProfilerApi",
             "--format", "json"], check=True)
    rows = json.loads(p.stdout)["reports"]["gpu_metrics_step_sum"]
    eq(len(rows), 3, f"three steps, on GPU 0 only: {rows}")
    series = [(e["ts"], e["args"]["energy"]) for e in samples(dump(trace), 0)]
    for r in rows:
        eq((r["pid"], r["device"]), (pid, 0), "the process's GPU")
        a, b = r["start"], r["start"] + r["dur_ns"]
        want = (energy_at(series, b) - energy_at(series, a)) / 1000
        check(abs(r["energy_j"] - want) <= 0.0005 + 1e-9, f"step {r['step']}: {r} != {want}")
        scripted = POWER_MW / 1000 * r["dur_ns"] / 1e9
        check(abs(r["energy_j"] - scripted) <= 0.01 * scripted, f"{r} vs {scripted} J")
        check(abs(r["power_w"] - 300) <= 3, f"mean power {r}")
        eq(r["bound"], "memory", "DRAM at 85%, SMs at 30%")


def test_gpumetrics_verdict_and_top():
    """stats' verdict names GPU 0 memory-bound (busy, DRAM 85%, SM active 30%) and throttled
    a quarter of the time by its power cap; top's replay shows the process's SM% (the fake's
    40% over the time its samples cover) and the 300 W of its GPU."""
    trace, pid = steps_trace()
    p = run([BPFSIGHT, "stats", trace], check=True)
    check(re.search(r"GPU 0 \(Fake H100 0\) is memory-bound: busy \d+% of the time, its DRAM "
                    r"bandwidth at 85% of its peak while only 3\d% of its SMs were active",
                    p.stdout), p.stdout[:1500])
    m = re.search(r"GPU 0 \(Fake H100 0\) was throttled (\d+)% of the time: its clocks held "
                  r"down, mostly by sw_power_cap", p.stdout)
    # The fake caps the power 50 ticks of every 200 (its throttle reasons); the time that
    # holds, sample to sample as dump has them: a share of a quarter or more, by where the
    # recording's ticks begin and end and by the ticks a loaded machine has the sampler skip
    # (38% once, 575 of them skipped, beside three other test runs).
    held = [(e["ts"], int(e["args"]["throttle"], 16)) for e in dump(trace)
            if e["kind"] == "gpu_metrics" and e["args"].get("device") == 0
            and "throttle" in e["args"]]
    capped = sum(t1 - t0 for (t0, bits), (t1, _) in zip(held, held[1:]) if bits & 0x4)
    share = 100 * capped / (held[-1][0] - held[0][0])
    check(m and abs(int(m.group(1)) - share) <= 1 and 15 <= share <= 50,
          f"{share:.1f}% of the samples' time capped\n{p.stdout[:1500]}")
    # One frame over the whole recording: NVML's process samples reach the file at each poll
    # of the recorder (the last ones at its stop), after the frames their time falls in.
    p = run([BPFSIGHT, "top", "-i", "5s", trace], check=True)
    lines = [l.split() for l in p.stdout.splitlines()]
    heads = next(l for l in lines if "SM%" in l and "W" in l)
    rows = [l for l in lines if l and l[0] == str(pid)]
    sm = [float(l[heads.index("SM%")]) for l in rows if len(l) == len(heads)
          and l[heads.index("SM%")] != "-"]
    # 40% over the time the process's samples cover, of a frame that starts before them
    check(any(20 <= v <= 40 for v in sm), f"SM%: {sm}")
    w = [l[heads.index("W")] for l in rows if len(l) == len(heads)]
    check("300" in w, f"W: {w}")


def test_gpumetrics_exports():
    """Perfetto: a root track per device with a counter track per metric it has, values as
    dump's (SM Active %, Power W), none for temperature; Chrome: counters on pid = device;
    SQLite: nsys's GPU_METRICS and TARGET_INFO_GPU_METRICS, a row per metric per sample."""
    from test_export_perfetto import Model, decode, need_protoc, one
    trace, _, _, _ = scripted_trace()
    events = dump(trace)
    d = tmpdir()
    sq = os.path.join(d, "g.sqlite")
    run([BPFSIGHT, "export", trace, "--format", "sqlite", "-o", sq], check=True)
    db = sqlite3.connect(sq)
    nrows = sum(len(values(e)) for e in events if e["kind"] == "gpu_metrics")
    eq(db.execute("SELECT count(*) FROM GPU_METRICS").fetchone()[0], nrows, "GPU_METRICS rows")
    names = dict(db.execute("SELECT metricId, metricName FROM TARGET_INFO_GPU_METRICS "
                            "WHERE typeId = 0"))
    check("SM Active [%]" in names.values() and "Power [mW]" in names.values(), str(names))
    check(not any(n.startswith("Temp") for n in names.values()), "no temperature metric")
    power = [r[1] for r in db.execute(docs_query("gpu_power_watts"))]
    eq(power, [e["args"]["power"] / 1000 for e in samples(events, 0)], "docs' query: power")
    ch = os.path.join(d, "g.json")
    run([BPFSIGHT, "export", trace, "--format", "chrome", "-o", ch], check=True)
    with open(ch) as f:
        trace_events = json.load(f)["traceEvents"]
    sm = [e["args"]["value"] for e in trace_events
          if e.get("ph") == "C" and e["name"] == "SM Active (%)" and e["pid"] == 0]
    want = [e["args"]["sm_active"] for e in samples(events, 0) if "sm_active" in e["args"]]
    eq(sm, [v for i, v in enumerate(want) if i == 0 or v != want[i - 1]], "Chrome: SM active")
    need_protoc()
    pf = os.path.join(d, "g.pftrace")
    run([BPFSIGHT, "export", trace, "--format", "perfetto", "-o", pf], check=True)
    m = Model(decode(pf))
    root = [u for u, tds in m.tracks.items() if one(tds[-1], "name") == "GPU 0 metrics (Fake H100 0)"]
    eq(len(root), 1, "GPU 0's root track")
    kids = {one(tds[-1], "name"): u for u, tds in m.tracks.items()
            if one(tds[-1], "parent_uuid") == root[0]}
    check({"SM Active (%)", "Power (W)", "Energy (W)", "DRAM Active (%)"} <= set(kids), str(kids))
    check(not any(k.startswith("Temp") for k in kids), "no temperature track")
    got = [one(te, "double_counter_value") for (_, typ, _, uuid, te) in m.events
           if uuid == kids["SM Active (%)"]]
    eq([float(v) for v in got], [v for i, v in enumerate(want) if i == 0 or v != want[i - 1]],
       "Perfetto: SM active, where it changed")


def test_gpumetrics_prometheus_gauges():
    """monitor --gpu-metrics-devices=0: a real Prometheus answers dcgm-exporter's names with
    the fake's values (300 W, DRAM 41.5% as a ratio), labelled as dcgm-exporter labels them;
    no series for the temperature the device lacks."""
    from monitor_prom import Monitor, Prometheus
    need_fake()
    w = spawn(["sleep", "120"])
    saved = dict(os.environ)
    os.environ.update(fake_env(unsupported="temp"))
    try:
        mon = Monitor("-p", str(w.pid), "--gpu-metrics-devices=0",
                      "--gpu-metrics-frequency=50")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    prom = Prometheus(mon.target)
    q = 'DCGM_FI_DEV_POWER_USAGE{gpu="0",modelName="Fake H100 0",UUID="GPU-fake-0000"}'
    wait_for(lambda: prom.value(q) is not None, 20, q)
    check(300 <= prom.value(q) <= 300.17, f"power {prom.value(q)}")
    dram = prom.value('DCGM_FI_PROF_DRAM_ACTIVE{gpu="0"}')
    check(0.415 <= dram <= 0.41875, f"DRAM active {dram}")
    eq(prom.query("DCGM_FI_DEV_GPU_TEMP"), [], "no temperature series")
    prom.stop()
    eq(mon.stop(), 0, "monitor exit")


def test_gpumetrics_nsys_options_and_bad_values():
    """profile takes nsys's --gpu-metrics-devices/-frequency (the family, its options in the
    file's header) and says --gpu-metrics-set is not used; record takes nsys's older
    --gpu-metrics-device; none records nothing; bad values exit 1 saying what to give."""
    need_fake()
    out = os.path.join(tmpdir(), "p.bst")
    p = run([BPFSIGHT, "profile", "-t", "osrt", "-s", "none", "--cpuctxsw=none",
             "--gpu-metrics-devices=0", "--gpu-metrics-frequency=200", "--gpu-metrics-set=gh100",
             "-o", out, SLEEPER, "0", "1", "200000"], env=fake_env(), timeout=120)
    eq(p.returncode, 0, p.stderr[-500:])
    check("nsys's --gpu-metrics-set: bpfsight samples NVML's and GPM's metrics" in p.stderr,
          p.stderr)
    i = info(out)
    check("gpumetrics" in i["families"] and "gpu_metrics_frequency=200" in i["options"]
          and "gpu_metrics_devices=0" in i["options"], str(i))
    check(any(e["kind"] == "gpu_metrics" for e in dump(out)), "samples")
    out2 = os.path.join(tmpdir(), "r.bst")
    p = run([BPFSIGHT, "record", "-t", "osrt", "--gpu-metrics-device=none", "-o", out2, SLEEPER,
             "0", "1", "1000"], env=fake_env(), timeout=120)
    eq(p.returncode, 0, p.stderr[-500:])
    check("gpumetrics" not in info(out2)["families"], "none: no family")
    for bad, words in (("--gpu-metrics-frequency=0", "bad --gpu-metrics-frequency '0'"),
                       ("--gpu-metrics-frequency=9x", "samples per second"),
                       ("--gpu-metrics-devices=gpu0", "bad --gpu-metrics-devices 'gpu0'")):
        p = run([BPFSIGHT, "record", bad, "-o", os.path.join(tmpdir(), "x.bst"), "true"])
        eq(p.returncode, 1, f"{bad}: exit")
        check(words in p.stderr, f"{bad}: {p.stderr}")


def test_gpumetrics_report_page():
    """The report's page draws each GPU's SM activity and power on the shared time axis, and
    each GPU's energy among its headline figures: dump's counter, last less first."""
    trace, _ = steps_trace()
    page = os.path.join(tmpdir(), "page.html")
    run([BPFSIGHT, "report", trace, "-o", page], check=True)
    with open(page) as f:
        html = f.read()
    for fig, words in (("tl-gpum-sm", "GPU SM activity"), ("tl-gpum-power", "GPU power")):
        i = html.find(f'id="{fig}"')
        check(i >= 0, f"the {words} timeline")
        seg = html[i:html.index("</figure>", i)]
        check(words in seg and '<li class="s0">GPU ' in seg and "<polyline" in seg, seg[:400])
    events = dump(trace)
    for dev in (0, 1):
        e = [x["args"]["energy"] for x in samples(events, dev)]
        m = re.search(rf'title="([\d.]+) J over [\d.]+ s: [\d.]+ W on average">[^<]*</span>'
                      rf'<span class="l">GPU {dev} energy', html)
        check(m, f"GPU {dev}'s energy figure")
        eq(m.group(1), f"{(e[-1] - e[0]) / 1000:.3f}", f"GPU {dev}'s joules")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_gpumetrics_sampler_not_traced_under_a():
    """-a traces every process but bpfsight's own: the sampler's 1,000 wake-ups a second make
    no syscall or off-CPU event, while the other processes' do."""
    need_fake()
    out = os.path.join(tmpdir(), "a.bst")
    p = run([BPFSIGHT, "record", "-a", "-t", "osrt,sched,gpumetrics",
             "--gpu-metrics-frequency=1000", "-d", "1", "-o", out], env=fake_env(), timeout=120)
    eq(p.returncode, 0, p.stderr[-500:])
    events = dump(out)
    sampler = [e["args"]["sampler_pid"] for e in events if e["kind"] == "gpu_metrics_status"]
    check(sampler and sampler[0] > 0, f"the sampler's pid: {sampler}")
    mine = [e for e in events if e["pid"] == sampler[0] and e["kind"] in ("syscall", "offcpu")]
    eq(mine, [], "the sampler's own events")
    check(sum(e["kind"] in ("syscall", "offcpu") for e in events) > 0, "others' events")
    check(len(samples(events, 0)) > 500, "its samples")
