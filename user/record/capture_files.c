// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A file per --capture-range range: see capture_files.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture_files.h"
#include "capture_gate.h"
#include "flight_meta.h"
#include "flight_opts.h"
#include "mono_clock.h"
#include "trace_writer.h"
#include "msg.h"

struct capture_files {
	const char *output;
	const struct trace_meta *meta;
	const struct capture_gate *gate;
	__u32 flags, nfiles;
	__u32 cur;		   /* the current file's number, 1-based */
	struct flight_meta *names; /* every record that names things, for the next files */
	struct trace_writer *prev; /* the previous range's file, open for its late events */
	__u64 prev_end, prev_until;
	__u64 closed_upto; /* the end of the last range whose file is closed */
	char path[4096];   /* the current file's */
};

struct capture_files *capture_files__new(const char *output, const struct trace_meta *meta,
					 __u32 flags, __u32 nfiles, const struct capture_gate *gate)
{
	struct capture_files *cf = calloc(1, sizeof(*cf));

	if (!cf || !(cf->names = flight_meta__new())) {
		free(cf);
		return NULL;
	}
	cf->output = output;
	cf->meta = meta;
	cf->flags = flags;
	cf->nfiles = nfiles;
	cf->gate = gate;
	cf->cur = 1;
	capture_files__path_of(cf, 1, cf->path, sizeof(cf->path));
	return cf;
}

int capture_files__path_of(const struct capture_files *cf, __u32 k, char *buf, size_t len)
{
	return flight_opts__dump_path(cf->output, k, buf, len);
}

const char *capture_files__path(const struct capture_files *cf)
{
	return cf->path;
}

int capture_files__current_opened(const struct capture_files *cf)
{
	return capture_gate__opened(cf->gate) >= cf->cur;
}

int capture_files__append(struct capture_files *cf, struct trace_writer *cur,
			  const struct bs_hdr *rec)
{
	int err;

	if (!capture_gate__judges(cf->gate, rec->type)) {
		err = flight_meta__observe(cf->names, rec, 0);
		if (err)
			return err;
		if (!flight_meta__is_state(cf->names, rec->type))
			/* By its time (a stack's reference goes with its event), never refused. */
			return trace_writer__append(
				cf->prev && rec->ts < cf->prev_end ? cf->prev : cur, rec);
		if (cf->prev && (err = trace_writer__append(cf->prev, rec)))
			return err; /* its late events may need it */
		return trace_writer__append(cur, rec);
	}
	/* A range's file holds what started before its end (at it: the next range's start). */
	if (rec->ts < cf->closed_upto)
		return 1; /* its range's file is closed */
	if (cf->prev && rec->ts < cf->prev_end)
		return trace_writer__append(cf->prev, rec);
	return trace_writer__append(cur, rec);
}

/* The previous range's file is done: its end, then the line that says so. */
static int close_prev(struct capture_files *cf)
{
	struct trace_clocks end;
	char path[sizeof(cf->path)];
	__u64 n;
	int err;

	if (!cf->prev)
		return 0;
	capture_files__path_of(cf, cf->cur - 1, path, sizeof(path));
	n = trace_writer__records(cf->prev);
	trace_clocks__now(&end);
	err = trace_writer__close(cf->prev, &end);
	cf->prev = NULL;
	cf->closed_upto = cf->prev_end;
	if (err) {
		pr_err("closing %s: %s\n", path, strerror(-err));
		return err;
	}
	pr_info("wrote %s: %llu records (range %u of %u)\n", path, (unsigned long long)n,
		cf->cur - 1, cf->nfiles);
	return 0;
}

int capture_files__next(struct capture_files *cf, struct trace_writer *cur, __u64 end,
			struct trace_writer **next)
{
	struct trace_meta meta = *cf->meta;
	__u64 back;
	long n;
	int err = 0;

	*next = NULL;
	if (cf->cur >= cf->nfiles)
		return 0;     /* the last range: its file stays until the recording ends */
	err = close_prev(cf); /* a range shorter than CAPTURE_LATE_NS: it waits no longer */
	if (err)
		return err;
	/*
	 * The new file starts where the range ended (its times, the step table's starts, count
	 * from there), which the recorder may see a while later: every clock moved back as far.
	 */
	trace_clocks__now(&meta.start);
	back = meta.start.mono_ns > end ? meta.start.mono_ns - end : 0;
	meta.start.mono_ns -= back;
	meta.start.realtime_ns -= back;
	meta.start.boottime_ns -= back;
	capture_files__path_of(cf, cf->cur + 1, cf->path, sizeof(cf->path));
	*next = trace_writer__open(cf->path, &meta, cf->flags, &err);
	if (!*next) {
		pr_err("cannot create %s: %s%s\n", cf->path, strerror(-err),
		       err == -EEXIST ? " (use --force to overwrite)" : "");
		return err;
	}
	n = flight_meta__write_all(cf->names, *next, meta.start.mono_ns);
	if (n < 0) {
		pr_err("writing %s: %s\n", cf->path, strerror((int)-n));
		trace_writer__free(*next);
		*next = NULL;
		return (int)n;
	}
	cf->prev = cur;
	cf->prev_end = end;
	cf->prev_until = mono_now_ns() + CAPTURE_LATE_NS;
	cf->cur++;
	return 0;
}

int capture_files__tick(struct capture_files *cf, __u64 now)
{
	if (!cf->prev)
		return 0;
	if (now < cf->prev_until)
		return trace_writer__tick(cf->prev, now);
	return close_prev(cf);
}

int capture_files__finish(struct capture_files *cf)
{
	int err = close_prev(cf);

	if (!capture_files__current_opened(cf))
		pr_warn("%s: the recording ended before range %u of %u began: it holds no "
			"events\n",
			cf->path, cf->cur, cf->nfiles);
	return err;
}

void capture_files__free(struct capture_files *cf)
{
	if (!cf)
		return;
	trace_writer__free(cf->prev); /* a recording that failed: what a crash leaves */
	flight_meta__free(cf->names);
	free(cf);
}
