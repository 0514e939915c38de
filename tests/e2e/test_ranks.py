"""Many ranks, one timeline: each rank recorded on its own, `bpfsight merge`, the straggler
reports, the exports, the SQLite path, `record --start-at`.

The ranks are processes of this machine calling NCCL through the CPU test library
(tests/workloads/nccl_cpu: NCCL's symbols and ABI, a barrier per collective), so they share
one CLOCK_MONOTONIC: the truth of every alignment is the files' own timestamps. Each
recording's wall clock is made wrong by a known amount (BPFSIGHT_TEST_CLOCK_SHIFT_NS), which
merge must find from the collectives.

How precisely it can: a rank's return from a collective lags the collective's end by the time
it waits for a core. Here 2 cores serve up to 16 ranks (and their recorders), so the ranks of a
collective return over up to a millisecond; no aligner knows a clock better than that spread
divided by the square root of the collectives it sees, and merge reports that standard error
per file. Nor can it see a lag one rank has more often than another (the rank a barrier wakes
second, on a busy core): the ends it aligns are off by that lag's median, which the files'
common clock shows. The offsets and the placed ends are held to 20 us, or to 4 standard errors
where the spread makes those larger (16 ranks on 2 cores), plus that median lag.
"""
import json
import math
import os
import random
import shutil
import subprocess
import time

