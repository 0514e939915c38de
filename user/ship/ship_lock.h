/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One ship at a time per spooled file: two ships of one file at once would each find none of
 * its rows in the server and send them all (the ledger and the resume by prefix guard what
 * comes one after the other, not what overlaps). A lock file beside the spooled one,
 * JOB.CONTENT_ID.lock, held by flock from the rendering to the ledger row; its holder's pid
 * written in it, for the other's error.
 */
#ifndef BPFSIGHT_SHIP_LOCK_H
#define BPFSIGHT_SHIP_LOCK_H

#include "ship_spool.h"

/*
 * JOB's file CONTENT_ID locked: its descriptor; -EBUSY when another process holds it (its pid
 * into *HOLDER, 0 unknown), or a negative errno (the spool unwritable).
 */
int ship_lock__take(const struct ship_spool *sp, const char *job, const char *id, int *holder);
/* The lock FD released and its file removed (0: none held). */
void ship_lock__drop(const struct ship_spool *sp, const char *job, const char *id, int fd);

#endif /* BPFSIGHT_SHIP_LOCK_H */
