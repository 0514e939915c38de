#!/usr/bin/env python3
"""Maps every CUDA library of a toolkit's lib64 (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE,
NCCL, nvrtc...: ~2.4 GB of ELF files with CUDA 13), as a PyTorch job's import does, then
sleeps. A recorder sees a new process whose files it must examine before it can probe
them: seconds of work on its thread.

    cuda_libs_load.py LIB64 SECONDS

Prints {"pid": P, "loaded": N} once they are mapped (libraries that cannot load here, e.g.
for want of a driver, are skipped).
"""
import ctypes
import glob
import json
import os
import sys
import time


def main():
    lib64, secs = sys.argv[1], float(sys.argv[2])
    loaded = 0
    for path in sorted(glob.glob(os.path.join(lib64, "lib*.so.*")), key=os.path.getsize,
                       reverse=True):
        try:
            ctypes.CDLL(path)
            loaded += 1
        except OSError:
            pass
    print(json.dumps({"pid": os.getpid(), "loaded": loaded}), flush=True)
    time.sleep(secs)


if __name__ == "__main__":
    main()
