/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* x86-64 system call numbers to names (the ABI bpfsight records on). */
#ifndef BPFSIGHT_SYSCALL_NAMES_H
#define BPFSIGHT_SYSCALL_NAMES_H

#include <linux/types.h>

/* "nanosleep" for 35; NULL for a number this table does not know (callers print "syscall_N"). */
const char *syscall_name(__u32 nr);

#endif /* BPFSIGHT_SYSCALL_NAMES_H */
