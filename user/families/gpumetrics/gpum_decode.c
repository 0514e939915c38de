// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family's reading side: the walk (each device's DEVICE record and latest
 * KEY, which a SAMPLE is read against) and the decoders. A sample is one event, gpu_metrics,
 * named after its device, with an argument per metric it has, as NVML and GPM gave it (a
 * metric the device lacks is absent, never 0); a process's use of a device is gpu_process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpumetrics.h"

void *gpum_walk__new(void)
{
	return calloc(1, sizeof(struct gpum_walk));
}

void gpum_walk__free(void *w)
{
	free(w);
}

const struct gpum_walk *gpum_walk__of(const struct trace_model *m)
{
	return m ? trace_model__walk(m, &family_gpumetrics) : NULL;
}

/* Values of REC (KEY or SAMPLE) in bit order, for the metrics of CARRY: 0, or -1 (short). */
static int carried(const struct bs_hdr *rec, __u64 carry, __u64 val[GPUM_NMETRICS])
{
	const __u8 *p = (const __u8 *)rec + sizeof(struct bs_gpum_sample);
	unsigned n = (unsigned)__builtin_popcountll(carry);

	if (rec->size < sizeof(struct bs_gpum_sample) + n * sizeof(__u64))
		return -1;
	for (unsigned m = 0; m < GPUM_NMETRICS; m++)
		if (carry & GPUM_BIT(m)) {
			memcpy(&val[m], p, sizeof(__u64));
			p += sizeof(__u64);
		}
	return 0;
}

#define GPUM_ALL ((1ull << GPUM_NMETRICS) - 1)

void gpum_walk__observe(void *p, const struct bs_hdr *rec)
{
	struct gpum_walk *w = p;
	const struct bs_gpum_device *d = (const void *)rec;
	const struct bs_gpum_sample *s = (const void *)rec;
	struct gpum_dev_state *ds;

	switch (rec->type) {
	case BS_REC_GPUM_DEVICE:
		if (rec->size >= sizeof(*d) && d->device < GPUM_MAX_DEVICES) {
			w->dev[d->device].known = 1;
			w->dev[d->device].info = *d;
		}
		break;
	case BS_REC_GPUM_KEY:
		if (rec->size < sizeof(*s) || s->device >= GPUM_MAX_DEVICES)
			break;
		ds = &w->dev[s->device];
		if (carried(rec, s->carry & GPUM_ALL, ds->key_val))
			break;
		ds->key_have = s->carry & GPUM_ALL;
		ds->keyed = 1;
		break;
	case BS_REC_GPUM_SAMPLE:
		if (rec->size >= sizeof(*s) && s->device < GPUM_MAX_DEVICES &&
		    !w->dev[s->device].keyed)
			w->unkeyed++;
		break;
	case BS_REC_GPUM_STATUS:
		if (rec->size >= sizeof(struct bs_gpum_status)) {
			w->status = *(const struct bs_gpum_status *)rec;
			w->has_status = 1;
		}
		break;
	}
}

int gpum_sample__read(const struct gpum_walk *w, const struct bs_hdr *rec, __u32 *device,
		      __u64 *have, __u64 val[GPUM_NMETRICS])
{
	const struct bs_gpum_sample *s = (const void *)rec;
	const struct gpum_dev_state *ds;
	__u64 carry, from_key;

	if (rec->size < sizeof(*s) || s->device >= GPUM_MAX_DEVICES ||
	    (rec->type != BS_REC_GPUM_KEY && rec->type != BS_REC_GPUM_SAMPLE))
		return -1;
	carry = s->carry & GPUM_ALL;
	if (carried(rec, carry, val))
		return -1;
	ds = w ? &w->dev[s->device] : NULL;
	from_key = ds && ds->keyed ? s->have & ~carry & ds->key_have : 0;
	for (unsigned m = 0; m < GPUM_NMETRICS; m++)
		if (from_key & GPUM_BIT(m))
			val[m] = ds->key_val[m];
	*device = s->device;
	*have = carry | from_key;
	return 0;
}

const char *gpum_device_name(const struct gpum_walk *w, __u32 device, int with_model, char *buf,
			     size_t len)
{
	const struct gpum_dev_state *ds = w && device < GPUM_MAX_DEVICES ? &w->dev[device] : NULL;

	if (with_model && ds && ds->known && ds->info.name[0])
		snprintf(buf, len, "GPU %u (%.*s)", device, GPUM_NAME_LEN, ds->info.name);
	else
		snprintf(buf, len, "GPU %u", device);
	return buf;
}

static int decode_sample(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct gpum_walk *w = gpum_walk__of(m);
	__u64 have, val[GPUM_NMETRICS];
	__u32 device;

	if (gpum_sample__read(w, rec, &device, &have, val))
		return 0;
	snprintf(ev->namebuf, sizeof(ev->namebuf), "GPU %u", device);
	ev->name = ev->namebuf;
	event__arg_u64(ev, "device", device);
	for (unsigned k = 0; k < GPUM_NMETRICS; k++) {
		const char *key = gpum_metrics[k].key;

		if (!(have & GPUM_BIT(k)))
			continue;
		if (GPUM_DOUBLES & GPUM_BIT(k))
			event__arg_double(ev, key, gpum_value(k, val[k]));
		else if (k == GPUM_THROTTLE)
			event__arg_hex(ev, key, val[k]);
		else
			event__arg_u64(ev, key, val[k]);
	}
	return 1;
}

