/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * monitor --ship URL: every --ship-interval, the interval's values (monitor_intervals.h) as
 * one spooled file of ship's spool (ship_spool.h), then every interval the spool holds sent
 * as ship sends a file (ship_send.h: each row once, however often tried), on a thread of its
 * own: a server down or slow delays the intervals (they wait in the bounded spool, tried
 * again each interval), never the recording. What it did and lost: bpfsight_ship_* metrics.
 */
#ifndef BPFSIGHT_MONITOR_SHIP_H
#define BPFSIGHT_MONITOR_SHIP_H

#include <stdio.h>
#include <linux/types.h>

struct metrics;
struct monitor_ship;

/*
 * The shipper of M's intervals to URL, spooled in SPOOL (NULL: ship's default) of SPOOL_MAX
 * bytes, every INTERVAL_NS; NULL after saying why (a bad URL, the spool).
 */
struct monitor_ship *monitor_ship__new(struct metrics *m, const char *url, const char *spool,
				       __u64 spool_max, __u64 interval_ns);
/* Its thread started: 0 or a negative errno. */
int monitor_ship__start(struct monitor_ship *ms);
/* Its thread stopped, the last interval (to now) spooled and sent once; then freed. */
void monitor_ship__stop(struct monitor_ship *ms);
/* Its bpfsight_ship_* metrics into F (nothing for NULL). */
void monitor_ship__render(struct monitor_ship *ms, FILE *f);

#endif /* BPFSIGHT_MONITOR_SHIP_H */
