// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge, second pass: the merged file. Each input in turn, from a fresh chunk: the STRING
 * records of its host, path and boot id, its RANK records (one per rank process, or one with
 * pid 0), its SYNC_BASE records (members whose sequences were shifted), then every record it
 * holds, rebased (struct rec_rebase: the decoders say which fields hold times, pids and
 * tids, string and stack ids). A record of a type no family knows keeps its fields as they
 * were, its header rebased.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bpfsight_version.h"
#include "family.h"
#include "merge.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "msg.h"

struct out {
	struct trace_writer *w;
	__u32 next_string; /* merge's own strings, after every input's */
	__u64 buf[(1u << 16) / 8];
};

/* A STRING record of S at TS; its id, or 0 after a failure (*ERR set). */
static __u32 put_string(struct out *o, const char *s, __u64 ts, int *err)
{
	struct bs_string *r = (void *)o->buf;
	size_t len = s ? strnlen(s, 4096) : 0;

	if (!len || *err)
		return 0;
	memset(o->buf, 0, sizeof(*r) + len + 8);
	*r = (struct bs_string){ .h = { .type = BS_REC_STRING,
					.size = (__u16)((sizeof(*r) + len + 7) & ~7ul),
					.ts = ts },
				 .id = o->next_string,
				 .len = (__u32)len };
	memcpy(r + 1, s, len);
	*err = trace_writer__append(o->w, &r->h);
	return *err ? 0 : o->next_string++;
}

/* The rank processes of IN: its members' pids, each with its largest group. */
static __u32 rank_of(const struct merge_input *in, __u32 pid, __u32 *member)
{
	__u32 best = in->nmembers;

	for (__u32 m = 0; m < in->nmembers; m++)
		if (in->members[m].pid == pid &&
		    (best == in->nmembers || in->members[m].nranks > in->members[best].nranks))
			best = m;
	*member = best;
	return best < in->nmembers;
}

static int put_rank(struct out *o, const struct merge_input *in, const struct merge_member *m,
		    const __u32 ids[3], __u64 ts)
{
	struct bs_rank r = {
		.h = { .type = BS_REC_RANK, .size = sizeof(r), .ts = ts },
		.ns = in->ns,
		.rank = m ? m->rank : -1,
		.nranks = m ? m->nranks : -1,
		.host_id = ids[0],
		.path_id = ids[1],
		.boot_id = ids[2],
		.flags = in->flags,
		.points = in->used,
		.group = m ? m->group : 0,
		.offset_ns = in->offset_ns,
		.drift_ppb = llround(in->drift_ppb),
		.residual_rms_ns = (__u64)llround(in->rms_ns),
		.residual_max_ns = (__u64)llround(in->max_ns),
		.mono0 = in->mono0,
		.real0 = in->meta.start.realtime_ns,
		.rate_ppb = llround(in->rate * 1e9),
		.offset_err_ns = (__u64)llround(in->offset_err_ns),
	};

	if (m)
		r.h.pid = in->ns << BS_RANK_NS_SHIFT | m->pid;
	return trace_writer__append(o->w, &r.h);
}

/* IN's section header: its strings, RANK records and SYNC_BASE records. */
static int put_section(struct out *o, const struct merge_input *in)
{
	__u64 ts = merge_input__clock(in, in->mono0);
	__u32 ids[3], nranks = 0, best;
	int err = trace_writer__flush(o->w);

	ids[0] = put_string(o, in->meta.hostname, ts, &err);
	ids[1] = put_string(o, in->path, ts, &err);
	ids[2] = put_string(o, in->meta.boot_id, ts, &err);
	for (__u32 m = 0; !err && m < in->nmembers; m++) {
		__u32 pid = in->members[m].pid;
		int first = 1;

		for (__u32 k = 0; k < m; k++)
			first &= in->members[k].pid != pid;
		if (first && rank_of(in, pid, &best)) {
			err = put_rank(o, in, &in->members[best], ids, ts);
			nranks++;
		}
	}
	if (!err && !nranks)
		err = put_rank(o, in, NULL, ids, ts);
	for (__u32 m = 0; !err && m < in->nmembers; m++) {
		const struct merge_member *mm = &in->members[m];
		struct bs_sync_base b = {
			.h = { .type = BS_REC_SYNC_BASE, .size = sizeof(b), .ts = ts },
			.group = mm->group,
			.base = (__u64)mm->shift,
		};

		if (!mm->shift)
			continue;
		b.h.pid = in->ns << BS_RANK_NS_SHIFT | mm->pid;
		err = trace_writer__append(o->w, &b.h);
	}
	return err;
}

/* Every record of IN's file, rebased, after its section header. */
static int copy_file(struct out *o, const struct merge_input *in)
{
	const struct bs_hdr *rec;
	struct trace_reader *r;
	char err[256] = "";
	int e = 0;

	r = trace_reader__open(in->path, err, sizeof(err), &e);
	if (!r) {
		pr_err("%s: %s\n", in->path, err[0] ? err : strerror(-e));
		return e ? e : -EIO;
	}
	e = put_section(o, in);
	while (!e && trace_reader__next(r, &rec) == 1) {
		struct bs_hdr *copy = (struct bs_hdr *)o->buf;

		memcpy(copy, rec, rec->size);
		merge_rebase__record(copy, in);
		e = trace_writer__append(o->w, copy);
	}
	trace_reader__free(r);
	return e;
}

