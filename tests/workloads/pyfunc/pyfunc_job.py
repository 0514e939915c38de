"""The pyfunc family's workload (tests/e2e/test_pyfunc.py): named functions of every kind.

calls: (PYFUNC_JOB_EVAL_OWNER=DIR: first takes the frame-evaluation slot, as TorchDynamo does,
with DIR's eval_owner.so) waits for "go" on stdin (the test sends it once the recorder said every named function
was found) and checks that bpfsight's shim installed its hooks, then runs every named function a known number of times while measuring each itself with Python's own
hook (the truth): sys.setprofile on 3.12+ (its own sys.monitoring tool, beside the shim's),
sys.settrace before (the shim's C profile function holds the profile slot there), on every
thread. It prints one JSON line: per named function, the pieces the hook saw (a generator's
or coroutine's every run between resumes and yields is one, as cProfile counts them) and
their total duration.

loop: a job to attach to (-p --inject): a loop of untraced calls whose rate it prints with
what its interpreter holds (monitoring tools, profile functions of every thread, threading's
hook) on each line of stdin; "hold" starts a thread that stays inside pyfunc_mod.hold until
"release"; "quit" ends it.
"""
import gc
import json
import os
import sys
import threading
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyfunc_mod  # noqa: E402

NEW = sys.version_info >= (3, 12)
SPIN = 20000


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


class Worker:
    def step(self, n):
        return spin(n)


def rec(n):
    spin(SPIN)
    if n:
        rec(n - 1)


def gen(k):
    for i in range(k):
        spin(SPIN)
        yield i


class Later:
    def __await__(self):
        yield "suspended"


async def acoro(k):
    for _ in range(k):
        spin(SPIN)
        await Later()
    return k


def boom():
    # Longer than the others: the truth's own hook runs inside the shim's timed span at each
    # end, and an exception's end makes it slower (13 us a call on a loaded 2-core machine, 5%
    # of passes() at SPIN): its share of the total must stay well under the 5% compared.
    spin(4 * SPIN)
    raise ValueError("boom")


def passes():
    boom()


def thread_work(k):
    for _ in range(k):
        Worker().step(SPIN)


# PyInterpreterState.eval_frame on 3.8, which has no accessor (Include/internal/pycore_pystate.h)
EVAL_FRAME_38 = 568


def eval_hooked():
    """3.8-3.11: the interpreter's frame-evaluation slot (PEP 523) holds another function
    than the default evaluator: the shim's hook."""
    if NEW:
        return False
    import ctypes
    api = ctypes.pythonapi
    api.PyInterpreterState_Main.restype = ctypes.c_void_p
    interp = api.PyInterpreterState_Main()
    if sys.version_info < (3, 9):
        cur = ctypes.c_void_p.from_address(interp + EVAL_FRAME_38).value
    else:
        api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
        api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
        cur = api._PyInterpreterState_GetEvalFrameFunc(interp)
    default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
    return cur is not None and cur != default


def installed():
    """The shim's hooks are in: its sys.monitoring tool, its frame-evaluation hook, or
    threading's hook (3.8-3.11's profile function)."""
    if NEW:
        return any(sys.monitoring.get_tool(i) == "bpfsight" for i in range(6))
    return eval_hooked() or threading._profile_hook is not None


class Truth:
    """Pieces and their total ns per named code object, from Python's own hook."""

    def __init__(self, codes):
        self.codes = codes  # code -> name
        self.count = {n: 0 for n in codes.values()}
        self.total = {n: 0 for n in codes.values()}
        self.local = threading.local()

    def stack(self):
        s = getattr(self.local, "s", None)
        if s is None:
            s = self.local.s = []
        return s

    def event(self, frame, what, arg):
        name = self.codes.get(frame.f_code)
        if name is None:
            return None
        if what == "call":
            self.stack().append((name, time.perf_counter_ns()))
        elif what == "return":
            now = time.perf_counter_ns()
            s = self.stack()
            if s and s[-1][0] == name:
                n, t0 = s.pop()
                self.count[n] += 1
                self.total[n] += now - t0
        return self.trace

    def trace(self, frame, what, arg):
        if what == "call":
            frame.f_trace_lines = False
        return self.event(frame, what, arg)

    def profile(self, frame, what, arg):
        self.event(frame, what, arg)

    def __enter__(self):
        if NEW:
            threading.setprofile(self.profile)
            sys.setprofile(self.profile)
        else:
            threading.settrace(self.trace)
            sys.settrace(self.trace)
        return self

    def __exit__(self, *exc):
        if NEW:
            sys.setprofile(None)
            threading.setprofile(None)
        else:
            sys.settrace(None)
            threading.settrace(None)


