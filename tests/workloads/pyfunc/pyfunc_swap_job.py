"""tests/e2e/test_pyfunc_swap.py's job (CPython 3.11): the traced functions' own calls, with
each function object given a type of the shim's (cupti-shim/shim_pyfunc_swap.c).

Each line of stdin is a command, answered with one JSON line:
- "state": for each traced function whether its type is exactly types.FunctionType, and what
  the interpreter's frame-evaluation slot holds ("default" or "other");
- "run": WORK() below, whose calls of each named function are known (EXPECTED);
- "warm": WORK() run untraced until 3.11 specialized its calls, the specialized instructions;
- "same": what a program sees of a traced function (pickle, copy, repr, inspect...);
- "clone": a second function object of step's code object (the same def run again), kept;
  "run_clone N": N calls of it;
- "quit".
argv[1] == "launch": waits until step's type is the shim's (the recording swapped it), runs
WORK() and "same", prints {"state", "same"} and exits.
"""
import copy
import functools
import inspect
import json
import os
import pickle
import sys
import threading
import time
import types


def f():
    pass


def step():
    for _ in range(10):
        f()


def boom(n):
    if n == 0:
        raise ValueError("boom")
    return boom(n - 1)


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


class Base:
    def go(self, x):
        return x + 1


class Sub(Base):
    def go(self, x):
        return super().go(x) * 2


class Box:
    def __getitem__(self, i):
        return i


NAMED = {"__main__:step": lambda: step, "__main__:boom": lambda: boom,
         "__main__:rec": lambda: rec, "__main__:Base.go": lambda: Base.go,
         "__main__:Sub.go": lambda: Sub.go, "__main__:Box.__getitem__": lambda: Box.__getitem__}
SPEC = ",".join(NAMED)
# Each call of each named function WORK() makes (the main thread's and two threads').
EXPECTED = {"__main__:step": 5 + 2 * 3, "__main__:boom": 9, "__main__:rec": 4 + 6,
            "__main__:Base.go": 3, "__main__:Sub.go": 2, "__main__:Box.__getitem__": 5}
clones = []


def work():
    for _ in range(5):
        step()
    for _ in range(3):  # boom(2), boom(1), boom(0) each unwound by ValueError
        try:
            boom(2)
        except ValueError:
            pass
    rec.__code__ = rec.__code__  # a reassigned __code__ keeps its calls traced
    functools.partial(rec, 3)()  # rec(3) .. rec(0): 4
    try:
        rec("too", "many")  # arguments that do not bind: no call ran
    except TypeError:
        pass
    rec(5)  # 6
    s = Sub()
    s.go(1)  # Sub.go, and Base.go through super()
    functools.partial(s.go, 2)()  # a bound method through partial
    Base().go(3)  # Base.go alone
    b = Box()
    for i in range(5):  # BINARY_SUBSCR, specialized for __getitem__ once warm
        b[i]
    threads = [threading.Thread(target=lambda: [step() for _ in range(3)]) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"made": EXPECTED}


def warm():
    """WORK() run untraced until 3.11 specializes its calls (CALL_PY_EXACT_ARGS for step(),
    BINARY_SUBSCR_GETITEM for b[i]): the specialized instructions found in its code."""
    import dis
    for _ in range(20):
        work()
    return {"specialized": sorted({i.opname for i in dis.get_instructions(work, adaptive=True)}
                                  & {"CALL_PY_EXACT_ARGS", "BINARY_SUBSCR_GETITEM"})}


def slot():
    import ctypes
    api = ctypes.pythonapi
    api.PyInterpreterState_Main.restype = ctypes.c_void_p
    api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
    api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
    cur = api._PyInterpreterState_GetEvalFrameFunc(api.PyInterpreterState_Main())
    default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
    return "default" if cur in (None, default) else "other"


def state():
    return {"plain": {n: type(get()) is types.FunctionType for n, get in NAMED.items()},
            "slot": slot()}


def same():
    """What a program sees of a traced function, as of a plain one."""
    return {"pickle": [pickle.loads(pickle.dumps(step, p)) is step
                       for p in range(pickle.HIGHEST_PROTOCOL + 1)],
            "pickle_method": pickle.loads(pickle.dumps(Sub.go)) is Sub.go,
            "deepcopy": copy.deepcopy(step) is step, "copy": copy.copy(step) is step,
            "deepcopy_in_dict": copy.deepcopy({"f": step})["f"] is step,
            "repr": repr(step).startswith("<function step at 0x"),
            "type_name": type(step).__name__, "type_qualname": type(step).__qualname__,
            "type_doc": type(step).__doc__ == types.FunctionType.__doc__,
            "isfunction": inspect.isfunction(step),
            "isinstance": isinstance(step, types.FunctionType),
            "signature": str(inspect.signature(boom)), "name": step.__name__,
            "qualname": Sub.go.__qualname__, "bound": inspect.ismethod(Sub().go),
            "weakref": __import__("weakref").ref(step)() is step,
            "dict": [setattr(step, "tag", 7), step.tag][1]}


def launch():
    deadline = time.time() + 60
    while type(step) is types.FunctionType and time.time() < deadline:
        time.sleep(0.01)
    s = state()
    print(json.dumps({"state": s, "run": work(), "same": same(), "pid": os.getpid()}),
          flush=True)


def main():
    print(json.dumps({"pid": os.getpid(), "spec": SPEC, "expected": EXPECTED}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd == ["quit"]:
            break
        if cmd == ["state"]:
            out = state()
        elif cmd == ["run"]:
            out = work()
        elif cmd == ["warm"]:
            out = warm()
        elif cmd == ["same"]:
            out = same()
        elif cmd == ["clone"]:
            clones.append(types.FunctionType(step.__code__, globals(), "step"))
            out = {"clones": len(clones), "plain": type(clones[-1]) is types.FunctionType}
        elif cmd and cmd[0] == "run_clone":
            for _ in range(int(cmd[1])):
                clones[-1]()
            out = {"plain": type(clones[-1]) is types.FunctionType}
        else:
            out = {"error": line}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    launch() if sys.argv[1:] == ["launch"] else main()
