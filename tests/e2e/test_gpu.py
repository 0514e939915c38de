"""gpu family: CUPTI records through the real cupti-shim, the channel and the launch join.

There is no GPU here: tests/workloads/shim/cupti_feed.c makes twelve real CUDA runtime calls
(libcudart, probed by the cuda family; they fail), then feeds the shim a buffer of real CUPTI
13 activity records for them (kernels on two devices and three streams, a graph node, copies
of every direction, a peer copy, memsets, and the API records with their correlation ids)
through the shim's own bufferCompleted decode path, and prints everything it fed. Each test
compares that with the dump, record for record, and checks that every GPU record is linked to
the cuda-family event of the call that launched it (same thread, call_ts = its start).
"""
import json
import os
import stat
import shim_batches

from helpers import (BPFSIGHT, BUILD, Recorder, alone, check, dump, eq, info, need_root, run,
                     spawn, stats, tmpdir, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 5

SHIM = os.path.join(BUILD, "libbpfsight-shim.so")
# cupti_feed feeds CUPTI records through the test variant's hook (not in the shipped shim).
SHIM_TEST = workload("shim/libbpfsight-shim-test.so")
FEED = workload("shim/cupti_feed")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"

COPY = {1: "HtoD", 2: "DtoH", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
COPY_NAME = {1: "Host-to-Device", 2: "Device-to-Host", 8: "Device-to-Device",
             9: "Host-to-Host", 10: "Peer-to-Peer"}
MEM = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
       6: "device_static", 7: "managed_static"}
DEMANGLED = {"_Z8kernel_av": "kernel_a()", "_Z8kernel_bPfi": "kernel_b(float*, int)",
             "_Z8kernel_cv": "kernel_c()", "_Z10graph_nodev": "graph_node()",
             "_Z8kernel_dv": "kernel_d()", "_Z8orphan_v": "orphan_v",  # a variable name
             "_Z5extrai": "extra(int)"}
GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_api")


def need_feed():
    need_root()
    for p in (SHIM, SHIM_TEST, FEED, CUDART):
        check(os.path.exists(p), f"{p} missing: run make test-build (needs the CUDA toolkit)")


def parse(stdout):
    head, _, rest = stdout.partition("\n")
    return json.loads(head), json.loads(rest)


def expected(head, fed, cuda_calls):
    """The dump events (kind, ts, dur, tid, name, args) the feed must give. CUDA_CALLS: the
    cuda family's events of the twelve calls in order, or None without the cuda family."""
    tid = head["tid"]
    apis = {r["correlation"]: r for r in fed["records"] if r["type"] == "api"}
    # correlation 101..112 are the twelve real calls, in order
    call_of = {101 + i: c for i, c in enumerate(cuda_calls or [])}
    out = []

    def link(corr):
        if corr in call_of:
            return tid, dict(call_ts=call_of[corr]["ts"], link="cuda")
        if corr in apis:
            return tid, dict(call_ts=apis[corr]["ts"], link="api")
        return 0, dict(link="none")

    for r in fed["records"]:
        corr = r["correlation"]
        if r["type"] == "api":
            a = dict(correlation=corr, cbid=r["cbid"],
                     domain="runtime" if r["domain"] == 2 else "driver", ret=r["ret"])
            if corr in call_of:
                a["call_ts"] = call_of[corr]["ts"]
            out.append(("gpu_api", r["ts"], r["dur"], r["tid"], r["name"], a))
            continue
        t, ln = link(corr)
        if r["type"] == "kernel":
            a = dict(device=r["device"], context=r["context"], stream=r["stream"],
                     correlation=corr, grid=r["grid"], block=r["block"],
                     shmem_dynamic=r["shmem_dynamic"], shmem_static=r["shmem_static"],
                     registers=r["registers"])
            if r["graph_id"]:
                a.update(graph_id=r["graph_id"], graph_node_id=r["graph_node_id"])
            a.update(ln)
            out.append(("gpu_kernel", r["ts"], r["dur"], t, DEMANGLED[r["name"]], a))
        elif r["type"] == "memcpy":
            a = {"bytes": r["bytes"], "copy_kind": COPY[r["copy_kind"]],
                 "src_kind": MEM[r["src_kind"]], "dst_kind": MEM[r["dst_kind"]],
                 "async": bool(r["async"]), "device": r["device"], "context": r["context"],
                 "stream": r["stream"], "correlation": corr, "src_device": r["src_device"],
                 "dst_device": r["dst_device"]}
            a.update(ln)
            out.append(("gpu_memcpy", r["ts"], r["dur"], t,
                        f"[CUDA memcpy {COPY_NAME[r['copy_kind']]}]", a))
        elif r["type"] == "memset":
            a = dict(bytes=r["bytes"], value=r["value"], mem_kind=MEM[r["mem_kind"]],
                     device=r["device"], context=r["context"], stream=r["stream"],
                     correlation=corr)
            a.update(ln)
            out.append(("gpu_memset", r["ts"], r["dur"], t, "[CUDA memset]", a))
    return sorted(out, key=lambda e: (e[0], e[5]["correlation"], e[1]))


def got(events, pid):
    evs = [e for e in events if e["pid"] == pid and e["kind"] in GPU_KINDS]
    return sorted(((e["kind"], e["ts"], e["dur"], e["tid"], e["name"], e["args"]) for e in evs),
                  key=lambda e: (e[0], e[5]["correlation"], e[1]))


def compare(g, x, what):
    for a, b in zip(g, x):
        eq(a, b, f"{what}: {b[0]} correlation {b[5]['correlation']}")
    eq(len(g), len(x), f"{what}: GPU records")


def cuda_calls(events, pid, fed):
    """The cuda family's events of the feed's twelve calls (the calls it timed)."""
    names = [c["name"] for c in fed["calls"]]
    evs = sorted((e for e in events if e["pid"] == pid and e["kind"] == "cuda_api" and
                  e["name"] in set(names)), key=lambda e: e["ts"])
    eq([e["name"] for e in evs], names, "the twelve calls, traced by the cuda family")
    for e, c in zip(evs, fed["calls"]):
        check(c["t0"] <= e["ts"] and e["ts"] + e["dur"] <= c["t1"],
              f"{c['name']} traced inside the feed's own timing")
    return evs


def check_status(events, pid, what):
    st = [e for e in events if e["pid"] == pid and e["kind"] == "shim_status"]
    errs = [e for e in st if e["name"] == "cupti_error"]
    check(errs, f"{what}: CUPTI's failure here is reported: {[e['name'] for e in st]}")
    eq(errs[0]["args"]["cupti_result"], 999, f"{what}: CUPTI_ERROR_UNKNOWN")
    check(errs[0]["args"]["detail"].startswith("cupti"), f"{what}: names the call: {errs[0]}")
    check(all("cuda_injected" in e["args"]["state"] for e in st), f"{what}: injected")


def test_feed_launch_exact_and_linked():
    need_feed()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "cuda,gpu", "--", FEED, SHIM_TEST])
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    head, fed = parse(p.stdout)
    eq(fed["fed"], len(fed["records"]), "the shim decoded every record fed")
    events = dump(out)
    calls = cuda_calls(events, head["pid"], fed)
    compare(got(events, head["pid"]), expected(head, fed, calls), "launch, cuda+gpu")
    check_status(events, head["pid"], "launch")
    eq(info(out)["lost_total"], 0, "nothing lost")
    check("12 linked to their cuda call (0 by launch order), 1 to CUPTI's API record only, 1 unlinked" in p.stderr,
          f"the join's summary: {p.stderr}")


