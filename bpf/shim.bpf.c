// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cupti-shim channel, kernel side: one program on every bpfsight:* USDT site of a shim
 * (user/shim_channel/shim_link.c attaches it; the bpf_cookie says which probe a site is, shim_cookie.h).
 *
 * bpfsight:batch(buf, bytes) hands over a buffer of records the shim filled in its own
 * memory: it is copied whole (bpf_probe_read_user) into one SHIM_BATCH ring record, so the
 * shim pays one probe hit per batch of records, never one per kernel or range. The copy goes
 * through a per-CPU scratch value because a batch (up to 16 KiB) is far larger than the BPF
 * stack. Losses count records: a batch that finds the ring full adds its nrec.
 *
 * A family's stack site (--stacks=torch: bpfsight:torch_op_stack(ts, dur) at each recorded
 * op) reads the thread's stack (bpf/stack.bpf.h) and sends it as the STACK_RAW of the event
 * the site names, at the ts the shim passes: the very ts of the event's record, which comes
 * later in a batch, so the recorder's STACK_REF for it is written first, as for any event.
 * Its code is verified only when a recording asks for stacks (shim_stacks_on).
 *
 * The other probes (the families' control sites, drain, join) run nothing here: attaching
 * them is what matters, as the kernel then bumps their semaphores in the process and the
 * shim's poller sees what is wanted.
 */
#include "common.bpf.h"
#include "shim_cookie.h"
#include "usdt_arg.bpf.h"
#include "shim_records.h"
#include "stack.bpf.h"

#define BATCH_BYTES (sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX)

/*
 * The stack sites (shim_cookie.h's SHIM_PROBE_STACK + K): the event type each sends its
 * stacks for, and the least duration of an event that gets one (~0: none). Set by the channel
 * before loading; shim_stacks_on is 0 when no site is on, and the stack code is pruned.
 */
const volatile __u32 shim_stacks_on = 0;
const volatile __u64 shim_stack_ns[SHIM_STACK_SITES] = { ~0ull, ~0ull, ~0ull, ~0ull,
							 ~0ull, ~0ull, ~0ull, ~0ull };
const volatile __u16 shim_stack_type[SHIM_STACK_SITES];

struct scratch {
	struct bs_shim_batch rec;
	__u8 data[BATCH_BYTES + 8]; /* + room to round the record up to 8 bytes */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} shim_scratch SEC(".maps");

/*
 * Batches of a process that never reached user space (ring full, or unreadable even to
 * their header): what explains a gap in that process's batch sequence numbers. User space
 * counts gaps beyond these as lost too.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} shim_gaps SEC(".maps");

static __always_inline void count_gap(__u32 tgid)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(&shim_gaps, &tgid);

	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&shim_gaps, &tgid, &one, BPF_NOEXIST);
}

/* A stack site: the current thread's stack, for the event at the ts the site passes. */
static __always_inline void shim_stack(struct pt_regs *ctx, __u64 cookie, __u64 id)
{
	__u32 k = (SHIM_COOKIE_PROBE(cookie) - SHIM_PROBE_STACK) & (SHIM_STACK_SITES - 1);
	__u64 ts = 0, dur = 0;

	if (usdt_fetch(ctx, SHIM_COOKIE_ARG(cookie, 0), &ts) ||
	    usdt_fetch(ctx, SHIM_COOKIE_ARG(cookie, 1), &dur) || dur < shim_stack_ns[k])
		return;
	/* Read in the shim's own code: the recorder drops its frames (BS_STACK_OWN). */
	stack_emit_flags(shim_stack_type[k], id >> 32, (__u32)id, ts, 0, BS_STACK_OWN);
}

SEC("uprobe")
int shim_probe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), id = bpf_get_current_pid_tgid();
	const struct bs_shim_batch_hdr *bh;
	__u64 buf = 0, bytes = 0, nrec = 1, wake = BPF_RB_NO_WAKEUP;
	__u32 tgid = id >> 32, zero = 0, len, flags = 0, size;
	struct scratch *s;

	if (SHIM_COOKIE_PROBE(cookie) >= SHIM_PROBE_STACK) {
		if (shim_stacks_on && bs_is_target(tgid))
			shim_stack(ctx, cookie, id);
		return 0;
	}
	if (SHIM_COOKIE_PROBE(cookie) != SHIM_PROBE_BATCH || !bs_is_target(tgid))
		return 0;
	s = bpf_map_lookup_elem(&shim_scratch, &zero);
	if (!s)
		return 0;
	if (usdt_fetch(ctx, SHIM_COOKIE_ARG(cookie, 0), &buf) ||
	    usdt_fetch(ctx, SHIM_COOKIE_ARG(cookie, 1), &bytes))
		flags |= BS_SHIM_BATCH_FAULT;
	len = bytes;
	if (bytes > BATCH_BYTES) {
		len = BATCH_BYTES;
		flags |= BS_SHIM_BATCH_CLAMP;
	}
	if (len & 7)
		*(__u64 *)&s->data[len & ~7u] = 0; /* the padding never leaks an older batch */
	if ((flags & BS_SHIM_BATCH_FAULT) || bpf_probe_read_user(s->data, len, (void *)buf)) {
		/* The header alone tells user space which records were lost. */
		flags |= BS_SHIM_BATCH_FAULT;
		len = 0;
		if (!bpf_probe_read_user(s->data, sizeof(*bh), (void *)buf))
			len = sizeof(*bh);
	}
	bh = (const void *)s->data;
	if (len >= sizeof(*bh) && bh->magic == BS_SHIM_MAGIC)
		nrec = bh->nrec;
	size = sizeof(s->rec) + ((len + 7) & ~7u);
	s->rec.h.type = BS_REC_SHIM_BATCH;
	s->rec.h.size = size;
	s->rec.h.cpu = bpf_get_smp_processor_id();
	s->rec.h.pid = tgid;
	s->rec.h.tid = (__u32)id;
	s->rec.h.ts = bpf_ktime_get_ns();
	s->rec.len = len;
	s->rec.flags = flags;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, s, size, wake)) {
		bs_count_losses(BS_LOSS_RINGBUF_FULL, nrec);
		count_gap(tgid);
	} else if (len < sizeof(*bh)) {
		count_gap(tgid); /* user space cannot see this batch's sequence number */
	}
	return 0;
}
