"""A CPU training loop that counts its own module calls (a global forward pre-hook, by
class), optimizer steps, backward calls and batches, and prints them as JSON at the end."""
import collections
import json
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

calls = collections.Counter()
torch.nn.modules.module.register_module_forward_pre_hook(
    lambda mod, inp: calls.update([type(mod).__module__ + ":" + type(mod).__qualname__]))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


torch.manual_seed(0)
data = TensorDataset(torch.randn(40, 16), torch.randn(40, 1))
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = batches = 0
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
for epoch in range(epochs):
    for x, y in DataLoader(data, batch_size=8):
        batches += 1
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
print(json.dumps({"forward": dict(calls), "steps": steps, "batches": batches,
                  "epochs": epochs}), flush=True)
