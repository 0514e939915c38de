"""A torch.compile'd function beside named ones (tests/e2e/test_pyfunc.py, on the torch
releases that have torch.compile: make check-torch-versions' trixie and sid roots).

Compiled with a backend of its own (no C++ compiler needed: TorchDynamo still captures the
graph and runs it in place of the function's bytecode), which counts the graphs it was given
and the times a graph ran. Waits for "go" on stdin, runs STEPS steps, each step() calling the
compiled function once, and prints one JSON line: the steps, the graphs compiled, the graph
runs (every step ran the compiled graph, not the Python function).
"""
import json
import os
import sys
import tempfile

# Inductor's cache folder is named after the user, which a chrooted root has no entry for.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="pyfunc-compile-"))
import torch  # noqa: E402

STEPS = 20
graphs, runs = [0], [0]


def backend(gm, example_inputs):
    graphs[0] += 1

    def run(*args):
        runs[0] += 1
        return gm.forward(*args)
    return run


def model(x):
    return torch.relu(x @ x.T).sum()


compiled = torch.compile(model, backend=backend)


def step(x):
    return compiled(x)


def main():
    x = torch.randn(4, 4)
    if sys.stdin.readline().strip() != "go":
        sys.exit("no go")
    for _ in range(STEPS):
        step(x)
    print(json.dumps({"pid": os.getpid(), "steps": STEPS, "graphs": graphs[0],
                      "runs": runs[0]}), flush=True)


if __name__ == "__main__":
    main()
