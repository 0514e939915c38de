"""nvtx family: NVTX ranges through the real cupti-shim and `bpfsight record` on this kernel.

The workload (tests/workloads/shim/nvtx_ranges.c) emits exactly what its header comment lists:
nested push/pop, ranges in worker threads, a start/end range ended on another thread, a
domain with registered strings, marks with payloads and colors, thread and category names.
Each test rebuilds that list from the thread ids the workload prints and compares it with the
whole dump, then checks the timing the sleeps guarantee.
"""
import collections
import json
import os
import signal
import struct
import threading
import time

import shim_batches
from helpers import (BPFSIGHT, BUILD, Recorder, check, dump, eq, info, need_root, run, spawn,
                     tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 10

SHIM = os.path.join(BUILD, "libbpfsight-shim.so")
RANGES = workload("shim/nvtx_ranges")
CHAIN = workload("shim/libnvtx_chain.so")
NVTX_KINDS = ("nvtx_range", "nvtx_mark", "nvtx_name")
DOM = "bpfsight.test"
MS = 1000000


def need_shim():
    need_root()
    for p in (SHIM, RANGES):
        check(os.path.exists(p), f"{p} missing: run make test-build (needs the CUDA toolkit)")


def shim_env(**kw):
    return dict(os.environ, NVTX_INJECTION64_PATH=SHIM, **kw)


def parse(stdout):
    """nvtx_ranges' JSON lines: (pid, main tid, [loop dicts], child pid or None)."""
    lines = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    head = lines[0]
    loops = [l for l in lines if "loop" in l]
    child = next((l["child"] for l in lines if "child" in l), None)
    return head["pid"], head["main"], loops, child


def range_(name, tid, depth=None, style="PushPop", domain="", end_tid=None, **args):
    a = dict(domain=domain, style=style, end_tid=end_tid or tid, category=0)
    if depth is not None:
        a["depth"] = depth
    a.update(args)
    return ("nvtx_range", name, tid, a)


def mark(name, tid, domain="", **args):
    return ("nvtx_mark", name, tid, dict(dict(domain=domain, category=0), **args))


def names(main):
    return [("nvtx_name", "nvtx-main", main, dict(what="thread", key=main, domain="")),
            ("nvtx_name", "compute", main, dict(what="category", key=1, domain="")),
            ("nvtx_name", "io", main, dict(what="category", key=2, domain="")),
            ("nvtx_name", "domain-cat", main, dict(what="category", key=7, domain=DOM))]


def loop_events(main, l, second=False):
    """What loop L (a line of the workload's output) records, per its header comment."""
    i, w1, w2 = l["loop"], l["w1"], l["w2"]
    ev = [range_("outer", main, 0),
          range_("middle", main, 1, category=1, color="#FF00FF00", payload=i),
          range_("inner-\u03c9", main, 2),
          mark("mark-a", main),
          mark("mark-payload", main, category=2, color="#FFFF0000", payload=2.5),
          range_("cross-thread", main, style="StartEnd", end_tid=w1, range_id=l["cross"]),
          range_("registered-step", main, 0, domain=DOM, payload=7, registered=True),
          mark("registered-mark", main, domain=DOM),
          range_("domain-inner", main, 1, domain=DOM, category=7, payload=1.5),
          range_("domain-startend", main, style="StartEnd", domain=DOM,
                 range_id=l["domain_range"])]
    for k, w in ((1, w1), (2, w2)):
        ev += [("nvtx_name", f"nvtx-worker-{k}", w, dict(what="thread", key=w, domain="")),
               range_(f"worker-{k}", w, 0), range_(f"worker-{k}-inner", w, 1, payload=-k)]
    if second:
        ev += [range_("second-dso", main, 0), mark("second-dso-mark", main)]
    return ev


def got_events(events, pid):
    return [e for e in events if e["pid"] == pid and e["kind"] in NVTX_KINDS]


def same(got, exp, what):
    """GOT (dump events) hold exactly EXP [(kind, name, tid, args)], in any order."""
    g = collections.Counter(json.dumps([e["kind"], e["name"], e["tid"], e["args"]],
                                       sort_keys=True) for e in got)
    x = collections.Counter(json.dumps(list(t), sort_keys=True) for t in exp)
    missing, extra = x - g, g - x
    if missing or extra:
        raise AssertionError(f"{what}: missing {list(missing)[:4]}, unexpected "
                             f"{list(extra)[:4]} ({len(got)} got, {len(exp)} expected)")


def by_name(evs, name):
    return sorted((e for e in evs if e["name"] == name), key=lambda e: e["ts"])


def check_timing(evs, nloops, t_start, t_end, what):
    """The sleeps' lower bounds, nesting, and every range inside the recording."""
    for e in evs:
        check(t_start <= e["ts"] and e["ts"] + e["dur"] <= t_end,
              f"{what}: {e['name']} at {e['ts']} outside the recording")
    for name, ms in (("inner-\u03c9", 20), ("middle", 20), ("outer", 35), ("worker-1", 10),
                     ("worker-2", 10), ("cross-thread", 10), ("domain-inner", 5),
                     ("registered-step", 5)):
        # At least its sleep; no upper bound but the recording's edges (above) and the
        # nesting (below): a loaded machine wakes a 35 ms sleep 700 ms late.
        for e in by_name(evs, name):
            check(ms * MS <= e["dur"], f"{what}: {name} lasted {e['dur']} ns, it sleeps {ms} ms")
    outer, middle, inner = by_name(evs, "outer"), by_name(evs, "middle"), by_name(evs,
                                                                                "inner-\u03c9")
    eq(len(outer), nloops, f"{what}: loops")
    for o, m, n in zip(outer, middle, inner):
        check(o["ts"] <= m["ts"] <= n["ts"] and n["ts"] + n["dur"] <= m["ts"] + m["dur"] <=
              o["ts"] + o["dur"], f"{what}: outer > middle > inner nesting by time")


def test_launch_exact():
    need_shim()
    out = os.path.join(tmpdir(), "t.bst")
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    p = run([BPFSIGHT, "record", "-o", out, "-t", "nvtx", "--", RANGES, "--loops", "2"])
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    pid, main, loops, _ = parse(p.stdout)
    evs = got_events(dump(out), pid)
    exp = names(main)
    for l in loops:
        exp += loop_events(main, l)
    same(evs, exp, "launch mode, 2 loops")
    check_timing(evs, 2, t0, t1, "launch")
    eq(info(out)["lost_total"], 0, "nothing lost")


def test_launch_second_dso_and_fork_child():
    """Each DSO's NVTX instance initializes the injection; a forked child is traced too."""
    need_shim()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "nvtx", "--", RANGES, "--loops", "2",
             "--second-dso", "--fork"])
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    pid, main, loops, child = parse(p.stdout)
    events = dump(out)
    exp = names(main)
    for l in loops:
        exp += loop_events(main, l, second=True)
    same(got_events(events, pid), exp, "--second-dso")
    check(child and child != pid, f"the child's pid: {child}")
    # the child marks child-wake before its poller restarts (not seen), then pushes "child";
    # the category names it inherited go with that first record, as its own (not the
    # parent's thread names: those threads are not in the child)
    cev = got_events(events, child)
    same(cev, [range_("child", child, 0)] + [n[:2] + (child,) + n[3:] for n in names(main)
                                             if n[3]["what"] == "category"], "fork child")
    r = by_name(cev, "child")[0]
    check(10 * MS <= r["dur"] < 500 * MS, f"child range lasted {r['dur']}")


