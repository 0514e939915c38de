// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The column codec of format 2 (trace_columns.h) on its own: records come back byte for byte
 * whatever their types, sizes and words; each coding choice (raw columns, the end in place of
 * ts, tails, records shorter than their type's first ones) is taken and undone; damaged chunks are refused, never read past; and a chunk of
 * format 1 still decodes through trace_chunk_dec. Types wider than a byte (format 4) come back
 * through both encodings, and a chunk of format 3 (a type byte per record) still decodes.
 */
#include "columns_check.h"

/* Syscall-like records written at their end: ts out of order, ts + dur in order. */
static void add_intervals(struct trace_columns_enc *e, struct recs *rs, size_t n)
{
	struct bs_syscall s = { .h = { .type = BS_REC_SYSCALL, .size = sizeof(s), .pid = 7 } };
	__u64 end = 1ull << 40;
	size_t i;

	for (i = 0; i < n; i++) {
		end += 1000 + rng() % 64;
		s.dur = rng() % 100000;
		s.h.ts = end - s.dur;
		s.h.tid = 7 + (__u32)(rng() % 4);
		s.h.cpu = (__u32)(rng() % 16);
		s.nr = (__u32)(rng() % 3);
		s.ret = -(__s64)(rng() % 2);
		ASSERT_EQ(trace_columns_enc__add(e, &s.h), 0, "add interval");
		recs_add(rs, &s.h);
	}
}

static void test_roundtrip_choices(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	static __u64 w[TRACE_CODEC_MAX_WORDS];
	struct recs rs = { 0 };
	const __u8 *out;
	struct dir_entry de;
	size_t len, i;
	int chunk;

	if (!ASSERT_TRUE(e, "new"))
		return;
	rng_seed(7);
	/* Two chunks through one encoder: the second starts from a clean state. */
	for (chunk = 0; chunk < 2; chunk++) {
		add_intervals(e, &rs, 3000);
		for (i = 0; i < 500; i++) {
			/* Short, long (a tail past 128 bytes) and in-between, of random words. */
			__u16 size = (__u16)(24 + 8 * (rng() % 60));

			make_rec(w, 0x7f, size, rng());
			ASSERT_EQ(trace_columns_enc__add(e, (struct bs_hdr *)w), 0, "add random");
			recs_add(&rs, (struct bs_hdr *)w);
		}
		make_rec(w, 0xff, 65528, 5);
		ASSERT_EQ(trace_columns_enc__add(e, (struct bs_hdr *)w), 0, "add the longest");
		recs_add(&rs, (struct bs_hdr *)w);
		ASSERT_EQ(trace_columns_enc__records(e), rs.n, "records counted");
		if (!ASSERT_EQ(trace_columns_enc__finish(e, &out, &len), 0, "finish"))
			break;
		ASSERT_EQ(decode_all(out, len, &rs), 0, "records come back byte for byte");
		/* The choices this test is about were taken. */
		/* From the second chunk on, the type coded by its end is in the chain. */
		ASSERT_EQ(dir_entry_of(out, len, BS_REC_SYSCALL, &de), 0, "the syscall type");
		ASSERT_EQ(de.flags & (TRACE_COLUMNS_END | TRACE_COLUMNS_CHAIN),
			  TRACE_COLUMNS_END | (chunk ? TRACE_COLUMNS_CHAIN : 0),
			  "intervals coded by their end");
		ASSERT_TRUE(de.rawmask & (1u << 6), "random durations kept raw, not as deltas");
		trace_columns_enc__reset(e);
		recs_free(&rs);
	}
	trace_columns_enc__free(e);
}

static void test_refusals(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct bs_hdr h = { .type = 3, .size = 20 };

	ASSERT_EQ(trace_columns_enc__add(e, &h), -EINVAL, "size < 24");
	h.size = 36;
	ASSERT_EQ(trace_columns_enc__add(e, &h), -EINVAL, "size % 8");
	h.size = 24;
	h.type = BS_REC_TYPE_MAX;
	ASSERT_EQ(trace_columns_enc__add(e, &h), -EINVAL, "type >= BS_REC_TYPE_MAX");
	ASSERT_EQ(trace_columns_enc__records(e), 0, "nothing added");
	trace_columns_enc__free(e);
}

/* A finished chunk of a few kinds of records, for the damage tests. */
static int small_chunk(struct recs *rs, __u8 **chunk, size_t *len)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	static __u64 w[64];
	const __u8 *out;
	size_t i;
	int err;

	rng_seed(99);
	add_intervals(e, rs, 20);
	for (i = 0; i < 10; i++) {
		make_rec(w, 0x21, (__u16)(24 + 8 * (rng() % 24)), 100 + i);
		trace_columns_enc__add(e, (struct bs_hdr *)w);
		recs_add(rs, (struct bs_hdr *)w);
	}
	err = trace_columns_enc__finish(e, &out, len);
	*chunk = err ? NULL : malloc(*len);
	if (*chunk)
		memcpy(*chunk, out, *len);
	trace_columns_enc__free(e);
	return *chunk ? 0 : -ENOMEM;
}

