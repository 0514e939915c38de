"""A GPU-less proxy of a launch-bound PyTorch training step, for the cost benchmark
(bench/bench_cost.py) and the detach test (tests/e2e/test_detach.py). Run by a CPython with
symbols (pyenv's) so the gil family has its probes.

    step_proxy.py LIBSTEP_PROXY [--cudart PATH] [--op-us US]

A step makes the calls a launch-bound step makes, from the threads that make them:
  forward    the main thread, holding the GIL (torch's ops launch with it held): FWD ops
  backward   the main thread hands the step to the "autograd" thread (a queue: futex wakes,
             the GIL handed over) and waits without the GIL; that thread launches BWD ops in
             CHUNKS chunks with the GIL released, taking it back between chunks (Python
             hooks), then wakes the main thread (the GIL handed back)
  optimizer  the main thread again: OPT ops
  data       a batch index through a pipe (a write and a read, as a data loader's queue)
Each op is about US microseconds of host work and one launch (libstep_proxy.so: a
cudaLaunchKernel that enters the stub libcuda's cuLaunchKernel); every REAL_EVERY-th op
also makes a call of the real libcudart (cudaStreamQuery or cudaEventQuery). The defaults
make 899 runtime calls a step (870 launches + 29 real ones), 870 driver calls, and an
untraced step of about 20 ms.

Protocol (a line each way): it prints {"pid": P, "threads": {"main": TID, "autograd": TID}};
then "steps N" runs N steps and prints {"ns": [each step's wall time], "cpu": [the process's
CPU time in each step, every thread's: a uprobe's trap and its BPF program are the probed
thread's]}; "calls" prints
{"launches": L, "real": R} made so far; "quit" (or EOF) exits.
"""
import ctypes
import json
import os
import queue
import sys
import threading
import time

FWD, BWD, OPT, CHUNKS = 300, 540, 30, 18
REAL_EVERY = 29  # 10 + 18 + 1 real calls a step


class Proxy:
    def __init__(self, lib_path, cudart, op_us):
        # PyDLL keeps the GIL across the call (forward and optimizer ops); CDLL drops it
        # (the autograd thread's launches).
        self.held = ctypes.PyDLL(lib_path)
        self.free = ctypes.CDLL(lib_path)
        if self.held.proxy_init(cudart.encode()):
            sys.exit(f"step_proxy: cannot load {cudart}")
        self.op_us = op_us
        self.launches = self.real = 0
        self.work = queue.Queue()
        self.done = threading.Event()
        self.rfd, self.wfd = os.pipe()
        self.tids = {"main": threading.get_native_id()}
        ready = threading.Event()
        threading.Thread(target=self.autograd, args=(ready,), name="autograd",
                         daemon=True).start()
        ready.wait()

    def ops(self, lib, n, bwd):
        self.launches += n
        self.real += lib.proxy_ops(n, self.op_us, bwd, REAL_EVERY)

    def autograd(self, ready):
        self.tids["autograd"] = threading.get_native_id()
        ready.set()
        while True:
            self.work.get()
            per = BWD // CHUNKS
            for _ in range(CHUNKS):
                self.ops(self.free, per, 1)
            self.done.set()

    def step(self):
        os.write(self.wfd, b"b")
        os.read(self.rfd, 1)
        self.ops(self.held, FWD, 0)
        self.done.clear()
        self.work.put(1)
        self.done.wait()
        self.ops(self.held, OPT, 0)


def main():
    args = sys.argv[1:]
    lib = args[0]
    cudart = "/usr/local/cuda/lib64/libcudart.so.13"
    op_us = 22
    if "--cudart" in args:
        cudart = args[args.index("--cudart") + 1]
    if "--op-us" in args:
        op_us = int(args[args.index("--op-us") + 1])
    p = Proxy(lib, cudart, op_us)
    print(json.dumps({"pid": os.getpid(), "threads": p.tids}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "steps":
            ns, cpu = [], []
            for _ in range(int(cmd[1])):
                t0, c0 = time.perf_counter_ns(), time.process_time_ns()
                p.step()
                ns.append(time.perf_counter_ns() - t0)
                cpu.append(time.process_time_ns() - c0)
            print(json.dumps({"ns": ns, "cpu": cpu}), flush=True)
        elif cmd[0] == "calls":
            print(json.dumps({"launches": p.launches, "real": p.real}), flush=True)


if __name__ == "__main__":
    main()
