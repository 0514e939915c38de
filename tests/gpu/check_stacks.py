"""Python stacks at real kernel launches (tests/gpu/run.sh).

  check_stacks.py BPFSIGHT TRACE RANGE_JSON LOOP_PY

TRACE: `bpfsight record -t cuda --stacks=cuda:0 --capture-range=cudaProfilerApi` of
`torch_loop.py --validate --halves range STEPS` (RANGE_JSON: its pid and steps). What a user
checks with nsys --python-backtrace=cuda:
  - every launch call the loop's main thread made carries a stack whose Python frames pass
    through steps() (the range holds only steps(): nothing else launches there);
  - the launches made by `model(x).square().mean()` itself (pow and mean: two per step)
    name steps() at that line as their innermost Python frame, exactly 2 x STEPS of them;
  - cuda_callsites counts them at that line, on its row without a "Via" (the rows with one
    are launches made inside a library called from that line: Linear.forward, relu).
Launches from PyTorch's autograd thread (backward) have no Python frames: counted, printed.
Exit 0 when all hold, 1 otherwise.
"""
import collections
import json
import subprocess
import sys

from compare_launches import LAUNCH_RE


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    bpfsight, trace, range_json, loop_py = sys.argv[1:]
    with open(range_json) as f:
        want = json.load(f)
    pid, steps = want["pid"], want["steps"]
    line = next(i for i, text in enumerate(open(loop_py), 1) if ".square().mean()" in text)
    dump = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    main_calls, other_calls, no_stack, not_in_steps, at_line = 0, 0, 0, 0, 0
    innermost = collections.Counter()
    for text in dump.stdout.splitlines():
        e = json.loads(text)
        if e["pid"] != pid or e["kind"] != "cuda_api" or not LAUNCH_RE.match(e["name"]):
            continue
        if e["args"].get("depth", 0) != 0:
            continue
        if e["tid"] != pid:
            other_calls += 1
            continue
        main_calls += 1
        if "stack" not in e:
            no_stack += 1
            continue
        py = [(f["func"], f.get("line"), f.get("file", "")) for f in e["stack"] if "line" in f]
        if not any(func == "steps" and file.endswith("torch_loop.py") for func, _, file in py):
            not_in_steps += 1
        if py:
            innermost[f"{py[0][0]} {py[0][2].split('/')[-1]}:{py[0][1]}"] += 1
            if py[0][0] == "steps" and py[0][1] == line:
                at_line += 1
    print(f"  launches: main thread {main_calls} (without a stack {no_stack}, not under "
          f"steps() {not_in_steps}), other threads {other_calls}")
    print(f"  innermost Python frames of the main thread's launches:")
    for k, v in innermost.most_common(12):
        print(f"    {v:6d}  {k}")
    rows = json.loads(subprocess.run([bpfsight, "stats", trace, "-r", "cuda_callsites",
                                      "--format", "json"], capture_output=True, text=True,
                                     check=True).stdout)["reports"]["cuda_callsites"]
    row_count = sum(r["count"] for r in rows
                    if r["func"] == "steps" and r["line"] == line and not r["via_func"]
                    and LAUNCH_RE.match(r["api"]))
    print(f"  steps() line {line}: {at_line} launches (want {2 * steps}), cuda_callsites "
          f"{row_count}")
    ok = (main_calls > 0 and no_stack == 0 and not_in_steps == 0 and at_line == 2 * steps
          and row_count == at_line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
