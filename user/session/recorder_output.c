// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where a recording's records go (struct record_out, what record_ctx__write calls): monitor's
 * and top's sink, the flight recorder's window, a file per capture range, the file; and what
 * is said of it while it records (the status line) and when writing fails.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "capture_files.h"
#include "capture_gate.h"
#include "family.h"
#include "family_record.h"
#include "flight_recorder.h"
#include "recording.h"
#include "trace_writer.h"
#include "msg.h"

const char *recording__out_path(const struct recording *r)
{
	return r->files ? capture_files__path(r->files) : r->ctx.opts->output;
}

/* Every record the recording keeps, in the order the recording thread writes them. */
static int write_out(void *arg, const struct bs_hdr *rec)
{
	struct recording *r = arg;
	const struct record_opts *o = r->ctx.opts;

	if (o->sink)
		o->sink(o->sink_arg, rec);
	if (!r->writer)
		return 0; /* --dry-run, or monitor without a file */
	if (r->flight && flight__observe(r->flight, rec))
		return 0; /* a cumulative snapshot: the flight recorder keeps those apart */
	return r->files ? capture_files__append(r->files, r->writer, rec)
			: trace_writer__append(r->writer, rec);
}

/* How to overwrite, as the command is spelt: nsys users of profile type -f true. */
static const char *force_hint(void)
{
	return strstr(msg__cmd(), "profile") ? " (use -f true or --force to overwrite)"
					     : " (use --force to overwrite)";
}

/* A dump's window begins at FROM: what the attached families say of their state then. */
static int families_prologue(void *arg, __u64 from, int (*write)(void *w, const struct bs_hdr *rec),
			     void *w)
{
	struct recording *r = arg;
	int err = 0;

	for_each_family_while(it, !err)
		if (r->fam[it.i].attached && it.f->record->flight_prologue)
			err = it.f->record->flight_prologue(&r->ctx, r->fam[it.i].state, from,
							    write, w);
	return err;
}

/*
 * A file per --capture-range range (capture_files.h): the first range's file is opened as
 * -o would be; the ones after it must be free too (--force replaces them), known now.
 */
static int capture_files_check(const struct record_opts *o, char *first, size_t len)
{
	__u32 n = record_opts__capture_files(o);
	char path[4096];

	if (!o->output) {
		pr_err("--capture-range=%s:%s writes a file per range: give -o\n",
		       o->capture->record->capture->kind, o->capture_arg);
		return -1;
	}
	for (__u32 k = 1; k <= n && !o->force; k++) {
		flight_opts__dump_path(o->output, k, path, sizeof(path));
		if (!access(path, F_OK)) {
			pr_err("cannot create %s: %s%s\n", path, strerror(EEXIST), force_hint());
			return -1;
		}
	}
	flight_opts__dump_path(o->output, 1, first, len);
	return 0;
}

int recording__open_output(struct recording *r)
{
	const struct record_opts *o = r->ctx.opts;
	char first[4096];
	const char *path = o->output;
	int err = 0;

	r->ctx.out = (struct record_out){ write_out, r };
	if (!o->dry_run && record_opts__capture_files(o)) {
		if (capture_files_check(o, first, sizeof(first)))
			return -1;
		path = first;
	}

	if (!o->dry_run && o->flight.window_ns) {
		/* Nothing goes to -o: the window stays in memory until a trigger dumps it. */
		r->flight = flight__new(&o->flight, &r->rm.meta, o->output, o->force, &err);
		if (!r->flight) {
			pr_err("cannot start the flight recorder: %s\n", strerror(-err));
			return -1;
		}
		r->writer = flight__writer(r->flight);
		flight__set_prologue(r->flight, families_prologue, r);
	} else if (!o->dry_run && o->output) {
		r->writer = trace_writer__open(path, &r->rm.meta, o->force ? TRACE_WRITER_FORCE : 0,
					       &err);
	}
	/* monitor without --flight-recorder writes no file: its records go to the sink only. */
	if (!o->dry_run && (o->output || o->flight.window_ns) && !r->writer) {
		pr_err("cannot create %s: %s%s\n", path, strerror(-err),
		       err == -EEXIST ? force_hint() : "");
		return -1;
	}
	return 0;
}