static void test_damage(void)
{
	struct recs rs = { 0 };
	__u8 *chunk, *bad;
	size_t len;
	int refused;

	if (!ASSERT_EQ(small_chunk(&rs, &chunk, &len), 0, "chunk"))
		return;
	/* A byte more: refused too. */
	bad = malloc(len + 1);
	if (ASSERT_TRUE(bad, "memory")) {
		memcpy(bad, chunk, len);
		bad[len] = 0;
		ASSERT_EQ(decode_all(bad, len + 1, &rs), -EBADMSG, "trailing byte refused");
		free(bad);
	}
	refused = check_damage(chunk, len, &rs);
	printf("# %d of %zu flipped bits refused\n", refused, len * 8);
	free(chunk);
	recs_free(&rs);
}

/* The decoder's own checks, with chunks written by hand. */
static void test_bad_directories(void)
{
	struct trace_columns_dec *d = trace_columns_dec__new();
	/*
	 * One type (5) with the END flag: 6 columns, column 0 of 4 bytes (field 0 = 5 | 24 << 16,
	 * zigzagged), the others of 1, no tail; then the record's index in the directory (0) and
	 * the columns.
	 */
	__u8 c[] = { 1,	   5,	 TRACE_COLUMNS_END,
		     0,	   6,	 4,
		     1,	   1,	 1,
		     1,	   1,	 0,
		     0,	   0x8a, 0x80,
		     0xc0, 0x01, 0,
		     0,	   0,	 0,
		     0 };
	const size_t type_at = 12;
	__u32 nwords;

	/* A 24-byte record has no word 3: its ts is coded as it is, END or not. */
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), 0, "24-byte record, END");
	ASSERT_EQ(words[2], 0, "its ts as it was");
	c[2] = 0;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), 0, "24-byte record");
	ASSERT_EQ(nwords, 3, "3 words");
	ASSERT_EQ(words[0], 5 | 24 << 16, "word 0");
	ASSERT_EQ(trace_columns_dec__end(d), 0, "all used");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), -EBADMSG, "no more");
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 2), -EBADMSG, "2 records in 1");
	c[type_at] = 1;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), -EBADMSG, "index past it");
	c[type_at] = 0x80;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), -EBADMSG, "varint cut");
	c[type_at] = 0;
	c[2] = 0x20;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "unknown flag");
	c[2] = 0;
	c[4] = 33;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "33 columns");
	c[4] = 6;
	c[5] = 5;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "lengths past the chunk");
	c[5] = 3; /* the types section takes a byte more: found once the columns are read */
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), -EBADMSG, "index 0x8a: past it");
	c[5] = 4;
	/* Format 3: the type itself, a byte, and the lengths add up exactly. */
	trace_columns_dec__version(d, 3);
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "format 3: directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), -EBADMSG, "format 3: type 0");
	c[type_at] = 5;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), 0, "format 3: directory ok");
	ASSERT_EQ(trace_columns_dec__next(d, words, &nwords), 0, "format 3: the record");
	ASSERT_EQ(words[0], 5 | 24 << 16, "format 3: word 0");
	ASSERT_EQ(trace_columns_dec__end(d), 0, "format 3: all used");
	c[5] = 3;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "format 3: lengths off");
	c[5] = 4;
	c[1] = 0x81; /* type 0x101 (two varint bytes): no type byte can say it */
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "format 3: type 0x101");
	c[1] = 5;
	trace_columns_dec__version(d, TRACE_COLUMNS_INDEX_VERSION);
	c[type_at] = 0;
	c[0] = 0;
	ASSERT_EQ(trace_columns_dec__begin(d, c, sizeof(c), 1), -EBADMSG, "no types");
	trace_columns_dec__free(d);
}

/*
 * Types wider than a byte, up to the last (0xfff), come back through both encodings: the
 * columns, whose types section says each record's index in the directory (two varint bytes
 * past the 128th type of a chunk), and the varint records of format 1 and the footer.
 */