def test_feed_gpu_only_links_through_cupti():
    """Without the cuda family a GPU record still gets its thread and launch time: the API
    record's."""
    need_feed()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "gpu", "--", FEED, SHIM_TEST])
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    head, fed = parse(p.stdout)
    compare(got(dump(out), head["pid"]), expected(head, fed, None), "gpu only")


def test_feed_attach_pid():
    need_feed()
    d = tmpdir()
    go, batches = os.path.join(d, "go"), os.path.join(d, "batches.bin")
    w = spawn([FEED, "--wait-file", go, SHIM_TEST],
              env=dict(os.environ, BPFSIGHT_SHIM_DUMP=batches))
    head = json.loads(w.stdout.readline())
    r = Recorder("-t", "cuda,gpu", "-p", str(head["pid"]))
    r.wait_ready()
    shim_batches.wait_status(batches, head["pid"], lambda r: r["event_name"] == "attach",
                             "attach")  # its poller saw the recorder
    open(go, "w").close()
    eq(w.wait(60), 0, "feed exit")
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    fed = json.loads(w.stdout.read())
    events = dump(r.out)
    calls = cuda_calls(events, head["pid"], fed)
    compare(got(events, head["pid"]), expected(head, fed, calls), "-p, cuda+gpu")


def test_batches_carry_many_records():
    """3000 more kernels: every one arrives, in batches of well over 64 records."""
    need_feed()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "gpu", "--", FEED, "--extra", "3000", SHIM_TEST])
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    head, fed = parse(p.stdout)
    events = dump(out)
    compare(got(events, head["pid"]), expected(head, fed, None), "3000 extra kernels")
    st = [e for e in events if e["pid"] == head["pid"] and e["kind"] == "shim_status"]
    batches = st[-1]["args"]["seq"]
    nrec = len(got(events, head["pid"]))
    check(nrec / batches >= 64, f"{nrec} records in {batches} batches")
    eq(info(out)["lost_total"], 0, "nothing lost")
    k = stats(out, "cuda_gpu_kern_sum")["cuda_gpu_kern_sum"]
    eq([r["count"] for r in k if r["name"] == "extra(int)"], [3000], "stats count them")


