"""Kernel feature fallbacks, run on a kernel that has every feature.

bpfsight probes the kernel at start (user/record/kernel_features.c) and falls back where a feature is
missing: raw_tp for tp_btf, hashes for task storage, the task's state read through CO-RE for
sched_switch's prev_state (5.18+), one perf-event uprobe per site for uprobe_multi (6.6+).
BPFSIGHT_FORCE_FALLBACKS=all makes every such feature read as absent, so these tests run the
fallbacks here with the families' own exact tests; features without a fallback (ring buffer,
attach cookie) are forced by name and must be refused loudly. `make check-kernels` runs the
same file in a VM on Debian's older kernels (tests/kernels/).
"""
import contextlib
import os
import re
import subprocess

# Aliases: the runner would take a module named test_* for a test.
import test_cuda as cuda_tests
import test_gil as gil_tests
import test_osrt as osrt_tests
import test_sched as sched_tests
import helpers
from helpers import BPFSIGHT, check, dump, eq, info, need_root, record, row, stats, tmpdir

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 30

FEATURES = ["ringbuf", "tp_btf", "prev_state", "task_storage", "attach_cookie", "uprobe_multi",
            "bpf_loop", "perf_sampling", "uprobe_session", "signal_task"]
WITH_FALLBACK = ["tp_btf", "prev_state", "task_storage", "uprobe_multi", "bpf_loop",
                 "uprobe_session", "signal_task"]


@contextlib.contextmanager
def forced(what):
    """BPFSIGHT_FORCE_FALLBACKS=WHAT for every bpfsight the block starts."""
    old = os.environ.get("BPFSIGHT_FORCE_FALLBACKS")
    os.environ["BPFSIGHT_FORCE_FALLBACKS"] = what
    try:
        yield
    finally:
        if old is None:
            del os.environ["BPFSIGHT_FORCE_FALLBACKS"]
        else:
            os.environ["BPFSIGHT_FORCE_FALLBACKS"] = old


def features(env=None):
    """`record --features` as {name: (state, rest of the line)}."""
    p = subprocess.run([BPFSIGHT, "record", "--features"], capture_output=True, text=True,
                       env=env, timeout=60)
    eq(p.returncode, 0, f"record --features ({p.stderr})")
    out = {}
    for line in p.stdout.splitlines():
        name, state, *rest = line.split(None, 2)
        out[name] = (state, " ".join(rest))
    return out


def without(out):
    """The features a trace was recorded without (its info's options)."""
    for opt in info(out)["options"].split():
        if opt.startswith("without="):
            return set(opt[len("without="):].split(","))
    return set()


def test_features_lists_every_probe_and_all_forces_each_fallback():
    need_root()
    plain = features()
    for f in FEATURES:
        check(f in plain and plain[f][0] in ("yes", "no"), f"{f}: {plain.get(f)}")
    everything = features(dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="all"))
    for f in FEATURES:
        state, rest = everything[f]
        if f in WITH_FALLBACK:
            check(state in ("forced", "no") and "fallback: " in rest, f"all: {f}: {state} {rest}")
        else:  # "all" runs fallbacks; it never turns recording off
            eq(state, plain[f][0], f"all leaves {f} alone")
    one = features(dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="prev_state"))
    for f in FEATURES:
        want = "forced" if f == "prev_state" and plain[f][0] == "yes" else plain[f][0]
        eq(one[f][0], want, f"prev_state alone: {f}")


# libbpf's lines for one CO-RE relocation, the kernel's type ids cut (they differ in a subset).
RELO = re.compile(r"relo #\d+: (patched|<|no matching|non-matching)")
SUBSET = re.compile(r"bpfsight: (\w+): CO-RE relocations from \d+ type names searched in "
                    r"(\d+) of the kernel's (\d+) types")


def relocations(args, env):
    """`record -v ARGS -- true` in ENV: (its relocation lines, [(object, types, of)])."""
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-v", "--force", "-o", out, *args, "--", "true"],
                       capture_output=True, text=True, env=env, timeout=120)
    eq(p.returncode, 0, f"record -v {args}: {p.stderr[-2000:]}")
    lines = [re.sub(r"\[\d+\] ", "", l) for l in p.stderr.splitlines() if RELO.search(l)]
    return lines, [(o, int(n), int(of)) for o, n, of in SUBSET.findall(p.stderr)]