static void test_wide_types(void)
{
	struct trace_columns_enc *e = trace_columns_enc__new();
	struct trace_codec *c = trace_codec__new();
	struct trace_chunk_dec *d = trace_chunk_dec__new();
	static __u8 buf[1 << 20];
	static __u64 w[64];
	struct dir_entry de;
	struct recs rs = { 0 };
	size_t len = 0, i;
	const __u8 *out;
	__u32 nwords;
	int err = 0;

	if (!ASSERT_TRUE(e && c && d, "new"))
		goto out;
	rng_seed(11);
	for (i = 0; i < 2000; i++) {
		/* 300 types of 0x100 on, then the first and the last there are. */
		__u16 type = i % 10 == 9 ? (i % 20 == 9 ? 1 : BS_REC_TYPE_MAX - 1)
					 : (__u16)(0x100 + rng() % 300);

		make_rec(w, type, (__u16)(24 + 8 * (rng() % 12)), rng());
		ASSERT_EQ(trace_columns_enc__add(e, (struct bs_hdr *)w), 0, "add");
		recs_add(&rs, (struct bs_hdr *)w);
	}
	if (!ASSERT_EQ(trace_columns_enc__finish(e, &out, &len), 0, "finish"))
		goto out;
	ASSERT_EQ(decode_all(out, len, &rs), 0, "columns: wide types come back byte for byte");
	ASSERT_EQ(dir_entry_of(out, len, BS_REC_TYPE_MAX - 1, &de), 0, "0xfff in the directory");
	/* The same records as varint records. */
	len = 0;
	for (i = 0; i < rs.n; i++)
		len += (size_t)trace_codec__encode(c, recs_get(&rs, i), buf + len);
	err = trace_chunk_dec__begin(d, 0, buf, len, (__u32)rs.n);
	for (i = 0; !err && i < rs.n; i++) {
		err = trace_chunk_dec__next(d, words, &nwords);
		if (!err && memcmp(words, recs_get(&rs, i), recs_get(&rs, i)->size))
			err = -EILSEQ;
	}
	ASSERT_EQ(err, 0, "varint records: wide types come back");
	ASSERT_EQ(trace_chunk_dec__end(d), 0, "all bytes used");
out:
	recs_free(&rs);
	trace_columns_enc__free(e);
	trace_codec__free(c);
	trace_chunk_dec__free(d);
}

/* A chunk of format 1 (varint records) decodes through the same interface. */
static void test_varint_chunks(void)
{
	struct trace_codec *c = trace_codec__new();
	struct trace_chunk_dec *d = trace_chunk_dec__new();
	static __u8 buf[1 << 16];
	struct recs rs = { 0 };
	size_t len = 0, i;
	__u32 nwords;
	int err = 0;

	rng_seed(3);
	for (i = 0; i < 200; i++) {
		static __u64 w[64];

		make_rec(w, (__u16)(1 + rng() % 30), (__u16)(24 + 8 * (rng() % 20)), i);
		len += (size_t)trace_codec__encode(c, (struct bs_hdr *)w, buf + len);
		recs_add(&rs, (struct bs_hdr *)w);
	}
	err = trace_chunk_dec__begin(d, 0, buf, len, (__u32)rs.n);
	for (i = 0; !err && i < rs.n; i++) {
		err = trace_chunk_dec__next(d, words, &nwords);
		if (!err && memcmp(words, recs_get(&rs, i), recs_get(&rs, i)->size))
			err = -EILSEQ;
	}
	ASSERT_EQ(err, 0, "varint records come back");
	ASSERT_EQ(trace_chunk_dec__end(d), 0, "all bytes used");
	ASSERT_EQ(trace_chunk_dec__begin(d, 0, buf, len + 1, (__u32)rs.n), 0, "begin");
	for (i = 0; i < rs.n; i++)
		trace_chunk_dec__next(d, words, &nwords);
	ASSERT_EQ(trace_chunk_dec__end(d), -EBADMSG, "a byte left over");
	recs_free(&rs);
	trace_codec__free(c);
	trace_chunk_dec__free(d);
}

int main(void)
{
	if (format_tmpdir_make())
		return 1;
	RUN_TEST(test_roundtrip_choices);
	RUN_TEST(test_refusals);
	RUN_TEST(test_damage);
	RUN_TEST(test_bad_directories);
	RUN_TEST(test_varint_chunks);
	RUN_TEST(test_wide_types);
	format_tmpdir_remove();
	return UNIT_EXIT();
}
