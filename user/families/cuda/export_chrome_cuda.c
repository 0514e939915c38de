// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family in the Chrome export: its calls are "X" events of their kinds' styles, in
 * Kineto's category "cuda_driver" for the driver API (cu*), "cuda_runtime" for the runtime
 * (cuda*, __cuda*); a launching call's flow is the gpu family's hook.
 */
#include <string.h>
#include "cuda.h"
#include "export_chrome.h"

/* Kineto's category of a CUDA call: the driver API is cu*, the runtime cuda* and __cuda*. */
static const char *cuda_cat(const char *name)
{
	return name && !strncmp(name, "cu", 2) && strncmp(name, "cuda", 4) ? "cuda_driver"
									   : "cuda_runtime";
}

static int cuda_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	int err = chrome_event(c, rec, ev, cuda_cat(ev->name));

	return err ? err : 1;
}

const struct chrome_family cuda_chrome = {
	.draw = cuda_draw,
};
