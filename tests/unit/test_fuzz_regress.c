// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Regressions found by the fuzzers (tests/fuzz/): each case rebuilds the input that broke
 * a reader and checks the right answer in the ordinary build, where the sanitizers that
 * caught the bug are not there. The fuzzers' own inputs are kept with their seeds too
 * (the regress-* files in tests/fuzz/seeds-decode, seeds-shim_unpack and seeds-eh_frame).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "family_stats.h"
#include "recorder.h"
#include "report.h"
#include "shim_unpack.h"
#include "string_pool.h"
#include "table.h"
#include "trace_model.h"
#include "unit.h"
#include "unwind_build.h"
#include "osrt_records.h"
#include "gpu.h"
#include "nvtx.h"
#include "gpu_records.h"

static const struct report *find_report(const char *name)
{
	const struct report *const *rp;

	for_each_family(it)
		for (rp = family__stats(it.f)->reports; rp && *rp; rp++)
			if (!strcmp((*rp)->name, name))
				return *rp;
	return NULL;
}

/* Feed RECS (N pointers) to report NAME as `stats` does; its table, or NULL. */
static struct table *run_report(const char *name, const struct bs_hdr *const *recs, int n)
{
	const struct report *rep = find_report(name);
	struct trace_model *m = trace_model__new();
	struct table *t = table__new(name);
	void *st = rep ? rep->new () : NULL;

	if (!st || !m || !t)
		goto fail;
	for (int i = 0; i < n; i++) {
		trace_model__observe(m, recs[i]);
		rep->add(st, recs[i], m);
	}
	if (rep->emit(st, m, t))
		goto fail;
	rep->free(st);
	trace_model__free(m);
	return t;
fail:
	if (st)
		rep->free(st);
	trace_model__free(m);
	table__free(t);
	return NULL;
}

static void hdr(struct bs_hdr *h, __u16 type, __u16 size, __u32 pid, __u64 ts)
{
	memset(h, 0, size);
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = pid;
	h->ts = ts;
}

/*
 * Totals summing past 2^64 (a corrupt trace): time_pct was computed from a grand total
 * converted to u64 out of range (UB: garbage percentages). Each of two equal rows is 50 %.
 */
static void test_time_pct_past_2_64(void)
{
	struct bs_syscall a, b;
	const struct bs_hdr *recs[] = { &a.h, &b.h };
	struct table *t;
	int c;

	hdr(&a.h, BS_REC_SYSCALL, sizeof(a), 10, 1000);
	a.nr = 0;
	a.dur = 0xc000000000000000ull;
	hdr(&b.h, BS_REC_SYSCALL, sizeof(b), 10, 2000);
	b.nr = 1;
	b.dur = 0xc000000000000000ull;
	t = run_report("osrt_sum", recs, 2);
	if (!ASSERT_TRUE(t, "osrt_sum") || !ASSERT_EQ(table__nrows(t), 2, "rows"))
		goto cleanup;
	c = table__col(t, "time_pct");
	ASSERT_NEAR(table__get_double(t, 0, c), 50.0, 1e-9, "row 0 time_pct");
	ASSERT_NEAR(table__get_double(t, 1, c), 50.0, 1e-9, "row 1 time_pct");
cleanup:
	table__free(t);
}

/*
 * A SHIM_BATCH ring record longer than a batch may be (BPF cuts at the header plus
 * BS_SHIM_BATCH_MAX; only a broken or foreign producer sends more) with one 20000-byte
 * kernel record: its copy overran the unpacker's one-batch buffer. It must be dropped whole
 * as malformed, counted as one lost record, and nothing of it unpacked.
 */
static void test_shim_ring_len_past_batch_max(void)
{
	enum { REC = 20000, LEN = sizeof(struct bs_shim_batch_hdr) + REC };
	struct record_opts o = {};
	struct record_ctx ctx = { .opts = &o };
	const struct shim_proc *p;
	struct bs_shim_batch_hdr *bh;
	struct bs_shim_batch *b;
	struct shim_unpack *u;
	struct bs_hdr *k;

	b = calloc(1, sizeof(*b) + LEN);
	u = shim_unpack__new(&ctx, -1);
	if (!ASSERT_TRUE(b && u && !shim_unpack__want(u, &family_gpu) &&
				 !shim_unpack__want(u, &family_nvtx),
			 "alloc"))
		goto cleanup;
	hdr(&b->h, BS_REC_SHIM_BATCH, sizeof(*b) + LEN, 4242, 1000);
	b->len = LEN;
	bh = (void *)(b + 1);
	*bh = (struct bs_shim_batch_hdr){ BS_SHIM_MAGIC, BS_SHIM_VERSION, 1, REC, 1 };
	k = (void *)(bh + 1);
	k->type = BS_REC_GPU_KERNEL;
	k->size = REC;
	ASSERT_EQ(shim_unpack__record(u, &b->h), 1, "a batch is consumed");
	/* The shim's loss, the gpu family's (the family of its block: loss__key). */
	ASSERT_EQ(ctx.lost_user[loss__key(loss__block_family(BS_REC_SHIM_STATUS), BS_LOSS_SHIM)], 1,
		  "dropped as one lost record");
	p = shim_unpack__proc(u, 4242);
	ASSERT_TRUE(!p || !p->records, "no record of it unpacked");
cleanup:
	shim_unpack__free(u);
	free(b);
}