def attach_run(loops, duration=None, batches_out=None, then_wait=(), **env):
    """nvtx_ranges started with the shim in its environment (and ENV), -p attached after it
    loaded it; (recorder, pid, main, loops, proc). BATCHES_OUT (a list) gets the path of the
    shim's batch dump. THEN_WAIT: (K, PATH), the workload waits for PATH after K loops."""
    d = tmpdir()
    go, batches = os.path.join(d, "go"), os.path.join(d, "batches.bin")
    then = ["--then-wait", str(then_wait[0]), then_wait[1]] if then_wait else []
    # line-buffered: the loop lines of a process killed mid-run are wanted too
    w = spawn(["stdbuf", "-oL", RANGES, "--loops", str(loops), "--wait-file", go] + then,
              env=shim_env(BPFSIGHT_SHIM_DUMP=batches, **env))
    head = json.loads(w.stdout.readline())
    opts = ["-t", "nvtx", "-p", str(head["pid"])] + (["-d", duration] if duration else [])
    r = Recorder(*opts)
    r.wait_ready()
    shim_batches.wait_status(batches, head["pid"], lambda r: "nvtx_on" in r["state_bits"],
                             "nvtx_on")  # its poller saw the recorder
    open(go, "w").close()
    if batches_out is not None:
        batches_out.append(batches)
    return r, head["pid"], head["main"], w


