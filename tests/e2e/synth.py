"""Synthetic traces: records packed as bpf/records.h and bpf/*_records.h lay them out, written to a .bst by the real
trace writer (build/tests/bst_write). For the readers' tests of records no recorder produces on a
machine without a GPU (CUPTI's kernels, copies, memsets, API records) and without the shim's
NVTX ranges.

    t = Trace()
    t.process(100, "train")
    t.kernel(pid=100, tid=101, ts=..., dur=..., name="gemm", ...)
    path = t.write(dir)
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile

from helpers import BPFSIGHT, BUILD, check, eq

BST_WRITE = os.path.join(BUILD, "tests", "bst_write")

# Record types and flags (records.h).
STRING, PROCESS, THREAD, LOSS, FORK, EXIT = 0x01, 0x02, 0x03, 0x04, 0x05, 0x07
SYSCALL_AGG, AGG_FINAL = 0x11, 0x1
CUDA_CALL = 0x30
CUBLAS_CALL = 0xc0  # cublas_records.h
SHIM_STATUS, GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_API = 0x61, 0x62, 0x63, 0x64, 0x65
NVTX_RANGE, NVTX_MARK, NVTX_NAME, NVTX_BEGIN = 0x70, 0x71, 0x72, 0x73
GPU_CALL_CUDA, GPU_CALL_API, GPU_GRAPH = 0x1, 0x2, 0x4
NVTX_PUSHPOP, NVTX_OPEN, NVTX_COLOR, NVTX_REGISTERED = 0x1, 0x2, 0x4, 0x80
PAYLOAD = {"u64": 0x10, "i64": 0x20, "f64": 0x30, "u32": 0x40, "i32": 0x50, "f32": 0x60}
NAME_THREAD, NAME_CATEGORY = 1, 2
TORCH_OP, TORCH_STEP = 0x90, 0x91
TORCH_SCOPES = {"function": 0, "backward_function": 1, "user_scope": 7}
TORCH_STEP_SCOPE, TORCH_PROFILER_STEP = 0x1, 0x2
PYFUNC_CALL = 0x110  # pyfunc_records.h (0xf2 in format 3)
PYFUNC_ENDS = {"return": 0, "unwind": 1, "yield": 2, "open": 3}
PYFUNC_RESUMED = 0x1
EV_ATTACH, EV_STATE, EV_CUPTI_ERROR, EV_DRAINED, EV_DROPPED, EV_EXIT = 1, 2, 3, 4, 5, 6
LOSS_SHIM = 6
GIL_WAIT, GIL_HOLD, GIL_AGG, GIL_BLAME, GIL_PROC = 0x50, 0x51, 0x52, 0x53, 0x54
GIL_WAIT_MUTEX, GIL_WAIT_TAKE_GIL, GIL_WAIT_HANDOFF = 0x1, 0x2, 0x4
GIL_CONDWAIT, GIL_TAKE_GIL = 1, 2
GIL_PROC_MUTEX, GIL_PROC_HOLDER, GIL_PROC_VERIFIED = 0x2, 0x4, 0x8
MEM_ALLOC, MEM_RSS, MEM_GROW, MEM_OOM = 0xb0, 0xb1, 0xb2, 0xb3  # mem_records.h
MEM_DEV_CPU, MEM_SRC_CPU, MEM_SRC_REPORT = -1, 1, 2
MEM_FREE, MEM_TOTALS = 0x1, 0x2

STACK, STACK_REF = 0x0b, 0x0d
FRAME_NATIVE, FRAME_PYTHON, FRAME_CUT, STACK_TRUNCATED = 1, 2, 3, 0x1
MEM_ALLOC, MEM_RSS, MEM_GROW, MEM_OOM, MEM_STREAM = 0xb0, 0xb1, 0xb2, 0xb3, 0xb4
MEM_DEV_CPU = -1
MEM_SRC_CPU, MEM_SRC_REPORT, MEM_SRC_USDT = 1, 2, 3
MEM_FREE, MEM_TOTALS = 0x1, 0x2

MEM_ALLOC, MEM_RSS, MEM_GROW, MEM_OOM = 0xb0, 0xb1, 0xb2, 0xb3
MEM_DEV_CPU = -1
MEM_SRC_CPU, MEM_SRC_REPORT, MEM_SRC_USDT = 1, 2, 3
MEM_FREE, MEM_TOTALS, MEM_HAS_STREAM = 0x1, 0x2, 0x4

HDR = "<HHIIIQ"
SIZES = {STRING: 32, PROCESS: 64, THREAD: 40, LOSS: 40, FORK: 48, EXIT: 32, GIL_WAIT: 40,
         GIL_HOLD: 32, GIL_AGG: 336, GIL_BLAME: 48, GIL_PROC: 56, CUDA_CALL: 152, SHIM_STATUS: 64,
         GPU_KERNEL: 112, GPU_MEMCPY: 96, GPU_MEMSET: 88, GPU_API: 64, NVTX_RANGE: 72,
         NVTX_MARK: 56, NVTX_NAME: 48, NVTX_BEGIN: 40, TORCH_OP: 72, TORCH_STEP: 48,
         STACK_REF: 32, MEM_ALLOC: 64, MEM_RSS: 56, MEM_GROW: 40, MEM_OOM: 56,
         MEM_STREAM: 56, PYFUNC_CALL: 56}


def _rec(rtype, pid, tid, ts, body_fmt, *body, extra=b""):
    body = struct.pack("<" + body_fmt, *body) + extra
    size = struct.calcsize(HDR) + len(body)
    if rtype in SIZES and not extra:
        eq(size, SIZES[rtype], f"record 0x{rtype:x} packed as records.h lays it out")
    return struct.pack(HDR, rtype, size, 0, pid, tid, ts) + body


def short_rec(rtype, pid, tid, ts, body_bytes):
    """A record of RTYPE with only BODY_BYTES after its header: too short for its type."""
    return struct.pack(HDR, rtype, struct.calcsize(HDR) + body_bytes, 0, pid, tid, ts) + \
        b"\0" * body_bytes


def payload_bits(kind, value):
    """The raw u64 of a typed NVTX payload."""
    if kind == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if kind == "f32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if kind in ("i64", "i32"):
        return value & ((1 << 64) - 1) if kind == "i64" else value & 0xffffffff
    return value


def _attr_flags(color, payload):
    """The flags and raw payload of an NVTX event's color and (type, value) payload."""
    flags, bits = NVTX_COLOR if color is not None else 0, 0
    if payload is not None:
        flags |= PAYLOAD[payload[0]]
        bits = payload_bits(*payload)
    return flags, bits


