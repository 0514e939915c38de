"""The uprobe families' per-thread call stacks (bpf/ucall.bpf.h): array slots found by tid,
task storage for a thread that finds none free, slots freed when their thread exits; and a
stack that stays right when the probes go in while the process is calling.

tests/workloads/ucall_threads.c starts waves of threads whose tids all fall on one slot,
more of them than a thread may probe, each calling the real libcudart's cudaStreamQuery with
a stream value of its own. While a wave's threads are alive and idle, the test reads the
recorder's own ucall_slots map (bpftool, by the map ids in /proc/RECORDER/fdinfo): exactly
UCALL_PROBES slots, owned by threads of the wave; once they exited, none. The trace must
hold every call of every thread, slot or not, with its own stream value.
"""
import collections
import json
import os
import re
import shutil
import time

from helpers import (Recorder, Skip, check, dump, eq, info, need_root, run, spawn, stats,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
THREADS = workload("ucall_threads")
SPIN = workload("ucall_spin")
CALLS = 50


def ucall_consts():
    """UCALL_SLOTS and UCALL_PROBES as bpf/ucall.bpf.h defines them (UCALL_SLOTS is the
    contract's BS_UCALL_SLOTS, bpf/ucall_records.h: user space maps the slots too)."""
    text = "".join(open(os.path.join(ROOT, "bpf", h)).read()
                   for h in ("ucall_records.h", "ucall.bpf.h"))
    vals = {}
    for name in ("BS_UCALL_SLOTS", "UCALL_SLOTS", "UCALL_PROBES"):
        m = re.search(rf"#define {name}\s+(\w+)", text)
        check(m, f"no {name} in bpf/ucall.bpf.h or bpf/ucall_records.h")
        vals[name] = int(m.group(1)) if m.group(1).isdigit() else vals[m.group(1)]
    return vals["UCALL_SLOTS"], vals["UCALL_PROBES"]


def slots_map_id(pid):
    """The id of the ucall_slots map that process PID (the recorder) holds."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            m = re.search(r"^map_id:\s+(\d+)", open(os.path.join(fdinfo, fd)).read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    found = []
    for i in ids:
        p = run(["bpftool", "map", "show", "id", str(i), "--json"])
        if p.returncode == 0 and json.loads(p.stdout).get("name") == "ucall_slots":
            found.append(i)
    eq(len(found), 1, f"ucall_slots maps held by the recorder (pid {pid})")
    return found[0]


def owners(map_id):
    """{slot: (owner tid, depth)} of the slots owned now."""
    p = run(["bpftool", "map", "dump", "id", str(map_id), "--json"], check=True)
    out = {}
    for e in json.loads(p.stdout):
        v = e["formatted"]["value"]
        if v["owner"]:
            out[e["formatted"]["key"]] = (v["owner"], v["depth"])
    return out


def step(w, expect):
    """Send a line to the workload; read its lines up to EXPECT; returns them."""
    w.stdin.write("\n")
    w.stdin.flush()
    lines = []
    while True:
        line = w.stdout.readline()
        if not line:
            raise AssertionError(f"workload ended before '{expect}': "
                                 f"{w.stderr.read()[-800:]}")
        lines.append(line.split())
        if line.strip() == expect:
            return lines


def test_slots_taken_shared_and_freed():
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    if not shutil.which("bpftool"):
        raise Skip("no bpftool")
    nslots, nprobes = ucall_consts()
    nthreads = nprobes + 2
    w = spawn([THREADS, CUDART, str(nthreads), str(CALLS), str(nslots)])
    pid = int(w.stdout.readline().split()[1])
    residue = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "-p", str(pid))
    r.wait_ready()
    map_id = slots_map_id(r.p.pid)
    eq(owners(map_id), {}, "slots before any call")
    window = {(residue + i) % nslots for i in range(nprobes)}
    tids, streams = {}, {}
    for wave in (1, 2):
        lines = step(w, f"wave {wave} called")
        wave_tids = set()
        for f in lines:
            if f[0] == "tid":
                tid = int(f[3])
                eq(tid % nslots, residue, f"wave {wave}: tid {tid} on the workload's slot")
                tids[tid], streams[tid] = wave, f[4]
                wave_tids.add(tid)
        eq(len(wave_tids), nthreads, f"wave {wave}: distinct threads")
        held = owners(map_id)
        eq(set(held), window, f"wave {wave}: the slots taken are the {nprobes} of the window "
                              f"(map {map_id}; recorder: {r.stderr[-600:]})")
        check({o for o, _ in held.values()} <= wave_tids and
              len({o for o, _ in held.values()}) == nprobes,
              f"wave {wave}: {nprobes} threads of the wave own them: {held} vs {wave_tids}")
        eq({d for _, d in held.values()}, {0}, f"wave {wave}: depth between calls")
        step(w, f"wave {wave} exited")
        # The exit hook frees a slot when its thread exits: the next wave takes them all.
        deadline = time.time() + 5
        while owners(map_id) and time.time() < deadline:
            time.sleep(0.05)
        eq(owners(map_id), {}, f"wave {wave}: slots after its threads exited")
    step(w, "done")
    eq(w.wait(30), 0, "workload exit")
    eq(r.wait(30), 0, f"recorder exit ({r.stderr})")
    calls = collections.Counter()
    for e in dump(r.out):
        if e["kind"] == "cuda_api" and e["pid"] == pid:
            eq(e["name"], "cudaStreamQuery", "the workload's only call")
            check(e["tid"] in tids, f"a call from thread {e['tid']}, not one of the waves'")
            eq(e["args"].get("stream"), streams[e["tid"]], f"thread {e['tid']}'s stream")
            check(0 < e["dur"] < 10**9, f"duration {e['dur']} ns")
            calls[e["tid"]] += 1
    eq(dict(calls), {t: CALLS for t in tids}, "calls per thread (slot or task storage)")
    eq(stats(r.out, "cuda_api_sum")["cuda_api_sum"][0]["count"], 2 * nthreads * CALLS,
       "cuda_api_sum")


def test_attach_while_calling():
    """-p on a process that calls cudaStreamQuery without pause: entry and return probes go
    in while it runs. Every call after that is one record at depth 0, nothing is lost (a
    frame pushed by an entry whose return probe did not exist yet would push every later
    call one level deeper, and past 8 levels lose them all)."""
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    marks = 1000
    w = spawn([SPIN, CUDART, str(marks)])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "-p", str(pid))
    r.wait_ready()
    w.stdin.write("\n")
    w.stdin.flush()
    eq(w.stdout.readline().split(), ["marked", str(marks)], "the workload's marked calls")
    w.stdin.close()
    eq(w.wait(30), 0, "workload exit")
    eq(r.wait(30), 0, f"recorder exit ({r.stderr})")
    eq(info(r.out)["lost_total"], 0, "events lost")
    streams = collections.Counter()
    for e in dump(r.out):
        if e["kind"] == "cuda_api" and e["pid"] == pid:
            eq(e["args"].get("depth", 0), 0, f"depth of {e['name']} at {e['ts']}")
            streams[e["args"].get("stream")] += 1
    eq(streams["0x5b"], marks, "the marked calls")
    check(streams["0x5a"] > 0, "calls of the loop recorded")
    eq(set(streams), {"0x5a", "0x5b"}, "streams")
    eq(stats(r.out, "cuda_api_sum")["cuda_api_sum"][0]["count"], sum(streams.values()),
       "cuda_api_sum: every call at depth 0")