def test_attach_pid_after_start():
    """-p: everything after the attach, exactly; nothing before (the process had loaded the
    shim and idled)."""
    need_shim()
    r, pid, main, w = attach_run(3)
    eq(w.wait(60), 0, "workload exit")
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    _, _, loops, _ = parse(json.dumps({"pid": pid, "main": main}) + "\n" + w.stdout.read())
    evs = got_events(dump(r.out), pid)
    exp = names(main)
    for l in loops:
        exp += loop_events(main, l)
    same(evs, exp, "-p, 3 loops")
    st = [e for e in dump(r.out) if e["pid"] == pid and e["kind"] == "shim_status"]
    eq(st[0]["name"], "attach", "first status")
    check("nvtx_on" not in st[0]["args"]["state"], f"idle until attached: {st[0]}")
    check(any("nvtx_on" in e["args"]["state"] for e in st), "then recording")


def test_a_recorder_joining_another_gets_every_name():
    """A second recorder (-p) joins while a first one records the process (monitor left
    running, a `record -p` beside it): the shim, already in the first one's session, sends
    the names again (the category, thread and domain names, the registered strings it sent
    the first one long before), then a join status. The newcomer's file has every name, and
    from its first loop after the join on, exactly the first recorder's ranges and marks,
    names resolved; the first one's file stays exact (names not written twice)."""
    need_shim()
    batches = []
    # After its first loop the workload waits for the join: loops 2-8 come after it, however
    # long the second recorder takes to start on a busy machine.
    joined_file = os.path.join(tmpdir(), "joined")
    r, pid, main, w = attach_run(8, batches_out=batches, then_wait=(1, joined_file))
    first = json.loads(w.stdout.readline())  # a loop done: every name sent to the first
    check("loop" in first, f"loop line {first}")
    r2 = Recorder("-t", "nvtx", "-p", str(pid))
    r2.wait_ready()

    def joined():
        try:
            data = open(batches[0], "rb").read()
            return any(x["kind"] == "status" and x["event_name"] == "join"
                       for x in shim_batches.records(data))
        except (AssertionError, struct.error):
            return False  # a batch being written
    wait_for(joined, 30, "the shim's join status")
    open(joined_file, "w").close()
    eq(w.wait(60), 0, "workload exit")
    eq(r.wait(60), 0, f"first recorder exit ({r.stderr})")
    eq(r2.wait(60), 0, f"second recorder exit ({r2.stderr})")
    _, _, loops, _ = parse(json.dumps({"pid": pid, "main": main}) + "\n" + json.dumps(first) +
                           "\n" + w.stdout.read())
    exp = names(main)
    for l in loops:
        exp += loop_events(main, l)
    got1 = got_events(dump(r.out), pid)
    same(got1, exp, "the first recorder, 8 loops")
    ev2 = dump(r2.out)
    st = [e for e in ev2 if e["pid"] == pid and e["kind"] == "shim_status"]
    eq([e["name"] for e in st if e["name"] in ("attach", "join")], ["join"],
       "the second recorder's session: joined")
    got2 = got_events(ev2, pid)
    have = {(e["name"], e["args"]["what"], e["args"]["key"]) for e in got2
            if e["kind"] == "nvtx_name"}
    for _, name, _, a in names(main):
        check((name, a["what"], a["key"]) in have, f"the second recorder has {name}")
    t0 = min(e["ts"] for e in by_name(got2, "outer") if e["ts"] > st[0]["ts"])
    check(sum(1 for e in by_name(got2, "outer") if e["ts"] >= t0) >= 3,
          "three loops after the join")

    def after(evs):
        return [e for e in evs if e["kind"] != "nvtx_name" and e["ts"] >= t0]
    same(after(got2), [(e["kind"], e["name"], e["tid"], e["args"]) for e in after(got1)],
         "the second recorder after the join")


