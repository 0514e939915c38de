"""Thread names in a PyTorch (CPU) program (tests/e2e/test_thread_names.py). Prints
"ready PID" and waits for "go" on stdin; then the training steps (forward, backward, SGD of a
small MLP) run on a threading.Thread named "step-worker" (torch 1.13 runs a CPU backward on
the calling thread: no autograd thread), while a thread started by _thread, not threading,
names itself "pt_worker" with pthread_setname_np as torch's C++ threads do, then asks
threading for itself (a made-up "Dummy-N") and spins in Python; the main thread reads stdin.
It prints "stepped" after the first step; "stop" ends them; then one JSON line: {"tids": {name: tid}, "steps", "threads": {tid: comm}}.
"""
import _thread
import ctypes
import json
import os
import sys
import threading

import torch

libc = ctypes.CDLL(None)
libc.pthread_self.restype = ctypes.c_void_p
libc.pthread_setname_np.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
stop = threading.Event()
tids, steps = {}, [0]


def named_by_c():
    libc.pthread_setname_np(libc.pthread_self(), b"pt_worker")
    threading.current_thread()  # threading's _DummyThread: "Dummy-1"
    tids["pt_worker"] = threading.get_native_id()
    while not stop.is_set():
        sum(range(1000))


def train():
    torch.set_num_threads(1)
    tids["step-worker"] = threading.get_native_id()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    while not stop.is_set():
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        steps[0] += 1
        if steps[0] == 1:
            print("stepped", flush=True)


print("ready %d" % os.getpid(), flush=True)
sys.stdin.readline()
tids["MainThread"] = threading.get_native_id()
_thread.start_new_thread(named_by_c, ())
worker = threading.Thread(target=train, name="step-worker")
worker.start()
sys.stdin.readline()
stop.set()
worker.join()
comms = {}
for t in os.listdir("/proc/self/task"):
    try:  # pt_worker may end between the listing and the open (ENOENT) or the read (ESRCH)
        with open(f"/proc/self/task/{t}/comm") as f:
            comms[t] = f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        pass
print(json.dumps({"tids": tids, "steps": steps[0], "threads": comms}), flush=True)
