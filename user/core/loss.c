// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loss causes: the recording's own and the families' (loss.h). */
#include <stddef.h>
#include "family.h"
#include "loss.h"

const struct loss_cause recording_losses[] = {
	{ BS_LOSS_RINGBUF_FULL, "ringbuf_full",
	  "the ring buffer was full: its reader fell behind" },
	{ BS_LOSS_TASK_MAP, "task_map_full",
	  "no per-thread state could be kept: a call or interval not timed" },
	{ BS_LOSS_AGG_MAP, "agg_map_full",
	  "the in-kernel aggregate map was full: calls not counted" },
	{ BS_LOSS_TARGET_MAP, "target_map_full", "the target map was full: a child not followed" },
	{ BS_LOSS_ATTACH, "attach_failed", "probes that failed to attach" },
	{ BS_LOSS_WRITE, "write_failed", "records the trace file could not take (disk full)" },
	{ BS_LOSS_FLIGHT, "flight_size", "the flight recorder's window outgrew its SIZE" },
	{ BS_LOSS_STACK, "stack_busy",
	  "stacks not taken: a program they interrupted was taking one" },
	{ BS_LOSS_STOP_UNREAD, "stop_unread",
	  "records in the ring when the recording stopped that its stop time left unread" },
	{ BS_LOSS_CAPTURE_LATE, "capture_late",
	  "events of a --capture-range range that came after its own file was closed" },
	{ BS_LOSS_STACKS_CAPPED, "stacks_capped",
	  "stacks not kept: their process made 65536, or the recording 256 MiB of them" },
	{ BS_LOSS_STRINGS_CAPPED, "strings_capped",
	  "names not kept (shown unknown): the recording's names reached 256 MiB" },
	{ 0 },
};

const char *loss_cause__find(__u32 cause, const struct family **owner)
{
	const struct loss_cause *l;

	*owner = NULL;
	for (l = recording_losses; l->name; l++)
		if (l->cause == cause)
			return l->name;
	for_each_family(it)
		for (l = it.f->losses; l && l->name; l++)
			if (l->cause == cause) {
				*owner = it.f;
				return l->name;
			}
	return NULL;
}

const char *loss_cause_name(__u32 cause)
{
	const struct family *f;

	return loss_cause__find(cause, &f) ?: "unknown";
}

__u32 loss_cause__slot(__u32 cause)
{
	const struct family *f;

	return cause < BS_LOSS_MAX && loss_cause__find(cause, &f) ? cause : BS_LOSS_MAX;
}

_Static_assert(FAMILY_MAX <= BS_LOSS_FAMILIES, "a family's index is part of its loss keys");

/*
 * The registry's last family with a type in BLOCK: the only one (a test registry's extra
 * family has a block of its own too).
 */
const struct family *loss__block_family(__u32 block)
{
	int n = 0;

	block = BS_REC_BLOCK(block & (BS_REC_TYPE_MAX - 1));
	while (families[n])
		n++;
	while (n-- > 0)
		for (const struct rec_decoder *d = families[n]->decode->decoders; d && d->type; d++)
			if (BS_REC_BLOCK(d->type) == block)
				return families[n];
	return NULL;
}

int loss__family_block(const struct family *f)
{
	for (const struct rec_decoder *d = f ? f->decode->decoders : NULL; d && d->type; d++)
		if (loss__block_family(d->type) == f)
			return (int)BS_REC_BLOCK(d->type);
	return -1;
}

__u32 loss__key(const struct family *f, __u32 cause)
{
	int i = 0;

	if (!f || loss__family_block(f) < 0) /* only families with a block have LOSS records */
		f = loss__block_family(0);
	while (families[i] && families[i] != f)
		i++;
	/* A family not in the registry: the recording's own (index 0's) rather than none. */
	return BS_LOST_KEY(families[i] ? (__u32)i : 0, cause);
}

const struct family *loss__family(const struct bs_loss *l)
{
	if (l->block & BS_LOSS_BLOCK_SET)
		return loss__block_family(l->block);
	return loss_cause__owner(l->cause);
}

const char *loss__family_name(const struct bs_loss *l)
{
	const struct family *f = loss__family(l);

	if (f)
		return f->name;
	if (l->cause == BS_LOSS_WRITE || l->cause == BS_LOSS_FLIGHT)
		return "all";
	return "unknown";
}

const struct family *loss_cause__owner(__u32 cause)
{
	const struct family *f;

	loss_cause__find(cause, &f);
	return f;
}
