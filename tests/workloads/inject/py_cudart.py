"""A Python process calling libcudart through ctypes, for record --inject (test_inject.py).

Prints "ready PID"; on each stdin line "go" makes CALLS cudaMalloc(256) calls (argv[1])
and prints "done N" (calls so far); on "end" or EOF prints {"calls": N} and exits 0.
"""
import ctypes
import json
import os
import sys

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 10
cudart = ctypes.CDLL(sys.argv[2] if len(sys.argv) > 2 else "libcudart.so.13")
ptr = ctypes.c_void_p()
made = 0
print(f"ready {os.getpid()}", flush=True)
for line in sys.stdin:
    if line.startswith("end"):
        break
    for _ in range(calls):
        cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(256))
        made += 1
    print(f"done {made}", flush=True)
print(json.dumps({"calls": made}), flush=True)
