// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The labels of ClickHouse rows: ch_labels.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_labels.h"
#include "content_id.h"
#include "frame_sum.h"
#include "json.h"
#include "msg.h"
#include "stack_call.h"
#include "stack_format.h"
#include "trace_model.h"

int ch_labels__option(struct ch_labels *l, int job, const char *arg)
{
	char *end;
	long v;

	if (job) {
		/* the job is a URL's path in `--from clickhouse://HOST:PORT/JOB` */
		if (!*arg || strpbrk(arg, "/?#%\t\n\\'")) {
			pr_err("bad job name '%s': no '/', '?', '#', '%%', quotes or blanks\n",
			       arg);
			return -EINVAL;
		}
		l->job = arg;
		return 0;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < -1 || v > INT_MAX) {
		pr_err("bad rank '%s': a number, 0 and up (-1: unknown)\n", arg);
		return -EINVAL;
	}
	l->rank = (__s32)v;
	return 0;
}

/*
 * A stack's frames as SQL reads them (cpu_sum, the fault rule, gil_stacks, offcpu_stacks in
 * ch_cpu_reports.c): innermost first, a line each ("\n" between), its fields "\t" between:
 * kind, function and file string ids (what stats tells functions apart and orders ties by),
 * line, address, the function and the file as stats' reports show them (stack_format.h).
 * NULL without memory.
 */
static char *frames_text(const struct trace_stack *s, const struct trace_model *m)
{
	char *text = NULL, buf[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	for (__u32 i = 0; s && i < s->nframes; i++) {
		const struct bs_frame *fr = &s->frames[i];

		fprintf(f, "%s%u\t%u\t%u\t%u\t%llu\t%s\t%s", i ? "\n" : "", fr->kind, fr->func_id,
			fr->file_id, fr->line, (unsigned long long)fr->addr,
			stack_frame__func(fr, m, buf, sizeof(buf)), stack_frame__file(fr, m));
	}
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* FR's place in S, 1-based; 0 for none. */
static unsigned frame_index(const struct trace_stack *s, const struct bs_frame *fr)
{
	return fr && s ? (unsigned)(fr - s->frames) + 1 : 0;
}

/*
 * What the server's reports read of a stack (KERNEL: a CPU sample's in kernel code), as its
 * `stack` row's args: its frames (frames_text), and of a user stack what rank_waits groups by,
 * the call it is in (stack_call__in, cut where the report cuts it: 63 bytes) and its line in
 * the job's own code (frame_sum__own_site), with the frames frame_sum sums it under: that line
 * (`site`) and the library's line beside it (`via`), 1-based, left out when none.
 */
static void ch_stack_args(const struct trace_stack *s, const struct trace_model *m, int kernel,
			  struct json *j)
{
	const struct bs_frame *via, *own = frame_sum__own_site(s, m, &via);
	char call[64], at[256], *frames = frames_text(s, m);

	if (frames && *frames)
		json__kv_str(j, "frames", frames);
	free(frames);
	if (kernel)
		return;
	if (s && stack_call__in(s, m, call, sizeof(call)))
		json__kv_str(j, "call", call);
	if (own)
		json__kv_str(j, "own", stack_call__frame(own, m, at, sizeof(at)));
	if (frame_index(s, own))
		json__kv_u64(j, "site", frame_index(s, own));
	if (frame_index(s, via))
		json__kv_u64(j, "via", frame_index(s, via));
}

int ch_labels__for_file(struct ch_labels *l, const char *file)
{
	static char id[CONTENT_ID_LEN], job[256];
	const char *base = strrchr(file, '/');
	size_t n;
	int err;

	err = content_id__file(file, id);
	if (err) {
		pr_err("cannot read %s: %s\n", file, strerror(-err));
		return err;
	}
	l->file = file;
	l->file_id = id;
	l->stack_args = ch_stack_args;
	if (l->job && l->job != job)
		return 0;
	base = base ? base + 1 : file;
	n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".bst"))
		n -= 4;
	snprintf(job, sizeof(job), "%.*s", (int)n, base);
	l->job = job;
	return ch_labels__option(l, 1, job);
}
