// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The recording's clocks (record_clock.h). */
#include <stdlib.h>
#include "env.h"
#include "record_clock.h"

/*
 * BPFSIGHT_TEST_CLOCK_SHIFT_NS=S[,PPM] (tests only, docs/NCCL.md): the wall clock this
 * recording reads is S ns ahead of the machine's, and gains PPM millionths from its first
 * reading on, as another host's would be; the tests of merge put ranks recorded on one
 * machine on clocks they must recover. Read as a knob that steers a root process: ignored
 * under another user's sudo (env.h).
 */
void record_clocks__now(struct trace_clocks *c)
{
	static __u64 first_mono;
	const char *env = env__trusted("BPFSIGHT_TEST_CLOCK_SHIFT_NS");
	double ppm = 0;
	char *end;
	long long shift;

	trace_clocks__now(c);
	if (!env || !*env)
		return;
	shift = strtoll(env, &end, 10);
	if (*end == ',')
		ppm = strtod(end + 1, NULL);
	if (!first_mono)
		first_mono = c->mono_ns;
	c->realtime_ns +=
		(__u64)shift + (__u64)(__s64)(ppm * 1e-6 * (double)(c->mono_ns - first_mono));
}
