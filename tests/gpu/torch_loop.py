"""A small real PyTorch training loop for tests/gpu/run.sh (GPU machines only)."""
import os
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
dev = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=dev)
t0 = time.time()
for _ in range(steps):
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
print(f"pid {os.getpid()} device {dev} steps {steps} {time.time() - t0:.3f}s")
