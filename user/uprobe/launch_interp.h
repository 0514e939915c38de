/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The dynamic linker a launched command will run under (its ELF file's PT_INTERP, or its
 * script interpreter's), found before the command is released: the uprobe manager probes
 * that ld.so's _dl_debug_state first, so that the libraries the command loads stop it
 * (bpf/libmap.bpf.c) even when its exec did not.
 */
#ifndef BPFSIGHT_LAUNCH_INTERP_H
#define BPFSIGHT_LAUNCH_INTERP_H

#include <stddef.h>

/*
 * CMD's dynamic linker into OUT (LEN bytes): CMD as execvp finds it (PATH when it has no
 * '/'), a script's "#!" interpreter followed once. 0, or -ENOENT (not found, static, not
 * ELF, too long).
 */
int launch_interp(const char *cmd, char *out, size_t len);

#endif /* BPFSIGHT_LAUNCH_INTERP_H */
