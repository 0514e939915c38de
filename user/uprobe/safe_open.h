/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opening files a traced process controls (its ELF files, the debug files they name): the
 * recorder is root, and the process may have put a FIFO (whose open blocks until a writer
 * comes), a device (whose open may act: a watchdog, a tape) or a symlink to one where a file
 * is looked for.
 */
#ifndef BPFSIGHT_SAFE_OPEN_H
#define BPFSIGHT_SAFE_OPEN_H

/*
 * Open PATH read-only if it is a regular file: a file descriptor, or a negative errno
 * (-EINVAL for a file of another type: *WHY, when WHY is given, then names it, e.g. "a FIFO").
 * PATH is first opened with O_PATH, which neither blocks nor opens a device, and its type is
 * read from that; only a regular file is opened for reading (through /proc/self/fd, the same
 * inode). A path under /proc/PID/root is resolved as PID sees it (openat2's RESOLVE_IN_ROOT:
 * its absolute symlinks stay inside its root, not the host's; no magic links), where the
 * kernel has openat2 (5.6).
 */
int safe_open__regular(const char *path, const char **why);

#endif /* BPFSIGHT_SAFE_OPEN_H */
