"""A GPU-less proxy of a launch-bound PyTorch training step, for the cost benchmark
(bench/bench_cost.py) and the detach test (tests/e2e/test_detach.py). Run by a CPython with
symbols (pyenv's) so the gil family has its probes.

    step_proxy.py LIBSTEP_PROXY [--cudart PATH] [--op-us US]

A step makes the CUDA calls a launch-bound GPT-2 step makes (/work/shared/traces'
gpt2-eager-range.bst: 10 steps on an H100, the same calls each), from the threads that make
them:
  forward    the main thread, holding the GIL (torch's ops launch with it held): FORWARD
  backward   the main thread hands the step to the "autograd" thread (a queue: futex wakes,
             the GIL handed over) and waits without the GIL; that thread makes BACKWARD in
             CHUNKS chunks with the GIL released, taking it back between chunks (Python
             hooks), then wakes the main thread (the GIL handed back)
  optimizer  the main thread again: OPTIMIZER, the step's cudaDeviceSynchronize last
  data       a batch index through a pipe (a write and a read, as a data loader's queue)
Each op is about US microseconds of host work (default 44: 20 ms / 456) and one call
(libstep_proxy.so's letters): a runtime call that enters the stub libcuda's driver entry point
inside it (L cudaLaunchKernel -> cuLaunchKernel, M cudaMemsetAsync -> cuMemsetD8Async,
C cudaMemcpyAsync -> cuMemcpyHtoDAsync_v2, S cudaDeviceSynchronize -> cuCtxSynchronize_v2), or
a direct driver call as cuBLAS and cuBLASLt make them (X cuLaunchKernelEx, m cuMemsetD8Async,
F cuKernelGetFunction). The defaults: 456 ops a step (forward 159, backward 286, optimizer
11), 456 calls made by the step and 372 driver calls inside its runtime calls (344
cuLaunchKernel, 26 cuMemsetD8Async, 1 cuMemcpyHtoDAsync_v2, 1 cuCtxSynchronize_v2): 828
calls, and an untraced step of about 20-21 ms (the GPT-2 step: 21 ms).

Protocol (a line each way): it prints {"pid": P, "threads": {"main": TID, "autograd": TID}};
then "steps N" runs N steps and prints {"ns": [each step's wall time], "cpu": [the process's
CPU time in each step, every thread's: a uprobe's trap and its BPF program are the probed
thread's]}; "calls" prints the calls made so far, {"calls": {FUNCTION: N}, "inside":
{FUNCTION: N}} (by the step itself; inside its runtime calls); "quit" (or EOF) exits.
"""
import ctypes
import json
import os
import queue
import sys
import threading
import time

# Per step, per thread, as the GPT-2 trace has them (top-level calls by letter).
FORWARD = {"C": 1, "L": 132, "X": 21, "m": 5}  # the batch's copy first
BACKWARD = {"L": 202, "X": 46, "M": 26, "m": 4, "F": 8}
OPTIMIZER = {"L": 10, "S": 1}  # the synchronize last
# Backward's chunks (22 ops each), the GIL taken back between them: how often a real
# autograd thread does is not in the trace (recorded without gil); the old proxy's 18, about.
CHUNKS = 13


def spread(counts):
    """The letters of COUNTS, each kind spread evenly over the string (a fixed order)."""
    n = sum(counts.values())
    slots = sorted(((i + 0.5) * n / k, op) for op, k in counts.items() for i in range(k))
    return "".join(op for _, op in slots)


class Proxy:
    def __init__(self, lib_path, cudart, op_us):
        # PyDLL keeps the GIL across the call (forward and optimizer ops); CDLL drops it
        # (the autograd thread's calls).
        self.held = ctypes.PyDLL(lib_path)
        self.free = ctypes.CDLL(lib_path)
        self.held.proxy_fn_name.restype = ctypes.c_char_p
        self.held.proxy_calls.restype = ctypes.c_ulonglong
        if self.held.proxy_init(cudart.encode()):
            sys.exit(f"step_proxy: cannot load {cudart}")
        self.op_us = op_us
        self.forward = ("C" + spread({k: v for k, v in FORWARD.items() if k != "C"})).encode()
        self.optimizer = (spread({"L": OPTIMIZER["L"]}) + "S").encode()
        bwd = spread(BACKWARD)
        per = len(bwd) // CHUNKS
        self.backward = [bwd[i * per:(i + 1) * per if i < CHUNKS - 1 else None].encode()
                         for i in range(CHUNKS)]
        self.work = queue.Queue()
        self.done = threading.Event()
        self.rfd, self.wfd = os.pipe()
        self.tids = {"main": threading.get_native_id()}
        ready = threading.Event()
        threading.Thread(target=self.autograd, args=(ready,), name="autograd",
                         daemon=True).start()
        ready.wait()

    def ops(self, lib, mix, bwd):
        if lib.proxy_ops(mix, self.op_us, bwd) != len(mix):
            sys.exit(f"step_proxy: libstep_proxy.so refused the ops {mix!r}")

    def autograd(self, ready):
        self.tids["autograd"] = threading.get_native_id()
        ready.set()
        while True:
            self.work.get()
            for chunk in self.backward:
                self.ops(self.free, chunk, 1)
            self.done.set()

    def step(self):
        os.write(self.wfd, b"b")
        os.read(self.rfd, 1)
        self.ops(self.held, self.forward, 0)
        self.done.clear()
        self.work.put(1)
        self.done.wait()
        self.ops(self.held, self.optimizer, 0)

    def calls(self):
        """The calls made so far: {"calls": {fn: n}, "inside": {fn: n}}, functions with none
        left out."""
        out = {"calls": {}, "inside": {}}
        i = 0
        while (name := self.held.proxy_fn_name(i)) is not None:
            for inside, key in ((0, "calls"), (1, "inside")):
                n = self.held.proxy_calls(i, inside)
                if n:
                    out[key][name.decode()] = n
            i += 1
        return out


def main():
    args = sys.argv[1:]
    lib = args[0]
    cudart = "/usr/local/cuda/lib64/libcudart.so.13"
    op_us = 44
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
            print(json.dumps(p.calls()), flush=True)


if __name__ == "__main__":
    main()
