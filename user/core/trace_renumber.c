// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Format 3's record numbers in format 4's (trace_renumber.h). */
#include <endian.h>
#include <string.h>
#include "records.h"
#include "trace_renumber.h"

/* The types that moved, by range; every other type kept its number. */
static const struct {
	__u16 from, to, n;
	__u16 block; /* the block the family's LOSS records named: the one it was in */
} moved[] = {
	{ 0xa8, 0x100, 8, 0xa0 }, /* gpumetrics: the second half of merge's block */
	{ 0xf2, 0x110, 6, 0xf0 }, /* pyfunc: in the file format's block, after its footer's types */
};

/* Format 3's LOSS.block said the family as 0x100 | its block's first type. */
#define OLD_BLOCK_SET 0x100

__u32 trace_renumber__type(__u32 version, __u32 type)
{
	if (version >= TRACE_RENUMBER_VERSION)
		return type;
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
		if (type >= moved[i].from && type < (__u32)moved[i].from + moved[i].n)
			return moved[i].to + (type - moved[i].from);
	return type;
}

/*
 * A block of format 3 that a LOSS record named: a moved family's was the block it shared
 * (gpumetrics was the only family of merge's block with losses, pyfunc of the format's).
 */
static __u32 renumber_block(__u32 block)
{
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
		if (block == moved[i].block)
			return moved[i].to;
	return block;
}

static __u32 get32(const __u64 *words, size_t off)
{
	__u32 v;

	memcpy(&v, (const __u8 *)words + off, 4);
	return le32toh(v);
}

static void put32(__u64 *words, size_t off, __u32 v)
{
	v = htole32(v);
	memcpy((__u8 *)words + off, &v, 4);
}

static void put16(__u64 *words, size_t off, __u16 v)
{
	v = htole16(v);
	memcpy((__u8 *)words + off, &v, 2);
}

void trace_renumber__record(__u32 version, __u64 *words, __u32 nwords)
{
	__u32 type = get32(words, 0) & 0xffff, size = nwords * 8;

	if (version >= TRACE_RENUMBER_VERSION)
		return;
	put16(words, 0, (__u16)trace_renumber__type(version, type));
	if (type == BS_REC_STACK_REF && size >= sizeof(struct bs_stack_ref)) {
		put16(words, 28, (__u16)trace_renumber__type(version, get32(words, 28) & 0xffff));
	} else if (type == BS_REC_SYMBOL && size >= sizeof(struct bs_symbol) &&
		   get32(words, 36) == BS_SYM_LIBRARY) {
		put32(words, 24, trace_renumber__type(version, get32(words, 24)));
	} else if (type == BS_REC_LOSS && size >= sizeof(struct bs_loss)) {
		__u32 block = get32(words, 28);

		if (block & OLD_BLOCK_SET)
			put32(words, 28, BS_LOSS_BLOCK_SET | renumber_block(block & 0xf0));
	}
}
