"""Bad input for the uprobe families (cuda, nccl) and their options: clear errors, non-zero
exits, nothing lost that was recorded."""
import os

from helpers import (BPFSIGHT, Skip, check, dump, eq, info, need_root, record, run, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 2

SYSCALLS = workload("syscalls")
API_SHARED = workload("cuda/cuda_api_shared")


def test_bad_capture_range_and_gil_mode_refused():
    out = os.path.join(tmpdir(), "x.bst")
    for bad, fams, why in [("bogus", "cuda", "bad --capture-range 'bogus'"),
                           ("nvtx:", "nvtx", "bad --capture-range 'nvtx:'"),
                           ("nvtx:step", "cuda", "needs the nvtx family")]:
        p = run([BPFSIGHT, "record", "--capture-range=" + bad, "-t", fams, "-o", out, "--",
                 "true"])
        eq(p.returncode, 1, f"--capture-range={bad}")
        check(why in p.stderr, p.stderr)
    p = run([BPFSIGHT, "record", "--gil-mode", "fast", "-o", out, "--", "true"])
    eq(p.returncode, 1, "--gil-mode fast")
    check("bad --gil-mode 'fast'" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no file left behind")


def test_uprobe_families_on_a_program_without_cuda():
    need_root()
    # Nothing to probe is not an error: the program's own exit status, no events, no loss.
    p, out = record([SYSCALLS, "--exit", "3", "5", "0"], "-t", "cuda,nccl")
    eq(p.returncode, 3, f"CMD's exit status ({p.stderr})")
    meta = info(out)
    check(meta["clean_close"], "clean close")
    check(not any(meta["lost"].values()), f"nothing lost: {meta['lost']}")
    kinds = {e["kind"] for e in dump(out)}
    check(not kinds & {"cuda_api", "nccl_api"}, f"no API events: {kinds}")
    # --dry-run on it lists no site and writes no file.
    p = run([BPFSIGHT, "record", "-t", "cuda", "--dry-run", "--", SYSCALLS, "0", "0"])
    eq(p.returncode, 0, f"dry run ({p.stderr})")
    check("0 sites in 0 objects" in p.stdout, p.stdout)


def test_truncated_cuda_trace_keeps_what_was_written():
    need_root()
    if not os.path.exists(API_SHARED):
        check(not os.path.exists("/usr/local/cuda/bin/nvcc"), "cuda workloads not built")
        raise Skip("no CUDA toolkit: the cuda workloads are not built")
    p, out = record([API_SHARED, "3"], "-t", "cuda")
    eq(p.returncode, 0, f"record ({p.stderr})")
    full = [e for e in dump(out) if e["kind"] == "cuda_api"]
    check(len(full) > 50, f"calls recorded: {len(full)}")
    data = open(out, "rb").read()
    cut = os.path.join(tmpdir(), "cut.bst")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 40])  # the trailer and part of the footer are gone
    p = run([BPFSIGHT, "dump", cut])
    eq(p.returncode, 0, f"a truncated file is read ({p.stderr})")
    check("not closed cleanly" in p.stderr, p.stderr)
    got = [e for e in dump(cut, check=False) if e["kind"] == "cuda_api"]
    eq(len(got), len(full), "every call of the complete chunks survives")
