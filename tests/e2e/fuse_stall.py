"""A FUSE file system of one file that can stop answering: what a user who serves one can do
to a root recorder that reads the files a process maps (tests/e2e/test_hostile.py).

It speaks the kernel's protocol on /dev/fuse itself (no libfuse, no Python binding: none is
installed here), as root: mount(2) with fd=N. The file system holds one executable file,
`prog` (or the name given), whose bytes are given. Until `stall()`, every request is
answered; after it, OPEN and READ are never answered (the request waits in the kernel until
the connection ends), the rest still are. With `stall_range=(LO, HI)`, a READ of any byte in
[LO, HI) is never answered, from the start: the file runs, and whoever reads those bytes
waits for good (readahead is one page, so only a read of those bytes asks for them).
`close()` answers what waits with EIO, unmounts and ends the connection.
"""
import ctypes
import errno
import os
import struct
import threading

ROOT, FILE = 1, 2
OP = {"LOOKUP": 1, "FORGET": 2, "GETATTR": 3, "OPEN": 14, "READ": 15, "STATFS": 17,
      "RELEASE": 18, "FLUSH": 25, "INIT": 26, "OPENDIR": 27, "READDIR": 28, "RELEASEDIR": 29,
      "ACCESS": 34, "INTERRUPT": 36, "DESTROY": 38, "BATCH_FORGET": 42}
NO_REPLY = {OP["FORGET"], OP["BATCH_FORGET"], OP["INTERRUPT"]}
IN_HDR = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HDR = struct.Struct("<IiQ")  # len, error, unique
LONG = 3600  # seconds the kernel may keep names and attributes


class FuseStall:
    def __init__(self, mountpoint, data, stall_range=None, name="prog"):
        self.mountpoint, self.data, self.stalled = mountpoint, data, False
        self.stall_range, self.name = stall_range, name.encode()
        self.waiting = []  # requests never answered
        self.fd = os.open("/dev/fuse", os.O_RDWR)
        libc = ctypes.CDLL(None, use_errno=True)
        opts = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        if libc.mount(b"fuse_stall", mountpoint.encode(), b"fuse", 0x2 | 0x4, opts):  # nosuid,nodev
            e = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(e, f"mount fuse on {mountpoint}: {os.strerror(e)}")
        self.libc = libc
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def attr(self, node):
        mode, size = (0o40755, 0) if node == ROOT else (0o100755, len(self.data))
        return struct.pack("<QQQQQQIIIIIIIIII", node, size, (size + 511) // 512, 0, 0, 0, 0, 0,
                           0, mode, 1, 0, 0, 0, 4096, 0)

    def reply(self, unique, err=0, payload=b""):
        try:
            os.write(self.fd, OUT_HDR.pack(OUT_HDR.size + len(payload), -err, unique) + payload)
        except OSError:
            pass  # the request was interrupted, or the connection ended

    def answer(self, op, unique, node, body):
        if op == OP["INIT"]:
            major, minor = struct.unpack_from("<II", body)
            # major, minor, max_readahead, flags, max_background, congestion, max_write,
            # time_gran, max_pages, map_alignment, flags2, then unused: 64 bytes in all
            readahead = 4096 if self.stall_range else 1 << 17
            out = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), readahead, 0, 16, 12, 1 << 17,
                              1, 32, 0, 0)
            return 0, out + bytes(64 - len(out))
        if op == OP["LOOKUP"]:
            if node != ROOT or body.split(b"\0")[0] != self.name:
                return errno.ENOENT, b""
            return 0, struct.pack("<QQQQII", FILE, 0, LONG, LONG, 0, 0) + self.attr(FILE)
        if op == OP["GETATTR"]:
            return 0, struct.pack("<QII", LONG, 0, 0) + self.attr(node)
        if op in (OP["OPEN"], OP["OPENDIR"]):
            return 0, struct.pack("<QIi", 0, 1 << 1, 0)  # FOPEN_KEEP_CACHE
        if op == OP["READ"]:
            off, size = struct.unpack_from("<QQI", body)[1:]
            return 0, self.data[off:off + size]
        if op == OP["STATFS"]:
            return 0, struct.pack("<QQQQQIII", 0, 0, 0, 1, 0, 4096, 255, 4096) + bytes(28)
        if op in (OP["RELEASE"], OP["RELEASEDIR"], OP["FLUSH"]):
            return 0, b""
        if op == OP["READDIR"]:
            return 0, b""
        return errno.ENOSYS, b""

    def serve(self):
        while True:
            try:
                req = os.read(self.fd, (1 << 17) + 4096)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.ENOENT):
                    continue
                return  # ENODEV: unmounted, the connection is over
            n, op, unique, node = IN_HDR.unpack_from(req)[:4]
            if op in NO_REPLY:
                continue
            if op == OP["DESTROY"]:
                return
            if self.stalled and op in (OP["OPEN"], OP["READ"]):
                self.waiting.append(unique)  # never answered (until close)
                continue
            if self.stall_range and op == OP["READ"]:
                off, size = struct.unpack_from("<QQI", req, IN_HDR.size)[1:]
                if off < self.stall_range[1] and off + size > self.stall_range[0]:
                    self.waiting.append(unique)
                    continue
            err, payload = self.answer(op, unique, node, req[IN_HDR.size:n])
            self.reply(unique, err, payload)

    def stall(self):
        self.stalled = True

    def close(self):
        # The server gives up: what it left waiting fails now. A thread whose request the
        # server had read waited for it uninterruptibly, and held the mount (and so the
        # connection) while it did: without an answer, only this process's exit ended it.
        self.stall_range, self.stalled = None, False
        for unique in list(self.waiting):
            self.reply(unique, errno.EIO)
        self.libc.umount2(self.mountpoint.encode(), 2)  # MNT_DETACH
        os.close(self.fd)  # the connection ends: requests still waiting fail (ENOTCONN)
