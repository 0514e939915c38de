// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's hooks as the cupti-shim channel drives them (user/families/gpu/
 * gpu_unpack.c): a batch unpacked through shim_unpack, the launch join wired as the
 * recording's families say.
 */
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "cuda_records.h"
#include "family.h"
#include "gpu.h"
#include "record_ctx.h"
#include "shim_unpack.h"
#include "string_pool.h"
#include "unit.h"
#include "ucall_fn.h"

#define PID 4242
#define TID 4243

static struct bs_gpu_api got;
static int napi;

static int sink(void *arg, const struct bs_hdr *rec)
{
	(void)arg;
	if (rec->type == BS_REC_GPU_API) {
		memcpy(&got, rec, sizeof(got));
		napi++;
	}
	return 0;
}

static __u64 family_bit(const struct family *f)
{
	for_each_family(it)
		if (it.f == f)
			return 1ull << it.i;
	return 0;
}

static __u32 fn(const char *name)
{
	return ucall_fn(&cuda_table, name);
}

/*
 * -t cuda,gpu: CUPTI's API record reached the recorder before the cuda call around it (the
 * call's return record was still on its way). It must wait for the call, and be linked to it
 * (BS_GPU_CALL_CUDA). The join was told "no call will come" unless --capture-range was the
 * cuda family's, so it was decided at once, linked to nothing but itself.
 */
static void test_api_record_waits_for_its_call_when_cuda_is_recorded(void)
{
	enum { LEN = sizeof(struct bs_shim_batch_hdr) + sizeof(struct bs_gpu_api) };
	struct record_opts o = { .families = family_bit(&family_cuda) | family_bit(&family_gpu) };
	struct record_ctx ctx = { .opts = &o, .out = { sink, NULL } };
	struct bs_ucall call = { .h = { .type = BS_REC_CUDA_CALL,
					.size = sizeof(call),
					.pid = PID,
					.tid = TID,
					.ts = 1500 },
				 .dur = 1000,
				 .fn = fn("cudaLaunchKernel") };
	struct bs_shim_batch_hdr *bh;
	struct bs_shim_batch *b;
	struct bs_gpu_api *a;
	struct shim_unpack *u = NULL;

	napi = 0;
	b = calloc(1, sizeof(*b) + LEN);
	ctx.strings = string_pool__new();
	if (ctx.strings)
		u = shim_unpack__new(&ctx, -1);
	if (!ASSERT_TRUE(b && u && !shim_unpack__want(u, &family_gpu), "alloc"))
		goto cleanup;
	b->h = (struct bs_hdr){ .type = BS_REC_SHIM_BATCH,
				.size = sizeof(*b) + LEN,
				.pid = PID,
				.tid = PID,
				.ts = 3000 };
	b->len = LEN;
	bh = (void *)(b + 1);
	*bh = (struct bs_shim_batch_hdr){ BS_SHIM_MAGIC, BS_SHIM_VERSION, 1, sizeof(*a), 1 };
	a = (void *)(bh + 1);
	a->h = (struct bs_hdr){
		.type = BS_REC_GPU_API, .size = sizeof(*a), .tid = TID, .ts = 2000
	};
	a->dur = 100;
	a->correlation = 7;
	ASSERT_EQ(shim_unpack__record(u, &b->h), 1, "the batch is consumed");
	ASSERT_EQ(napi, 0, "the API record waits for its call");
	ASSERT_EQ(shim_unpack__record(u, &call.h), 0, "a cuda call goes on to be written");
	shim_unpack__finish(u);
	ASSERT_EQ(napi, 1, "the API record written once");
	ASSERT_EQ(got.flags & BS_GPU_CALL_CUDA, BS_GPU_CALL_CUDA, "linked to its cuda call");
	ASSERT_EQ(got.call_ts, 1500, "the call's entry");
cleanup:
	shim_unpack__free(u);
	string_pool__free(ctx.strings);
	free(b);
}

/* An empty batch of PID numbered SEQ, as the ring brings it. */
static int empty_batch(struct shim_unpack *u, __u32 pid, __u64 seq)
{
	struct {
		struct bs_shim_batch b;
		struct bs_shim_batch_hdr bh;
	} r = { .b = { .h = { .type = BS_REC_SHIM_BATCH,
			      .size = sizeof(r),
			      .pid = pid,
			      .tid = pid,
			      .ts = 1000 + seq },
		       .len = sizeof(r.bh) },
		.bh = { BS_SHIM_MAGIC, BS_SHIM_VERSION, 0, 0, seq } };

	return shim_unpack__record(u, &r.b.h);
}

static __u64 shim_losses(const struct record_ctx *ctx)
{
	__u64 n = 0;

	for (int k = 0; k < BS_LOST_KEYS; k++)
		n += ctx->lost_user[k];
	return n;
}

/*
 * A child forked by a process whose shim sends batches (a DataLoader's worker) numbers its
 * batches from 1, all for this recording: a first batch heard at 4 says 1-3 were missed (sent
 * before the recorder attached to it). A process first heard at 4 that was not forked while
 * recording (-p to a job traced before) has no such count: its earlier batches were another's.
 */
static void test_a_forked_childs_batches_before_the_first_heard_are_missed(void)
{
	struct record_opts o = { .families = family_bit(&family_gpu) };
	struct record_ctx ctx = { .opts = &o, .out = { sink, NULL } };
	struct bs_fork fork = { .h = { .type = BS_REC_FORK,
				       .size = sizeof(fork),
				       .pid = PID,
				       .tid = PID,
				       .ts = 1100 },
				.child_pid = PID + 10,
				.child_tid = PID + 10 };
	struct shim_unpack *u = NULL;

	ctx.strings = string_pool__new();
	if (ctx.strings)
		u = shim_unpack__new(&ctx, -1);
	if (!ASSERT_TRUE(u && !shim_unpack__want(u, &family_gpu), "alloc"))
		goto cleanup;
	ASSERT_EQ(empty_batch(u, PID, 1), 1, "the parent's first batch");
	shim_unpack__record(u, &fork.h);
	ASSERT_EQ(empty_batch(u, PID + 10, 4), 1, "the child's first batch heard: its 4th");
	ASSERT_EQ(empty_batch(u, PID + 20, 4), 1, "another process's, first heard at 4");
	shim_unpack__finish(u);
	ASSERT_EQ(shim_losses(&ctx), 3, "the child's batches 1-3, missed; none of the other's");
cleanup:
	shim_unpack__free(u);
	string_pool__free(ctx.strings);
}

int main(void)
{
	RUN_TEST(test_api_record_waits_for_its_call_when_cuda_is_recorded);
	RUN_TEST(test_a_forked_childs_batches_before_the_first_heard_are_missed);
	return UNIT_EXIT();
}
