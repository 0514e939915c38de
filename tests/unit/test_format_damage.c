// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace file format, damaged: the reader's behaviour on every truncation and every single-byte
 * corruption of a small file, a corrupt chunk in the middle, files that are no trace.
 */
#include "format_files.h"

static void test_truncation_every_byte(void)
{
	struct test_file tf;
	struct read_result res;
	size_t expect[16], L, want;
	char path[128];
	int c, bad = 0;

	if (!ASSERT_EQ(make_small_file(&tf), 0, "make small file"))
		goto cleanup;
	for (L = 0; L < tf.recs.n; L++)
		expect[L] = L;
	tmp_path(path, sizeof(path), "prefix");
	for (L = 0; L <= tf.len && !bad; L++) {
		if (!ASSERT_EQ(write_whole(path, tf.data, L), 0, "write prefix"))
			break;
		read_check(path, &tf.recs, expect, tf.recs.n, &res);
		if (L < tf.hdr_len) {
			bad |= !ASSERT_TRUE(res.open_err < 0, "cut header fails to open");
			bad |= !ASSERT_TRUE(
				strstr(res.err, L ? "truncated file header" : "empty file"),
				res.err);
			continue;
		}
		want = 0;
		for (c = 0; c < tf.nchunks; c++)
			if (tf.chunk_end[c] <= L)
				want += tf.chunk_nrec[c];
		bad |= !ASSERT_EQ(res.open_err, 0, res.err);
		bad |= !ASSERT_EQ(res.n, want, "records of complete chunks");
		bad |= !ASSERT_TRUE(!res.mismatch && !res.bad_invariant, "records intact");
		bad |= !ASSERT_EQ(res.st.truncated, L != tf.len, "truncated flag");
		bad |= !ASSERT_EQ(res.st.clean_close, L == tf.len, "clean close flag");
		bad |= !ASSERT_EQ(res.st.corrupt_chunks, 0, "a cut is not corruption");
		if (bad)
			fprintf(stderr, "# failing prefix length %zu of %zu\n", L, tf.len);
	}
	unlink(path);
cleanup:
	free_test_file(&tf);
}

/* Flip bits at every offset: the damaged chunk goes, every other chunk stays. */
static void test_corruption_every_byte(void)
{
	static const __u8 masks[] = { 0x01, 0x80, 0xff };
	struct test_file tf;
	struct read_result res;
	size_t expect[16], ne, off, i;
	char path[128];
	__u8 *copy = NULL;
	int c, hit, bad = 0;
	unsigned int mi;

	if (!ASSERT_EQ(make_small_file(&tf), 0, "make small file"))
		goto cleanup;
	copy = malloc(tf.len);
	if (!ASSERT_TRUE(copy, "alloc"))
		goto cleanup;
	tmp_path(path, sizeof(path), "flip");
	for (off = 0; off < tf.len && !bad; off++) {
		/* Which data chunk holds OFF, if any (-1: header, footer or trailer). */
		hit = -1;
		for (c = 0; c < tf.nchunks; c++)
			if (off >= (c ? tf.chunk_end[c - 1] : tf.hdr_len) && off < tf.chunk_end[c])
				hit = c;
		ne = 0;
		for (c = 0, i = 0; c < tf.nchunks; i += tf.chunk_nrec[c], c++) {
			size_t k;

			for (k = 0; c != hit && k < tf.chunk_nrec[c]; k++)
				expect[ne++] = i + k;
		}
		for (mi = 0; mi < sizeof(masks) && !bad; mi++) {
			memcpy(copy, tf.data, tf.len);
			copy[off] ^= masks[mi];
			if (!ASSERT_EQ(write_whole(path, copy, tf.len), 0, "write copy"))
				break;
			read_check(path, &tf.recs, expect, ne, &res);
			bad |= !ASSERT_TRUE(!res.bad_invariant, "reader invariants");
			if (off < tf.hdr_len) {
				bad |= !ASSERT_TRUE(res.open_err < 0 && res.err[0],
						    "header damage");
				goto next;
			}
			bad |= !ASSERT_EQ(res.open_err, 0, res.err);
			bad |= !ASSERT_TRUE(!res.mismatch, "only records that were written");
			bad |= !ASSERT_EQ(res.n, ne, "every undamaged chunk returned");
			bad |= !ASSERT_EQ(res.st.corrupt_chunks, 1, "damage reported");
			bad |= !ASSERT_EQ(res.st.clean_close, hit >= 0, "clean close");
next:
			if (bad)
				fprintf(stderr, "# failing flip at %zu mask %#x of %zu bytes\n",
					off, masks[mi], tf.len);
		}
	}
	unlink(path);
cleanup:
	free(copy);
	free_test_file(&tf);
}