static char heard[64];

static void hear(void *arg, const struct bs_hdr *rec, const char *text)
{
	(void)arg;
	if (rec->type == BS_REC_SHIM_STATUS)
		snprintf(heard, sizeof(heard), "%s", text);
}

/*
 * An NVTX name record of kind 0 (no such kind) whose key is a string's id: the key under
 * which the unpacker remembers names heard (so one sent again by a join is not written
 * twice) equalled that string's, and the name's entry replaced the string's text (leaked
 * it, and named the string's later users nothing). The string must still name them.
 */
static void test_shim_nvtx_name_kind_0_keeps_the_string(void)
{
	enum {
		TEXT = 8,
		STR = sizeof(struct bs_string) + TEXT,
		LEN = sizeof(struct bs_shim_batch_hdr) + STR + sizeof(struct bs_nvtx_name) +
		      sizeof(struct bs_shim_status)
	};
	struct record_opts o = {};
	struct record_ctx ctx = { .opts = &o };
	struct bs_shim_batch_hdr *bh;
	struct bs_shim_status *st;
	struct bs_nvtx_name *n;
	struct bs_shim_batch *b;
	struct bs_string *str;
	struct shim_unpack *u;

	b = calloc(1, sizeof(*b) + LEN);
	ctx.strings = string_pool__new();
	u = ctx.strings ? shim_unpack__new(&ctx, -1) : NULL;
	if (!ASSERT_TRUE(b && u && !shim_unpack__want(u, &family_gpu) &&
				 !shim_unpack__want(u, &family_nvtx),
			 "alloc"))
		goto cleanup;
	shim_unpack__listen(u, &family_nvtx, hear, NULL);
	hdr(&b->h, BS_REC_SHIM_BATCH, sizeof(*b) + LEN, 4242, 1000);
	b->len = LEN;
	bh = (void *)(b + 1);
	*bh = (struct bs_shim_batch_hdr){ BS_SHIM_MAGIC, BS_SHIM_VERSION, 3, LEN - sizeof(*bh), 1 };
	str = (void *)(bh + 1);
	hdr(&str->h, BS_REC_STRING, STR, 4242, 1001);
	str->id = 5;
	str->len = 7;
	memcpy(str + 1, "keep-me", 7);
	n = (void *)((char *)str + STR);
	hdr(&n->h, BS_REC_NVTX_NAME, sizeof(*n), 4242, 1002);
	n->key = 5; /* kind 0, domain 0 */
	n->name_id = 5;
	st = (void *)(n + 1);
	hdr(&st->h, BS_REC_SHIM_STATUS, sizeof(*st), 4242, 1003);
	st->event = BS_SHIM_EV_STATE;
	st->detail_id = 5;
	heard[0] = 0;
	ASSERT_EQ(shim_unpack__record(u, &b->h), 1, "a batch is consumed");
	ASSERT_STREQ(heard, "keep-me", "the status's detail: the string");
cleanup:
	shim_unpack__free(u);
	string_pool__free(ctx.strings);
	free(b);
}

/*
 * fuzz_eh_frame (regress-no-fde-kept): a section none of whose FDEs is kept (their CIE
 * pointers lead nowhere) sorted an empty list through qsort(NULL, 0), undefined behaviour:
 * the answer is an empty table, the FDE counted as refused.
 */
static void test_eh_frame_without_a_kept_fde(void)
{
	/* length 12, a CIE pointer past the section's start, pc and range */
	static const __u8 sec[] = { 12, 0, 0, 0, 0x40, 0, 0, 0, 0, 0x10, 0, 0, 0x20, 0, 0, 0 };
	struct unwind_table t;

	ASSERT_EQ(unwind_table__from_section(sec, sizeof(sec), 0x1000, 0, &t), 0, "built");
	ASSERT_EQ(t.n, 0, "rows");
	ASSERT_EQ(t.stats.fdes_refused, 1, "FDEs refused");
	unwind_table__free(&t);
}

int main(void)
{
	RUN_TEST(test_time_pct_past_2_64);
	RUN_TEST(test_shim_ring_len_past_batch_max);
	RUN_TEST(test_shim_nvtx_name_kind_0_keeps_the_string);
	RUN_TEST(test_eh_frame_without_a_kept_fde);
	return UNIT_EXIT();
}
