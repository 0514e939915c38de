#!/usr/bin/env python3
"""A PyTorch (CPU) training loop fed by a thread running a pure-Python tokenize().

    torch_tokenize.py [--go] STEPS

The main thread ("trainer") trains a small MLP on batches a second thread ("tokenizer")
makes: tokenize() splits generated text into words and maps them to ids in Python, holding
the GIL; torch's operators release it, and the trainer waits to take it back while
tokenize() runs: the holder code issue 13 asks bpfsight to name. The tokenizer never blocks
and never calls torch (a full queue drops the batch), so it holds the GIL all along except
when the trainer forces a switch: every time the trainer takes the GIL back it waits on
tokenize(), whatever the machine's speed or load. (A tokenizer that blocked on a full queue
let a CPU-starved trainer take the GIL without waiting.) STEPS, not seconds, so a loaded
machine gives as many waits as an idle one. With --go it prints
"ready PID" and waits for a line on stdin, so a tracer can attach with -p first, and after
its JSON line ({"pid", "steps", "threads": {name: tid}}) waits for another before it exits,
so the tracer names its frames while it lives.
"""
import ctypes
import json
import os
import queue
import random
import sys
import threading

import torch

libc = ctypes.CDLL(None)
BATCH, SEQ, DOC = 32, 64, 256
WORDS = ["the", "model", "learns", "from", "tokens", "that", "a", "thread", "makes", "in",
         "python", "while", "holding", "gil", "and", "torch", "waits"]


def set_name(name):
    libc.prctl(15, name.encode(), 0, 0, 0)


def tokenize(text, vocab):
    """Pure Python, on purpose: a character loop that holds the GIL."""
    ids, word = [], []
    for ch in text:
        if ch.isalnum():
            word.append(ch.lower())
        elif word:
            ids.append(vocab.setdefault("".join(word), len(vocab)) % 1000)
            word = []
    if word:
        ids.append(vocab.setdefault("".join(word), len(vocab)) % 1000)
    return (ids + [0] * SEQ)[:SEQ]


def tokenizer(out, stop, tids):
    set_name("tokenizer")
    tids["tokenizer"] = threading.get_native_id()
    rng, vocab = random.Random(1), {}
    corpus = [" ".join(rng.choice(WORDS) for _ in range(DOC)) for _ in range(4 * BATCH)]
    while not stop.is_set():
        rows = [tokenize(t, vocab) for t in rng.sample(corpus, BATCH)]
        try:
            out.put_nowait(rows)
        except queue.Full:
            pass


def main():
    args = sys.argv[1:]
    go = args and args[0] == "--go"
    nsteps = int(args[1 if go else 0])
    torch.set_num_threads(1)
    set_name("trainer")
    tids = {"trainer": threading.get_native_id()}
    model = torch.nn.Sequential(torch.nn.Linear(SEQ, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches, stop = queue.Queue(4), threading.Event()
    if go:
        print("ready %d" % os.getpid(), flush=True)
        sys.stdin.readline()
    t = threading.Thread(target=tokenizer, args=(batches, stop, tids), daemon=True)
    t.start()
    steps = 0
    while steps < nsteps:
        x = torch.tensor(batches.get(), dtype=torch.float32) / 1000.0
        loss = torch.nn.functional.mse_loss(model(x), x.mean(dim=1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    stop.set()
    t.join(1)
    print(json.dumps({"pid": os.getpid(), "steps": steps, "threads": tids}), flush=True)
    if go:
        sys.stdin.readline()


if __name__ == "__main__":
    main()
