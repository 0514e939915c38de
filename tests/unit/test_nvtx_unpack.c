// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's hooks as the cupti-shim channel drives them (user/families/nvtx/
 * nvtx_unpack.c): a process that names more thread or category keys than the recorder keeps
 * for it loses the names past them, counted, and the memory stays bounded.
 */
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "loss.h"
#include "nvtx.h"
#include "record_ctx.h"
#include "shim_unpack.h"
#include "string_pool.h"
#include "unit.h"

#define PID	  4242
#define KEYS_KEPT 65536 /* MAX_NAME_KEYS */

static long written;

static int sink(void *arg, const struct bs_hdr *rec)
{
	(void)arg;
	written += rec->type == BS_REC_NVTX_NAME;
	return 0;
}

static __u64 family_bit(const struct family *f)
{
	for_each_family(it)
		if (it.f == f)
			return 1ull << it.i;
	return 0;
}

struct batch {
	struct bs_shim_batch b;
	struct bs_shim_batch_hdr bh;
	__u64 recs[BS_SHIM_BATCH_MAX / 8];
};

/* A batch naming category keys from FIRST (as many as fit; string 1, "n", first in batch 1). */
static __u64 fill(struct batch *b, __u64 seq, __u64 first, __u64 nkeys)
{
	char *p = (char *)b->recs;
	__u32 used = 0, nrec = 0;
	__u64 key = first;

	if (seq == 1) {
		struct bs_string *s = (void *)p;

		*s = (struct bs_string){ .h = { .type = BS_REC_STRING, .size = sizeof(*s) + 8 },
					 .id = 1,
					 .len = 1 };
		memcpy(s + 1, "n\0\0\0\0\0\0\0", 8);
		used += s->h.size;
		nrec++;
	}
	while (key < first + nkeys && used + sizeof(struct bs_nvtx_name) <= BS_SHIM_BATCH_MAX) {
		struct bs_nvtx_name *nm = (void *)(p + used);

		*nm = (struct bs_nvtx_name){
			.h = { .type = BS_REC_NVTX_NAME,
			       .size = sizeof(*nm),
			       .tid = PID,
			       .ts = key },
			.key = key,
			.kind = BS_NVTX_NAME_CATEGORY,
			.name_id = 1,
		};
		used += sizeof(*nm);
		nrec++;
		key++;
	}
	b->b.len = sizeof(b->bh) + used;
	b->b.h = (struct bs_hdr){ .type = BS_REC_SHIM_BATCH,
				  .size = sizeof(b->b) + b->b.len,
				  .pid = PID,
				  .tid = PID,
				  .ts = seq };
	b->bh = (struct bs_shim_batch_hdr){ BS_SHIM_MAGIC, BS_SHIM_VERSION, nrec, used, seq };
	return key - first;
}

static void test_names_past_the_cap_are_lost_and_counted(void)
{
	struct record_opts o = { .families = family_bit(&family_nvtx) };
	struct record_ctx ctx = { .opts = &o, .out = { sink, NULL } };
	struct batch *b = calloc(1, sizeof(*b));
	__u64 total = KEYS_KEPT + 1000, key = 0, seq = 0;
	struct shim_unpack *u = NULL;

	written = 0;
	ctx.strings = string_pool__new();
	if (ctx.strings)
		u = shim_unpack__new(&ctx, -1);
	if (!ASSERT_TRUE(b && u && !shim_unpack__want(u, &family_nvtx), "alloc"))
		goto cleanup;
	while (key < total) {
		key += fill(b, ++seq, key, total - key);
		if (!ASSERT_EQ(shim_unpack__record(u, &b->b.h), 1, "the batch is consumed"))
			goto cleanup;
	}
	/* the first keys again, same names: repeats, not written, not lost */
	fill(b, ++seq, 0, 100);
	shim_unpack__record(u, &b->b.h);
	shim_unpack__finish(u);
	ASSERT_EQ(written, KEYS_KEPT, "names written: one per key kept");
	ASSERT_EQ(ctx.lost_user[loss__key(NULL, BS_LOSS_NVTX_NAMES)], 1000, "names lost, counted");
	ASSERT_STREQ(loss_cause_name(BS_LOSS_NVTX_NAMES), "nvtx_names_capped", "its name");
cleanup:
	shim_unpack__free(u);
	string_pool__free(ctx.strings);
	free(b);
}

int main(void)
{
	RUN_TEST(test_names_past_the_cap_are_lost_and_counted);
	return UNIT_EXIT();
}
