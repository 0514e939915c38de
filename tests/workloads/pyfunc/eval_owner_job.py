"""tests/e2e/test_pyfunc_eval.py's job: a job whose frame-evaluation slot (PEP 523) is its own
at times, as torch.compile's TorchDynamo takes it (eval_owner.c, built by the test, in the
folder argv[1]). Each line of stdin: "take" / "give" (the slot taken / given back), "run N"
(N calls of work()), "fork" (what a forked child's slot holds), "quit"; each answered with a JSON line: the calls made so far, the frames
the job's own hook was handed, what the slot holds ("own", "default" or "other": the shim's).
"""
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
import eval_owner  # noqa: E402


def work(n):
    return n + 1


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
        elif cmd == ["fork"]:  # what a forked child (a DataLoader worker) finds
            r, w = os.pipe()
            child = os.fork()
            if not child:
                os.write(w, eval_owner.slot().encode())
                os._exit(0)
            os.close(w)
            child_slot = os.read(r, 64).decode()
            os.close(r)
            os.waitpid(child, 0)
            print(json.dumps({"child_slot": child_slot, "slot": eval_owner.slot()}), flush=True)
            continue
        elif cmd and cmd[0] == "run":
            for i in range(int(cmd[1])):
                work(i)
            made += int(cmd[1])
        print(json.dumps({"made": made, "frames": eval_owner.frames(),
                          "slot": eval_owner.slot()}), flush=True)


if __name__ == "__main__":
    main()
