// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The GIL contention counters of the Perfetto export: per python process whose threads waited,
 * a counter track "GIL contention" in the process, the average number of its threads waiting
 * for the GIL per PF_BIN_NS (gil_contention.h), bins aligned with the GPU busy counters'. The
 * waits themselves are ordinary slices on their threads' "GIL waits" tracks (their style).
 */
#include <errno.h>
#include <stdio.h>
#include "export_perfetto.h"
#include "gil.h"
#include "gil_contention.h"
#include "hmap.h"

static int gil_open(struct pf *pf, void **st)
{
	*st = gil_contention__new(PF_BIN_NS); /* waiting time per python process and bin */
	return *st ? 0 : -ENOMEM;
}

static void gil_free(void *st)
{
	gil_contention__free(st);
}

static int gil_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	if (rec->type != BS_REC_GIL_WAIT)
		return 0;
	return gil_contention__add(st, rec, pf__bins_origin(pf, rec->ts));
}

static int gil_finish(struct pf *pf, void *st, const struct trace_model *m)
{
	const struct time_bins *b;
	const struct pf_proc *p;
	__u64 proc;
	char desc[512];
	size_t it = 0;
	__u32 pid;
	int err = 0;

	snprintf(
		desc, sizeof(desc),
		"Average number of this process's threads waiting for the Python GIL in each "
		"%llu ms: their waiting time in the bin / %llu ms (2 = two threads waited all "
		"along). Only waits of at least %llu us (the recording's threshold) have a record "
		"and count here; shorter ones are only in the per-thread totals (bpfsight stats -r "
		"gil_sum).",
		PF_BIN_NS / 1000000, PF_BIN_NS / 1000000, GIL_THRESHOLD_NS / 1000);
	while (!err && (b = gil_contention__next(st, &it, &pid))) {
		/* The waits described the process already: never describe it again here. */
		p = hmap__get(pf->procs, (struct hkey){ .a = pid }, 0);
		if (p && p->uuid)
			proc = p->uuid;
		else if ((err = pf__process_track(pf, pid, b->origin, m, &proc)))
			break;
		err = pf__bins_counter(pf, proc, GIL_CONTENTION_NAME, desc, b, 0);
	}
	return err;
}

const struct perfetto_family gil_perfetto = {
	.open = gil_open,
	.free = gil_free,
	.observe = gil_observe,
	.finish = gil_finish,
};