def test_core_relocations_in_the_named_types_patch_as_the_whole_btf():
    """Each object's CO-RE relocations searched in the kernel's types they name, not all of
    them (user/record/btf_core_subset.c): every instruction patched as libbpf's search of the
    whole BTF patches it (BPFSIGHT_CORE_BTF=whole), on every object, fallbacks included."""
    need_root()
    for args, force in (([], None), (["-t", "mem,cpu"], None), ([], "all")):
        env = dict(os.environ)
        env.pop("BPFSIGHT_CORE_BTF", None)
        if force:
            env["BPFSIGHT_FORCE_FALLBACKS"] = force
        named, subsets = relocations(args, env)
        whole, none = relocations(args, dict(env, BPFSIGHT_CORE_BTF="whole"))
        what = f"{args} forced={force}"
        check(len(subsets) >= 4, f"{what}: objects with a subset: {subsets}")
        for obj, n, of in subsets:
            check(0 < n < of / 100, f"{what}: {obj} searched {n} of {of} types")
        eq(none, [], f"{what}: BPFSIGHT_CORE_BTF=whole leaves every object to libbpf")
        check(len(whole) > 100, f"{what}: {len(whole)} relocation lines")
        eq(named, whole, f"{what}: the relocations")


# A stand-in for an earlier recording's bpfsight-detach (link_reaper.c): named so, holding a
# perf event as a per-site uprobe's teardown does (a software one here) when argv[1] is 1, and
# gone when its stdin closes.
FAKE_DETACHER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"bpfsight-detach", 0, 0, 0)  # PR_SET_NAME
if sys.argv[1] == "1":
    attr = (ctypes.c_uint32 * 32)(1, 128)  # PERF_TYPE_SOFTWARE, sizeof(perf_event_attr)
    attr[2] = 9  # PERF_COUNT_SW_DUMMY
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(298, attr, 0, -1, -1, 0)  # perf_event_open(attr, self, any cpu)
    assert fd >= 0, ctypes.get_errno()
print("ready", flush=True)
sys.stdin.read()
"""
WAITING = "earlier recording(s) to free their uprobes"


def fake_detacher(with_perf_event):
    p = helpers.spawn(["python3", "-c", FAKE_DETACHER, "1" if with_perf_event else "0"])
    eq(p.stdout.readline(), "ready\n", "the stand-in started")
    return p


def perf_event_detachers():
    """The pids of the bpfsight-detach processes that hold a perf event, as record sees them."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/comm", "rb").read() != b"bpfsight-detach\n":
                continue
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]" for fd in fds):
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_teardown_delays_only_an_attach_beside_running_processes():
    """Without uprobe_multi, a recording attaching uprobes beside running processes (-p)
    waits for earlier recordings' bpfsight-detach to drop their perf events; a launched CMD
    is held until every probe is attached, so it never waits; and a bpfsight-detach holding
    no perf event (only bpf links, or exited) delays nobody."""
    need_root()
    target = helpers.spawn(["sleep", "60"])
    with forced("uprobe_multi"):
        holder = fake_detacher(True)
        p, _ = record(["/bin/true"], "-t", "sched")
        eq(p.returncode, 0, f"launch mode ({p.stderr[-300:]})")
        check(WAITING not in p.stderr, f"launch mode waited: {p.stderr[-300:]}")
        rec = helpers.Recorder("-t", "sched", "-p", str(target.pid))
        helpers.wait_for(lambda: WAITING in rec.stderr, 60, "-p waiting for the stand-in")
        check(not rec.live, "-p went live while a teardown held perf events")
        holder.stdin.close()
        rec.wait_ready()
        eq(rec.stop(), 0, f"-p recording ({rec.stderr[-300:]})")
        # The stand-in without a perf event: another test's teardown may hold one meanwhile
        # (a cpu recording's sampling events), gone by the time it is looked for: the wait
        # names the pids it waits for, and never the stand-in's.
        helpers.wait_for(lambda: not perf_event_detachers(), 120, "other teardowns")
        idle = fake_detacher(False)
        rec = helpers.Recorder("-t", "sched", "-p", str(target.pid))
        rec.wait_ready()
        eq(rec.stop(), 0, f"-p recording ({rec.stderr[-300:]})")
        m = re.search(r"bpfsight-detach pid ([\d .]+);", rec.stderr)
        check(WAITING not in rec.stderr or (m and str(idle.pid) not in m.group(1).split()),
              f"-p waited for a bpfsight-detach without perf events (pid {idle.pid}): "
              f"{rec.stderr[-300:]}")


def test_osrt_exact_on_raw_tracepoints_and_hashes():
    with forced("all"):
        osrt_tests.test_launch_exact_counts()
        osrt_tests.test_threshold_zero_records_every_call()
        p, out = record([osrt_tests.SYSCALLS, "777", "123", "100"], "-t", "osrt")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    check({"tp_btf", "task_storage"} <= without(out), f"recorded without {without(out)}")
    osrt = stats(out, "osrt_sum")["osrt_sum"]
    eq((row(osrt, name="getppid")["count"], row(osrt, name="nanosleep")["count"]), (777, 123),
       "getppid, nanosleep calls")