/* The merged header: the reference's host, clocks, kernel and GPUs; every input's families. */
static int merged_meta(const struct merge_opts *mo, const struct merge_input *in, __u32 n,
		       __u32 ref, struct trace_meta *m, char **fams, char **target, char **options)
{
	size_t len = 1;
	char *p;

	for (__u32 i = 0; i < n; i++)
		len += (in[i].meta.families ? strlen(in[i].meta.families) : 0) + 1;
	*fams = p = calloc(1, len);
	if (!p || asprintf(target, "merge: %u files", n) < 0 ||
	    asprintf(options, "merged=%u reference=%s", n, in[ref].path) < 0)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++) {
		const char *f = in[i].meta.families;

		/* Each family once, in the order first seen. */
		while (f && *f) {
			size_t l = strcspn(f, ",");
			char *hit = strstr(*fams, f);

			if (!(hit && (hit == *fams || hit[-1] == ',') &&
			      (hit[l] == ',' || !hit[l])))
				p += sprintf(p, "%s%.*s", p == *fams ? "" : ",", (int)l, f);
			f += l + (f[l] == ',');
		}
	}
	*m = (struct trace_meta){ .version = 1,
				  .hostname = in[ref].meta.hostname,
				  .kernel = in[ref].meta.kernel,
				  .boot_id = in[ref].meta.boot_id,
				  .cmdline = (char *)mo->cmdline,
				  .families = *fams,
				  .target = *target,
				  .options = *options,
				  .tool_version = BPFSIGHT_VERSION,
				  .gpus = in[ref].meta.gpus,
				  .start = in[ref].meta.start };
	/* The earliest input's start: a rank that began recording before the reference keeps the
	 * calls it saw then (the walk clips intervals to the start). */
	for (__u32 i = 0; i < n; i++) {
		__u64 s = merge_input__clock(&in[i], in[i].meta.start.mono_ns);

		if (in[i].meta.start.mono_ns && s < m->start.mono_ns) {
			m->start.realtime_ns -= m->start.mono_ns - s;
			m->start.boottime_ns -= m->start.mono_ns - s;
			m->start.mono_ns = s;
		}
	}
	return 0;
}

/* The end clocks: the reference's, or its start's pair carried to the last record. */
static void merged_end(const struct merge_input *in, __u32 n, __u32 ref, struct trace_clocks *e)
{
	__u64 last = 0;

	if (in[ref].has_end) {
		*e = in[ref].end;
		return;
	}
	for (__u32 i = 0; i < n; i++)
		if (merge_input__clock(&in[i], in[i].last_ts) > last)
			last = merge_input__clock(&in[i], in[i].last_ts);
	*e = in[ref].meta.start;
	if (last > e->mono_ns) {
		e->realtime_ns += last - e->mono_ns;
		e->boottime_ns += last - e->mono_ns;
		e->mono_ns = last;
	}
}

int merge_write(const struct merge_opts *mo, struct merge_input *in, const __u32 *order, __u32 n)
{
	char *fams = NULL, *target = NULL, *options = NULL;
	struct out *o = calloc(1, sizeof(*o));
	struct trace_clocks end;
	struct trace_meta meta;
	__u64 strings = 0, stacks = 0;
	int err = 0;

	for (__u32 k = 0; o && k < n; k++) {
		struct merge_input *x = &in[order[k]];

		x->ns = k;
		x->string_base = (__u32)strings;
		x->stack_base = (__u32)stacks;
		strings += x->max_string;
		stacks += x->max_stack;
	}
	if (!o || merged_meta(mo, in, n, order[0], &meta, &fams, &target, &options)) {
		err = -ENOMEM;
		pr_info("%s\n", strerror(ENOMEM));
		goto out;
	}
	if (strings + 3ull * n >= 0xffffffffull || stacks >= 0xffffffffull) {
		pr_err("the files hold more strings or stacks than one "
		       "file can (2^32): merge fewer at a time\n");
		err = -E2BIG;
		goto out;
	}
	o->next_string = (__u32)strings + 1;
	o->w = trace_writer__open(mo->out, &meta, mo->force ? TRACE_WRITER_FORCE : 0, &err);
	if (!o->w) {
		pr_err("cannot create %s: %s%s\n", mo->out, strerror(-err),
		       err == -EEXIST ? " (use --force to replace it)" : "");
		goto out;
	}
	for (__u32 k = 0; !err && k < n; k++)
		err = copy_file(o, &in[order[k]]);
	if (err) {
		pr_err("writing %s: %s: removed it\n", mo->out, strerror(-err));
		trace_writer__free(o->w);
		unlink(mo->out);
		goto out;
	}
	merged_end(in, n, order[0], &end);
	err = trace_writer__close(o->w, &end);
	if (err) {
		pr_err("closing %s: %s: removed it\n", mo->out, strerror(-err));
		unlink(mo->out);
	}
out:
	free(fams);
	free(target);
	free(options);
	free(o);
	return err;
}
