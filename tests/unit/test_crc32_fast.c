// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * crc32_fast is zlib's crc32, value for value: every length from 0 to 4 KiB at every
 * alignment of 16, a start value other than 0, a CRC carried across pieces of every size,
 * and a table's worth of rows (where the store uses it). The unwind tables' store keeps
 * zlib's CRC in its entries: one value apart and every entry would be refused.
 */
#include <stdlib.h>
#include <zlib.h>
#include "crc32_fast.h"
#include "unit.h"

static unsigned char *random_bytes(size_t n)
{
	unsigned char *b = malloc(n);
	unsigned int x = 2463534242u; /* xorshift32: the same bytes each run */

	for (size_t i = 0; b && i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (unsigned char)x;
	}
	return b;
}

static void test_every_length_and_alignment(void)
{
	unsigned char *b = random_bytes(4096 + 16);
	int wrong = 0, tried = 0;

	if (!ASSERT_TRUE(b, "memory"))
		return;
	for (size_t len = 0; len <= 4096; len++)
		for (size_t off = 0; off < 16; off += len < 256 ? 1 : 5) {
			unsigned int want = (unsigned int)crc32(0, b + off, (uInt)len);

			tried++;
			if (crc32_fast(0, b + off, len) != want && !wrong++)
				unit_fail("length %zu at offset %zu: %08x, zlib %08x", len, off,
					  crc32_fast(0, b + off, len), want);
		}
	ASSERT_TRUE(tried > 4096 * 3, "lengths and offsets tried");
	free(b);
}

static void test_carried_across_pieces(void)
{
	size_t n = 100000;
	unsigned char *b = random_bytes(n);
	unsigned int whole, c;

	if (!ASSERT_TRUE(b, "memory"))
		return;
	whole = (unsigned int)crc32(0, b, (uInt)n);
	ASSERT_EQ(crc32_fast(0, b, n), whole, "in one piece");
	for (size_t piece = 1; piece < 300; piece += 7) {
		c = 0;
		for (size_t at = 0; at < n; at += piece)
			c = crc32_fast(c, b + at, at + piece <= n ? piece : n - at);
		if (!ASSERT_EQ(c, whole, "in pieces"))
			break;
	}
	ASSERT_EQ(crc32_fast(0xdeadbeef, b, n), (unsigned int)crc32(0xdeadbeef, b, (uInt)n),
		  "from a start value");
	free(b);
}

static void test_a_table_of_rows(void)
{
	size_t n = 12u << 20; /* a million rows: libtorch_cpu's table is ~1.4 */
	unsigned char *b = random_bytes(n);

	if (!ASSERT_TRUE(b, "memory"))
		return;
	ASSERT_EQ(crc32_fast(0, b, n), (unsigned int)crc32(0, b, (uInt)n), "12 MiB");
	for (size_t i = 0; i < n; i++)
		b[i] = 0;
	ASSERT_EQ(crc32_fast(0, b, n), (unsigned int)crc32(0, b, (uInt)n), "12 MiB of zeros");
	free(b);
}

int main(void)
{
	RUN_TEST(test_every_length_and_alignment);
	RUN_TEST(test_carried_across_pieces);
	RUN_TEST(test_a_table_of_rows);
	return UNIT_EXIT();
}
