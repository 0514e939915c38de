"""Test workload of --stacks=cuda from Python: CUDA runtime calls made through ctypes (which
releases the GIL around each call, as torch's bindings often do) from known functions.
Prints "pid P" first, then {"mallocs": N, "memcpys": M} and the return codes it saw.

    py_cuda.py [--wait] N    alloc() calls cudaMalloc N times, then copy() calls cudaMemcpy
                             N times; --wait: a line on stdin before the calls, and another
                             before exiting (a test attaches with -p, and flushes the
                             recording while the process still lives)

The call lines carry markers the test looks for (CALL_MALLOC, CALL_MEMCPY).
"""
import ctypes
import json
import os
import sys

CUDART = os.environ.get("CUDART", "/usr/local/cuda/lib64/libcudart.so")


def alloc(rt, n):
    ptr = ctypes.c_void_p()
    codes = set()
    for _ in range(n):
        codes.add(rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(4096)))  # CALL_MALLOC
    return codes


def copy(rt, n):
    buf = ctypes.create_string_buffer(4096)
    codes = set()
    for _ in range(n):
        codes.add(rt.cudaMemcpy(buf, buf, ctypes.c_size_t(4096), 0))  # CALL_MEMCPY
    return codes


def main():
    wait = sys.argv[1] == "--wait"
    n = int(sys.argv[-1])
    rt = ctypes.CDLL(CUDART)
    print(f"pid {os.getpid()}", flush=True)
    if wait:
        sys.stdin.readline()
    codes = alloc(rt, n) | copy(rt, n)
    print(json.dumps({"mallocs": n, "memcpys": n, "codes": sorted(codes)}), flush=True)
    if wait:
        sys.stdin.readline()


if __name__ == "__main__":
    main()
