"""tests/e2e/test_pyfunc_eval.py's job: a job whose frame-evaluation slot (PEP 523) is its own
at times, as torch.compile's TorchDynamo takes it (eval_owner.c, built by the test, in the
folder argv[1]). Each line of stdin: "take" / "give" (the slot taken / given back), "run N"
(N calls of work()), "fork N" / "fork_exit N" (a forked child calls work() N times: fork_work), "quit"; each answered with a JSON line: the calls made so far, the frames
the job's own hook was handed, what the slot holds ("own", "default" or "other": the shim's).
"""
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
import eval_owner  # noqa: E402


def work(n):
    return n + 1


def ping():
    """The child's first frame: its shim starts again (not work(), whose calls are counted:
    the child's shim may be in by then or not)."""


def fork_work(n, os_exit):
    """A child calls ping() (its first frame: its shim starts again), says its pid
    ({"child": PID}), waits for the next line of stdin ("go", once the recorder traces it),
    calls work() N times and exits as a process does ({"child_exit": STATUS}), or with
    OS_EXIT as multiprocessing's children do: os._exit, no atexit."""
    r, w = os.pipe()
    child = os.fork()
    if not child:
        os.close(w)
        ping()
        print(json.dumps({"child": os.getpid()}), flush=True)
        os.read(r, 1)
        for i in range(n):
            work(i)
        if os_exit:
            os._exit(0)
        sys.exit(0)
    os.close(r)
    sys.stdin.readline()
    os.write(w, b"g")
    os.close(w)
    _, status = os.waitpid(child, 0)
    print(json.dumps({"child_exit": status}), flush=True)


def main():
    made = 0
    print(json.dumps({"pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd == ["quit"]:
            break
        if cmd == ["take"]:
            eval_owner.take()
        elif cmd == ["give"]:
            eval_owner.give_back()
        elif cmd and cmd[0] in ("fork", "fork_exit"):  # a forked child (a DataLoader worker)
            fork_work(int(cmd[1]), cmd[0] == "fork_exit")
            continue
        elif cmd and cmd[0] == "run":
            for i in range(int(cmd[1])):
                work(i)
            made += int(cmd[1])
        print(json.dumps({"made": made, "frames": eval_owner.frames(),
                          "slot": eval_owner.slot()}), flush=True)


if __name__ == "__main__":
    main()
