// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A file of format 3 read by format 4's reader (trace_renumber.h): tests/fixtures/format3/
 * format3.trace, written by a bpfsight of format 3 (its make_fixture.py), holds gpumetrics'
 * records at 0xa8-0xac, pyfunc's at 0xf2, a STACK_REF naming a pyfunc call and LOSS records
 * naming blocks as 0x100 | block. The reader hands every one out in format 4's numbers, and
 * the same records written again (format 4) read back unchanged: mapped once, not twice.
 */
#include "format_files.h"
#include "gpumetrics_records.h"
#include "pyfunc_records.h"
#include "trace_renumber.h"

#define FIXTURE "tests/fixtures/format3/format3.trace"

struct seen {
	__u32 by_type[BS_REC_TYPE_MAX];
	__u32 stack_ref_type, loss_blocks[3], nloss;
};

/* Every record of PATH into S, and into RS when it is given. */
static int read_all(const char *path, struct seen *s, struct recs *rs, __u32 *version)
{
	struct trace_reader *r = trace_reader__open(path, NULL, 0, NULL);
	const struct bs_hdr *h;

	if (!r)
		return -1;
	memset(s, 0, sizeof(*s));
	*version = trace_reader__meta(r)->version;
	while (trace_reader__next(r, &h) == 1) {
		s->by_type[h->type]++;
		if (h->type == BS_REC_STACK_REF)
			s->stack_ref_type = ((const struct bs_stack_ref *)h)->event_type;
		if (h->type == BS_REC_LOSS && s->nloss < 3)
			s->loss_blocks[s->nloss++] = ((const struct bs_loss *)h)->block;
		if (rs)
			recs_add(rs, h);
	}
	trace_reader__free(r);
	return 0;
}

static void check_numbers(const struct seen *s, const char *what)
{
	__u32 old = 0;

	for (__u32 t = 0xa8; t <= 0xaf; t++)
		old += s->by_type[t];
	for (__u32 t = 0xf2; t <= 0xf7; t++)
		old += s->by_type[t];
	ASSERT_EQ(old, 0, what);
	ASSERT_EQ(s->by_type[BS_REC_GPUM_DEVICE], 1, "gpumetrics' DEVICE at 0x100");
	ASSERT_EQ(s->by_type[BS_REC_GPUM_KEY], 1, "KEY at 0x101");
	ASSERT_EQ(s->by_type[BS_REC_GPUM_SAMPLE], 1, "SAMPLE at 0x102");
	ASSERT_EQ(s->by_type[BS_REC_GPUM_PROC], 1, "PROC at 0x103");
	ASSERT_EQ(s->by_type[BS_REC_GPUM_STATUS], 1, "STATUS at 0x104");
	ASSERT_EQ(s->by_type[BS_REC_PYFUNC_CALL], 3, "pyfunc's calls at 0x110");
	ASSERT_EQ(s->stack_ref_type, BS_REC_PYFUNC_CALL, "the STACK_REF names 0x110");
	ASSERT_EQ(s->nloss, 3, "three losses");
	ASSERT_EQ(s->loss_blocks[0], BS_LOSS_BLOCK_SET | 0x100, "gpumetrics' loss: its block");
	ASSERT_EQ(s->loss_blocks[1], BS_LOSS_BLOCK_SET | 0x100, "gpumetrics' ringbuf_full");
	ASSERT_EQ(s->loss_blocks[2], BS_LOSS_BLOCK_SET | 0x30, "cuda's: its block, as it was");
}

static void test_format3_mapped(void)
{
	struct seen s;
	__u32 version = 0;

	if (!ASSERT_EQ(read_all(FIXTURE, &s, NULL, &version), 0, "open " FIXTURE))
		return;
	ASSERT_EQ(version, 3, "a file of format 3");
	check_numbers(&s, "no type of format 3's numbers handed out");
	ASSERT_EQ(trace_renumber__type(3, 0xa8), 0x100, "0xa8 was gpumetrics'");
	ASSERT_EQ(trace_renumber__type(3, 0xf7), 0x115, "0xf7 was pyfunc's");
	ASSERT_EQ(trace_renumber__type(3, 0xa4), 0xa4, "merge's block kept the rest");
	ASSERT_EQ(trace_renumber__type(4, 0xa8), 0xa8, "format 4's are its own");
}

static void test_format3_written_again(void)
{
	struct recs rs = { 0 };
	struct trace_clocks end = { 4000000, 0, 0 };
	struct trace_writer *w;
	char path[128];
	struct seen s;
	__u32 version = 0;
	int err = 0;

	if (!ASSERT_EQ(read_all(FIXTURE, &s, &rs, &version), 0, "open " FIXTURE))
		return;
	tmp_path(path, sizeof(path), "format4");
	w = trace_writer__open(path, &small_meta, 0, &err);
	if (!ASSERT_TRUE(w, "writer"))
		goto out;
	for (size_t i = 0; !err && i < rs.n; i++)
		err = trace_writer__append(w, recs_get(&rs, i));
	ASSERT_EQ(err ?: trace_writer__close(w, &end), 0, "written in format 4");
	if (!ASSERT_EQ(read_all(path, &s, NULL, &version), 0, "read again"))
		goto out;
	ASSERT_EQ(version, BS_FILE_VERSION, "format 4");
	check_numbers(&s, "format 4's numbers kept, not mapped again");
	{
		size_t *all = calloc(rs.n, sizeof(*all));
		struct read_result res;

		for (size_t i = 0; all && i < rs.n; i++)
			all[i] = i;
		read_check(path, &rs, all, all ? rs.n : 0, &res);
		ASSERT_TRUE(all && !res.mismatch && !res.bad_invariant && res.n == rs.n,
			    "the same records, byte for byte");
		free(all);
	}
out:
	recs_free(&rs);
}

int main(void)
{
	if (format_tmpdir_make())
		return 1;
	RUN_TEST(test_format3_mapped);
	RUN_TEST(test_format3_written_again);
	format_tmpdir_remove();
	return UNIT_EXIT();
}
