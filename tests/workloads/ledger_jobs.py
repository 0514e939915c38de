"""Real jobs of many kinds for the verdict's ledger, each measuring its own truth.

    python3 ledger_jobs.py KIND

starts job KIND (the table JOBS at the end) and prints one JSON line when it runs:
{"pid": PID, "lines": {MARK: LINE}} (the line of each comment marked L:MARK below). Then each
line read on stdin prints the job's truth so far, one JSON line:

    {"t": ns, "threads": {TID: {"name": NAME, "regions": {REGION: [WALL, CPU, READY]},
                                "cpu_ns": ns, "run_delay_ns": ns}}}

regions: the wall time each thread spent inside the exact region of its code the job names
(perf_counter around it) and, of it, its time on a CPU and ready to run without one by its
kernel's own account (/proc/self/task/TID/schedstat, read at the region's edges); cpu_ns and
run_delay_ns the same for the thread's whole life. A test reads the truth before and after a
recording and compares the shares of the difference.
"""
import json
import os
import sys
import threading
import time

REGIONS = {}  # tid -> {region: [wall ns, on-CPU ns, ready-to-run ns]}
LOCAL = threading.local()


def schedstat(tid=None):
    """(on a CPU, ready to run without one) ns of thread TID (the caller's: a pread on a file
    kept open, a few us)."""
    if tid is None:
        fd = getattr(LOCAL, "fd", None)
        if fd is None:
            fd = LOCAL.fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat",
                                    os.O_RDONLY)
        run, delay, _ = os.pread(fd, 128, 0).split()
        return int(run), int(delay)
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            run, delay, _ = f.read().split()
            return int(run), int(delay)
    except OSError:
        return 0, 0


class region:
    """Adds the `with` block's wall time, and its thread's time on a CPU and ready to run in
    it (the kernel's schedstat), to the calling thread's REGION."""

    __slots__ = ("name", "t0", "s0")

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.s0 = schedstat()
        self.t0 = time.perf_counter_ns()

    def __exit__(self, *exc):
        d = time.perf_counter_ns() - self.t0
        run, delay = schedstat()
        r = REGIONS.setdefault(threading.get_native_id(), {}).setdefault(self.name, [0, 0, 0])
        r[0] += d
        r[1] += run - self.s0[0]
        r[2] += delay - self.s0[1]


def truth():
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {}
    for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
        cpu, delay = schedstat(tid)
        out[str(tid)] = {"name": names.get(tid, ""),
                         "regions": {k: list(v) for k, v in REGIONS.get(tid, {}).items()},
                         "cpu_ns": cpu, "run_delay_ns": delay}
    return {"t": time.perf_counter_ns(), "threads": out}


def spin(seconds):
    """Python code on a CPU for about SECONDS (perf_counter: the vDSO, no system call)."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for i in range(200):
            x += i * i
    return x


def die_with_parent():
    """A child's preexec_fn: SIGTERM when the job dies, so that no helper outlives it."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM


def thread(target, name, *args):
    t = threading.Thread(target=target, name=name, args=args, daemon=True)
    t.start()
    return t


# ---- the jobs ----

def job_lock():
    """Four threads, one threading.Lock held 2 ms per turn, 2 ms apart: ~50% waiting."""
    lock = threading.Lock()

    def worker():
        while True:
            with region("lock"):
                lock.acquire()  # L:lock_acquire
            try:
                time.sleep(0.002)  # L:lock_held
            finally:
                lock.release()
            time.sleep(0.002)

    for i in range(4):
        thread(worker, f"w{i}")


def job_fsync():
    """A loop that logs a line and fsyncs it each step, then computes."""
    path = os.path.join(os.environ.get("LEDGER_DIR", "/tmp"), f"ledger-fsync-{os.getpid()}.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def loop():
        n = 0
        while True:
            os.write(fd, b"step %d\n" % n)
            with region("fsync"):
                os.fsync(fd)  # L:fsync
            with region("work"):
                spin(0.0003)  # L:fsync_work
            n += 1
            if n % 2000 == 0:
                os.ftruncate(fd, 0)

    return loop


def job_pycpu():
    """Pure Python on a CPU: hot() ~70% of the time, warm() ~30%."""
    def hot():
        x = 0
        for i in range(7000):  # L:hot
            x += i * i
        return x

    def warm():
        x = 0
        for i in range(3000):  # L:warm
            x += i ^ 5
        return x

    def loop():
        while True:
            with region("hot"):
                hot()
            with region("warm"):
                warm()

    return loop


def job_sgemm():
    """numpy's sgemm (a native library) beside a Python loop, about half each."""
    import numpy as np
    a = np.random.rand(256, 256).astype(np.float32)
    b = np.random.rand(256, 256).astype(np.float32)

    def loop():
        while True:
            with region("matmul"):
                for _ in range(4):
                    a.dot(b)  # L:matmul
            with region("python"):
                spin(0.004)  # L:python

    return loop


def job_queue():
    """A consumer waiting on a queue.Queue for a slow producer (a 3 ms step per item)."""
    import queue
    q = queue.Queue(maxsize=4)

    def producer():
        while True:
            time.sleep(0.003)
            q.put(1)

    thread(producer, "producer")

    def loop():
        while True:
            with region("get"):
                q.get()  # L:queue_get
            with region("work"):
                spin(0.001)

    return loop


def job_http():
    """A loop calling a slow HTTP dependency on loopback (another process, 4 ms a reply)."""
    import subprocess
    import urllib.request
    server = subprocess.Popen(
        [sys.executable, "-c", SLOW_SERVER], stdout=subprocess.PIPE, text=True,
        preexec_fn=die_with_parent)
    port = int(server.stdout.readline())
    url = f"http://127.0.0.1:{port}/"

    def loop():
        while True:
            with region("call"):
                with urllib.request.urlopen(url) as r:  # L:http_call
                    r.read()
            with region("work"):
                spin(0.001)

    return loop


SLOW_SERVER = """
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        time.sleep(0.004)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def job_subprocess():
    """A loop that runs a short child process each step (subprocess.run)."""
    import subprocess

    def loop():
        while True:
            with region("child"):
                subprocess.run(["/bin/sleep", "0.005"])  # L:subprocess
            with region("work"):
                spin(0.001)

    return loop


def job_numpy_mem():
    """A memory-bound numpy loop: adds arrays far larger than the caches."""
    import numpy as np
    a = np.ones(8 << 20)
    b = np.ones(8 << 20)
    out = np.empty(8 << 20)

    def loop():
        while True:
            with region("add"):
                np.add(a, b, out=out)  # L:numpy_add
            with region("python"):
                spin(0.002)

    return loop


def job_logpipe():
    """Logging to a pipe its reader drains slowly: the handler's writes block."""
    import logging
    import subprocess
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import os, time\nwhile True:\n    os.read(0, 4096)\n    time.sleep(0.005)"],
        stdin=subprocess.PIPE, preexec_fn=die_with_parent)
    log = logging.getLogger("ledger")
    log.addHandler(logging.StreamHandler(os.fdopen(reader.stdin.fileno(), "w", 1)))
    log.setLevel(logging.INFO)
    line = "x" * 1000

    def loop():
        while True:
            with region("log"):
                log.info("%s", line)  # L:log_call
            with region("work"):
                spin(0.0005)

    return loop