class Trace:
    def __init__(self, families="proc,cuda,gpu,nvtx", start=1000, end=None, flush_every=None,
                 gpus=None):
        """FLUSH_EVERY N: a chunk every N records (one chunk if None), for tests that spoil
        one chunk of several. GPUS: the header's GPUs, ["0000:18:00.0 NVIDIA H100 80GB HBM3"]
        (none if None)."""
        self.recs = []
        self.flush_every = flush_every
        self.strings = {}
        self.families = families
        self.start = start
        self.end = end
        self.gpus = gpus

    # -- metadata --
    def string(self, text, pid=0):
        """The id of TEXT, its STRING record written before first use."""
        if text is None:
            return 0
        if text not in self.strings:
            sid = len(self.strings) + 1
            self.strings[text] = sid
            b = text.encode()
            pad = b + b"\0" * (-len(b) % 8)
            self.recs.append(_rec(STRING, 0, 0, 0, "II", sid, len(b), extra=pad))
        return self.strings[text]

    def process(self, pid, comm, ts=0):
        self.recs.append(_rec(PROCESS, pid, pid, ts, "IIIIQ16s", 1, 0, 0, 0, 0, comm.encode()))

    def thread(self, pid, tid, name, ts=0):
        self.recs.append(_rec(THREAD, pid, tid, ts, "16s", name.encode()))

    def loss(self, cause, count, ts):
        self.recs.append(_rec(LOSS, 0, 0, ts, "IIQ", cause, 0, count))

    def fork(self, pid, tid, ts, child_pid, child_tid, comm=""):
        self.recs.append(_rec(FORK, pid, tid, ts, "II16s", child_pid, child_tid, comm.encode()))

    def exit(self, pid, tid, ts, code=0, group_dead=0):
        self.recs.append(_rec(EXIT, pid, tid, ts, "II", code, group_dead))

    # -- gil family --
    def gil_wait(self, pid, tid, ts, dur, holder=0, rounds=1, flags=0):
        self.recs.append(_rec(GIL_WAIT, pid, tid, ts, "QIHH", dur, holder, rounds, flags))

    def gil_hold(self, pid, tid, ts, dur):
        self.recs.append(_rec(GIL_HOLD, pid, tid, ts, "Q", dur))

    def gil_agg(self, pid, tid, ts, waits=(0, 0, 0), holds=(0, 0, 0), short=None,
                threshold=50000):
        """Cumulative totals: WAITS and HOLDS as (count, total_ns, max_ns), SHORT {bucket: n}."""
        hist = [0] * 32
        for b, n in (short or {}).items():
            hist[b] = n
        self.recs.append(_rec(GIL_AGG, pid, tid, ts, "Q6Q32Q", threshold, *waits, *holds,
                              *hist))

    def gil_blame(self, pid, waiter, ts, holder, count, total):
        self.recs.append(_rec(GIL_BLAME, pid, waiter, ts, "IIQQ", holder, 0, count, total))

    def gil_proc(self, pid, ts, version=0x030b07f0, method=GIL_CONDWAIT,
                 flags=GIL_PROC_MUTEX | GIL_PROC_HOLDER | GIL_PROC_VERIFIED, obj=None,
                 note=None, gil_addr=0x7f0000001000):
        o, n = self.string(obj, pid), self.string(note, pid)
        self.recs.append(_rec(GIL_PROC, pid, pid, ts, "QIIIIII", gil_addr, version, method,
                              flags, o, n, 0))

    # -- cuda family --
    def cuda_call(self, pid, tid, ts, dur, fn, ret=0, depth=0, args=()):
        words = list(args) + [0] * (12 - len(args))
        self.recs.append(_rec(CUDA_CALL, pid, tid, ts, "QqQIHH12Q", dur, ret, 0, fn, depth, 0,
                              *words))

    # -- cublas family --
    def cublas_call(self, pid, tid, ts, dur, fn, ret=0, depth=0, args=(), stack=None,
                    rtype=CUBLAS_CALL):
        """A bs_ucall of the cublas family (RTYPE: of another uprobe family); STACK: the 7th..
        argument words, copied (192 bytes, as a GEMM's spec's -!N copy)."""
        words = list(args) + [0] * (12 - len(args))
        copy = b""
        if stack is not None:
            copy = struct.pack(f"<{len(stack)}Q", *stack).ljust(192, b"\0")
        self.recs.append(_rec(rtype, pid, tid, ts, "QqQIHH12Q", dur, ret, 0, fn, depth,
                              len(copy), *words, extra=copy))

    # -- gpu family --
    def status(self, pid, tid, ts, state, event, cupti_result=0, detail=None, dropped=0, seq=0,
               cupti_version=0):
        d = self.string(detail, pid)
        self.recs.append(_rec(SHIM_STATUS, pid, tid, ts, "IIiIQQII", state, event, cupti_result,
                              d, dropped, seq, cupti_version, 0))

    def kernel(self, pid, tid, ts, dur, name, call_ts=0, flags=0, correlation=0, device=0,
               context=1, stream=7, grid=(1, 1, 1), block=(1, 1, 1), shmem_dynamic=0,
               shmem_static=0, registers=0, graph_id=0, graph_node_id=0):
        n = self.string(name, pid)
        self.recs.append(_rec(GPU_KERNEL, pid, tid, ts, "QQIIIII3I3IIIHHIIQ", dur, call_ts,
                              correlation, n, device, context, stream, *grid, *block,
                              shmem_dynamic, shmem_static, registers, flags, graph_id, 0,
                              graph_node_id))

    def memcpy(self, pid, tid, ts, dur, nbytes, copy_kind, src_kind=0, dst_kind=0, is_async=0,
               call_ts=0, flags=0, correlation=0, device=0, context=1, stream=7, src_device=None,
               dst_device=None, graph_id=0, graph_node_id=0):
        src_device = device if src_device is None else src_device
        dst_device = device if dst_device is None else dst_device
        self.recs.append(_rec(GPU_MEMCPY, pid, tid, ts, "QQQIIIIBBBBHHIIIIQ", dur, call_ts,
                              nbytes, correlation, device, context, stream, copy_kind, src_kind,
                              dst_kind, is_async, flags, 0, src_device, dst_device, graph_id, 0,
                              graph_node_id))

    def memset(self, pid, tid, ts, dur, nbytes, value=0, mem_kind=3, call_ts=0, flags=0,
               correlation=0, device=0, context=1, stream=7, graph_id=0, graph_node_id=0):
        self.recs.append(_rec(GPU_MEMSET, pid, tid, ts, "QQQIIIIIHHIIQ", dur, call_ts, nbytes,
                              correlation, device, context, stream, value, mem_kind, flags,
                              graph_id, 0, graph_node_id))

    def api(self, pid, tid, ts, dur, name, correlation, cbid=0, ret=0, domain=2, call_ts=0,
            flags=0):
        n = self.string(name, pid)
        self.recs.append(_rec(GPU_API, pid, tid, ts, "QQIIIIHHI", dur, call_ts, correlation,
                              cbid, n, ret, domain, flags, 0))

    # -- nvtx family --
    def range(self, pid, tid, ts, dur, text, domain=None, pushpop=True, depth=0, end_tid=None,
              range_id=0, category=0, color=None, payload=None, is_open=False,
              registered=False):
        flags, bits = _attr_flags(color, payload)
        flags |= (NVTX_PUSHPOP if pushpop else 0) | (NVTX_OPEN if is_open else 0) | \
            (NVTX_REGISTERED if registered else 0)
        n, d = self.string(text, pid), self.string(domain, pid)
        self.recs.append(_rec(NVTX_RANGE, pid, tid, ts, "QQQIIIIIHH", dur, range_id, bits, n, d,
                              tid if end_tid is None else end_tid, category, color or 0, depth,
                              flags))

    def mark(self, pid, tid, ts, text, domain=None, category=0, color=None, payload=None):
        flags, bits = _attr_flags(color, payload)
        n, d = self.string(text, pid), self.string(domain, pid)
        self.recs.append(_rec(NVTX_MARK, pid, tid, ts, "QIIIIHHI", bits, n, d, category,
                              color or 0, flags, 0, 0))

    def name(self, pid, tid, ts, kind, key, text, domain=None):
        n, d = self.string(text, pid), self.string(domain, pid)
        self.recs.append(_rec(NVTX_NAME, pid, tid, ts, "QIIII", key, kind, n, d, 0))

    def begin(self, pid, tid, ts, text, range_id=0, domain=None):
        n, d = self.string(text, pid), self.string(domain, pid)
        self.recs.append(_rec(NVTX_BEGIN, pid, tid, ts, "QII", range_id, n, d))

    # -- torch family --
    def torch_op(self, pid, tid, ts, dur, name, scope="function", seq=-1, fwd_tid=0,
                 torch_tid=1, depth=0, shapes=None, flags=0, concrete=None):
        n, s, c = self.string(name, pid), self.string(shapes, pid), self.string(concrete, pid)
        self.recs.append(_rec(TORCH_OP, pid, tid, ts, "QqQQIIBBHI", dur, seq, fwd_tid,
                              torch_tid, n, s, TORCH_SCOPES[scope], depth, flags, c))

    def torch_step(self, pid, tid, ts, dur, step, scope="Optimizer.step#SGD.step"):
        self.recs.append(_rec(TORCH_STEP, pid, tid, ts, "QQII", dur, step, self.string(scope, pid),
                              0))

    # -- pyfunc family (bpf/pyfunc_records.h) --
    def pyfunc_call(self, pid, tid, ts, dur, func, file, line, depth=0, end="return",
                    resumed=False, domain=None):
        """One piece of a named Python function's call (FUNC "module:Qual.name"), written when
        it ends; END one of PYFUNC_ENDS, RESUMED: it began at a generator's resume."""
        f, fl, d = self.string(func, pid), self.string(file, pid), self.string(domain, pid)
        self.recs.append(_rec(PYFUNC_CALL, pid, tid, ts, "QIIIIHBBI", dur, f, fl, line, d, depth,
                              PYFUNC_ENDS[end], PYFUNC_RESUMED if resumed else 0, 0))

    # -- stacks (bpf/stack_records.h) --
    def stack(self, sid, frames, truncated=False, pid=0, tid=0, ts=0):
        """Stack SID: FRAMES innermost first, each ("py", func, file, line),
        ("native", func, module, addr) or ("cut", module)."""
        body = b""
        for f in frames:
            if f[0] == "py":
                body += struct.pack("<QIIII", 0, self.string(f[1]), self.string(f[2]), f[3],
                                    FRAME_PYTHON)
            elif f[0] == "native":
                body += struct.pack("<QIIII", f[3], self.string(f[1]), self.string(f[2]), 0,
                                    FRAME_NATIVE)
            else:
                body += struct.pack("<QIIII", 0, 0, self.string(f[1]), 0, FRAME_CUT)
        self.recs.append(_rec(STACK, pid, tid, ts, "IHH", sid, len(frames),
                              STACK_TRUNCATED if truncated else 0, extra=body))

    def stack_ref(self, pid, tid, ts, event_type, sid):
        """The record of EVENT_TYPE at (TID, TS) has stack SID: written just before it."""
        self.recs.append(_rec(STACK_REF, pid, tid, ts, "IHH", sid, event_type, 0))

    # -- mem family (bpf/mem_records.h) --
    def mem_alloc(self, pid, tid, ts, addr, nbytes, device=MEM_DEV_CPU, free=False,
                  allocated=None, reserved=None, stream=None, source=None, stack=None):
        """An allocation (or free, FREE) of NBYTES at ADDR; ALLOCATED and RESERVED (both or
        neither) the allocator's totals after it; STACK a stack id given before it."""
        flags = (MEM_FREE if free else 0) | (MEM_TOTALS if allocated is not None else 0)
        if source is None:
            source = MEM_SRC_CPU if device == MEM_DEV_CPU else MEM_SRC_REPORT
        if stack:
            self.stack_ref(pid, tid, ts, MEM_ALLOC, stack)
        self.recs.append(_rec(MEM_ALLOC, pid, tid, ts, "QQQQhBBI", addr, nbytes,
                              allocated or 0, reserved or 0, device, source, flags, 0))
        if stream is not None and not free:
            self.mem_stream(pid, tid, ts + 1, addr, stream, nbytes, device)

    def mem_stream(self, pid, tid, ts, addr, stream, requested, device):
        """The USDT probe's record after a GPU allocation: its stream and requested size."""
        self.recs.append(_rec(MEM_STREAM, pid, tid, ts, "QQQhHI", addr, stream, requested,
                              device, 0, 0))

    def mem_free(self, pid, tid, ts, addr, nbytes=0, **kw):
        self.mem_alloc(pid, tid, ts, addr, nbytes, free=True, **kw)

    def mem_rss(self, pid, tid, ts, rss, anon=0, file=0, shmem=0):
        self.recs.append(_rec(MEM_RSS, pid, tid, ts, "QQQQ", rss, anon, file, shmem))

    def mem_grow(self, pid, tid, ts, nbytes, rss, stack=None):
        if stack:
            self.stack_ref(pid, tid, ts, MEM_GROW, stack)
        self.recs.append(_rec(MEM_GROW, pid, tid, ts, "QQ", nbytes, rss))

    def mem_oom(self, pid, tid, ts, nbytes, device=MEM_DEV_CPU, allocated=0, reserved=0,
                source=None, stack=None):
        if source is None:
            source = MEM_SRC_CPU if device == MEM_DEV_CPU else MEM_SRC_REPORT
        if stack:
            self.stack_ref(pid, tid, ts, MEM_OOM, stack)
        self.recs.append(_rec(MEM_OOM, pid, tid, ts, "QQQhB5x", nbytes, allocated, reserved,
                              device, source))

    # -- osrt family --
    def syscall_agg(self, pid, tid, ts, nr, count, total, mn, mx, flags=0):
        self.recs.append(_rec(SYSCALL_AGG, pid, tid, ts, "IIQQQQ", nr, flags, count, total,
                              mn, mx))

    def raw(self, data):
        self.recs.append(data)

    def write(self, directory, name="synth.bst", close=True):
        path = os.path.join(directory, name)
        args = [BST_WRITE, "--families", self.families, "--start", str(self.start)]
        if self.end is not None:
            args += ["--end", str(self.end)]
        if self.gpus:
            args += ["--gpus", "\n".join(self.gpus)]
        if self.flush_every:
            args += ["--flush-every", str(self.flush_every)]
        if not close:
            args.append("--no-close")
        p = subprocess.run(args + [path], input=b"".join(self.recs), capture_output=True,
                           timeout=60)
        eq(p.returncode, 0, f"bst_write ({p.stderr.decode().strip()})")
        return path