def test_recording_ends_while_running_drains():
    """The recording ends mid-run (once the workload has done 3 loops: -d and signals stop
    it the same way): the shim flushes (drained), ranges still open are written flagged open,
    every loop that ended is complete; a later recording finds the shim idle again."""
    need_shim()
    batches = []
    r, pid, main, w = attach_run(40, batches_out=batches, BPFSIGHT_SHIM_DEBUG="1")
    log = []  # the shim's debug lines: "detached" once the first recording's probes are gone
    threading.Thread(target=lambda: log.extend(w.stderr), daemon=True).start()
    lines = [w.stdout.readline() for _ in range(3)]  # 3 loops done (line-buffered)
    check(all('"loop"' in l for l in lines), f"loop lines {lines}")
    eq(r.stop(signal.SIGINT), 0, f"recorder exit ({r.stderr})")
    check(w.poll() is None, "the workload outlives the recording")
    events = dump(r.out)
    evs = got_events(events, pid)
    st = [e["name"] for e in events if e["pid"] == pid and e["kind"] == "shim_status"]
    check("drained" in st, f"the drain was confirmed: {st}")
    check("did not confirm" not in r.stderr, r.stderr)
    open_ = [e for e in evs if e["args"].get("open")]
    done = [e for e in by_name(evs, "outer") if not e["args"].get("open")]
    check(len(done) >= 3, f"loops done before the stop: {len(done)}")
    check([e["name"] for e in open_ if e["name"] == "outer"] == ["outer"],
          f"the loop running at the end is open: {[e['name'] for e in open_]}")
    done_ts = done[-1]["ts"] + done[-1]["dur"]
    for e in open_:
        check(e["ts"] + e["dur"] >= done_ts, f"open {e['name']} lasts until the drain")
    # a second recording, once the shim saw the first one's probes go: they are removed by a
    # detached process after the recorder exits (link_reaper.h), which takes its time on a
    # loaded machine. It ends once the shim has told it so (its second attach status, in
    # the batch dump).
    wait_for(lambda: any("detached" in l for l in log), 60, "the shim's detach")
    r2 = Recorder("-t", "nvtx", "-p", str(pid))
    r2.wait_ready()

    def attaches():
        try:
            data = open(batches[0], "rb").read()
            return sum(1 for x in shim_batches.records(data)
                       if x["kind"] == "status" and x["event_name"] == "attach")
        except (AssertionError, struct.error):
            return 0  # a batch being written
    wait_for(lambda: attaches() >= 2, 30, "the shim's attach status for the second recorder")
    eq(r2.stop(signal.SIGINT), 0, f"second recorder ({r2.stderr})")
    st2 = [e for e in dump(r2.out) if e["pid"] == pid and e["kind"] == "shim_status"]
    check(st2 and st2[0]["name"] == "attach" and "nvtx_on" not in st2[0]["args"]["state"],
          f"the shim stopped after the first recording: {st2[:1]}")
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    # every loop that ended before the drain is exact
    _, _, loops, _ = parse(json.dumps({"pid": pid, "main": main}) + "\n" + "".join(lines) +
                           w.stdout.read())
    exp = names(main)
    for l in loops[:len(done)]:
        exp += loop_events(main, l)
    same([e for e in evs if not e["args"].get("open") and e["ts"] <= done_ts], exp,
         "the loops that ended")


