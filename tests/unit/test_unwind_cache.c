// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unw_cache's entries (bpf/unwind_maps.h), as the native walk writes and reads them: a row
 * put under a file's address comes back for that address alone, and an entry written half
 * by one CPU and half by another, for two addresses in the same slot, never gives a wrong
 * row: every mix of two entries' parts answers with the row put for the address asked or
 * is refused by its check (then the walk searches the table, as without a cache).
 */
#include "unit.h"
#include "unwind_maps.h"

static const struct bs_unwind_row row_a = { .cfa_off = 16, .rbp_off = -16, .kind = BS_UNW_CFA_RSP };
static const struct bs_unwind_row row_b = { .cfa_off = 48, .rbp_off = 0, .kind = BS_UNW_CFA_RBP };

static void test_put_then_get(void)
{
	struct bs_unw_cache_ent e = {};
	struct bs_unwind_row out = {};

	ASSERT_EQ(bs_unw_cache_get(&e, 0, 0, &out), -1, "an empty entry holds nothing");
	bs_unw_cache_put(&e, 0x1a440, 7, &row_a);
	if (!ASSERT_EQ(bs_unw_cache_get(&e, 0x1a440, 7, &out), 0, "the row put"))
		return;
	ASSERT_EQ(out.cfa_off, 16, "cfa_off");
	ASSERT_EQ(out.rbp_off, -16, "rbp_off");
	ASSERT_EQ(out.kind, BS_UNW_CFA_RSP, "kind");
	ASSERT_EQ(bs_unw_cache_get(&e, 0x1a440, 8, &out), -1, "the same address in another file");
	ASSERT_EQ(bs_unw_cache_get(&e, 0x1a441, 7, &out), -1, "another address in the file");
}

/*
 * The entry as stores of its five parts (pc, file, cfa_off, rbp_off with kind, check) left
 * it, each part from A or from B (bit i of MASK: part i from B).
 */
static struct bs_unw_cache_ent mix(const struct bs_unw_cache_ent *a,
				   const struct bs_unw_cache_ent *b, unsigned mask)
{
	struct bs_unw_cache_ent e = *a;

	if (mask & 1)
		e.pc = b->pc;
	if (mask & 2)
		e.file = b->file;
	if (mask & 4)
		e.cfa_off = b->cfa_off;
	if (mask & 8) {
		e.rbp_off = b->rbp_off;
		e.kind = b->kind;
	}
	if (mask & 16)
		e.check = b->check;
	return e;
}

static void test_torn_entries_are_refused(void)
{
	/* Two (file, address) pairs that share a slot, as two CPUs would write it at once. */
	__u32 pcs[][2] = { { 0x1a440, 3 }, { 0x1a440, 9 }, { 0x200010, 3 }, { 0x7f00, 1 } };
	struct bs_unwind_row out;
	int mixes = 0;

	for (unsigned i = 0; i < 4; i++)
		for (unsigned j = 0; j < 4; j++) {
			struct bs_unw_cache_ent a = {}, b = {};

			if (i == j)
				continue;
			bs_unw_cache_put(&a, pcs[i][0], pcs[i][1], &row_a);
			bs_unw_cache_put(&b, pcs[j][0], pcs[j][1], &row_b);
			for (unsigned mask = 1; mask < 31; mask++) {
				struct bs_unw_cache_ent e = mix(&a, &b, mask);

				mixes++;
				/* An answer is the row put for the address asked, or none. */
				for (unsigned k = 0; k < 4; k++) {
					const struct bs_unwind_row *want = k == i   ? &row_a
									   : k == j ? &row_b
										    : NULL;

					if (bs_unw_cache_get(&e, pcs[k][0], pcs[k][1], &out))
						continue;
					if (!want || out.cfa_off != want->cfa_off ||
					    out.rbp_off != want->rbp_off || out.kind != want->kind)
						unit_fail("mask %u of entries %u and %u: a wrong "
							  "row for %u",
							  mask, i, j, k);
				}
			}
		}
	ASSERT_EQ(mixes, 12 * 30, "every mix of every pair");
}

int main(void)
{
	RUN_TEST(test_put_then_get);
	RUN_TEST(test_torn_entries_are_refused);
	return UNIT_EXIT();
}