def calls():
    # PYFUNC_JOB_EVAL_OWNER=DIR: the job holds the frame-evaluation slot itself from its start,
    # as torch.compile's TorchDynamo does (DIR has eval_owner.so): the shim falls back on its
    # profile function, and every count below must hold the same.
    owner = os.environ.get("PYFUNC_JOB_EVAL_OWNER")
    if owner:
        sys.path.insert(0, owner)
        import eval_owner
        eval_owner.take()
    if sys.stdin.readline().strip() != "go":
        sys.exit("no go")
    if not installed():
        sys.exit("the shim has not installed its hooks")

    # Defined now, after the hooks went in: the shim found its code among this module's
    # constants, so even its first call is traced.
    def late(n):
        return spin(n)

    g = globals()
    codes = {f.__code__: "__main__:" + f.__qualname__ for f in
             (spin, Worker.step, rec, gen, acoro, boom, passes, thread_work)}
    codes[pyfunc_mod.helper.__code__] = "pyfunc_mod:helper"
    codes[late.__code__] = "__main__:calls.<locals>.late"
    # Threads switch where they block, not every 5 ms inside a hook: a switch between the
    # shim's timestamp and the truth's would count another thread's time in one of them.
    sys.setswitchinterval(10)
    # No collection inside a hook either: the truth's own call event allocates (a frame object,
    # a tuple), and a collection it sets off (3.14's incremental one walks part of the old
    # generation each time) lands between the shim's timestamp and the truth's: once 0.8 ms of
    # helper's 11.2 ms in a loaded full run, on Debian's 3.14.
    gc.disable()
    with Truth(codes) as t:
        for _ in range(10):
            Worker().step(SPIN)
            pyfunc_mod.helper(SPIN)
            rec(3)
            for _ in gen(3):
                pass
            c = acoro(2)
            try:
                while True:
                    c.send(None)
            except StopIteration:
                pass
            try:
                passes()
            except ValueError:
                pass
            late(SPIN)
        # No thread takes the GIL from another between the shim's hook and this one's (the
        # job's SCHED_FIFO, for the GIL): 3.12+ calls the shim's sys.monitoring tool first at
        # a return too, then the profile function, Python code that may give the GIL away
        # before its clock read; 3 threads each waiting up to 5 ms there put thread_work's
        # truth 8% over the shim's span on 3.15 (a full run under load). And the shim's return
        # hook, which runs before this one's, writes each new thread's first record (its
        # strings, its batch): ~200 us a thread under load, in the truth's span alone, so each
        # thread works 15 steps (~11 ms), not 5 (5.3% over on 3.12, no thread preempted).
        interval = sys.getswitchinterval()
        sys.setswitchinterval(100.0)
        threads = [threading.Thread(target=thread_work, args=(15,)) for _ in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        sys.setswitchinterval(interval)
    gc.enable()
    g.pop("late", None)
    print(json.dumps({"pid": os.getpid(), "version": list(sys.version_info[:2]),
                      "truth": {n: [t.count[n], t.total[n]] for n in t.count}}), flush=True)


def hooks():
    """What this interpreter holds now, on every thread."""
    out = {"profile": sys.getprofile() is not None,
           "threading": getattr(threading, "_profile_hook", None) is not None,
           "eval": eval_hooked(),
           # 3.11: a traced function's own type (the shim's, while it records its calls)
           "swapped": any(type(f) is not types.FunctionType
                          for f in (pyfunc_mod.tiny, pyfunc_mod.hold, pyfunc_mod.helper))}
    if NEW:
        out["tools"] = [i for i in range(6) if sys.monitoring.get_tool(i) is not None]
        out["events"] = [sys.monitoring.get_events(i) for i in range(6)]
    return out


def loop():
    """Untraced calls in a thread; each line of stdin: their rate since the last line (calls
    per CPU second of that thread: other load on the machine does not move it) and what the
    interpreter holds, asked on the main thread and on a thread started then."""
    counter = [0, 0]  # calls, the worker's CPU ns
    stop = threading.Event()

    def work():
        while not stop.is_set():
            for _ in range(1000):
                pyfunc_mod.tiny()
            counter[0] += 1000
            counter[1] = time.thread_time_ns()

    th = threading.Thread(target=work)
    th.start()
    print(json.dumps({"pid": os.getpid()}), flush=True)
    last = list(counter)
    release = threading.Event()
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        if line.strip() == "hold":  # a thread inside pyfunc_mod.hold until "release"
            entered = threading.Event()
            threading.Thread(target=pyfunc_mod.hold, args=(entered, release)).start()
            entered.wait()
            print(json.dumps({"held": 1}), flush=True)
            continue
        if line.strip() == "release":
            release.set()
            release = threading.Event()
            continue
        now = list(counter)
        probe = {}
        other = threading.Thread(target=lambda: probe.update(hooks()))
        other.start()
        other.join()
        cpu = (now[1] - last[1]) / 1e9
        print(json.dumps({"rate": (now[0] - last[0]) / cpu if cpu > 0 else 0,
                          "main": hooks(), "new_thread": probe}), flush=True)
        last = now
    stop.set()
    th.join()


if __name__ == "__main__":
    {"calls": calls, "loop": loop}[sys.argv[1]]()
