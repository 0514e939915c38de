"""The pytorch preset's workload (tests/e2e/test_pyfunc.py): a CPU training loop.

Defines its model, then marker (named by the test's spec first: once the shim has found it,
it has walked nn.Module's subclasses after the model was defined), waits for "go" on
stdin, runs STEPS steps and prints one JSON line: the module calls by class, as torch's own
global forward hook counted them, and the steps.
"""
import collections
import json
import os
import sys

import torch
import torch.nn as nn

STEPS = 12


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 8)
        self.l2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


# Compiled now, after the model: no running code holds its code object, so the shim finds it
# only by walking __main__'s attributes, which it does after the model was defined.
exec("def marker():\n    pass\n")


def main():
    calls = collections.Counter()

    def count(mod, inp, out):
        calls[type(mod).__name__] += 1

    torch.nn.modules.module.register_module_forward_hook(count)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    if sys.stdin.readline().strip() != "go":
        sys.exit("no go")
    for _ in range(STEPS):
        opt.zero_grad()
        net(torch.randn(4, 8)).sum().backward()
        opt.step()
    print(json.dumps({"pid": os.getpid(), "modules": calls, "steps": STEPS}), flush=True)


main()
