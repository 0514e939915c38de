/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The join sites a recording holds after it attaches a shim's batch sites.
 *
 * A shim begins a session when the first tracer attaches (its batch semaphore leaves 0) and
 * sends that tracer its strings then and as they are first used. A second tracer, arriving
 * while the session is on (monitor running, a `record -p` started beside it), would get none
 * of the strings already sent and no ATTACH. So every recording also attaches the shim's
 * `bpfsight:join` sites, after its batch sites: the shim, seeing the join semaphore rise
 * while attached, sends the session's strings again and a STATUS(JOIN)
 * (cupti-shim/shim_core.c).
 *
 * A uprobe's semaphore says whether any tracer probes the site, not how many: it rises only
 * when nobody else holds a join site. So a hold is let go as soon as the shim answered (its
 * ATTACH or JOIN status), and one not answered within JOIN_ACK_NS (another recording's hold
 * hid its rise) is let go for JOIN_GAP_NS, longer than the shim's 50 ms between looks, and
 * taken again, JOIN_TRIES times at most. Under -a one hold serves every process mapping the
 * file: it is let go after JOIN_ACK_NS, unanswered.
 */
#ifndef BPFSIGHT_JOIN_HOLDS_H
#define BPFSIGHT_JOIN_HOLDS_H

#include <sys/types.h>
#include <linux/types.h>
#include "uprobe_multi.h"

#define JOIN_ACK_NS 1000000000ull
#define JOIN_GAP_NS 200000000ull
#define JOIN_TRIES  5

/* Attach FILE's join sites for PID (0: every process) into OUT: 0 or a negative errno. */
typedef int (*join_attach_fn)(void *arg, const void *file, pid_t pid, struct uprobe_links *out);

struct join_holds;

struct join_holds *join_holds__new(join_attach_fn attach, void *arg);
/* FILE's join sites taken for PID (0: every process) at NOW; how it went (0 or -errno). */
int join_holds__take(struct join_holds *h, const void *file, pid_t pid, __u64 now);
/* PID's shim answered (ATTACH or JOIN): its holds let go. */
void join_holds__answered(struct join_holds *h, pid_t pid);
/* Those due at NOW let go, or taken again. */
void join_holds__poll(struct join_holds *h, __u64 now);
/* Every one let go. */
void join_holds__free(struct join_holds *h);

#endif /* BPFSIGHT_JOIN_HOLDS_H */
