// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* stats' --group-by and --sort against the reports (stats_asks.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "msg.h"
#include "stats_asks.h"

#define GROUP_N_MAX 64 /* stack:N: deeper than any stack is kept (BS_STACK_MAX_FRAMES/2) */

int stats_asks__parse_group(const char *arg, char *key, size_t len, unsigned *n)
{
	size_t k = strcspn(arg, ":");
	char *end;
	long v;

	*n = 0;
	if (!k || k >= len) {
		pr_err("--group-by %s: give a key, e.g. shape or stack:5\n", arg);
		return -EINVAL;
	}
	snprintf(key, len, "%.*s", (int)k, arg);
	if (!arg[k])
		return 0;
	v = strtol(arg + k + 1, &end, 10);
	if (end == arg + k + 1 || *end || v < 1 || v > GROUP_N_MAX) {
		pr_err("--group-by %s: N in %s:N is a number of frames, 1 to %d\n", arg, key,
		       GROUP_N_MAX);
		return -EINVAL;
	}
	*n = (unsigned)v;
	return 0;
}

int stats_asks__takes(const struct report *r, const char *key, unsigned n)
{
	size_t k = strlen(key);

	for (const char *const *g = r->group_by; g && *g; g++) {
		int wants_n = !strcmp(*g + strcspn(*g, ":"), ":N");

		if (!strncmp(*g, key, k) && ((*g)[k] == 0 || (*g)[k] == ':') && wants_n == !!n)
			return 1;
	}
	return 0;
}

void stats_asks__list_groups(const struct report *const *reps, int n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		const char *const *g = reps[i]->group_by;

		if (!g || !*g)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s (", used ? "; " : "",
					 reps[i]->name);
		for (; *g && used < len; g++)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 g == reps[i]->group_by ? "" : ", ", *g);
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, ")");
	}
	if (!buf[0])
		snprintf(buf, len, "no report takes one");
}

/* nsys's report names that bpfsight spells otherwise (nsys 2021's short names among them). */
static const char *const nsys_reports[][2] = {
	{ "cudaapisum", "cuda_api_sum" },
	{ "gpukernsum", "cuda_gpu_kern_sum" },
	{ "gpumemtimesum", "cuda_gpu_mem_time_sum" },
	{ "gpumemsizesum", "cuda_gpu_mem_size_sum" },
	{ "osrtsum", "osrt_sum" },
	{ "nvtxsum", "nvtx_sum" },
	{ "nvtxppsum", "nvtx_sum" },
	{ "nvtx_pushpop_sum", "nvtx_sum" },
	{ "nvtx_startend_sum", "nvtx_sum" },
	{ "nvtxgpuproj", "nvtx_gpu_proj_sum" },
	{ "cuda_kern_exec_trace", "cuda_kern_exec_sum" },
};

/* nsys's reports without a bpfsight one of that name, and what to use. */
static const char *const nsys_others[][2] = {
	{ "cuda_gpu_trace", ": nsys's trace of every GPU operation is `bpfsight dump FILE`" },
	{ "gputrace", ": nsys's trace of every GPU operation is `bpfsight dump FILE`" },
	{ "cuda_api_trace", ": nsys's trace of every CUDA call is `bpfsight dump FILE`" },
	{ "cudaapitrace", ": nsys's trace of every CUDA call is `bpfsight dump FILE`" },
	{ "cuda_gpu_sum", ": nsys's GPU operations together are cuda_gpu_kern_sum and "
			  "cuda_gpu_mem_time_sum here" },
	{ "cuda_api_gpu_sum", ": nsys's API with GPU time is cuda_launch_sum here" },
	{ "nvtx_kern_sum", ": nsys's kernels by NVTX range is nvtx_gpu_proj_sum here" },
	{ "nvtx_pushpop_trace", ": nsys's trace of every range is `bpfsight dump FILE`" },
	{ "um_sum", ": bpfsight does not trace unified memory" },
	{ "openmp_sum", ": bpfsight does not trace OpenMP" },
};

const char *stats_asks__nsys_report(const char *name)
{
	for (size_t i = 0; i < sizeof(nsys_reports) / sizeof(nsys_reports[0]); i++)
		if (!strcmp(name, nsys_reports[i][0]))
			return nsys_reports[i][1];
	return name;
}

const char *stats_asks__nsys_only(const char *name)
{
	for (size_t i = 0; i < sizeof(nsys_others) / sizeof(nsys_others[0]); i++)
		if (!strcmp(name, nsys_others[i][0]))
			return nsys_others[i][1];
	return "";
}