def test_shim_subcommand_installs():
    need_root()
    check(os.path.exists(SHIM), f"{SHIM} missing")
    d = os.path.join(tmpdir(), "lib", "bpfsight")
    p = run([BPFSIGHT, "shim", "--install", d], check=True)
    path = os.path.join(d, "libbpfsight-shim.so")
    eq(p.stdout.splitlines()[0], path, "prints the path first")
    check(f"export CUDA_INJECTION64_PATH={path}" in p.stdout and
          f"export NVTX_INJECTION64_PATH={path}" in p.stdout, p.stdout)
    with open(path, "rb") as a, open(SHIM, "rb") as b:
        check(a.read() == b.read(), "the embedded shim is the built one")
    st = os.stat(path)
    eq(stat.S_IMODE(st.st_mode), 0o755, "mode")
    p = run([BPFSIGHT, "shim", "--install", d, "--print-env"], check=True)
    eq(p.stdout, f"export CUDA_INJECTION64_PATH={path}\nexport NVTX_INJECTION64_PATH={path}\n",
       "--print-env: the two lines only")
    eq(os.stat(path).st_ino, st.st_ino, "an identical file is left as it is")
    p = run([BPFSIGHT, "shim", "--install", "/proc/nope"])
    eq(p.returncode, 1, "unwritable DIR")
    check("cannot write /proc/nope/libbpfsight-shim.so" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "shim", "extra"])
    eq(p.returncode, 1, "stray argument")


def test_launch_writes_the_embedded_shim():
    need_root()
    check(os.path.exists(SHIM), f"{SHIM} missing")
    env = {k: v for k, v in os.environ.items() if k != "BPFSIGHT_SHIM"}
    p = run([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), "-t", "gpu", "--",
             "sh", "-c", "echo $CUDA_INJECTION64_PATH"], env=env)
    eq(p.returncode, 0, f"exit ({p.stderr[-300:]})")
    path = p.stdout.strip()
    check(path.startswith("/run/bpfsight/libbpfsight-shim-") and path.endswith(".so"), path)
    st = os.stat(path)
    eq((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o755), "root's, 0755")
    eq(stat.S_IMODE(os.stat("/run/bpfsight").st_mode) & 0o022, 0, "its directory is root's")
    with open(path, "rb") as a, open(SHIM, "rb") as b:
        check(a.read() == b.read(), "content")


def host_child(pid, timeout=10):
    """The pid, as we see it, of the one child of PID (unshare's: the job in its namespace)."""
    import time
    end = time.time() + timeout
    while time.time() < end:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    raise AssertionError(f"no child of {pid}")


def feed_in_pid_ns(system_wide=False):
    """cupti_feed in a pid namespace of its own (`unshare -fp --mount-proc`), recorded from
    outside with -p HOSTPID (or -a): CUPTI and the shim name its threads by the
    namespace's ids, BPF by ours; the join must still find every launching call."""
    need_feed()
    d = tmpdir()
    go, batches = os.path.join(d, "go"), os.path.join(d, "batches.bin")
    w = spawn(["unshare", "-fp", "--mount-proc", FEED, "--wait-file", go, SHIM_TEST],
              env=dict(os.environ, BPFSIGHT_SHIM_DUMP=batches))
    head = json.loads(w.stdout.readline())
    hostpid = host_child(w.pid)
    eq(head["pid"], 1, "the job is pid 1 of its namespace")
    with open(f"/proc/{hostpid}/status") as f:
        ns = [ln.split()[1:] for ln in f if ln.startswith("NSpid:")][0]
    eq(ns, [str(hostpid), "1"], "NSpid: ours, then the namespace's")
    r = Recorder("-t", "cuda,gpu", *(["-a"] if system_wide else ["-p", str(hostpid)]))
    r.wait_ready()
    shim_batches.wait_status(batches, 1, lambda s: s["event_name"] == "attach", "attach")
    open(go, "w").close()
    eq(w.wait(60), 0, "feed exit")
    if system_wide:  # -a goes on after the job: what it sent at its exit is in the ring
        r.stop()
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    fed = json.loads(w.stdout.read())
    events = dump(r.out)
    calls = cuda_calls(events, hostpid, fed)
    host_tid = calls[0]["tid"]
    check(host_tid != head["tid"], f"the thread's ids differ: {host_tid} vs {head['tid']}")
    ops = [e for e in events if e["pid"] == hostpid and e["kind"] in GPU_KINDS[:3]]
    linkable = [e for e in ops if e["args"]["correlation"] in range(101, 113)]
    eq(len(linkable), 12, "the twelve calls' GPU ops")
    eq([(e["tid"], e["args"]["link"], e["args"]["call_ts"]) for e in linkable],
       [(host_tid, "cuda", calls[e["args"]["correlation"] - 101]["ts"]) for e in linkable],
       "each linked to its cuda call, on the thread as BPF names it")
    apis = [e for e in events if e["pid"] == hostpid and e["kind"] == "gpu_api"]
    check(apis and all(e["tid"] == host_tid for e in apis), "API records on our tid")
    check("12 linked to their cuda call" in r.stderr, f"the join's summary: {r.stderr[-600:]}")


def test_feed_pid_namespace_attach_pid():
    feed_in_pid_ns()


@alone("-a records every process of the machine")
def test_feed_pid_namespace_system_wide():
    feed_in_pid_ns(system_wide=True)
