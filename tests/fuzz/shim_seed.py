#!/usr/bin/env python3
"""Makes a fuzz_shim_unpack seed from the batches a cupti-shim sent (BPFSIGHT_SHIM_DUMP).

  tests/fuzz/shim_seed.py DUMP OUT [OPTIONS_BYTE [CALLS]]

Each batch (struct bs_shim_batch_hdr + its records, as the dump holds them) becomes one
frame "op 0" (a ring record as BPF builds it) of process 0, then an EXIT of that process
closes it (see tests/fuzz/fuzz_shim_unpack.c for the input format). CALLS, a file of raw
records (a fuzz_decode seed made by trace_records.c from the same recording), adds its
CUDA_CALL records as "op 3" frames after the first batch, so that the launch join links. A dump is made by
any recording of a shim workload with BPFSIGHT_SHIM_DUMP=FILE in its environment, e.g.
  BPFSIGHT_SHIM_DUMP=/tmp/gpu.bin build/bpfsight record -o /tmp/t.bst -t cuda,gpu -- \\
      build/tests/shim/cupti_feed build/libbpfsight-shim.so
"""
import struct
import sys

HDR = struct.Struct("<HHIIIQ")  # type, size, cpu, pid, tid, ts
BATCH = struct.Struct("<IIIIQ")  # magic, version, nrec, len, seq
CUDA_CALL = 0x30
OP_BATCH, OP_CALL, OP_EXIT = 0, 3, 5


def frame(op, payload):
    return struct.pack("<BBH", op, 0, len(payload)) + payload


def batches(dump):
    off = 0
    while off + BATCH.size <= len(dump):
        _, _, _, length, _ = BATCH.unpack_from(dump, off)
        end = off + BATCH.size + length
        if end > len(dump):
            raise SystemExit(f"batch at {off} runs past the end of the dump")
        yield frame(OP_BATCH, dump[off:end])
        off = end
    if off != len(dump):
        raise SystemExit(f"{len(dump) - off} bytes after the last batch")


def calls(raw):
    off = 1  # the fuzz_decode options byte
    while off + HDR.size <= len(raw):
        typ, size, _, _, tid, ts = HDR.unpack_from(raw, off)
        if size < HDR.size:
            raise SystemExit(f"bad record size {size} at {off}")
        if typ == CUDA_CALL:
            yield frame(OP_CALL, struct.pack("<IQ", tid, ts) + raw[off + HDR.size:off + size])
        off += size


def main():
    if len(sys.argv) not in (3, 4, 5):
        raise SystemExit(__doc__)
    with open(sys.argv[1], "rb") as f:
        dump = f.read()
    opts = int(sys.argv[3], 0) if len(sys.argv) >= 4 else 0
    frames = list(batches(dump))
    if len(sys.argv) == 5:
        # After the first batch: the join starts with the first batch a process sends.
        with open(sys.argv[4], "rb") as f:
            frames[1:1] = calls(f.read())
    out = bytes([opts]) + b"".join(frames) + frame(OP_EXIT, b"\x01")
    with open(sys.argv[2], "wb") as f:
        f.write(out)
    print(f"{sys.argv[2]}: {len(out)} bytes")


if __name__ == "__main__":
    main()
