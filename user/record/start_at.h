/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --start-at: begin at an instant of the wall clock, so that recorders on hosts whose
 * clocks agree (NTP, PTP) begin together: /10s, the next multiple of 10 s of wall-clock time
 * (wprof's --activate /10s), or @HH:MM:SS, the next time the local clock shows it. The
 * recorder attaches first, then waits, the probes gated (BS_CTL_STOPPED), and opens the gate,
 * takes the header's start clocks and releases a launched CMD at the instant.
 */
#ifndef BPFSIGHT_START_AT_H
#define BPFSIGHT_START_AT_H

#include <linux/types.h>

struct start_at {
	__u64 period_ns; /* /DUR: the next multiple of it; 0: the time of day below */
	__s32 tod_s;	 /* @HH:MM:SS: seconds since local midnight; -1 when not given */
	__u32 set;
};

/* "/10s", "/500ms", "@14:30:00": 0, or -EINVAL. */
int start_at__parse(const char *s, struct start_at *a);
/* The CLOCK_REALTIME ns of the next start after NOW_NS (the wall clock, ns since the epoch). */
__u64 start_at__next(const struct start_at *a, __u64 now_ns);
/*
 * Sleep until AT (CLOCK_REALTIME ns) at a real-time priority when allowed (so that a loaded
 * machine does not make the start late), and read THEN (record_clocks__now) at once on
 * waking, still at it. STOP is checked every 100 ms: 1 when it ended the wait (THEN unread).
 */
struct trace_clocks;
int start_at__wait(__u64 at_ns, volatile const int *stop, struct trace_clocks *then);

struct trace_meta;
struct trace_writer;
/*
 * The recording's start, its probes live and gated (BS_CTL_STOPPED in CONTROL_FD): the
 * instant said on stderr, waited for, META's start clocks taken then and W's header rewritten
 * with them (W NULL: no file header, e.g. the flight recorder's, which reads META), the gate
 * opened. 0 (also when STOP ended the wait), or -1 after saying why not.
 */
int start_at__begin(const struct start_at *a, struct trace_meta *meta, struct trace_writer *w,
		    int control_fd, volatile const int *stop);

#endif /* BPFSIGHT_START_AT_H */
