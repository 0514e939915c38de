"""A job that maps what bpfsight probes, for tests/e2e/test_beside.py: ld.so and libc (every
recording's), the CUDA runtime (cuda), NCCL (nccl), c10's allocator reporting (mem: the tests'
libfake_c10_cuda.so), in a Python interpreter (gil).

beside_job.py CUDART NCCL C10: prints {"pid": N}, then reads commands, one a line:
  go N      N calls of cudaMalloc and of ncclCommCount (no GPU: they fail, after entering
            the libraries); then {"done": N}
  fork N    a child process makes N calls of each at once and exits; {"child": PID, "status": S}
            once it has
  hold N    a child process that waits for a line on its stdin (a pipe from here) before its
            N calls; {"child": PID} at once; "release" then lets it go, {"status": S} after
  exit      exits 0
"""
import ctypes
import json
import os
import sys


def calls(cudart, nccl, n):
    ptr, count = ctypes.c_void_p(), ctypes.c_int()
    for _ in range(n):
        cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(256))
        nccl.ncclCommCount(None, ctypes.byref(count))


def main():
    cudart, nccl = ctypes.CDLL(sys.argv[1]), ctypes.CDLL(sys.argv[2])
    ctypes.CDLL(sys.argv[3])  # mapped: its functions are probed
    say = lambda **kw: print(json.dumps(kw), flush=True)
    say(pid=os.getpid())
    held = None
    for line in sys.stdin:
        cmd, *arg = line.split()
        if cmd == "go":
            calls(cudart, nccl, int(arg[0]))
            say(done=int(arg[0]))
        elif cmd == "fork":
            pid = os.fork()
            if not pid:
                calls(cudart, nccl, int(arg[0]))
                os._exit(0)
            say(child=pid, status=os.waitpid(pid, 0)[1])
        elif cmd == "hold":
            r, w = os.pipe()
            pid = os.fork()
            if not pid:
                os.close(w)
                os.read(r, 1)
                calls(cudart, nccl, int(arg[0]))
                os._exit(0)
            os.close(r)
            held = (pid, w)
            say(child=pid)
        elif cmd == "release":
            os.write(held[1], b"g")
            os.close(held[1])
            say(status=os.waitpid(held[0], 0)[1])
        elif cmd == "exit":
            return


main()