def job_sleep():
    """A poller: a short step, then 10 ms asleep."""
    def loop():
        while True:
            with region("sleep"):
                time.sleep(0.010)  # L:sleep
            with region("work"):
                spin(0.001)

    return loop


def job_event():
    """Ping-pong: the main loop hands work to a thread and waits on an Event for its answer."""
    ask, done = threading.Event(), threading.Event()

    def helper():
        while True:
            ask.wait()
            ask.clear()
            time.sleep(0.003)  # the helper's part: 3 ms off the CPU
            done.set()

    thread(helper, "helper")

    def loop():
        while True:
            ask.set()
            with region("wait"):
                done.wait()  # L:event_wait
            done.clear()
            with region("work"):
                spin(0.001)

    return loop


def job_gc():
    """A loop making cyclic garbage: the collector runs often (gc.callbacks time it)."""
    import gc
    starts = {}

    def cb(phase, info):
        tid = threading.get_native_id()
        if phase == "start":
            starts[tid] = time.perf_counter_ns()
        elif tid in starts:
            r = REGIONS.setdefault(tid, {}).setdefault("gc", [0, 0, 0])
            r[0] += time.perf_counter_ns() - starts.pop(tid)

    gc.callbacks.append(cb)
    gc.set_threshold(2000, 10, 10)

    class Node:
        pass

    def loop():
        keep = []
        while True:
            for _ in range(2000):
                a, b = Node(), Node()  # L:gc_alloc
                a.other, b.other = b, a
                a.payload = [[0] * 8 for _ in range(6)]
            keep.append(a)
            if len(keep) > 200:
                keep.clear()

    return loop


def job_pool():
    """A thread pool of 4 workers compressing buffers (zlib: the GIL released) on 2 CPUs."""
    import zlib
    from concurrent.futures import ThreadPoolExecutor
    data = os.urandom(1 << 16) * 16
    pool = ThreadPoolExecutor(max_workers=4)

    def work():
        with region("compress"):
            zlib.compress(data, 6)  # L:compress

    def loop():
        while True:
            futures = [pool.submit(work) for _ in range(8)]
            with region("wait"):
                for f in futures:
                    f.result()  # L:pool_wait

    return loop


def job_oversub():
    """torch with 8 intra-op threads (OpenMP) on fewer CPUs: its elementwise ops fight for them."""
    import torch
    torch.set_num_threads(8)
    x = torch.rand(1 << 24)
    out = torch.empty(1 << 24)

    def loop():
        while True:
            with region("op"):
                torch.exp(x, out=out)  # L:oversub_op

    return loop


def job_json():
    """Parsing JSON (the C scanner) in a loop."""
    doc = json.dumps([{"k": i, "v": [i] * 10, "s": "x" * 20} for i in range(2000)])

    def loop():
        while True:
            with region("parse"):
                json.loads(doc)  # L:json_loads

    return loop


JOBS = {name[4:]: fn for name, fn in globals().items() if name.startswith("job_")}


def lines():
    marks = {}
    with open(os.path.abspath(__file__)) as f:
        for n, text in enumerate(f, 1):
            if "# L:" in text and not text.lstrip().startswith(("if", "marks")):
                marks[text.split("# L:", 1)[1].strip()] = n
    return marks


def main():
    kind = sys.argv[1]
    loop = JOBS[kind]()  # the main thread runs the job's loop, when it has one
    print(json.dumps({"pid": os.getpid(), "lines": lines()}), flush=True)
    if loop:
        reader = threading.Thread(target=serve, name="truth", daemon=True)
        reader.start()
        loop()
    else:
        serve()


def serve():
    for _ in sys.stdin:
        print(json.dumps(truth()), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
