/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a kernel function's code lies, from /proc/kallsyms: for BPF programs that tell a kernel
 * stack's frames apart by the function they are in (the cpu family's page faults).
 */
#ifndef BPFSIGHT_KALLSYMS_H
#define BPFSIGHT_KALLSYMS_H

#include <stdio.h>
#include <linux/types.h>

/*
 * The code of text symbol NAME in F (kallsyms' format, "ADDR TYPE NAME [MODULE]"): [*LO, *HI),
 * HI the next symbol's address (the kernel's own text is listed in address order). 0, -ENOENT
 * when NAME is not there, -EPERM when the addresses read as 0 (kptr_restrict hides them),
 * -EINVAL when no symbol follows it.
 */
int kallsyms__range_in(FILE *f, const char *name, __u64 *lo, __u64 *hi);
/*
 * Open /proc/kallsyms now and keep it: the kernel shows its addresses to the credentials that
 * opened the file (Linux 5.8+), so a file opened while the recorder has CAP_SYSLOG still shows
 * them once privileges__drop took it away. 0, or a negative errno (then kallsyms__range opens
 * the file itself, and reads zeroes without CAP_SYSLOG).
 */
int kallsyms__hold(void);
/* The same from /proc/kallsyms (the held one, else opened now); a negative errno. */
int kallsyms__range(const char *name, __u64 *lo, __u64 *hi);

#endif /* BPFSIGHT_KALLSYMS_H */
