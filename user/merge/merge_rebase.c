// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge: one record of an input onto the merged file's clock, its pid namespace and its id
 * ranges (merge.h), through what the decoders declare of their fields (struct rec_decoder:
 * clock_offs, task_offs, string_offs, stack_off, rebase). Fields past the record's size are
 * left alone.
 */
#include <string.h>
#include "family.h"
#include "merge.h"

struct rebase {
	struct rec_rebase rb;
	const struct merge_input *in;
};

static __u64 rb_clock(const struct rec_rebase *rb, __u64 ts)
{
	return merge_input__clock(((const struct rebase *)rb)->in, ts);
}

static __u32 rb_task(const struct rec_rebase *rb, __u32 id)
{
	const struct merge_input *in = ((const struct rebase *)rb)->in;

	return id ? in->ns << BS_RANK_NS_SHIFT | (id & ((1u << BS_RANK_NS_SHIFT) - 1)) : 0;
}

static __u32 rb_string(const struct rec_rebase *rb, __u32 id)
{
	return id ? id + ((const struct rebase *)rb)->in->string_base : 0;
}

static __u32 rb_stack(const struct rec_rebase *rb, __u32 id)
{
	return id ? id + ((const struct rebase *)rb)->in->stack_base : 0;
}

static void rebase_u32(struct bs_hdr *rec, __u16 off, __u32 (*fn)(const struct rec_rebase *, __u32),
		       const struct rec_rebase *rb)
{
	__u32 v;

	if (!off || off + sizeof(v) > rec->size)
		return;
	memcpy(&v, (char *)rec + off, sizeof(v));
	v = fn(rb, v);
	memcpy((char *)rec + off, &v, sizeof(v));
}

/* REC (a copy the caller owns) onto the merged file's clock, namespace and ids. */
static void rebase_record(struct bs_hdr *rec, const struct rec_rebase *rb)
{
	const struct rec_decoder *d = family__decoder(rec->type);
	__u64 v;

	rec->pid = rb->task(rb, rec->pid);
	rec->tid = rb->task(rb, rec->tid);
	rec->ts = rb->clock(rb, rec->ts);
	if (!d)
		return;
	for (int i = 0; i < 2; i++) {
		__u16 off = d->clock_offs[i];

		if (!off || off + sizeof(v) > rec->size)
			continue;
		memcpy(&v, (char *)rec + off, sizeof(v));
		v = rb->clock(rb, v);
		memcpy((char *)rec + off, &v, sizeof(v));
	}
	for (int i = 0; i < 3; i++) {
		rebase_u32(rec, d->task_offs[i], rb->task, rb);
		rebase_u32(rec, d->string_offs[i], rb->string, rb);
	}
	rebase_u32(rec, d->stack_off, rb->stack, rb);
	if (d->rebase && rec->size >= d->min_size)
		d->rebase(rec, rb);
}

void merge_rebase__record(struct bs_hdr *rec, const struct merge_input *in)
{
	struct rebase rb = { { rb_clock, rb_task, rb_string, rb_stack, NULL }, in };

	rebase_record(rec, &rb.rb);
}