/* A capture range closed: with a file per range, the next range's file is the writer now. */
static void on_range_closed(void *arg, __u64 start, __u64 end)
{
	struct recording *r = arg;
	struct trace_writer *next;
	int err = capture_files__next(r->files, r->writer, end, &next);

	if (err && !r->ctx.write_err)
		r->ctx.write_err = err; /* said: the recording stops */
	else if (next)
		r->writer = next;
}

int recording__capture_start(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	const struct record_opts *o = ctx->opts;
	__u32 n = record_opts__capture_files(o);

	if (!(ctx->gate = capture_gate__new()))
		return -1;
	if (!n || !r->writer)
		return 0;
	r->files = capture_files__new(o->output, &r->rm.meta, o->force ? TRACE_WRITER_FORCE : 0, n,
				      ctx->gate);
	if (!r->files)
		return -1;
	capture_gate__on_close(ctx->gate, on_range_closed, r);
	return 0;
}

void recording__flush_now(struct recording *r)
{
	int err;

	recording__bring_up_to_date(r);
	if (!r->writer)
		return;
	err = trace_writer__flush(r->writer);
	if (err) {
		if (!r->ctx.write_err)
			r->ctx.write_err = err; /* ends the recording as any failed write does */
		return;
	}
	pr_info("flushed %llu records to %s\n",
		(unsigned long long)trace_writer__records(r->writer), recording__out_path(r));
}

/*
 * Writing failed (a full disk): the chunk that failed was cut off again, so the file's small
 * end (a loss record counting what was dropped, the footer) often still fits. Then the file
 * is closed cleanly and says what it misses (write_failed); else it ends without a footer.
 */
void recording__close_after_write_error(struct recording *r)
{
	struct bs_loss l = { .cause = BS_LOSS_WRITE };
	const char *path = recording__out_path(r);
	int err;

	/* What is pending first: if it fails too, it is counted in the loss record. */
	trace_writer__flush(r->writer);
	l.count = trace_writer__dropped(r->writer);
	record_ctx__hdr(&l.h, BS_REC_LOSS, sizeof(l), 0, 0, 0);
	/* A footer without the loss record would claim a complete file. */
	err = trace_writer__append(r->writer, &l.h);
	if (!err)
		err = trace_writer__flush(r->writer);
	if (err)
		trace_writer__free(r->writer);
	else
		err = trace_writer__close(r->writer, NULL);
	r->writer = NULL;
	pr_err("writing %s failed: %s; %llu records dropped; %s\n", path,
	       strerror(-r->ctx.write_err), (unsigned long long)l.count,
	       err ? "the file holds the chunks written before, without its end (readers say "
		     "it was not closed cleanly)"
		   : "the file is closed and counts them as lost (write_failed)");
}

void recording__print_status(struct recording *r, __u64 now, int final)
{
	double secs = (now - r->start) / 1e9, limit = r->ctx.opts->duration_ns / 1e9;
	__u64 ev = trace_writer__records(r->writer);
	char until[32] = "";

	/* -d: how far along, as "4.0s/10.0s (40%)". */
	if (limit > 0)
		snprintf(until, sizeof(until), "/%.1fs (%.0f%%)", limit,
			 secs < limit ? 100 * secs / limit : 100.0);
	fprintf(stderr, "\r\033[K[bpfsight] %.1fs%s  %llu events  %.0f ev/s  lost %llu  %.1f MiB%s",
		secs, until, (unsigned long long)ev, secs > 0 ? ev / secs : 0.0,
		(unsigned long long)r->lost_total, trace_writer__bytes(r->writer) / 1048576.0,
		final ? "\n" : "");
}
