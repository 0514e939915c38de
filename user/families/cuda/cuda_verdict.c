// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda's rules for stats' verdict (verdict.h): each thread's time in CUDA calls goes to its
 * account (the thread that launches work is usually the one that matters); the thread with the
 * most of it is said to wait for the GPU (synchronize, blocking copies: GPU-bound when that is
 * half its time) or to spend its time launching (what launch-bound looks like from the host).
 * cuda_api_sum sums every thread: the claims cite it with --tid.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "human.h"
#include "hmap.h"
#include "table.h"
#include "verdict.h"

#define WAIT_SHARE   0.50 /* of the thread's time waiting for the GPU: GPU-bound */
#define CUDA_MIN_NS  100000000ull
#define LAUNCH_SHARE 0.05 /* worth saying */

struct thread_api {
	__u64 total, wait, launch, launches;
};

struct cuda_rule {
	struct hmap *threads; /* {pid, tid} -> struct thread_api */
};

static void *cuda_rule__new(void)
{
	struct cuda_rule *st = calloc(1, sizeof(*st));

	if (st && !(st->threads = hmap__new(sizeof(struct thread_api)))) {
		free(st);
		st = NULL;
	}
	return st;
}

static void cuda_rule__free(void *vst)
{
	struct cuda_rule *st = vst;

	if (st)
		hmap__free(st->threads);
	free(st);
}

/* A call that blocks the host until the GPU is done: a synchronize, a copy that is not Async. */
static int waits_for_gpu(const struct ucall_api *api)
{
	return api->group == CUDA_GRP_SYNC ||
	       (api->group == CUDA_GRP_MEMCPY && !strstr(api->name, "Async"));
}

static void cuda_rule__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	const struct ucall_api *api;
	struct cuda_rule *st = vst;
	struct thread_api *t;

	/* The application's calls only (depth 0), as cuda_api_sum counts them. */
	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*u) || u->depth)
		return;
	t = hmap__get(st->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!t)
		return;
	t->total += u->dur;
	/*
	 * A call that failed waited for no GPU and launched nothing (every call of a machine
	 * without one): its time is the API's, never a claim's. The code is in eax (rax's upper
	 * half is undefined).
	 */
	if ((__s32)u->ret != 0)
		return;
	api = ucall_table__api(&cuda_table, u->fn);
	if (api && waits_for_gpu(api))
		t->wait += u->dur;
	if (api && api->group == CUDA_GRP_LAUNCH) {
		t->launch += u->dur;
		t->launches++;
	}
}

/*
 * The same state from a server's answer (stats --from): cuda_thread_calls, a row per thread
 * and function of its calls at depth 0, all of them and those that returned 0.
 */
static int cuda_rule__load(void *vst, const char *name, const struct table *t)
{
	int cp = table__col(t, "pid"), ct = table__col(t, "tid"), cn = table__col(t, "name");
	int call = table__col(t, "total_ns"), cok = table__col(t, "ok_ns"),
	    ccount = table__col(t, "ok_count");
	struct cuda_rule *st = vst;
	struct thread_api *th;

	if (cp < 0 || ct < 0 || cn < 0 || call < 0 || cok < 0 || ccount < 0)
		return -EINVAL;
	for (int r = 0; r < table__nrows(t); r++) {
		const char *fn = table__get_str(t, r, cn);
		const struct ucall_api *api = NULL;
		__u64 ok = table__get_u64(t, r, cok);

		th = hmap__get(st->threads,
			       (struct hkey){ table__get_u64(t, r, cp), table__get_u64(t, r, ct) },
			       1);
		if (!th)
			return -ENOMEM;
		th->total += table__get_u64(t, r, call);
		for (__u32 i = 0; fn && i < cuda_table.napis && !api; i++)
			if (!strcmp(cuda_table.apis[i].name, fn))
				api = &cuda_table.apis[i];
		if (api && waits_for_gpu(api))
			th->wait += ok;
		if (api && api->group == CUDA_GRP_LAUNCH) {
			th->launch += ok;
			th->launches += table__get_u64(t, r, ccount);
		}
	}
	return 0;
}

static void cuda_rule__account(void *vst, struct verdict *v)
{
	struct cuda_rule *st = vst;
	struct thread_api *t;
	struct hkey key;
	size_t it = 0;

	while ((t = hmap__next(st->threads, &it, &key)))
		verdict__add_time(v, (__u32)key.a, (__u32)key.b, VERDICT_API, t->total);
}

static void cuda_rule__claims(void *vst, struct verdict *v)
{
	const struct thread_api *best = NULL;
	struct cuda_rule *st = vst;
	char who[128], report[48], d1[32], d2[32], d3[32];
	__u32 pid = 0, tid = 0;
	struct thread_api *t;
	struct hkey key;
	size_t it = 0;
	double share;
	__u64 life;

	while ((t = hmap__next(st->threads, &it, &key)))
		if (!best || t->total > best->total ||
		    (t->total == best->total && (key.a < pid || (key.a == pid && key.b < tid)))) {
			best = t;
			pid = (__u32)key.a;
			tid = (__u32)key.b;
		}
	life = best ? verdict__life(v, pid, tid) : 0;
	if (!life)
		return;
	verdict__thread(v, pid, tid, who, sizeof(who));
	snprintf(report, sizeof(report), "cuda_api_sum --tid %u", tid);
	share = (double)best->wait / life;
	if (share >= 0.05)
		verdict__claim(v, VERDICT_GPU, share >= WAIT_SHARE && best->wait >= CUDA_MIN_NS,
			       share > 1 ? 1 : share, report,
			       "%s waited for the GPU in CUDA calls (synchronize, blocking copies) "
			       "%s of its %s",
			       who, human__ns((double)best->wait, d1, sizeof(d1)),
			       human__ns((double)life, d2, sizeof(d2)));
	share = (double)best->launch / life;
	if (share >= LAUNCH_SHARE)
		verdict__claim(v, VERDICT_LAUNCH, 0, share > 1 ? 1 : share, report,
			       "%s spent %s of its %s in %llu kernel launch calls, %s each", who,
			       human__ns((double)best->launch, d1, sizeof(d1)),
			       human__ns((double)life, d2, sizeof(d2)),
			       (unsigned long long)best->launches,
			       human__ns((double)best->launch / best->launches, d3, sizeof(d3)));
}

const struct family_verdict cuda_verdict = {
	.new = cuda_rule__new,
	.add = cuda_rule__add,
	.account = cuda_rule__account,
	.claims = cuda_rule__claims,
	.free = cuda_rule__free,
	.reads = "cuda_thread_calls",
	.load = cuda_rule__load,
};