/* The keys of the metrics in BITS, comma-separated, into EV's string buffer. */
static const char *metric_list(struct event *ev, __u64 bits)
{
	char *out = ev->strbuf + ev->strbuf_used;
	size_t room = sizeof(ev->strbuf) - ev->strbuf_used, used = 0;

	if (room < 2)
		return "";
	out[0] = 0;
	for (unsigned m = 0; m < GPUM_NMETRICS && used + 1 < room; m++)
		if (bits & GPUM_BIT(m)) {
			int n = snprintf(out + used, room - used, "%s%s", used ? "," : "",
					 gpum_metrics[m].key);

			used += n > 0 ? (size_t)n : 0;
		}
	if (used >= room)
		used = room - 1;
	ev->strbuf_used += used + 1;
	return out;
}

static int decode_device(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpum_device *d = (const void *)rec;

	snprintf(ev->namebuf, sizeof(ev->namebuf), "GPU %u", d->device);
	ev->name = ev->namebuf;
	event__arg_u64(ev, "device", d->device);
	event__arg_strn(ev, "model", d->name, sizeof(d->name));
	event__arg_strn(ev, "uuid", d->uuid, sizeof(d->uuid));
	event__arg_strn(ev, "bus_id", d->bus_id, sizeof(d->bus_id));
	event__arg_bool(ev, "gpm", !!(d->flags & BS_GPUM_DEV_GPM));
	event__arg_bool(ev, "lost", !!(d->flags & BS_GPUM_DEV_LOST));
	if (d->flags & BS_GPUM_DEV_LOST)
		event__arg_u64(ev, "lost_error", d->lost_err);
	if (d->unsupported)
		event__arg_str(ev, "unsupported", metric_list(ev, d->unsupported));
	if (d->denied)
		event__arg_str(ev, "denied", metric_list(ev, d->denied));
	if (d->mem_total)
		event__arg_u64(ev, "mem_total", d->mem_total);
	if (d->power_limit)
		event__arg_u64(ev, "power_limit_mw", d->power_limit);
	return 1;
}

static int decode_proc(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpum_proc *p = (const void *)rec;

	snprintf(ev->namebuf, sizeof(ev->namebuf), "GPU %u", p->device);
	ev->name = ev->namebuf;
	event__arg_u64(ev, "device", p->device);
	if (p->have & BS_GPUM_PROC_SM)
		event__arg_u64(ev, "sm_util", p->sm_util);
	if (p->have & BS_GPUM_PROC_MEM)
		event__arg_u64(ev, "mem_util", p->mem_util);
	if (p->have & BS_GPUM_PROC_ENC)
		event__arg_u64(ev, "enc_util", p->enc_util);
	if (p->have & BS_GPUM_PROC_DEC)
		event__arg_u64(ev, "dec_util", p->dec_util);
	if (p->have & BS_GPUM_PROC_USED)
		event__arg_u64(ev, "used_mem", p->used_mem);
	return 1;
}

static const char *state_name(__u32 s)
{
	static const char *const names[] = {
		[BS_GPUM_STARTING] = "starting",   [BS_GPUM_RUNNING] = "running",
		[BS_GPUM_NO_NVML] = "no_nvml",	   [BS_GPUM_NVML_FAILED] = "nvml_failed",
		[BS_GPUM_NO_DEVICE] = "no_device", [BS_GPUM_NO_SAMPLER] = "no_sampler",
		[BS_GPUM_ENDED] = "ended",	   [BS_GPUM_STOPPED] = "stopped",
	};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

static int decode_status(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpum_status *s = (const void *)rec;

	ev->name = state_name(s->state);
	event__arg_str(ev, "state", state_name(s->state));
	event__arg_strn(ev, "text", s->text, sizeof(s->text));
	event__arg_u64(ev, "devices", s->ndevices);
	event__arg_u64(ev, "hz_asked", s->hz_asked);
	event__arg_u64(ev, "hz", s->hz);
	if (s->tick_ns)
		event__arg_u64(ev, "tick_ns", s->tick_ns);
	if (s->sampler_pid)
		event__arg_u64(ev, "sampler_pid", s->sampler_pid);
	if (rec->size >= sizeof(*s) && (s->ticks || s->cpu_ns)) {
		event__arg_u64(ev, "ticks", s->ticks);
		event__arg_u64(ev, "cpu_ns", s->cpu_ns);
	}
	return 1;
}

const struct export_style gpum_style = {
	.cat = "gpu_metrics",
	.ph = 'i',
	.track = "GPU metrics",
	.desc = "The GPU metrics sampler's words: a device found or lost, NVML missing.",
};

const struct rec_decoder gpum_decoders[] = {
	{ BS_REC_GPUM_DEVICE, sizeof(struct bs_gpum_device), "gpu_device", decode_device,
	  &gpum_style },
	{ BS_REC_GPUM_KEY, sizeof(struct bs_gpum_sample), "gpu_metrics", decode_sample,
	  &gpum_style },
	{ BS_REC_GPUM_SAMPLE, sizeof(struct bs_gpum_sample), "gpu_metrics", decode_sample,
	  &gpum_style },
	{ BS_REC_GPUM_PROC, sizeof(struct bs_gpum_proc), "gpu_process", decode_proc, &gpum_style },
	{ BS_REC_GPUM_STATUS, sizeof(struct bs_gpum_status), "gpu_metrics_status", decode_status,
	  &gpum_style },
	{ 0 },
};
