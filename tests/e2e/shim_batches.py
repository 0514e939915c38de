"""Decoder of the cupti-shim's batches (bpf/shim_records.h) for its tests.

The shim writes every batch it hands to bpfsight:batch, as handed, to $BPFSIGHT_SHIM_DUMP
when that is set; decode() turns such a file into records (dicts), checking the framing, the
per-process batch sequence and that every string id is defined before its first use in the
session (the shim's promise to the recorder). semaphore_addrs() says where the shim's USDT
semaphores, which its poller reads, lie in a process.
"""
import os
import re
import struct
import subprocess

MAGIC = 0x48534253
VERSION = 2  # BS_SHIM_VERSION (shim_records.h): 2 since format 4's record numbers
HDR = struct.Struct("<HHIIIQ")
BATCH = struct.Struct("<IIIIQ")

STRING, STATUS, KERNEL, MEMCPY, MEMSET, API = 0x01, 0x61, 0x62, 0x63, 0x64, 0x65
RANGE, MARK, NAME, BEGIN = 0x70, 0x71, 0x72, 0x73

EV = {1: "attach", 2: "state", 3: "cupti_error", 4: "drained", 5: "dropped", 6: "exit",
      8: "torch", 9: "join"}
ST = {0x01: "cuda_injected", 0x02: "nvtx_injected", 0x04: "gpu_on", 0x08: "nvtx_on",
      0x10: "cupti_busy", 0x20: "sync", 0x40: "nvtx_chained", 0x80: "ptrace_injected"}
PUSHPOP, OPEN, COLOR, REGISTERED = 0x1, 0x2, 0x4, 0x80

# type: (name, struct after the header, field names; "*_id" fields are string ids)
LAYOUT = {
    STATUS: ("status", "<IIiIQQII",
             "state event cupti_result detail_id dropped seq cupti_version _pad"),
    KERNEL: ("kernel", "<QQIIIIIIIIIIIIIHHIIQ",
             "dur call_ts correlation name_id device context stream g0 g1 g2 b0 b1 b2 "
             "shmem_dynamic shmem_static registers flags graph_id _pad graph_node_id"),
    MEMCPY: ("memcpy", "<QQQIIIIBBBBHHIIIIQ",
             "dur call_ts bytes correlation device context stream copy_kind src_kind "
             "dst_kind async flags _pad src_device dst_device graph_id _pad2 graph_node_id"),
    MEMSET: ("memset", "<QQQIIIIIHHIIQ",
             "dur call_ts bytes correlation device context stream value mem_kind flags "
             "graph_id _pad graph_node_id"),
    API: ("api", "<QQIIIIHHI", "dur call_ts correlation cbid name_id ret domain flags _pad"),
    RANGE: ("range", "<QQQIIIIIHH",
            "dur range_id payload name_id domain_id end_tid category color depth flags"),
    MARK: ("mark", "<QIIIIHHI", "payload name_id domain_id category color flags _pad _pad2"),
    NAME: ("name", "<QIIII", "key what name_id domain_id _pad"),
    BEGIN: ("begin", "<QII", "range_id name_id domain_id"),
}
SIZE = {STATUS: 64, KERNEL: 112, MEMCPY: 96, MEMSET: 88, API: 64, RANGE: 72, MARK: 56,
        NAME: 48, BEGIN: 40}


def _record(data, off, strings, session_strings):
    typ, size, cpu, pid, tid, ts = HDR.unpack_from(data, off)
    if size < HDR.size or size % 8:
        raise AssertionError(f"bad record size {size} at {off}")
    rec = {"type": typ, "size": size, "cpu": cpu, "pid": pid, "tid": tid, "ts": ts}
    body = off + HDR.size
    if typ == STRING:
        sid, n = struct.unpack_from("<II", data, body)
        text = data[body + 8:body + 8 + n].decode("utf-8")
        pad = data[body + 8 + n:off + size]
        if size != (32 + n + 7) // 8 * 8 or any(pad):
            raise AssertionError(f"string {sid}: size {size} for {n} bytes, pad {pad!r}")
        prev = strings.get((pid, sid))
        if prev is not None and prev != text:
            raise AssertionError(f"string id {sid} of pid {pid} changed: {prev!r} -> {text!r}")
        strings[(pid, sid)] = text
        session_strings.setdefault(pid, set()).add(sid)
        rec.update(kind="string", id=sid, text=text)
        return rec
    if typ not in LAYOUT:
        raise AssertionError(f"unknown record type {typ:#x}")
    if size != SIZE[typ]:
        raise AssertionError(f"record {typ:#x} has size {size}, expected {SIZE[typ]}")
    kind, fmt, names = LAYOUT[typ]
    vals = struct.unpack_from(fmt, data, body)
    if typ == STATUS and vals[1] == 1:
        session_strings[pid] = set()  # a new session: every string is sent again
    rec["kind"] = kind
    for k, v in zip(names.split(), vals):
        if k.startswith("_"):
            if v:
                raise AssertionError(f"{kind}: padding {k} = {v}")
            continue
        rec[k] = v
    if kind == "kernel":
        rec["grid"] = [rec.pop("g0"), rec.pop("g1"), rec.pop("g2")]
        rec["block"] = [rec.pop("b0"), rec.pop("b1"), rec.pop("b2")]
    for k in [k for k in rec if k.endswith("_id") and k not in ("range_id", "graph_id",
                                                                 "graph_node_id")]:
        sid = rec[k]
        if sid == 0:
            rec[k[:-3]] = None
            continue
        if sid not in session_strings.get(pid, ()):
            raise AssertionError(f"{kind} uses string {sid} of pid {pid} before its STRING")
        rec[k[:-3]] = strings[(pid, sid)]
    if kind == "status":
        rec["event_name"] = EV.get(rec["event"])
        rec["state_bits"] = sorted(n for b, n in ST.items() if rec["state"] & b)
    return rec