/* A damaged middle chunk costs its own records only; the reader finds chunk 3 again. */
static void test_resync_middle_chunk(void)
{
	struct test_file tf;
	struct read_result res;
	size_t expect[16], ne = 0, i, targets[3];
	char path[128];
	unsigned int t;

	if (!ASSERT_EQ(make_small_file(&tf), 0, "make small file"))
		goto cleanup;
	for (i = 0; i < tf.recs.n; i++)
		if (i < tf.chunk_nrec[0] || i >= tf.chunk_nrec[0] + tf.chunk_nrec[1])
			expect[ne++] = i;
	targets[0] = tf.chunk_end[0];	   /* chunk 2 magic */
	targets[1] = tf.chunk_end[0] + 20; /* chunk 2 raw_len */
	targets[2] = tf.chunk_end[1] - 3;  /* inside chunk 2's frame */
	tmp_path(path, sizeof(path), "resync");
	for (t = 0; t < 3; t++) {
		tf.data[targets[t]] ^= 0x5a;
		if (!ASSERT_EQ(write_whole(path, tf.data, tf.len), 0, "write"))
			break;
		tf.data[targets[t]] ^= 0x5a;
		read_check(path, &tf.recs, expect, ne, &res);
		ASSERT_EQ(res.open_err, 0, res.err);
		ASSERT_EQ(res.n, ne, "chunks 1 and 3 returned");
		ASSERT_TRUE(!res.mismatch && !res.bad_invariant, "records intact");
		ASSERT_EQ(res.st.chunks, 2, "two chunks");
		ASSERT_EQ(res.st.corrupt_chunks, 1, "one corrupt chunk");
		ASSERT_EQ(res.st.skipped_bytes, tf.chunk_end[1] - tf.chunk_end[0], "skipped bytes");
		ASSERT_EQ(res.st.clean_close, 1, "footer and trailer still valid");
	}
	unlink(path);
cleanup:
	free_test_file(&tf);
}

static void test_garbage_files(void)
{
	struct test_file tf;
	struct read_result res;
	char path[128];
	__u8 *buf = NULL;
	size_t len, i;
	int n;

	tmp_path(path, sizeof(path), "garbage");
	ASSERT_EQ(write_whole(path, "", 0), 0, "write empty");
	read_check(path, NULL, NULL, 0, &res);
	ASSERT_TRUE(res.open_err < 0, "empty file fails");
	ASSERT_STREQ(res.err, "empty file", "empty file message");

	ASSERT_EQ(write_whole(path, "hello world, not a trace", 24), 0, "write text");
	read_check(path, NULL, NULL, 0, &res);
	ASSERT_STREQ(res.err, "not a bpfsight trace (bad magic)", "bad magic message");

	ASSERT_EQ(write_whole(path, "BPFSIGHT\x05\0\0\0\0\0\0\0", 16), 0, "write v5");
	read_check(path, NULL, NULL, 0, &res);
	ASSERT_STREQ(res.err, "unsupported format version 5 (this bpfsight reads 1 to 4)",
		     "version");
	ASSERT_EQ(write_whole(path, "BPFSIGHT\0\0\0\0\0\0\0\0", 16), 0, "write v0");
	read_check(path, NULL, NULL, 0, &res);
	ASSERT_STREQ(res.err, "unsupported format version 0 (this bpfsight reads 1 to 4)", "v0");

	ASSERT_EQ(write_whole(path, "BPFSIGHT\x01\0\0\0\xff\xff\xff\x7f", 16), 0, "write big");
	read_check(path, NULL, NULL, 0, &res);
	ASSERT_TRUE(res.open_err < 0, "huge meta_len refused");

	res.err[0] = 0;
	read_check("/nonexistent/x.bst", NULL, NULL, 0, &res);
	ASSERT_EQ(res.open_err, -ENOENT, "missing file");
	read_check(tmpdir, NULL, NULL, 0, &res);
	ASSERT_TRUE(res.open_err < 0, "a directory fails to open");

	if (!ASSERT_EQ(make_small_file(&tf), 0, "make small file"))
		return;
	buf = malloc(tf.hdr_len + 65536);
	if (!ASSERT_TRUE(buf, "alloc"))
		goto cleanup;
	rng_seed(99);
	for (n = 0; n < 300; n++) {
		/* Half pure noise, half a valid header followed by noise. */
		size_t start = n % 2 ? tf.hdr_len : 0;

		len = start + rng() % (n < 250 ? 512 : 65536);
		memcpy(buf, tf.data, start);
		for (i = start; i < len; i++)
			buf[i] = (__u8)rng();
		/* Sprinkle chunk magics to exercise resynchronization. */
		for (i = start; i + 4 <= len; i += 1 + rng() % 64)
			if (rng() % 4 == 0)
				memcpy(buf + i, "BSCK", 4);
		if (!ASSERT_EQ(write_whole(path, buf, len), 0, "write noise"))
			break;
		read_check(path, NULL, NULL, 0, &res);
		if (!ASSERT_EQ(res.n, 0, "no records from noise") ||
		    !ASSERT_TRUE(!res.bad_invariant, "invariants"))
			break;
		if (start && !ASSERT_TRUE(!res.open_err && res.st.truncated, "noise after header"))
			break;
		if (start && len > start &&
		    !ASSERT_TRUE(res.st.skipped_bytes || len - start < 48, "noise skipped"))
			break;
	}
cleanup:
	unlink(path);
	free(buf);
	free_test_file(&tf);
}

int main(void)
{
	if (format_tmpdir_make())
		return 1;
	RUN_TEST(test_truncation_every_byte);
	RUN_TEST(test_corruption_every_byte);
	RUN_TEST(test_resync_middle_chunk);
	RUN_TEST(test_garbage_files);
	format_tmpdir_remove();
	return UNIT_EXIT();
}
