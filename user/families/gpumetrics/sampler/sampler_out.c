// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Records into the channel (bpf/gpumetrics_records.h): the ring's writer, and a sample's
 * compact form (what differs from its device's KEY).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sampler.h"

__u64 sampler__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int sampler__put(struct sampler *s, const void *rec)
{
	const struct bs_hdr *h = rec;
	struct gpum_chan *c = s->chan;
	__u64 head = c->head, tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
	__u64 at = head % c->size, need = h->size;

	/* A record that would run past the end goes at the start, after a zero word. */
	if (at + need > c->size)
		need += c->size - at;
	if (head + need - tail > c->size) {
		__atomic_add_fetch(&c->full, 1, __ATOMIC_RELAXED);
		return -1;
	}
	if (at + h->size > c->size) {
		memset(s->ring + at, 0, 8);
		at = 0;
	}
	memcpy(s->ring + at, rec, h->size);
	__atomic_store_n(&c->head, head + need, __ATOMIC_RELEASE);
	return 0;
}

static void hdr(struct bs_hdr *h, __u16 type, __u32 size, __u64 ts)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->size = size;
	h->ts = ts;
}

/*
 * A KEY when the device has none yet, its last is SAMPLER_KEY_NS old, or this sample would
 * carry more than half of what it has; else a SAMPLE with the values that differ from it.
 */
void sampler__put_sample(struct sampler *s, struct sampler_dev *d, __u64 ts)
{
	struct {
		struct bs_gpum_sample r;
		__u64 v[GPUM_NMETRICS];
	} out;
	__u64 carry = 0;
	int n = 0, key;

	for (unsigned m = 0; m < GPUM_NMETRICS; m++)
		if ((d->have & GPUM_BIT(m)) &&
		    (!(d->key_have & GPUM_BIT(m)) || d->key_val[m] != d->val[m]))
			carry |= GPUM_BIT(m);
	key = !d->key_ts || ts - d->key_ts >= SAMPLER_KEY_NS ||
	      2 * __builtin_popcountll(carry) > __builtin_popcountll(d->have);
	if (key)
		carry = d->have;
	for (unsigned m = 0; m < GPUM_NMETRICS; m++)
		if (carry & GPUM_BIT(m))
			out.v[n++] = d->val[m];
	hdr(&out.r.h, key ? BS_REC_GPUM_KEY : BS_REC_GPUM_SAMPLE, sizeof(out.r) + n * sizeof(__u64),
	    ts);
	out.r.device = d->index;
	out.r._pad0 = 0;
	out.r.have = d->have;
	out.r.carry = carry;
	if (sampler__put(s, &out))
		return;
	if (key) { /* the next samples are read against this one: it must be in the ring */
		memcpy(d->key_val, d->val, sizeof(d->key_val));
		d->key_have = d->have;
		d->key_ts = ts;
	}
}

void sampler__put_device(struct sampler *s, struct sampler_dev *d, __u64 ts)
{
	d->info.h.ts = ts;
	if (!sampler__put(s, &d->info))
		d->info_dirty = 0;
}

void sampler__put_status(struct sampler *s, enum bs_gpum_state state, unsigned hz_asked,
			 unsigned hz, unsigned tick_ns, const char *fmt, ...)
{
	struct bs_gpum_status st;
	va_list ap;

	memset(&st, 0, sizeof(st));
	hdr(&st.h, BS_REC_GPUM_STATUS, sizeof(st), sampler__now());
	st.state = state;
	st.sampler_pid = (__u32)getpid();
	st.hz_asked = hz_asked;
	st.hz = hz;
	st.tick_ns = tick_ns;
	st.ndevices = s->ndev;
	va_start(ap, fmt);
	vsnprintf(st.text, sizeof(st.text), fmt, ap);
	va_end(ap);
	sampler__put(s, &st);
	__atomic_store_n(&s->chan->state, state, __ATOMIC_RELEASE);
}