def test_chaining_keeps_the_other_library():
    """BPFSIGHT_NVTX_CHAIN: the shim records and passes every call on (CUPTI's NVTX case)."""
    need_shim()
    d = tmpdir()
    counts = os.path.join(d, "counts.json")
    env = shim_env(BPFSIGHT_NVTX_CHAIN=CHAIN, BPFSIGHT_TEST_CHAIN_OUT=counts)
    out = os.path.join(d, "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "nvtx", "--", RANGES, "--loops", "2"],
            env=env)
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    check("already set" not in p.stderr, "the job's own shim path is no conflict")
    pid, main, loops, _ = parse(p.stdout)
    events = dump(out)
    exp = names(main)
    for l in loops:
        exp += loop_events(main, l)
    same(got_events(events, pid), exp, "chained")
    st = [e for e in events if e["pid"] == pid and e["kind"] == "shim_status"]
    check(any("nvtx_chained" in e["args"]["state"] for e in st), f"chained state: {st[-1:]}")
    with open(counts) as f:
        c = json.load(f)
    # 2 loops: 7 default-domain pushes and pops, 2 marks, 1 start/end, 2 thread names, 2
    # domain pushes and pops, 1 domain mark and start/end each; once: the main thread's
    # name, the domain, 2 registered strings
    eq(c, {"inits": 1, "push": 14, "pop": 14, "mark": 4, "start": 2, "end": 2,
           "name_thread": 5, "domain_create": 1, "register_string": 2, "domain_push": 4,
           "domain_pop": 4, "domain_mark": 2, "domain_start": 2, "domain_end": 2,
           "bad_handle": 0}, "every call reached the chained library, with its own handles")


def capture(spec, fams="nvtx,osrt", status=0):
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", fams, f"--capture-range=nvtx:{spec}", "--",
             RANGES, "--loops", "2"])
    eq(p.returncode, status, f"exit ({p.stderr[-500:]})")
    pid, main, loops, _ = parse(p.stdout)
    return p, out, pid, main, loops


def test_capture_range_nvtx():
    need_shim()
    p, out, pid, main, loops = capture("middle")
    events = [e for e in dump(out) if e["pid"] == pid]
    rng = by_name(got_events(events, pid), "middle")
    eq(len(rng), 2, "both middle ranges kept")
    kept = [e for e in events if e["kind"] not in ("process", "thread", "nvtx_name",
                                                   "shim_status", "exec", "exit", "comm",
                                                   "fork", "new_code", "loss")]
    for e in kept:
        check(any(r["ts"] <= e["ts"] <= r["ts"] + r["dur"] for r in rng),
              f"{e['kind']} {e['name']} at {e['ts']} is outside every middle range")
    eq(sorted(e["name"] for e in got_events(kept, pid)),
       ["inner-\u03c9", "inner-\u03c9", "middle", "middle"], "NVTX inside the ranges")
    check(any(e["kind"] == "syscall" for e in kept), "the sleep's syscalls inside are kept")
    check("events outside the ranges were not kept" in p.stderr, p.stderr)
    # nsys's NAME@DOMAIN (a registered string's text) and NAME@* forms
    _, out, pid, _, _ = capture(f"registered-step@{DOM}", fams="nvtx")
    eq(sorted(e["name"] for e in got_events(dump(out), pid) if e["kind"] != "nvtx_name"),
       sorted(["registered-step", "registered-mark", "domain-inner"] * 2),
       "registered-step@domain")
    _, out, pid, _, _ = capture("domain-inner@*", fams="nvtx")
    eq(sorted(e["name"] for e in got_events(dump(out), pid) if e["kind"] != "nvtx_name"),
       ["domain-inner"] * 2, "NAME@*")
    # NAME alone is the default domain's: domain-inner is in another one. No range opened:
    # nothing captured, which fails the recording (exit 1) and says so.
    p, out, pid, _, _ = capture("domain-inner", fams="nvtx", status=1)
    eq([e["name"] for e in got_events(dump(out), pid) if e["kind"] != "nvtx_name"], [],
       "NAME: default domain only")
    check("no range opened while recording: nothing was captured" in p.stderr, p.stderr)


def test_program_without_nvtx():
    """The default families on a program without NVTX or CUDA: it runs as before."""
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "--", "sh", "-c", "echo hello; exit 3"])
    eq((p.returncode, p.stdout), (3, "hello\n"), "CMD's exit status and output")
    check(not [e for e in dump(out) if e["kind"] in NVTX_KINDS], "no NVTX records")


def ended_first(r):
    """Whether recorder R refused to start because its -p target had already exited."""
    if r.started() or ("has exited" not in r.stderr and "no such process" not in r.stderr):
        return False
    check(r.wait(60) != 0, f"a recorder without a target fails: {r.stderr[-300:]}")
    return True


