#!/usr/bin/env python3
"""Makes a fuzz_shim_unpack seed from the batches a cupti-shim sent (BPFSIGHT_SHIM_DUMP).

  tests/fuzz/shim_seed.py DUMP OUT [OPTIONS_BYTE]

Each batch (struct bs_shim_batch_hdr + its records, as the dump holds them) becomes one
frame "op 0" (a ring record as BPF builds it) of process 0, then an EXIT of that process
closes it (see tests/fuzz/fuzz_shim_unpack.c for the input format). A dump is made by any
recording of a shim workload with BPFSIGHT_SHIM_DUMP=FILE in its environment, e.g.
  BPFSIGHT_SHIM_DUMP=/tmp/gpu.bin build/bpfsight record -o /tmp/t.bst -t cuda,gpu -- \\
      build/tests/shim/cupti_feed build/libbpfsight-shim.so
"""
import struct
import sys

BATCH = struct.Struct("<IIIIQ")  # magic, version, nrec, len, seq
OP_BATCH, OP_EXIT = 0, 5


def frames(dump):
    off = 0
    while off + BATCH.size <= len(dump):
        _, _, _, length, _ = BATCH.unpack_from(dump, off)
        end = off + BATCH.size + length
        if end > len(dump):
            raise SystemExit(f"batch at {off} runs past the end of the dump")
        yield struct.pack("<BBH", OP_BATCH, 0, end - off) + dump[off:end]
        off = end
    if off != len(dump):
        raise SystemExit(f"{len(dump) - off} bytes after the last batch")


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    with open(sys.argv[1], "rb") as f:
        dump = f.read()
    opts = int(sys.argv[3], 0) if len(sys.argv) == 4 else 0
    out = bytes([opts]) + b"".join(frames(dump)) + struct.pack("<BBHB", OP_EXIT, 0, 1, 1)
    with open(sys.argv[2], "wb") as f:
        f.write(out)
    print(f"{sys.argv[2]}: {len(out)} bytes")


if __name__ == "__main__":
    main()
