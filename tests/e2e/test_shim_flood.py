"""The cupti-shim's batches, and the names they carry, get into a ring buffer that a flood of
events keeps full (issue #29 item 3: "89808 cupti-shim names could not be resolved" after
57,710 ringbuf_full on an H100).

A shim sends each name once per session, in a batch of STRING records ahead of the records
that use it (shim_str.c); a batch that the ring refuses is counted, but its names were gone
for good, and every later record of that process naming them was unresolved. With gpu or
nvtx, the last sixteenth of the ring (at least four batches, at most half) is the batches'
alone (common.bpf.h's record_room): events are lost first.

tests/workloads/shim_flood.py: 8 threads calling the real libcudart in a loop
(tests/workloads/cuda_storm.c) overflow a 64K ring while ten cupti_feed processes, one after
another, each send their names and 127 CUPTI records through the test shim.
"""
import json
import os
import sys

from helpers import BPFSIGHT, BUILD, check, eq, info, need_root, run, tmpdir, workload

SECONDS = 6
ALONE = "8 threads calling CUDA in a loop on every core"
# Nothing beside them either (tests/run_tests.py): they take both cores, and what a stop
# reads in its bounded time is what a core beside them would take.
EXCLUSIVE = True
FUZZERS_BESIDE = ("a fuzzer at idle priority runs only on a core none of their threads "
                  "wants, and a thread that wakes takes the core from it at once")

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
STORM = workload("cuda_storm")
FEED = workload("shim/cupti_feed")
SHIM_TEST = workload("shim/libbpfsight-shim-test.so")
FLOOD = os.path.join(os.path.dirname(__file__), "..", "workloads", "shim_flood.py")
GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_api")


def test_shim_batches_and_names_survive_a_full_ring():
    need_root()
    for p in (CUDART, STORM, FEED, SHIM_TEST):
        check(os.path.exists(p), f"{p} missing: run make test-build (needs the CUDA toolkit)")
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "--buffer-size", "64K", "-t", "cuda,gpu", "--",
             sys.executable, FLOOD, STORM, CUDART, "8", FEED, SHIM_TEST, "10", "100"])
    eq(p.returncode, 0, f"exit ({p.stderr[-800:]})")
    fed = json.loads(p.stdout.strip().splitlines()[-1])
    meta = info(out)
    # The condition under test: the ring was full, and that was counted.
    check(meta["lost"].get("ringbuf_full", 0) > 0, f"the flood filled the ring: {meta['lost']}")
    check("could not be resolved" not in p.stderr, f"every name resolved: {p.stderr[-800:]}")
    got = sum(meta["events"].get(k, 0) for k in GPU_KINDS)
    eq(got, fed["fed"], "every CUPTI record the feeds sent is in the file")
