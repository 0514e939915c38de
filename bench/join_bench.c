// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The launch join's cost per record (user/families/gpu/shim_join.h), without a recorder:
 *
 *   join_bench [THREADS [CALLS [LATE]]]
 *
 * THREADS threads (in one process) each make CALLS launches, one per 100 us: a runtime call
 * (depth 0) around a driver call (depth 1), both launching. Each launch's CUPTI API record
 * and kernel come LATE launches later (default 20,000 = 2 s of calls), interleaved across
 * threads as a flush would deliver them. Prints ns per record fed to the join (calls, API
 * records, kernels), the same loop without the join (the floor: building the records), and
 * how many kernels were linked to their call.
 *
 * Then the same without API records (GPU timing switched on in a running job): each thread's
 * launch is a cudaMemsetAsync on a stream of its own (five sizes in turn), its memset comes
 * LATE launches later, and the join links it by launch order (order_link.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda.h"
#include "cuda_records.h"
#include "shim_join.h"

static __u64 emitted;

static void count(void *arg, struct bs_hdr *rec)
{
	(void)arg;
	(void)rec;
	emitted++;
}

static __u64 now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int fn_of(const char *name)
{
	for (__u32 fn = 0; fn < cuda_table.napis; fn++)
		if (!strcmp(cuda_table.apis[fn].name, name))
			return fn;
	return -1;
}

struct recs {
	struct bs_ucall outer, inner;
	struct bs_gpu_api api;
	struct bs_gpu_kernel k;
};

static void make(struct recs *r, int rt, int drv, __u32 tid, long i)
{
	__u64 ts = 1000000000ull + (__u64)i * 100000;

	memset(r, 0, sizeof(*r));
	r->inner.h = (struct bs_hdr){ .type = BS_REC_CUDA_CALL,
				      .size = sizeof(r->inner),
				      .pid = 1,
				      .tid = tid,
				      .ts = ts + 1000 };
	r->inner.dur = 5000;
	r->inner.fn = drv;
	r->inner.depth = 1;
	r->outer.h = r->inner.h;
	r->outer.h.ts = ts;
	r->outer.dur = 8000;
	r->outer.fn = rt;
	r->api.h = (struct bs_hdr){ .type = BS_REC_GPU_API,
				    .size = sizeof(r->api),
				    .pid = 1,
				    .tid = tid,
				    .ts = ts + 2000 };
	r->api.dur = 1000;
	r->api.correlation = (__u32)i * 64 + tid;
	r->k.h = (struct bs_hdr){
		.type = BS_REC_GPU_KERNEL, .size = sizeof(r->k), .pid = 1, .ts = ts + 20000
	};
	r->k.dur = 3000;
	r->k.correlation = r->api.correlation;
}

/* One run; returns ns per record. */
static double run(int with_join, int threads, long calls, long late, __u64 *linked)
{
	int rt = fn_of("cudaLaunchKernel"), drv = fn_of("cuLaunchKernel");
	struct shim_join *j = with_join ? shim_join__new(count, NULL) : NULL;
	struct shim_join_stats st;
	__u64 t0 = now(), n = 0, sink = 0;
	struct recs r;

	for (long i = 0; i < calls + late; i++) {
		for (int t = 0; t < threads; t++) {
			if (i < calls) {
				make(&r, rt, drv, 100 + t, i);
				if (j) {
					shim_join__cuda_call(j, &r.inner.h);
					shim_join__cuda_call(j, &r.outer.h);
				}
				sink += r.inner.h.ts + r.outer.h.ts;
				n += 2;
			}
			if (i >= late) {
				make(&r, rt, drv, 100 + t, i - late);
				if (j) {
					shim_join__api(j, &r.api, r.outer.h.ts + late * 100000);
					shim_join__gpu(j, &r.k.h, r.outer.h.ts + late * 100000);
				}
				sink += r.api.h.ts + r.k.h.ts;
				n += 2;
			}
		}
		if (j && i % 1000 == 0)
			shim_join__expire(j, 1000000000ull + (__u64)i * 100000, 0);
	}
	if (j) {
		shim_join__expire(j, 0, 1);
		shim_join__stats(j, &st);
		*linked = st.linked_cuda;
		shim_join__free(j);
	}
	if (sink == 1)
		printf("-\n");
	return (double)(now() - t0) / n;
}

/* A memset call and its GPU record, launch I of thread TID, without an API record. */
static void make_order(struct bs_ucall *c, struct bs_gpu_memset *m, int fn, __u32 tid, long i)
{
	__u64 ts = 1000000000ull + (__u64)i * 100000, bytes = 4096 * (__u64)(i % 5 + 1);

	memset(c, 0, sizeof(*c));
	memset(m, 0, sizeof(*m));
	c->h = (struct bs_hdr){
		.type = BS_REC_CUDA_CALL, .size = sizeof(*c), .pid = 1, .tid = tid, .ts = ts
	};
	c->dur = 5000;
	c->fn = fn;
	c->args[2] = bytes;
	c->args[3] = 0x1000 + tid; /* the thread's stream */
	m->h = (struct bs_hdr){
		.type = BS_REC_GPU_MEMSET, .size = sizeof(*m), .pid = 1, .ts = ts + 20000
	};
	m->dur = 3000;
	m->bytes = bytes;
	m->context = 1;
	m->stream = tid;
	m->correlation = (__u32)i * 64 + tid;
}

/* As run(), by launch order; returns ns per record. */
static double run_order(int threads, long calls, long late, __u64 *linked)
{
	struct shim_join *j = shim_join__new(count, NULL);
	int fn = fn_of("cudaMemsetAsync");
	struct shim_join_stats st;
	struct bs_gpu_memset m;
	struct bs_ucall c;
	__u64 t0 = now(), n = 0;

	for (long i = 0; i < calls + late; i++) {
		for (int t = 0; t < threads; t++) {
			if (i < calls) {
				make_order(&c, &m, fn, 100 + t, i);
				shim_join__cuda_call(j, &c.h);
				n++;
			}
			if (i >= late) {
				make_order(&c, &m, fn, 100 + t, i - late);
				shim_join__gpu(j, &m.h, c.h.ts + late * 100000);
				n++;
			}
		}
		if (i % 1000 == 0)
			shim_join__expire(j, 1000000000ull + (__u64)i * 100000, 0);
	}
	shim_join__expire(j, 0, 1);
	shim_join__stats(j, &st);
	*linked = st.linked_order;
	shim_join__free(j);
	return (double)(now() - t0) / n;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	long calls = argc > 2 ? atol(argv[2]) : 200000, late = argc > 3 ? atol(argv[3]) : 20000;
	__u64 linked = 0;
	double floor_ns = run(0, threads, calls, late, &linked);
	double join_ns = run(1, threads, calls, late, &linked);

	printf("join_bench: %d threads x %ld launches (runtime around driver), records %ld "
	       "launches late\n",
	       threads, calls, late);
	printf("  floor (records built, no join): %.1f ns/record\n", floor_ns);
	printf("  join:                           %.1f ns/record (%.1f over the floor)\n", join_ns,
	       join_ns - floor_ns);
	printf("  kernels linked to their call:   %llu of %llu\n", (unsigned long long)linked,
	       (unsigned long long)threads * calls);
	if (linked != (__u64)threads * calls)
		return 1;
	join_ns = run_order(threads, calls, late, &linked);
	printf("  without API records, by launch order: %.1f ns/record (%.1f over the floor), "
	       "%llu of %llu linked\n",
	       join_ns, join_ns - floor_ns, (unsigned long long)linked,
	       (unsigned long long)threads * calls);
	return linked == (__u64)threads * calls ? 0 : 1;
}