def test_sched_state_read_through_core_matches_prev_state():
    """The pingpong's exchange with the task state read from the task (the pre-5.18 path),
    on raw_tp with a hash: one interval per switch with its waker, as with prev_state; and
    every blocked interval is a read() on a pipe: TASK_INTERRUPTIBLE (1)."""
    with forced("all"):
        sched_tests.test_pingpong_one_interval_per_switch_with_its_waker()
        p, out = record([sched_tests.PINGPONG, "-n", "500", "-c", "0"], "-t", "sched")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    check({"tp_btf", "prev_state", "task_storage"} <= without(out), f"without {without(out)}")
    events = dump(out)
    pid = next(e["pid"] for e in events if e["kind"] == "exec" and e["name"] == "pingpong")
    states = [e["args"]["state"] for e in events
              if e["kind"] == "offcpu" and e["pid"] == pid and e["name"] == "blocked"]
    # Now and then another wait (a page-in: 2; a freezable sleep: 0x2001), never a running
    # state (0): the state the thread left in, not the one it is in when read.
    check(sum(s == 1 for s in states) >= 490 and 0 not in states,
          f"blocked states for 500 round trips: {sorted(states)[:5]}..., {len(states)} in all")
    with forced("prev_state"):  # tp_btf + task storage, the state from CO-RE
        sched_tests.test_pingpong_one_interval_per_switch_with_its_waker()


def test_cuda_exact_with_one_perf_event_uprobe_per_site():
    """Each site's teardown takes ~0.1 s under a kernel mutex (USAGE.md#old-kernels): one
    recording here; the next one that attaches perf-event uprobes waits for it."""
    with forced("uprobe_multi"):
        cuda_tests.test_runtime_shared_exact()


def test_perf_event_uprobes_past_the_usual_fd_limit_and_cmd_keeps_its_own():
    """Two fds per probe site without uprobe_multi: libcudart and libcuda together pass a soft
    RLIMIT_NOFILE of 1024 (Debian 12's 6.1 said "Too many open files" and lost probes). The
    recorder raises its own limit after CMD is forked: no probe lost, every driver call
    there, and CMD still sees 1024."""
    import resource
    cuda_tests.need_cuda(cuda_tests.API_SHARED, cuda_tests.DRIVER)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2048:
        raise helpers.Skip(f"the hard RLIMIT_NOFILE is {hard}: no room to raise the soft one")
    out = os.path.join(tmpdir(), "t.bst")
    script = (f'"{cuda_tests.API_SHARED}" 1 >/dev/null && "{cuda_tests.DRIVER}" 2 >/dev/null'
              ' && ulimit -Sn')
    with forced("uprobe_multi"):
        p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "cuda", "--", "sh", "-c", script],
                           capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                 (1024, hard)))
    eq(p.returncode, 0, f"record exit ({p.stderr[-500:]})")
    eq(p.stdout.split(), ["1024"], "CMD's soft limit")
    check("Too many open files" not in p.stderr, p.stderr)
    eq(info(out)["lost_total"], 0, "probes and events lost")
    # The forced one, and only what this kernel lacks besides (6.1: task_work, uprobe_session).
    lacking = {f for f, (state, _) in features().items() if state == "no"}
    got = without(out)
    check("uprobe_multi" in got and got - {"uprobe_multi"} <= lacking,
          f"recorded without {got}: uprobe_multi, and no more than the kernel lacks ({lacking})")
    driver = [e for e in dump(out) if e["kind"] == "cuda_api" and e["name"].startswith("cu")
              and not e["name"].startswith("cuda")]
    eq(len(driver), 15 * 2, "cuda_driver's calls (15 a round)")


def test_attached_gil_exact_with_perf_event_uprobes_and_no_bpf_loop():
    """The gil test attaches (-p), so it first waits for earlier recordings' per-site uprobes
    to go (the cuda tests here leave a teardown of half a minute): named to run before them
    (the runner runs a module's tests in name order)."""
    with forced("uprobe_multi,bpf_loop"):
        gil_tests.test_gil_long_c_call_is_blamed_on_its_holder()


def test_no_attach_cookie_drops_uprobe_families_or_refuses_them():
    need_root()
    env = dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="attach_cookie")
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "cuda", "--", "/bin/true"],
                       capture_output=True, text=True, env=env, timeout=60)
    eq(p.returncode, 1, "-t cuda without attach cookies")
    check("cuda family needs attach_cookie" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no file left behind")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "--", osrt_tests.SYSCALLS, "300", "3",
                        "100"], capture_output=True, text=True, env=env, timeout=120)
    eq(p.returncode, 0, f"default families ({p.stderr})")
    for fam in ("cuda", "nccl", "gpu", "nvtx"):
        check(f"not recording {fam}: this kernel lacks attach_cookie" in p.stderr, p.stderr)
    fams = info(out)["families"].split(",")
    check("osrt" in fams and "cuda" not in fams, f"families {fams}")
    eq(row(stats(out, "osrt_sum")["osrt_sum"], name="getppid")["count"], 300, "getppid")


def test_no_ring_buffer_is_refused_before_anything_is_created():
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--", "/bin/true"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="ringbuf"))
    eq(p.returncode, 1, "without a ring buffer")
    check("ring buffer" in p.stderr and "5.8" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no file left behind")