def decode(data):
    """[(batch header dict, [records])] of a dump, checked."""
    out = []
    strings, session_strings, last_seq = {}, {}, {}
    off = 0
    while off < len(data):
        magic, version, nrec, length, seq = BATCH.unpack_from(data, off)
        if magic != MAGIC or version != VERSION:
            raise AssertionError(f"bad batch header at {off}: {magic:#x} v{version}")
        if length > 16384:
            raise AssertionError(f"batch of {length} bytes")
        off += BATCH.size
        end = off + length
        recs = []
        while off < end:
            rec = _record(data, off, strings, session_strings)
            off += rec["size"]
            recs.append(rec)
        if off != end or len(recs) != nrec:
            raise AssertionError(f"batch {seq}: {len(recs)} records in {length} bytes, "
                                 f"header says {nrec}")
        pid = recs[0]["pid"]
        if any(r["pid"] != pid for r in recs):
            raise AssertionError(f"batch {seq} mixes processes")
        if seq != last_seq.get(pid, 0) + 1:
            raise AssertionError(f"pid {pid}: batch seq {seq} after {last_seq.get(pid, 0)}")
        last_seq[pid] = seq
        out.append(({"nrec": nrec, "len": length, "seq": seq, "pid": pid}, recs))
    return out


def records(data):
    """Every record of a dump, in order."""
    return [r for _, recs in decode(data) for r in recs]


def wait_status(path, pid, pred, what, timeout=30):
    """Wait until the shim of PID, dumping its batches to PATH (BPFSIGHT_SHIM_DUMP), sent a
    status record for which PRED is true (e.g. its attach: its poller saw a tracer's
    semaphores): the race-free start for a test that attaches with -p, where a fixed sleep is
    too short on a loaded machine."""
    import os
    import time

    def seen():
        if not os.path.exists(path):
            return False
        with open(path, "rb") as f:
            data = f.read()
        try:
            return any(r["kind"] == "status" and r["pid"] == pid and pred(r)
                       for r in records(data))
        except (AssertionError, struct.error) as e:
            seen.why = f"{e!r} ({len(data)} bytes)"
            return False  # a batch being written
    seen.why = None
    end = time.time() + timeout
    while not seen():
        if time.time() > end:
            raise AssertionError(f"the shim of pid {pid}: no {what} status in {timeout} s"
                                 + (f" (its batches: {seen.why})" if seen.why else ""))
        time.sleep(0.02)


def semaphore_addrs(lib, pid):
    """{name: address in PID} of the USDT semaphores of the shim LIB (a path) that PID maps:
    the notes' addresses plus the library's load bias (its first mapping, file offset 0, the
    first segment at address 0)."""
    notes = subprocess.run(["readelf", "-n", "--wide", lib], capture_output=True, text=True,
                           check=True).stdout
    addrs = {m.group(1): int(m.group(2), 16) for m in re.finditer(
        r"Name: (\w+)\s+Location: \S+ Base: \S+ Semaphore: (0x[0-9a-f]+)", notes)}
    real = os.path.realpath(lib)
    with open(f"/proc/{pid}/maps") as f:
        bias = min(int(parts[0].split("-")[0], 16) for parts in (l.split(None, 5) for l in f)
                   if len(parts) == 6 and parts[5].strip() == real and int(parts[2], 16) == 0)
    return {name: bias + addr for name, addr in addrs.items()}