def spoil_a_chunk(path, out):
    """OUT: the trace at PATH with one data chunk in its middle spoiled (a byte of its zstd
    frame flipped: the frame's checksum no longer matches). PATH needs three chunks or more."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at, chunks = 0, []
    while (at := data.find(b"BSCK", at + 1)) > 0:
        chunks.append(at)
    check(len(chunks) >= 3, f"{path}: {len(chunks)} chunks, 3 or more needed")
    at = chunks[(len(chunks) - 1) // 2]  # the last is the footer
    data[at + 48 + 8] ^= 0xff
    with open(out, "wb") as f:
        f.write(data)
    return out


_fns = {}


def cuda_fn(name):
    """The index of NAME in the cuda family's API table (bs_ucall.fn), as dump names it."""
    if not _fns:
        t = Trace(families="cuda")
        for fn in range(4096):
            t.cuda_call(1, 1, t.start + fn + 1, 1, fn)  # inside the window: not clipped
        d = tempfile.mkdtemp(prefix="bpfsight-synth-")
        try:
            p = subprocess.run([BPFSIGHT, "dump", t.write(d)], capture_output=True, text=True,
                               timeout=60)
            for line in p.stdout.splitlines():
                e = json.loads(line)
                if e["kind"] == "cuda_api" and not e["name"].startswith("cuda_fn_"):
                    _fns[e["name"]] = e["ts"] - t.start - 1
        finally:
            shutil.rmtree(d, True)
    return _fns[name]


def flow_id(pid, tid, call_ts):
    """gpu_flow_id (user/families/gpu/gpu_decode.c): what the exports tie a launch and its GPU work with."""
    m = (1 << 64) - 1
    h = ((pid << 32 | tid) ^ (call_ts * 0x9e3779b97f4a7c15)) & m
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & m
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & m
    h ^= h >> 31
    h &= (1 << 53) - 1
    return h or 1
