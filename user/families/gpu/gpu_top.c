// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's column in `bpfsight top`: the time a process's kernels kept a GPU busy (the
 * union of their intervals per device, busy_union.h: concurrent kernels count once), credited
 * to the thread that launched each (the process when it is not known). Kernels arrive in the
 * shim's batches, up to a second after they ran: the column lags by that much.
 */
#include <errno.h>
#include <stdlib.h>
#include "busy_union.h"
#include "gpu.h"
#include "hmap.h"
#include "top_family.h"

static const struct top_column gpu_columns[] = {
	{ "gpu", "GPU%", "time its kernels kept a GPU busy (gpu)", TOP_SHARE, 0, 5 },
	{ 0 },
};

static int gpu_top_open(const struct record_opts *o, void **st)
{
	*st = hmap__new(sizeof(struct busy_union)); /* {pid, device} -> busy_union */
	return *st ? 0 : -ENOMEM;
}

static void gpu_top_free(void *st)
{
	struct busy_union *u;
	size_t it = 0;

	while ((u = hmap__next(st, &it, NULL)))
		busy_union__free(u);
	hmap__free(st);
}

/* An exited process's devices are forgotten. */
static void forget(struct hmap *devices, __u32 pid)
{
	struct busy_union *u;
	struct hkey k, gone[16];
	size_t it, n;

	do {
		for (it = n = 0; n < 16 && (u = hmap__next(devices, &it, &k));)
			if (k.a == pid) {
				busy_union__free(u);
				gone[n++] = k;
			}
		for (size_t i = 0; i < n; i++)
			hmap__del(devices, gone[i]);
	} while (n == 16);
}

static void gpu_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	const struct bs_gpu_kernel *k = (const void *)h;
	struct busy_union *u;
	__u64 before;

	switch (h->type) {
	case BS_REC_GPU_KERNEL:
		if (h->size < sizeof(*k) ||
		    !(u = hmap__get(st, (struct hkey){ h->pid, k->device }, 1)))
			return;
		before = u->busy_ns;
		busy_union__add(u, h->ts, h->ts + k->dur);
		top__add(t, &family_gpu, 0, h->pid, h->tid, u->busy_ns - before);
		break;
	case BS_REC_SHIM_STATUS: /* a shim is there: GPU% is shown from 0 */
		if (h->size >= sizeof(struct bs_shim_status) &&
		    ((const struct bs_shim_status *)h)->event != BS_SHIM_EV_NO_SHIM)
			top__show(t, &family_gpu, 0);
		break;
	case BS_REC_EXIT:
		if (h->size >= sizeof(struct bs_exit) && ((const struct bs_exit *)h)->group_dead)
			forget(st, h->pid);
		break;
	}
}

const struct top_family gpu_top = {
	.columns = gpu_columns,
	.open = gpu_top_open,
	.free = gpu_top_free,
	.record = gpu_top_record,
};
