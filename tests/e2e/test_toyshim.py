"""A shim family is its folder plus one line: the toy shim family of tests/toyshim/.

Its module is one line more in a test build of the cupti-shim's module table
(libbpfsight-shim-toyshim.so), its struct family one line more in a test build of bpfsight's
registry (bpfsight-toyshim); nothing else in the tree names it. A program ticks through the
module; the ticks travel through the shim's batches, bpf/shim.bpf.c, the channel's unpacking
(string ids translated from the registry's offsets) into the file, and come out of dump,
stats (the family's report and shim_sum's count) and the exports, every one of them.
"""
import json
import os
import re

import test_export_perfetto as pf
from helpers import BUILD, Skip, check, eq, need_root, run, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 6

TOY_BPFSIGHT = os.path.join(BUILD, "tests", "bpfsight-toyshim")
TOY_SHIM = os.path.abspath(workload("shim/libbpfsight-shim-toyshim.so"))
TICKER = workload("shim/toyshim_workload")
TICKS = 101  # alpha gets the odd values 1..101 (51 ticks), beta the even ones (50)


def toy(*args, **kw):
    return run([TOY_BPFSIGHT, *args], **kw)


def recorded():
    need_root()
    if not os.path.exists(TOY_SHIM):
        raise Skip("no cupti-shim build (it needs the CUPTI headers: set CUDA_HOME)")
    out = os.path.join(tmpdir(), "toy.bst")
    p = toy("record", "-t", "toyshim", "-o", out, "--", TICKER, str(TICKS), timeout=120,
            env=dict(os.environ, BPFSIGHT_SHIM=TOY_SHIM))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    m = re.search(r"pid (\d+) ticks (\d+) alpha (\d+) beta (\d+) sum (\d+)", p.stdout)
    check(m, f"the ticker's line: {p.stdout}")
    pid, made, alpha, beta, total = map(int, m.groups())
    eq((made, alpha, beta, total), (TICKS, 51, 50, TICKS * (TICKS + 1) // 2),
       "every tick made while recording")
    return out, pid


def test_toy_shim_ticks_come_out_of_dump_stats_and_every_export():
    out, pid = recorded()
    # dump: every tick, its name resolved through the file's strings, its value
    p = toy("dump", out)
    eq(p.returncode, 0, p.stderr)
    ticks = [e for e in map(json.loads, p.stdout.splitlines()) if e["kind"] == "toyshim_tick"]
    eq(len(ticks), TICKS, "dump: one event per tick")
    check(all(e["pid"] == pid for e in ticks), "the ticker's pid, as BPF saw it")
    eq(sorted(e["args"]["value"] for e in ticks), list(range(1, TICKS + 1)), "their values")
    eq({e["name"] for e in ticks}, {"alpha", "beta"}, "names resolved")
    eq(sum(e["name"] == "alpha" for e in ticks), 51, "alpha's ticks")

    # stats: the family's own report, and shim_sum's count from its struct family_shim
    p = toy("stats", out, "-r", "toyshim_sum,shim_sum", "--format", "json")
    eq(p.returncode, 0, p.stderr)
    reps = json.loads(p.stdout)["reports"]
    eq(sorted((r["name"], r["ticks"], r["total"]) for r in reps["toyshim_sum"]),
       [("alpha", 51, 51 * 51), ("beta", 50, 50 * 51)], "toyshim_sum")
    row = [r for r in reps["shim_sum"] if r["pid"] == pid]
    eq(len(row), 1, f"shim_sum: {reps['shim_sum']}")
    eq(row[0]["toyshim_ticks"], TICKS, "shim_sum counts the family's records")
    check("toyshim_on" in row[0]["state"], f"its state bit named: {row[0]['state']}")

    # chrome: instants of the family's category
    d = tmpdir()
    p = toy("export", out, "--format", "chrome", "-o", os.path.join(d, "t.json"))
    eq(p.returncode, 0, p.stderr)
    with open(os.path.join(d, "t.json")) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    eq(sorted(e["args"]["value"] for e in evs if e.get("cat") == "toyshim"),
       list(range(1, TICKS + 1)), "chrome: every tick")

    # perfetto: decoded by protoc against Perfetto's own schema
    pf.need_protoc()
    p = toy("export", out, "--format", "perfetto", "-o", os.path.join(d, "t.pftrace"))
    eq(p.returncode, 0, p.stderr)
    model = pf.Model(pf.decode(os.path.join(d, "t.pftrace")))
    vals = sorted(model.args(te)["value"] for _, _, _, _, te in model.events
                  if model.names.get(pf.one(te, "name_iid")) in ("alpha", "beta"))
    eq(vals, list(range(1, TICKS + 1)), "perfetto: every tick")


def test_toy_shim_family_is_named_nowhere_else():
    """Its folder and the two build lines name it; no file of the product does."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    hits = []
    for top in ("user", "bpf", "cupti-shim"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                with open(os.path.join(d, f), errors="replace") as fh:
                    if "toyshim" in fh.read():
                        hits.append(os.path.relpath(os.path.join(d, f), root))
    eq(sorted(hits), ["cupti-shim/shim.mk"],
       "files of the product naming the toy shim family")
