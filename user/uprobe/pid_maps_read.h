/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a read of /proc/PID/maps can be trusted for. The kernel hands the file out a page at
 * a time, each page from the address space as it is then: a process that exits between two
 * pages shows its first mappings and then none, as a zombie shows none at all. A forked child
 * that makes its calls and exits at once is read so (the Python check its first stack asks
 * for), and a list cut short then named none of its libraries' frames.
 */
#ifndef BPFSIGHT_PID_MAPS_READ_H
#define BPFSIGHT_PID_MAPS_READ_H

#include <sys/types.h>
#include "uprobe_mgr_priv.h"

/* 1 while PID still has an address space (its maps show a line), else 0: a read of its maps
 * that ended since may have ended early. Not proc_meta__alive: an exiting process has given
 * its address space up before it is a zombie. */
int pid_maps_read__alive(pid_t pid);
/*
 * A read of an exited process's maps (V, N) added to the list it had (*OLD, *NOLD): the
 * mappings of V that overlap none of *OLD's join it, *OLD's stay. 0, or -ENOMEM (*OLD as it
 * was). V stays the caller's.
 */
int pid_maps_read__add(struct pid_mapping **old, __u32 *nold, const struct pid_mapping *v, __u32 n);

#endif /* BPFSIGHT_PID_MAPS_READ_H */
