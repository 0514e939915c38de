"""One rank of a job that hangs (tests/e2e/test_hang.py), over the CPU NCCL test library
(libnccl_cpu.c, built as libnccl.so.2) through ctypes, as torchrun starts a worker: RANK,
LOCAL_RANK and WORLD_SIZE in the environment, the library's path in NCCL_CPU_LIB, the job's
name in HANG_JOB. Every rank makes one ncclAllReduce after another (64 float32, sum, each
result checked); rank HANG_RANK does not make collective HANG_AT (0-based) but stalls in a
function of its own, as HANG_KIND says:

    read    load_batch() blocks in os.read on a pipe nobody writes
    gil     the main thread asks for the GIL back in wait_turn() (after a short sleep) while
            thread "prep" spins in spin() holding it (the switch interval made 10 minutes
            long once it runs, so it never hands it over)
    lock    take_lock() blocks in futex on a lock thread "holder" holds

The lines the tests look for are marked (READ, SPIN, TURN, LOCK, ALLREDUCE).

A rank listed in HANG_ALSO (RANK:KIND,...) stalls the same way at the same collective. With
HANG_STEP_MS, every rank sleeps that long before each collective (a step's compute).
Prints "ready pid P rank R" once the library is loaded, then waits for the file HANG_GO (when
set) before it makes its communicator; "stall R NS" (CLOCK_MONOTONIC, right before it blocks)
when it stalls, "enter R N" right before it calls collective HANG_AT; the other ranks wait in
collective HANG_AT until the library gives up (60 s). NCCL_CPU_SPIN=1: they poll there, on the
CPU (libnccl_cpu.c), as NCCL's host threads do.
"""
import ctypes
import os
import sys
import threading
import time

RANK = int(os.environ["RANK"])
NRANKS = int(os.environ["WORLD_SIZE"])
HANG_AT = int(os.environ.get("HANG_AT", "30"))
KINDS = {int(os.environ.get("HANG_RANK", "2")): os.environ.get("HANG_KIND", "read")}
for item in filter(None, os.environ.get("HANG_ALSO", "").split(",")):
    r, k = item.split(":")
    KINDS[int(r)] = k

nccl = ctypes.CDLL(os.environ["NCCL_CPU_LIB"])


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId,
                                  ctypes.c_int]
nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                               ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]


def said(what):
    print(what, flush=True)


def load_batch(fd):
    return os.read(fd, 1)  # READ


def spin():
    x = 0
    while True:  # SPIN
        x += 1  # SPIN


def wait_turn():
    time.sleep(0.05)  # TURN


def take_lock(lock):
    with lock:  # LOCK
        pass


def stall(kind):
    if kind == "read":
        r, w = os.pipe()  # w stays open: the read never ends
        said(f"stall {RANK} {time.monotonic_ns()}")
        load_batch(r)
    elif kind == "gil":
        threading.Thread(target=spin, name="prep", daemon=True).start()
        said(f"stall {RANK} {time.monotonic_ns()}")
        # Once "prep" has the GIL it keeps it: 10 minutes (the GIL finder takes intervals up
        # to 1000 s as a sane layout).
        sys.setswitchinterval(600)
        wait_turn()
    elif kind == "lock":
        lock, held = threading.Lock(), threading.Event()

        def hold():
            with lock:
                held.set()
                time.sleep(3600)

        threading.Thread(target=hold, name="holder", daemon=True).start()
        held.wait()
        said(f"stall {RANK} {time.monotonic_ns()}")
        take_lock(lock)
    time.sleep(3600)


def main():
    said(f"ready pid {os.getpid()} rank {RANK}")
    while os.environ.get("HANG_GO") and not os.path.exists(os.environ["HANG_GO"]):
        time.sleep(0.01)
    uid = UniqueId()
    uid.internal = f"bpfsight-test-job:{os.environ['HANG_JOB']}".encode()
    comm = ctypes.c_void_p()
    r = nccl.ncclCommInitRank(ctypes.byref(comm), NRANKS, uid, RANK)
    if r:
        sys.exit(f"rank {RANK}: ncclCommInitRank: {r}")
    send = (ctypes.c_float * 64)(*[float(RANK + 1)] * 64)
    recv = (ctypes.c_float * 64)()
    want = float(sum(range(1, NRANKS + 1)))
    step = float(os.environ.get("HANG_STEP_MS", "0")) / 1e3
    for i in range(1 << 30):
        if step:
            time.sleep(step)
        if i == HANG_AT and RANK in KINDS:
            stall(KINDS[RANK])
        if i == HANG_AT:
            said(f"enter {RANK} {i}")
        # float32, sum
        r = nccl.ncclAllReduce(send, recv, 64, 7, 0, comm, None)  # ALLREDUCE
        if r or recv[0] != want:
            sys.exit(f"rank {RANK}: ncclAllReduce #{i}: {r}, {recv[0]} != {want}")


main()
