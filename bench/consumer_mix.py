# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The mixed stream of bench/bench_consumer.py: bench/cuda_loop's cudaStreamQuery loop, two
CPython threads passing the GIL to each other (gil records; their sleeps and the pipe are
osrt's), and tests' cupti_feed sending the cupti-shim's batches of EXTRA synthetic kernels,
all at once, for MS milliseconds.

    consumer_mix.py --loop CUDA_LOOP --ms MS --feed CUPTI_FEED --shim SHIM --extra N
"""
import argparse
import os
import subprocess
import threading
import time


def pingpong(until):
    n = 0
    while time.monotonic() < until:
        n += sum(range(200))  # holds the GIL: the other thread waits for it
        if n % 7 == 0:
            time.sleep(0)
    return n


def main():
    ap = argparse.ArgumentParser()
    for a in ("--loop", "--feed", "--shim"):
        ap.add_argument(a, required=True)
    ap.add_argument("--ms", type=int, required=True)
    ap.add_argument("--extra", type=int, required=True)
    a = ap.parse_args()
    until = time.monotonic() + a.ms / 1000
    loop = subprocess.Popen([a.loop, "-m", str(a.ms), "streamquery"],
                            stdout=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    feeds = 0
    threads = [threading.Thread(target=pingpong, args=(until,)) for _ in range(2)]
    for t in threads:
        t.start()
    while time.monotonic() < until or not feeds:
        subprocess.run([a.feed, "--extra", str(a.extra), a.shim], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        feeds += 1
    for t in threads:
        t.join()
    loop.wait()
    print(f"feeds {feeds}")


if __name__ == "__main__":
    main()