import helpers
from helpers import (BPFSIGHT, Skip, beside, check, dump, eq, info, need_root, run, stats, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine; one job per test.
SECONDS = 40
SPLIT = True

NCCL_RANKS = workload("nccl_cpu/nccl_ranks")
# Wall-clock errors given to the ranks' recordings (ns), rank by rank.
SHIFTS = [0, 3000000, -7000000, 1234567, 500000, -250000, 9000000, -1000000, 2000000,
          -3000000, 4000000, -5000000, 6000000, -6000000, 7000000, -8000000]
BOUND_NS = 20000
DELAY_US = 50000  # how late the late rank comes to its collectives


def need_workload():
    need_root()
    if not os.path.exists(NCCL_RANKS):
        raise Skip(f"{NCCL_RANKS} not built (make test-build)")


def run_job(n, steps, late_rank, late_steps, shifts, drift_ppm=None, step_us=0):
    """Rank r recorded with its own recorder, its wall clock SHIFTS[r] ns off (and drifting
    DRIFT_PPM[r] ppm), each step STEP_US of compute; returns the directory and the rank
    files."""
    need_workload()
    d = tmpdir()
    job = f"{os.getpid()}-{n}-{random.getrandbits(32):08x}"
    procs, files = [], []
    for r in range(n):
        shift = str(shifts[r]) + (f",{drift_ppm[r]}" if drift_ppm and drift_ppm[r] else "")
        env = dict(os.environ, BPFSIGHT_TEST_CLOCK_SHIFT_NS=shift)
        if step_us:
            env["NCCL_RANKS_STEP_US"] = str(step_us)
        files.append(os.path.join(d, f"rank{r}.bst"))
        p = subprocess.Popen([BPFSIGHT, "record", "-t", "nccl", "-o", files[-1], "--",
                              NCCL_RANKS, job, str(r), str(n), str(steps), str(late_rank),
                              str(DELAY_US), ",".join(map(str, late_steps))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        helpers._procs.append(p)
        procs.append(p)
    hashes = set()
    try:
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=120)
            eq(p.returncode, 0, f"rank {r} ({err[-600:]})")
            hashes.add(next(l.split()[1] for l in out.splitlines()
                            if l.startswith("unique_id_hash")))
    finally:
        for h in hashes:  # the library's shared memory, when a rank died before unlinking it
            try:
                os.unlink(f"/dev/shm/bpfsight-nccl-cpu-{h}")
            except FileNotFoundError:
                pass
    eq(len(hashes), 1, "every rank made the same communicator")
    return d, files, hashes.pop()


def merge(files, out, *opts):
    p = run([BPFSIGHT, "merge", "-o", out, "--format", "json", *opts, *files], timeout=300)
    eq(p.returncode, 0, f"merge exit ({p.stderr[-800:]})")
    return json.loads(p.stdout)


_dumps = {}


def dumped(path):
    """dump PATH once per test run (files are never rewritten under the same name)."""
    if path not in _dumps:
        _dumps[path] = dump(path)
    return _dumps[path]


def collectives(path, merged=False):
    """{seq: (pid, ts, end)} of a one-rank file; {(namespace, seq): ...} of a merged one (a
    file's pids are namespace << 22 | pid there)."""
    out = {}
    for e in dumped(path):
        if e["kind"] == "nccl_api" and "seq" in e["args"]:
            key = (e["pid"] >> 22, e["args"]["seq"]) if merged else e["args"]["seq"]
            out[key] = (e["pid"], e["ts"], e["ts"] + e["dur"])
    return out


def bound(err_ns, drift_err_ppb=0, away_ns=0):
    """20 us, or 4 standard errors of where merge put a time AWAY_NS from the middle of the
    file's collectives (its offset's, and its drift's over that distance)."""
    return max(BOUND_NS, 4 * math.hypot(err_ns, drift_err_ppb * 1e-9 * away_ns))


def return_lag(own, ref_own):
    """How much later (or earlier) than the reference this rank returns from the same
    collective, as the median over them, on the files' common clock: what no alignment on
    collective ends can take out."""
    d = sorted(own[k][2] - ref_own[k][2] for k in own if k in ref_own)
    return abs(d[len(d) // 2]) if d else 0


def check_alignment(res, files, shifts, drift_ppm=None):
    """Offsets found = the shifts given; every collective end placed where it happened."""
    by_path = {f["path"]: f for f in res["files"]}
    ref = next(f for f in res["files"] if f["aligned_by"] == "reference")
    ref_rank = files.index(ref["path"])
    merged = collectives(res["output"], merged=True)
    ref_own = collectives(ref["path"])
    for r, path in enumerate(files):
        f = by_path[path]
        own = collectives(path)
        lag = return_lag(own, ref_own)
        b = bound(f["offset_err_ns"]) + lag
        if path != ref["path"]:
            eq(f["aligned_by"], "collectives", f"rank {r} aligned on its collectives")
            if not (drift_ppm and drift_ppm[r]):
                want = shifts[r] - shifts[ref_rank]
                check(abs(f["offset_ns"] - want) <= b,
                      f"rank {r}: clock offset {f['offset_ns']} ns found, {want} given "
                      f"(bound {b} ns, standard error {f['offset_err_ns']} ns, "
                      f"median return lag {lag} ns)")
        check(len(own) > 0, f"rank {r} recorded collectives")
        mid = sum(end for _, _, end in own.values()) / len(own)
        for seq, (_, ts, end) in own.items():
            _, mts, mend = merged[(f["ns"], seq)]
            b = bound(f["offset_err_ns"], f["drift_err_ppb"], end - mid) + lag
            check(abs(mend - end) <= b,
                  f"rank {r} collective {seq}: ends at {mend} in the merged file, truly at "
                  f"{end} ({mend - end:+} ns, bound {b:.0f})")
    return merged


def truth(files):
    """From the rank files (one clock): per seq, every rank's entry."""
    entries = {}
    for r, path in enumerate(files):
        for seq, (_, ts, _) in collectives(path).items():
            entries.setdefault(seq, {})[r] = ts
    return entries


def check_stragglers(merged_path, files, late_rank, late_seqs, res):
    n = len(files)
    entries = truth(files)
    err = max(f["offset_err_ns"] for f in res["files"])
    ref = next(f["path"] for f in res["files"] if f["aligned_by"] == "reference")
    lag = max(return_lag(collectives(f), collectives(ref)) for f in files)
    rows = stats(merged_path, "nccl_stragglers")["nccl_stragglers"]
    eq(len(rows), len([s for s, v in entries.items() if len(v) > 1]),
       "a row per collective of 2 ranks or more")
    for row in rows:
        e = entries[row["seq"]]
        skew = max(e.values()) - min(e.values())
        eq(row["ranks"], n, f"collective {row['seq']}: every rank")
        # Each rank's entry is placed within its bound: the skew moves by two at most.
        tol = max(0.05 * skew, 2 * (bound(err) + lag))
        check(abs(row["skew_ns"] - skew) <= tol,
              f"collective {row['seq']}: skew {row['skew_ns']} ns, truly {skew} (tol {tol})")
        last = max(e, key=e.get)
        others = sorted(e.values())[-2]
        if e[last] - others > 2 * (bound(err) + lag):
            eq(row["last_rank"], last, f"collective {row['seq']}: the rank that entered last")
    for seq in late_seqs:
        row = next(r for r in rows if r["seq"] == seq)
        e = entries[seq]
        eq(row["last_rank"], late_rank, f"late collective {seq}: its late rank")
        eq(row["last"], f"rank {late_rank} @ {os.uname().nodename}", "its label")
        # The rank slept DELAY_US before it; the others may have been held up too on a loaded
        # machine (38 ms of skew for a 50 ms sleep once): the truth says how late it was, and
        # the merged skew must be that, and tell the late rank apart.
        skew = max(e.values()) - min(e.values())
        tol = max(0.05 * skew, 2 * (bound(err) + lag))
        check(abs(row["skew_ns"] - skew) <= tol and skew > 2 * (bound(err) + lag),
              f"late collective {seq}: skew {row['skew_ns']} ns, truly {skew} (tol {tol}), "
              f"its rank slept {DELAY_US} us")
        true_wait = sum(max(e.values()) - t for t in e.values())
        check(abs(row["wait_ns"] - true_wait) <= max(0.05 * true_wait, n * 2 * (bound(err) + lag)),
              f"late collective {seq}: the others waited {row['wait_ns']} ns, truly {true_wait}")
    # Per rank: the waits it caused, as the truth has them.
    made = {r: 0 for r in range(n)}
    for e in entries.values():
        if len(e) > 1:
            last = max(e, key=e.get)
            made[last] += sum(e[last] - t for t in e.values())
    sums = stats(merged_path, "nccl_rank_sum")["nccl_rank_sum"]
    eq(sorted(r["rank"] for r in sums), list(range(n)), "a row per rank")
    worst = max(sums, key=lambda r: r["made_wait_ns"])
    truly = sorted(made.values())
    if truly[-1] > 1.2 * truly[-2]:
        eq(worst["rank"], max(made, key=made.get), "the rank that made the others wait most")
    late = next(r for r in sums if r["rank"] == late_rank)
    check(late["late"] >= len(late_seqs), "the late rank entered its collectives last")
    eq(late["top_op"], "ncclAllReduce", "where it held the others")


def late_seq(step):
    """The seq of a step's all-reduce: every step has one, every 3rd an all-gather after it."""
    return step + step // 3


def test_merge_two_ranks_offsets_drift_and_stragglers():
    shifts, drift = [0, -4321000], [0, 500]
    # 2 ms of compute a step: 1.2 s of collectives, however fast the machine, so the files'
    # wall-clock pairs (1 s apart at least) and their collectives (250 ms) both show the drift.
    d, files, _ = run_job(2, 600, 1, [40, 400], shifts, drift, step_us=2000)
    res = merge(files, os.path.join(d, "job.bst"))
    eq([f["ns"] for f in res["files"]], [0, 1], "rank 0's file is the reference, then rank 1")
    check_alignment(res, files, shifts, drift)
    f1 = res["files"][1]
    check(abs(f1["drift_ppb"] - 500000) <= 100000,
          f"rank 1's drift: {f1['drift_ppb']} ppb found, 500000 given")
    check_stragglers(res["output"], files, 1, [late_seq(40), late_seq(400)], res)


GLOO_RANKS_PY = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                              "workloads", "gloo_ranks.py"))


def gloo_ends(path, merged=False):
    """{seq: end} of a gloo rank file: where each collective's work finished on the rank (the
    `gloo work done` calls' entries); {(namespace, seq): end} of a merged one."""
    out = {}
    for e in dumped(path):
        if e["kind"] == "nccl_api" and e["name"] == "gloo work done" and "seq" in e["args"]:
            out[(e["pid"] >> 22, e["args"]["seq"]) if merged else e["args"]["seq"]] = e["ts"]
    return out


GLOO_BOUND_NS = 100000


def test_merge_gloo_ranks_names_rank_size_and_host_pid():
    """Two torch.distributed ranks on gloo (Debian's torch), each recorded by its own `record`
    (launch mode, -t nccl: ProcessGroupGloo's collectives and their works' ends), rank 1's wall
    clock 4.321 ms off, rank 1 a straggler (3x the compute): merged on gloo's collective ends,
    every end is placed within 100 us of where it happened (or 4 of merge's standard errors,
    when a loaded machine makes those larger, plus the ranks' median return lag); the ranks
    report names each file's rank, the world size and the rank's pid as its host saw it (not
    the merged file's renumbered one); the other rank tables name the ranks by them."""
    need_root()
    if run(["/usr/bin/python3", "-c", "import torch.distributed"]).returncode:
        raise Skip("Debian's python3-torch is not installed (make deps)")
    from free_ports import free_port
    d = tmpdir()
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), STEPS="60", STEP_MS="2")
    shifts = [0, -4321000]
    procs, files = [], []
    for r, shift in enumerate(shifts):
        files.append(os.path.join(d, f"rank{r}.bst"))
        p = subprocess.Popen([BPFSIGHT, "record", "-t", "nccl", "-o", files[-1], "--",
                              "/usr/bin/python3", GLOO_RANKS_PY], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=dict(env, RANK=str(r), LOCAL_RANK=str(r),
                                      BPFSIGHT_TEST_CLOCK_SHIFT_NS=str(shift)))
        helpers._procs.append(p)
        procs.append(p)
    pids = []
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        eq(p.returncode, 0, f"rank {r}: {err[-600:]}")
        pids.append(int(next(l.split()[2] for l in out.splitlines() if l.startswith("ready"))))
    merged = os.path.join(d, "job.bst")
    res = merge(files, merged)
    eq([f["ns"] for f in res["files"]], [0, 1], "rank 0's file is the reference, then rank 1")
    # gloo's collectives end where each one's work finished on the rank: merge fits by them
    eq([f["aligned_by"] for f in res["files"]], ["reference", "collectives"],
       "how the files were aligned")
    check(all(f["points"] > 0 for f in res["files"]),
          f"fit points used: {[f['points'] for f in res['files']]}")
    eq([[(m["rank"], m["nranks"], m["collectives"]) for m in f["ranks"]] for f in res["files"]],
       [[(r, 2, 60)] for r in range(2)], "each file's rank, world size and collectives")
    own = [gloo_ends(f) for f in files]
    eq([len(o) for o in own], [60, 60], "an end per all_reduce on each rank")
    f1 = res["files"][1]
    d_ends = sorted(own[1][k] - own[0][k] for k in own[1] if k in own[0])
    lag = abs(d_ends[len(d_ends) // 2])  # which rank a collective lets go first: no fit's
    b = max(GLOO_BOUND_NS, 4 * f1["offset_err_ns"]) + lag
    check(abs(f1["offset_ns"] - shifts[1]) <= b,
          f"rank 1: clock offset {f1['offset_ns']} ns found, {shifts[1]} given (bound {b} ns, "
          f"standard error {f1['offset_err_ns']} ns, median return lag {lag} ns)")
    # The truth: the files share one CLOCK_MONOTONIC, so every end stays where it was: the
    # reference's (its clock is the merged file's) and rank 1's (its wall clock's error found).
    at = gloo_ends(merged, merged=True)
    eq({k: at.get((0, k)) for k in own[0]}, own[0], "the reference's ends, where they were")
    mid = sum(own[1].values()) / len(own[1])
    for k, t in sorted(own[1].items()):
        b = lag + max(GLOO_BOUND_NS, 4 * math.hypot(
            f1["offset_err_ns"], f1["drift_err_ppb"] * 1e-9 * (t - mid)))
        check((1, k) in at and abs(at[(1, k)] - t) <= b,
              f"rank 1 collective {k}: placed {at.get((1, k), 0) - t:+} ns from where it "
              f"ended (bound {b:.0f} ns)")
    host = os.uname().nodename
    ranks = stats(merged, "ranks")["ranks"]
    eq([(x["ns"], x["rank"], x["nranks"], x["pid"], x["host"], x["file"]) for x in ranks],
       [(r, r, 2, pids[r], host, files[r]) for r in range(2)], "the ranks report")
    check(all(x["points"] > 0 for x in ranks), "the ranks report: the collectives used")
    eq([(x["ns"], x["rank"], x["nranks"]) for x in info(merged)["ranks"]],
       [(0, 0, 2), (1, 1, 2)], "info's ranks")
    sums = stats(merged, "nccl_rank_sum")["nccl_rank_sum"]
    eq(sorted((x["rank"], x["nranks"], x["pid"], x["name"]) for x in sums),
       [(r, 2, pids[r], f"rank {r} @ {host}") for r in range(2)],
       "nccl_rank_sum: each rank, the world size, the host's pid, the rank's name")


def test_merge_four_ranks_readers_exports_and_sqlite():
    d, files, uid = run_job(4, 300, 2, [10, 150], SHIFTS)
    out = os.path.join(d, "job.bst")
    res = merge(files, out)
    check_alignment(res, files, SHIFTS)
    check_stragglers(out, files, 2, [late_seq(10), late_seq(150)], res)
    host = os.uname().nodename
    # info, dump: every event of every file, each rank's process named after it.
    i = info(out)
    eq([(r["ns"], r["rank"], r["nranks"]) for r in i["ranks"]],
       [(k, k, 4) for k in range(4)], "info's ranks")
    events = sum(len(dumped(f)) for f in files)
    eq(len(dumped(out)), events, "dump: the events of every rank file")
    comm = stats(out, "nccl_comm_sum")["nccl_comm_sum"]
    eq(sorted((r["rank"], r["unique_id_hash"]) for r in comm), [(k, uid) for k in range(4)],
       "one communicator per rank, the same one")
    # Chrome/Kineto: a directory of one file per rank, each with its distributedInfo.
    kdir = os.path.join(d, "job.kineto")
    run([BPFSIGHT, "export", out, "--format", "chrome", "-o", kdir], check=True)
    eq(sorted(os.listdir(kdir)), [f"rank{k}.json" for k in range(4)], "a file per rank")
    for k in range(4):
        with open(os.path.join(kdir, f"rank{k}.json")) as f:
            doc = json.load(f)
        eq(doc["distributedInfo"], {"backend": "nccl", "rank": k, "world_size": 4},
           f"rank {k}'s distributedInfo")
        names = {e["args"]["name"] for e in doc["traceEvents"]
                 if e.get("ph") == "M" and e["name"] == "process_name"}
        eq(names, {f"rank {k} @ {host}"}, f"rank {k}'s file: its own process only")
    # Perfetto: one process track per rank, named after it.
    pf = os.path.join(d, "job.pftrace")
    run([BPFSIGHT, "export", out, "--format", "perfetto", "-o", pf], check=True)
    with open(pf, "rb") as f:
        blob = f.read()
    for k in range(4):
        check(f"rank {k} @ {host}".encode() in blob, f"perfetto names rank {k}'s process")
    # SQLite and the HTML report read it too.
    sq = os.path.join(d, "job.sqlite")
    run([BPFSIGHT, "export", out, "--format", "sqlite", "-o", sq], check=True)
    run([BPFSIGHT, "report", out, "-o", os.path.join(d, "job.html")], check=True)
    # Beyond one machine: the rank files exported one by one, the query of docs/NCCL.md.
    check_sqlite_path(d, files, 2, [late_seq(10), late_seq(150)])


def sqlite3_cli():
    if not shutil.which("sqlite3"):
        raise Skip("sqlite3 (the CLI) missing: apt-get install sqlite3 (make deps does)")
    return "sqlite3"


def check_sqlite_path(d, files, late_rank, late_seqs):
    """Beyond one machine: each rank's file exported on its own, gathered by the sqlite3 CLI
    (docs/NCCL.md's script and query): the same stragglers as the truth."""
    sqlite = sqlite3_cli()
    db = os.path.join(d, "job.db")
    gather = helpers.docs_query("nccl_gather", doc="NCCL.md")
    for f in files:
        sq = f[:-4] + ".sqlite"
        run([BPFSIGHT, "export", f, "--format", "sqlite", "-o", sq], check=True)
        p = run(["sqlite3", db, "-cmd", f".parameter set :file '{sq}'"], input=gather)
        eq(p.returncode, 0, f"gathering {sq}: {p.stderr}")
    p = run([sqlite, "-json", db], input=helpers.docs_query("nccl_stragglers", doc="NCCL.md"))
    eq(p.returncode, 0, f"the query: {p.stderr}")
    rows = json.loads(p.stdout)
    entries = truth(files)
    by_seq = {r["seq"]: r for r in rows}
    for seq in late_seqs:
        r, e = by_seq[seq], entries[seq]
        skew = max(e.values()) - min(e.values())
        eq(r["last_rank"], late_rank, f"collective {seq}: the late rank")
        check(abs(r["skew_ns"] - skew) <= 0.05 * skew,
              f"collective {seq}: skew {r['skew_ns']} ns, truly {skew}")
    # The longest waits first, as the truth has them where it tells them apart (a rank kept
    # from its core on a busy machine can make a wait as long as the injected delay).
    waits = {q: sum(max(e.values()) - t for t in e.values())
             for q, e in entries.items() if len(e) > 1}
    ranked = sorted(waits, key=waits.get, reverse=True)
    n = len(late_seqs)
    if waits[ranked[n - 1]] > 1.2 * waits[ranked[n]]:
        eq(sorted(r["seq"] for r in rows[:n]), sorted(ranked[:n]),
           f"the {n} longest waits (truly {[(q, waits[q]) for q in ranked[:n + 1]]})")


def test_merge_sixteen_ranks():
    d, files, _ = run_job(16, 300, 9, [30], SHIFTS)
    res = merge(files, os.path.join(d, "job.bst"))
    check_alignment(res, files, SHIFTS)
    check_stragglers(res["output"], files, 9, [late_seq(30)], res)


def test_start_at_two_recorders():
    """--start-at=/2s: both recorders attach, then start at a 2 s boundary (how soon after it
    is the machine's: a real-time wake, a few us on an idle machine here, 4.7 ms once on this
    VM under two busy loops and the suite; a tenth of the period at most)."""
    need_root()
    d = tmpdir()
    outs = [os.path.join(d, f"s{k}.bst") for k in range(2)]
    procs = [subprocess.Popen([BPFSIGHT, "record", "-t", "nccl", "--start-at=/2s", "-o", o, "--",
                               "/bin/true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for o in outs]
    helpers._procs.extend(procs)
    for p in procs:
        _, err = p.communicate(timeout=60)
        eq(p.returncode, 0, f"record ({err[-400:]})")
        check("starting at" in err, f"it said when it starts: {err[-400:]}")
    for o in outs:
        i = info(o)
        late = i["start_realtime_ns"] % 2000000000
        check(late <= 200000000, f"{o}: started {late} ns after a 2 s boundary")
        execs = [e for e in dump(o) if e["kind"] == "exec" and e["name"] == "true"]
        eq(len(execs), 1, f"{o}: the command ran once")
        check(execs[0]["ts"] >= i["start_monotonic_ns"], f"{o}: the command ran after the start")


SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "traces")
REAL = ["gpt2-eager-range.bst", "lightning-all.bst"]


def totals(path):
    """Per report, the sums of its count and total_ns columns."""
    out = {}
    for rep, rows in stats(path).items():
        for key in ("count", "total_ns", "wait_count"):
            vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
            if vals:
                out[(rep, key)] = sum(vals)
    return out


@beside("reads the real traces only")
def test_merge_real_traces_every_report_adds_up():
    """Two H100 recordings (../shared/traces: CUDA, GPU, NVTX, GIL, stacks, CPU samples, no
    NCCL) merged: placed by their wall clocks, and every report of the merged file is the sum
    of the two files' (strings, stacks, GPU links, pids all renumbered right)."""
    paths = [os.path.join(SHARED, f) for f in REAL]
    if not all(os.path.exists(p) for p in paths):
        raise Skip(f"{SHARED} missing (shared/ beside the checkout)")
    d = tmpdir()
    out = os.path.join(d, "real.bst")
    res = merge(paths, out)
    eq([f["aligned_by"] for f in res["files"]], ["reference", "wall clock"],
       "no collectives: by wall clock")
    want = {}
    for p in paths:
        for k, v in totals(p).items():
            want[k] = want.get(k, 0) + v
    got = totals(out)
    check(len(want) > 10, f"reports with rows: {sorted(want)}")
    eq(got, want, "every report's totals")
    events = {}
    for p in paths:
        for kind, n in info(p)["events"].items():
            events[kind] = events.get(kind, 0) + n
    merged_events = dict(info(out)["events"])
    eq(merged_events.pop("rank", 0), 2, "a RANK record per file")
    eq(merged_events.pop("string"), events.pop("string") + 6, "strings: the files', and merge's")
    eq(merged_events, events, "info: every record of both files")
    # A merged file is not merged again; OUT is never an input, nor replaced without --force.
    p = run([BPFSIGHT, "merge", "-o", os.path.join(d, "again.bst"), out])
    eq(p.returncode, 1, "merging a merged file fails")
    check("a merged file already" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "merge", "-o", out, *paths])
    eq(p.returncode, 1, "OUT exists")
    check("use --force" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "merge", "-o", paths[0], "--force", *paths])
    eq(p.returncode, 1, "OUT is an input")
    check("is one of the files to merge" in p.stderr, p.stderr)


def test_merge_bad_input():
    need_root()
    d = tmpdir()
    junk = os.path.join(d, "junk.bst")
    with open(junk, "w") as f:
        f.write("not a trace\n")
    out = os.path.join(d, "out.bst")
    p = run([BPFSIGHT, "merge", "-o", out, junk])
    eq(p.returncode, 1, "merge of a non-trace fails")
    check("not a bpfsight trace" in p.stderr, p.stderr)
    check(not os.path.exists(out), "nothing left at OUT")
    p = run([BPFSIGHT, "merge", "-o", out] + [junk] * 1025)
    eq(p.returncode, 1, "more files than namespaces")
    check("at most 1024" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "record", "--start-at=10s", "--", "true"])
    eq(p.returncode, 1, "a --start-at without / or @")
    check("bad --start-at" in p.stderr, p.stderr)