def test_chaining_forwards_every_call_under_stress():
    """Threads, a fork and recordings that start and stop meanwhile: the chained library gets
    every call of the parent and of the child, exactly (nvtx_bench --fork: each process runs
    THREADS threads of ITERS timed and ITERS / 10 warm-up push/pop pairs, a mark and a 20 ms
    sleep every 1000: about a second, for recordings to come and go)."""
    need_shim()
    bench = workload("shim/nvtx_bench")
    iters, threads = 40000, 4
    d = tmpdir()
    go, counts = os.path.join(d, "go"), os.path.join(d, "counts.json")
    w = spawn([bench, "--iters", str(iters), "--threads", str(threads), "--marks",
               "--pace", "20", "--wait-file", go, "--fork"],
              env=shim_env(BPFSIGHT_NVTX_CHAIN=CHAIN, BPFSIGHT_TEST_CHAIN_OUT=counts))
    pid = json.loads(w.stdout.readline())["pid"]
    recordings = 0
    while True:
        r = Recorder("-t", "nvtx", "-p", str(pid))
        if recordings and ended_first(r):
            break  # the work ended between the last recording and this one
        r.wait_ready()
        if recordings == 0:
            open(go, "w").close()  # the work, and the fork, start while this one records
        recordings += 1
        eq(r.stop(), 0, f"recording {recordings} exit ({r.stderr[-400:]})")
        if w.poll() is not None:
            break
    out, err = w.communicate(timeout=120)
    eq(w.returncode, 0, f"nvtx_bench exit: {err[-300:]}")
    procs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    eq(len(procs), 2, f"the parent and the child report: {out[-300:]}")
    pairs = threads * (iters + iters // 10)
    want = {"inits": 1, "push": pairs, "pop": pairs, "mark": threads * (iters // 1000),
            "start": 0, "end": 0, "name_thread": 0, "domain_create": 0, "register_string": 0,
            "domain_push": 0, "domain_pop": 0, "domain_mark": 0, "domain_start": 0,
            "domain_end": 0, "bad_handle": 0}
    for p in procs:
        path = counts if p["pid"] == pid else f"{counts}.{p['pid']}"
        with open(path) as f:
            who = "parent" if p["pid"] == pid else "child"
            eq(json.load(f), want, f"calls of the {who} (pid {p['pid']}) that reached the "
               f"chained library, {recordings} recordings")


def shim_thread_runs(pid):
    """How many times the shim's poller thread has run (schedstat's third field)."""
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        with open(f"{task}/{tid}/comm") as f:
            if f.read().strip() == "bpfsight-shim":
                with open(f"{task}/{tid}/schedstat") as s:
                    return int(s.read().split()[2])
    raise AssertionError(f"no bpfsight-shim thread in {pid}")


def test_the_shim_sleeps_between_recordings_and_the_next_wakes_it():
    """Once a recording has gone, the shim's poller makes no wakeup at all (it polled every
    50 ms for as long as the job lived): it sleeps until the next recording wakes it, which
    then records every loop."""
    need_shim()
    go2 = os.path.join(tmpdir(), "go2")
    r, pid, main, w = attach_run(4, then_wait=(2, go2), BPFSIGHT_SHIM_DEBUG="1")
    log = []
    threading.Thread(target=lambda: log.extend(w.stderr), daemon=True).start()
    lines = [w.stdout.readline() for _ in range(2)]
    check(all('"loop"' in l for l in lines), f"loop lines {lines}")
    eq(r.stop(signal.SIGINT), 0, f"recorder exit ({r.stderr})")
    wait_for(lambda: any("idle: sleeping" in l for l in log), 60, "the shim's sleep")
    before = shim_thread_runs(pid)
    time.sleep(1.0)
    eq(shim_thread_runs(pid), before, "the shim thread's runs over 1 s between recordings")
    r2 = Recorder("-t", "nvtx", "-p", str(pid))
    r2.wait_ready()
    wait_for(lambda: sum("attached: session" in l for l in log) >= 2, 30,
             "the second recording's attach, once it woke the shim")
    open(go2, "w").close()
    eq(w.wait(60), 0, "workload exit")
    eq(r2.wait(60), 0, f"second recorder exit ({r2.stderr})")
    outer = [e for e in got_events(dump(r2.out), pid) if e["name"] == "outer"]
    eq(len(outer), 2, "the second recording's loops")
