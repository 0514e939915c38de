"""The monitor's GPU metrics against torch.profiler (tests/gpu/run.sh).

  check_monitor.py BPFSIGHT LOOP_PY SHIM WORKDIR STEPS PROFILER_JSON

Starts `torch_loop.py --validate --halves range STEPS` with the cupti-shim in its
environment (as a fleet job would be), waits until it has warmed up, starts
`bpfsight monitor -a -t gpu` on a free port, gives the shim time to turn GPU timing on, lets
the loop run its STEPS steps, then reads /metrics until the counters settle. Checks, printed:
  - bpfsight_gpu_kernels_total equals the kernels torch.profiler counted on the same
    iterations (PROFILER_JSON, another process: CUPTI has one owner per process);
  - bpfsight_gpu_kernel_seconds_total within 2% of torch.profiler's kernel time;
  - bpfsight_gpu_busy_seconds_total: at most the kernel seconds (a union of intervals), and,
    one stream running one kernel at a time, within 1% of them.
Exit 0 when all hold, 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request


def metric(text, name):
    total = None
    for line in text.splitlines():
        if line.startswith(name) and line[len(name)] in "{ ":
            total = (total or 0.0) + float(line.rsplit(None, 1)[1])
    return total


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    bpfsight, loop_py, shim, work, steps, prof_json = sys.argv[1:]
    with open(prof_json) as f:
        prof = json.load(f)
    want_k = sum(prof["gpu_kernels"].values())
    want_s = sum(prof["gpu_kernel_ns"].values()) / 1e9
    go = os.path.join(work, "mon_go")
    env = dict(os.environ, CUDA_INJECTION64_PATH=shim)
    loop = subprocess.Popen([sys.executable, loop_py, "--validate", "--halves", "range", steps,
                             "--wait-file", go, "--json", os.path.join(work, "mon.json")],
                            env=env, stdout=subprocess.PIPE, text=True)
    mon = None
    try:
        first = loop.stdout.readline()
        if not first.startswith("ready pid"):
            print(f"  the loop did not start: {first!r}")
            return 1
        mon = subprocess.Popen([bpfsight, "monitor", "-a", "-t", "gpu", "--listen",
                                "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        start = mon.stderr.readline()
        m = re.search(r"http://(\S+)/metrics", start)
        if not m:
            print(f"  monitor: {start!r}")
            return 1
        url = f"http://{m.group(1)}/metrics"
        time.sleep(3)  # the shim's poller sees the monitor (50 ms), loads and enables CUPTI
        before = urllib.request.urlopen(url, timeout=10).read().decode()
        open(go, "w").close()
        loop.wait(120)
        got, last = None, None
        for _ in range(30):  # the shim drains at exit; the monitor counts as batches come
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            got = (metric(text, "bpfsight_gpu_kernels_total"),
                   metric(text, "bpfsight_gpu_kernel_seconds_total"),
                   metric(text, "bpfsight_gpu_busy_seconds_total"))
            if got == last and got[0]:
                break
            last = got
            time.sleep(1)
        k0 = metric(before, "bpfsight_gpu_kernels_total") or 0
        k, ks, busy = ((v or 0.0) for v in got)
        rel = abs(ks - want_s) / want_s if want_s else 1.0
        print(f"  kernels before the steps {k0:.0f}; after: bpfsight_gpu_kernels_total {k:.0f} "
              f"(torch.profiler {want_k}), kernel seconds {ks * 1e3:.3f} ms (torch.profiler "
              f"{want_s * 1e3:.3f} ms, {rel * 100:.2f}%), busy {busy * 1e3:.3f} ms")
        for line in text.splitlines():
            if line.startswith("bpfsight_gpu") or line.startswith("bpfsight_shim"):
                print(f"    {line}")
        ok = (k0 == 0 and k == want_k and rel <= 0.02 and busy <= ks * 1.000001
              and busy >= ks * 0.99)
        return 0 if ok else 1
    finally:
        if mon:
            mon.terminate()
            print(f"  monitor exit {mon.wait(30)}")
        if loop.poll() is None:
            loop.kill()


if __name__ == "__main__":
    sys.exit(main())
