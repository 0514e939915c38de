"""Pack tests/gpu/run.sh's kept traces (KEEP_TRACES=DIR) for the trip back from a GPU machine
whose returned files are limited in number and size (docs/gpu-validation.md):

  pack.py DIR OUT [--max-mib M] [--part-mib P]

Files are taken smallest first until M MiB (default 48), into one tar split in parts of P MiB
(default 15): OUT/traces.tar.aa, .ab, ... (cat them, then tar xf). What did not fit is listed in
OUT/traces-left-out.txt with its size. Here: cat OUT/traces.tar.* | tar xf - -C somewhere.
"""
import io
import os
import sys
import tarfile


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit(__doc__)
    src, out = a[0], a[1]
    max_b = int(float(a[a.index("--max-mib") + 1]) * 2**20) if "--max-mib" in a else 48 * 2**20
    part = int(float(a[a.index("--part-mib") + 1]) * 2**20) if "--part-mib" in a else 15 * 2**20
    files = sorted((os.path.getsize(os.path.join(src, f)), f) for f in os.listdir(src)
                   if os.path.isfile(os.path.join(src, f)))
    buf, used, left = io.BytesIO(), 0, []
    with tarfile.open(fileobj=buf, mode="w") as t:
        for size, f in files:
            if used + size > max_b:
                left.append(f"{f} {size}")
                continue
            t.add(os.path.join(src, f), arcname=f)
            used += size
    data = buf.getvalue()
    for i in range(0, len(data), part):
        name = "traces.tar." + chr(ord("a") + i // part // 26) + chr(ord("a") + i // part % 26)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data[i:i + part])
    with open(os.path.join(out, "traces-left-out.txt"), "w") as f:
        f.write("\n".join(left) + "\n")
    print(f"packed {len(files) - len(left)} files, {used / 2**20:.1f} MiB; left out {len(left)}")


if __name__ == "__main__":
    main()
