// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The codings of format 3 in the column codec (trace_columns.h): per-slot deltas keyed by the
 * tid or another field, the gap word (sched's oncpu_ns), the chain of ends, columns in byte
 * planes. Each is taken when the records call for it, and undone byte for byte at its edges:
 * a thread's first record, more threads than slots, records too short to have the key or the
 * gap word, values that wrap, a chunk decoded on its own; a damaged chunk is refused, never
 * read past.
 */
#include "columns_check.h"
#include "sched_records.h"

static void add(struct trace_columns_enc *e, struct recs *rs, const struct bs_hdr *h)
{
	ASSERT_EQ(trace_columns_enc__add(e, h), 0, "add");
	recs_add(rs, h);
}

/*
 * Off-CPU intervals of NTHREADS threads (tids 1000 on: more than 256 share slots), written
 * as they end, each thread's oncpu_ns the time since its
 * previous interval's end, as sched writes it; a thread's first interval has a run slice
 * from before (not 0), and one in 50 breaks the rule. Times start near 2^64 - BASE_BACK so
 * that they wrap.
 */
static void add_offcpu(struct trace_columns_enc *e, struct recs *rs, size_t n, __u32 nthreads,
		       __u64 base_back)
{
	static __u64 end[600];
	__u64 now = -base_back;
	size_t i;

	memset(end, 0, sizeof(end));
	for (i = 0; i < n; i++) {
		__u32 k = (__u32)(rng() % nthreads);
		/* A thread mostly comes back on the CPU it left. */
		__u32 cpu = rng() % 10 ? k % 16 : (__u32)(rng() % 16);
		struct bs_offcpu oc = { .h = { BS_REC_OFFCPU, sizeof(oc), cpu, 40, 1000 + k } };

		now += 1 + rng() % 5000;
		/* It went off CPU after its previous interval ended, and is back now. */
		oc.dur = rng() % (end[k] && now - end[k] < 100000 ? now - end[k] + 1 : 100000);
		oc.h.ts = now - oc.dur;
		oc.runnable_ns = rng() % (oc.dur + 1);
		oc.oncpu_ns = end[k] && rng() % 50 ? oc.h.ts - end[k] : 12345 + rng() % 1000;
		oc.state = (__u32)(rng() % 3);
		oc.waker_tid = oc.state ? (__u32)(1000 + rng() % nthreads) : 0;
		end[k] = now;
		add(e, rs, &oc.h);
	}
}

static int finish(struct trace_columns_enc *e, const __u8 **out, size_t *len)
{
	return ASSERT_EQ(trace_columns_enc__finish(e, out, len), 0, "finish") ? 0 : -1;
}

static void test_gap_and_thread_slots(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct recs rs = { 0 };
	struct dir_entry d;
	const __u8 *out;
	size_t len;

	rng_seed(11);
	add_offcpu(e, &rs, 4000, 40, 1ull << 40);
	if (finish(e, &out, &len))
		goto out;
	ASSERT_EQ(decode_all(out, len, &rs), 0, "records come back byte for byte");
	ASSERT_EQ(dir_entry_of(out, len, BS_REC_OFFCPU, &d), 0, "offcpu in the directory");
	ASSERT_TRUE(d.flags & TRACE_COLUMNS_GAP, "oncpu_ns coded by the gap");
	ASSERT_EQ(d.gapword, 5, "oncpu_ns is word 5");
	ASSERT_EQ(d.key, 3, "slots keyed by the tid with the gap");
	/* Predicted exactly, oncpu_ns costs a byte or so: the rest are threads' firsts, misses. */
	ASSERT_TRUE(d.len[10] < rs.n * 3 / 2, "oncpu_ns's low half about a byte a record");
	printf("# oncpu_ns: %llu bytes for %zu records\n", (unsigned long long)d.len[10], rs.n);
	ASSERT_TRUE(d.flags & TRACE_COLUMNS_THREAD, "a column per thread");
	ASSERT_TRUE(d.threadmask & 2, "the cpu, a thread's own");
out:
	trace_columns_enc__free(e);
	recs_free(&rs);
}

/*
 * More threads than slots, times that wrap past 2^64, and after the plan, records of the type
 * cut short: without the gap word (40 bytes), without a dur (24): still exact.
 */
static void test_slot_collisions_and_wraparound(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct recs rs = { 0 };
	const __u8 *out;
	size_t len, i;

	rng_seed(12);
	add_offcpu(e, &rs, 5000, 600, 20000);
	for (i = 0; i < 60; i++) {
		struct bs_offcpu oc = *(const struct bs_offcpu *)recs_get(&rs, i);

		oc.h.size = i % 2 ? 40 : 24;
		add(e, &rs, &oc.h);
	}
	add_offcpu(e, &rs, 500, 600, 10000);
	if (!finish(e, &out, &len))
		ASSERT_EQ(decode_all(out, len, &rs), 0, "600 threads in 256 slots, ends that wrap");
	trace_columns_enc__free(e);
	recs_free(&rs);
}

/*
 * Records whose field 8 follows field 6 (a call's number, say) and nothing else: the slots
 * are keyed by field 6. After the plan, records too short to have the key (or the gap word)
 * are coded against nothing, and come back.
 */
static void test_key_field_and_short_records(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	static __u64 w[8];
	struct bs_hdr *h = (struct bs_hdr *)w;
	struct recs rs = { 0 };
	struct dir_entry d;
	const __u8 *out;
	__u64 ts = 5000;
	size_t len, i;

	rng_seed(13);
	for (i = 0; i < 3000; i++) {
		__u32 key = (__u32)(1 + rng() % 5), size = i > 1500 && i % 7 == 0 ? 24 : 48;

		memset(w, 0, sizeof(w));
		*h = (struct bs_hdr){ 0x77, (__u16)size,  (__u32)(rng() % 4),
				      9,    (__u32)rng(), ts += rng() % 100000 };
		if (size == 48) {
			w[3] = key | rng() << 32;
			w[4] = (__u64)key * 0x10000000u + (i & 1);
		}
		add(e, &rs, h);
	}
	if (finish(e, &out, &len))
		goto out;
	ASSERT_EQ(decode_all(out, len, &rs), 0, "records come back, short ones too");
	ASSERT_EQ(dir_entry_of(out, len, 0x77, &d), 0, "type in the directory");
	ASSERT_EQ(d.key, 6, "slots keyed by field 6");
	ASSERT_TRUE(d.threadmask & (1u << 8), "field 8 against its key's previous record");
out:
	trace_columns_enc__free(e);
	recs_free(&rs);
}

/*
 * Two chunks through one encoder: the second has its intervals in the chain and its random
 * timestamps in planes, and decodes on its own with a decoder that saw nothing before.
 */
static void test_chain_planes_chunk_alone(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct recs rs = { 0 };
	struct dir_entry d;
	const __u8 *out;
	size_t len;
	int chunk;

	rng_seed(14);
	for (chunk = 0; chunk < 2; chunk++) {
		add_offcpu(e, &rs, 3000, 30, 1ull << 50);
		if (finish(e, &out, &len))
			break;
		ASSERT_EQ(decode_all(out, len, &rs), 0, "each chunk on its own");
		ASSERT_EQ(dir_entry_of(out, len, BS_REC_OFFCPU, &d), 0, "offcpu there");
		ASSERT_EQ(d.flags & (TRACE_COLUMNS_END | TRACE_COLUMNS_CHAIN),
			  TRACE_COLUMNS_END | (chunk ? TRACE_COLUMNS_CHAIN : 0),
			  "coded by the end, in the chain from the second chunk");
		ASSERT_TRUE(d.planemask & (1u << 6), "random durations in planes");
		trace_columns_enc__reset(e);
		recs_free(&rs);
	}
	trace_columns_enc__free(e);
}

/* Every bit of a chunk with every coding flipped: refused or decoded, never past the chunk. */
static void test_damage_new_codings(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct recs rs = { 0 };
	const __u8 *out;
	__u8 *chunk;
	size_t len;

	rng_seed(15);
	add_offcpu(e, &rs, 300, 6, 1ull << 30);
	trace_columns_enc__reset(e);
	recs_free(&rs);
	add_offcpu(e, &rs, 120, 6, 1ull << 30); /* the second chunk: in the chain */
	if (finish(e, &out, &len))
		goto out;
	chunk = malloc(len);
	if (ASSERT_TRUE(chunk, "memory")) {
		memcpy(chunk, out, len);
		check_damage(chunk, len, &rs);
		free(chunk);
	}
out:
	trace_columns_enc__free(e);
	recs_free(&rs);
}

/*
 * The decoder's checks of the new directory fields, on a chunk written by hand: one type
 * (5), 6 columns, one 24-byte record (column 0 of 4 bytes: 5 | 24 << 16 zigzagged).
 */
static void test_bad_new_directories(void)
{
	struct trace_columns_dec *d = trace_columns_dec__new();
	/* type 5, flags THREAD, rawmask 0, threadmask, key, ncols 6, lengths, its index, columns */
	__u8 c[] = { 1,	   5,	 TRACE_COLUMNS_THREAD,
		     0,	   0x04, 3,
		     6,	   4,	 1,
		     1,	   1,	 1,
		     1,	   0,	 0,
		     0x8a, 0x80, 0xc0,
		     0x01, 0,	 0,
		     0,	   0,	 0 };
	const size_t threadmask_at = 4, key_at = 5, flags_at = 2;
	__u32 nwords;

	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), 0, "the record");
	ASSERT_EQ(words[0], 5 | 24 << 16, "word 0");
	ASSERT_EQ(trace_columns_dec__end(d), 0, "all used");
	c[threadmask_at] = 0x01;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "field 0 per slot");
	c[threadmask_at] = 0x08;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "the key per slot");
	c[threadmask_at] = 0x40;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "past the columns");
	c[threadmask_at] = 0;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "THREAD, no column");
	c[threadmask_at] = 0x04;
	c[key_at] = 4;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "ts as the key");
	c[key_at] = 6;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "key past the columns");
	c[key_at] = 3;
	c[flags_at] = TRACE_COLUMNS_THREAD | TRACE_COLUMNS_CHAIN;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "CHAIN without END");
	c[flags_at] = 0x20;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "unknown flag");
	trace_columns_dec__free(d);
}

int main(void)
{
	if (format_tmpdir_make())
		return 1;
	RUN_TEST(test_gap_and_thread_slots);
	RUN_TEST(test_slot_collisions_and_wraparound);
	RUN_TEST(test_key_field_and_short_records);
	RUN_TEST(test_chain_planes_chunk_alone);
	RUN_TEST(test_damage_new_codings);
	RUN_TEST(test_bad_new_directories);
	format_tmpdir_remove();
	return UNIT_EXIT();
}
