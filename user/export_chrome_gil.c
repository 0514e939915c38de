// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The GIL contention counter of the Chrome export: per python process whose threads waited, a
 * "ph":"C" series "GIL contention" {"waiting threads": N}, N the average number of its threads
 * waiting for the GIL in each CHROME_GIL_BIN_NS (gil_contention.h), a value where it changes
 * and 0 after the last. Written at the end of traceEvents (bins fill in any order; viewers sort
 * events by ts). The waits themselves are "X" events of cat "gil" on their threads.
 */
#include "export_chrome.h"

int chrome_gil__record(struct chrome *c, const struct bs_hdr *rec)
{
	if (rec->type != BS_REC_GIL_WAIT)
		return 0;
	if (!c->bins_origin)
		c->bins_origin = c->start_mono ? c->start_mono : rec->ts;
	return gil_contention__add(c->gil, rec, c->bins_origin);
}

void chrome_gil__counters(struct chrome *c)
{
	const struct time_bins *b;
	struct time_bins_iter bi;
	size_t it = 0;
	__u32 pid;
	__u64 ts;
	double v;

	while ((b = gil_contention__next(c->gil, &it, &pid))) {
		time_bins__iter_init(&bi, b);
		while (time_bins__step(b, &bi, 0, &ts, &v)) {
			chrome_begin(c, 'C', "gil", GIL_CONTENTION_NAME, pid, 0);
			fputs(",\"ts\":", c->f);
			chrome_us(c->f, ts);
			fprintf(c->f, ",\"args\":{\"waiting threads\":%.9g}}", v);
		}
	}
}
