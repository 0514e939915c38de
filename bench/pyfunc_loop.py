"""bench/bench_pyfunc.py's job: ns per call of a named and an untraced function.

Phases, each the best of BLOCKS loops of N calls (the thread's CPU time: other load on the
machine only slows a loop down):
  untraced      f() and g() with no hook
  python        f() under a sys.monitoring tool whose PY_START and PY_RETURN callbacks are
                Python functions, local events on f's code only (3.12+); before 3.12 a
                sys.setprofile function in Python filtered by code object (the only hook)
then, after "go" on stdin (bench_pyfunc.py attaches a recorder and sends it once bpfsight's
shim traces f):
  traced        f() with the shim's hooks on f (3.12+: local events; before: its C profile
                function), and g() untraced while the recording is on
One JSON line of ns per call.
"""
import json
import sys
import time

N, BLOCKS = 200000, 5
NEW = sys.version_info >= (3, 12)


def f():
    pass


def g():
    pass


def per_call(fn):
    best = None
    for _ in range(BLOCKS):
        t0 = time.thread_time_ns()
        for _ in range(N):
            fn()
        ns = (time.thread_time_ns() - t0) / N
        best = ns if best is None else min(best, ns)
    return best


def python_hook():
    if NEW:
        m = sys.monitoring
        tool = 3
        m.use_tool_id(tool, "bench")
        m.register_callback(tool, m.events.PY_START, lambda code, off: None)
        m.register_callback(tool, m.events.PY_RETURN, lambda code, off, ret: None)
        m.set_local_events(tool, f.__code__, m.events.PY_START | m.events.PY_RETURN)
        ns = per_call(f)
        m.set_local_events(tool, f.__code__, 0)
        m.register_callback(tool, m.events.PY_START, None)
        m.register_callback(tool, m.events.PY_RETURN, None)
        m.free_tool_id(tool)
        return ns
    code = f.__code__

    def prof(frame, what, arg):
        if frame.f_code is code:
            pass

    sys.setprofile(prof)
    ns = per_call(f)
    sys.setprofile(None)
    return ns


out = {"version": "%d.%d" % sys.version_info[:2], "untraced_f": per_call(f),
       "untraced_g": per_call(g), "python_f": python_hook()}
print(json.dumps({"ready": 1}), flush=True)
if sys.stdin.readline().strip() == "go":
    out["traced_f"] = per_call(f)
    out["recording_g"] = per_call(g)
print(json.dumps(out), flush=True)
