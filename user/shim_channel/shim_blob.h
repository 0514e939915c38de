/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cupti-shim built into this binary (user/shim_channel/shim_embed.S), written out where a process can
 * load it: `bpfsight shim --install DIR` for a job's environment, and launch mode's private
 * copy, content-addressed under SHIM_RUN_DIR (root-owned; written to a temporary name, then
 * renamed, so a process never loads a half-written file and nobody else can swap it).
 */
#ifndef BPFSIGHT_SHIM_BLOB_H
#define BPFSIGHT_SHIM_BLOB_H

#include <stddef.h>

#define SHIM_RUN_DIR "/run/bpfsight"
/* bpfsight shim's default DIR for a binary not in a PREFIX/bin (cmd_shim.c). */
#define SHIM_INSTALL_DIR "/usr/local/lib/bpfsight"
#define SHIM_FILE_NAME	 "libbpfsight-shim.so"

/* Bytes of the embedded shim: 0 when this build has none. */
size_t shim_blob__size(void);
/*
 * Write the shim as DIR/NAME (NAME NULL: libbpfsight-shim-<hash>.so), mode 0755, creating
 * DIR (0755) if needed; an identical file already there is kept if root or we own it and
 * nobody else can write it (else it is replaced: someone else could rewrite it later). PATH
 * gets DIR/NAME. DIR is taken under ROOT (NULL: "/"; "/proc/PID/root" for a process with a
 * root of its own), one name at a time from ROOT's descriptor (mkdirat, openat, renameat):
 * a symlink on the way is refused (-ELOOP), as is a directory that anyone but root or we own
 * (or, under ROOT, ROOT's owner: a user-namespace container's root, a chroot's user), or that
 * others can write (-EPERM; a root-owned sticky parent such as /tmp is fine).
 * Returns 0, -ENOENT (no shim in this build), -ELOOP, -EPERM or another negative errno.
 */
int shim_blob__install(const char *root, const char *dir, const char *name, char *path, size_t len);
/*
 * The shim launch mode puts in a command's environment: $BPFSIGHT_SHIM when set, else the
 * embedded one written to SHIM_RUN_DIR. 0 or a negative errno (a message is printed).
 */
int shim_blob__path(char *path, size_t len);
/*
 * The name record --inject gives its copy: libbpfsight-shim-<hash> + BS_SHIM_INJECT_SUFFIX
 * (the injected shim's constructor knows itself by it).
 */
void shim_blob__inject_name(char *name, size_t len);

#endif /* BPFSIGHT_SHIM_BLOB_H */
