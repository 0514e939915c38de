"""Test workload of tests/e2e/test_shim_flood.py: cupti-shim batches sent while a flood of
cuda calls fills the ring buffer.

    shim_flood.py CUDA_STORM LIBCUDART THREADS CUPTI_FEED SHIM FEEDS EXTRA

Starts CUDA_STORM (THREADS threads calling the real libcudart in a loop), then runs
CUPTI_FEED FEEDS times, one after another, each a new process whose shim, once it has seen
the recorder, sends its names (STRING records) and EXTRA + 27 CUPTI records; stops the storm; prints {"fed": N, "pids": [...]}
with the records the feeds sent.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import shim_batches  # noqa: E402


def main():
    storm, cudart, threads, feed, shim, feeds, extra = sys.argv[1:8]
    s = subprocess.Popen([storm, cudart, threads], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    s.stdout.readline()  # its threads wait
    s.stdin.write("go\n")
    s.stdin.flush()
    s.stdout.readline()  # "running"
    env = {k: v for k, v in os.environ.items()
           if k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    fed, pids = 0, []
    try:
        for i in range(int(feeds)):
            # Each feed once its shim has seen the recorder (its attach status): a shim
            # that has not yet sends nothing, and that is no loss.
            d = tempfile.mkdtemp(prefix="shim-flood-")
            go, dump = os.path.join(d, "go"), os.path.join(d, "batches.bin")
            f = subprocess.Popen([feed, "--wait-file", go, "--extra", extra, shim],
                                 env=dict(env, BPFSIGHT_SHIM_DUMP=dump),
                                 stdout=subprocess.PIPE, text=True)
            head = json.loads(f.stdout.readline())
            shim_batches.wait_status(dump, head["pid"], lambda r: r["event_name"] == "attach",
                                     "attach", timeout=120)
            open(go, "w").close()
            out, _ = f.communicate()
            shutil.rmtree(d)  # its dump was read: nothing left in /tmp after the run
            if f.returncode:
                raise SystemExit(f"cupti_feed exited {f.returncode}")
            fed += json.loads(out)["fed"]
            pids.append(head["pid"])
    finally:
        s.kill()
        s.wait()
    print(json.dumps({"fed": fed, "pids": pids}))


if __name__ == "__main__":
    main()
