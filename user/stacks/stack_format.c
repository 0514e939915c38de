// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* How a stack of the trace reads: frames as text and as dump's JSON (docs/STACKS.md). */
#include <stdio.h>
#include <string.h>
#include "json.h"
#include "stack_format.h"
#include "trace_model.h"

const struct bs_frame stack_frame_kernel = { .kind = STACK_FRAME_KERNEL };
const struct bs_frame stack_frame_truncated = { .kind = STACK_FRAME_TRUNCATED };

void stack_frame__key(const struct bs_frame *f, __u64 key[2])
{
	/*
	 * A marker's line is why the walk stopped: two reasons are two frames. A Python frame is
	 * its code and line, but one whose code was gone before it was read has no name: its
	 * address is all that tells it apart (and what its text says).
	 */
	int by_line = f->kind == BS_FRAME_CUT || (f->kind == BS_FRAME_PYTHON && f->func_id);
	__u64 where = by_line ? f->line : f->addr;

	key[0] = (__u64)f->func_id << 32 | f->file_id;
	key[1] = where ^ (__u64)f->kind << 52;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Why a walk stopped (a cut marker's line: BS_CUT_*), as its marker frame says it. */
static const char *stack_cut_reason(__u32 why)
{
	static const char *const reasons[BS_CUT_REASONS] = {
		[BS_CUT_NO_FP] = "no frame pointers",
		[BS_CUT_NO_FDE] = "no unwind information covers the address",
		[BS_CUT_EXPR] = "an unwind rule the table cannot hold",
		[BS_CUT_BAD_FDE] = "malformed unwind information",
		[BS_CUT_BAD_CFA] = "the unwind table gave a frame off the stack",
		[BS_CUT_KEPT] = "the native frames kept were read",
	};

	return why < BS_CUT_REASONS ? reasons[why] : "an unknown reason";
}

const char *stack_file__module(const char *path)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	static const char *const libs[] = { "/lib/python", "/lib64/python" };
	const char *best = NULL, *p, *b;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		for (p = strstr(path, roots[i]); p; p = strstr(p + 1, roots[i]))
			if (!best || p + strlen(roots[i]) > best)
				best = p + strlen(roots[i]);
	for (size_t i = 0; !best && i < sizeof(libs) / sizeof(libs[0]); i++)
		for (p = strstr(path, libs[i]); p; p = strstr(p + 1, libs[i])) {
			p += strlen(libs[i]); /* "3.11/json/__init__.py": after the version */
			if (*p < '0' || *p > '9' || !(b = strchr(p, '/')))
				continue;
			if (strspn(p, "0123456789.") == (size_t)(b - p))
				best = b + 1;
		}
	if (best && *best)
		return best;
	b = strrchr(path, '/');
	return b && b[1] ? b + 1 : path;
}

const char *stack_frame__file(const struct bs_frame *f, const struct trace_model *m)
{
	const char *file = f->file_id ? trace_model__string(m, f->file_id) : NULL;

	return file ? file : "";
}

const char *stack_frame__func(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	const char *func = f->func_id ? trace_model__string(m, f->func_id) : NULL;
	const char *file = stack_frame__file(f, m);

	if (f->kind == STACK_FRAME_KERNEL)
		return "[kernel]";
	if (f->kind == STACK_FRAME_TRUNCATED)
		return "[truncated]";
	if (f->kind == BS_FRAME_CUT && f->line == BS_CUT_KEPT) {
		snprintf(buf, len, "[outer native frames left out (--mem-native-frames)]");
		return buf;
	}
	if (f->kind == BS_FRAME_CUT) {
		snprintf(buf, len, "[unwind stopped in %s: %s]",
			 *file ? base_name(file) : "unknown code", stack_cut_reason(f->line));
		return buf;
	}
	if (func && *func)
		return func;
	if (f->kind == BS_FRAME_PYTHON) {
		/* Freed (or its process gone) before the recorder could read it: unnamed. */
		snprintf(buf, len, "[python code 0x%llx: gone before it was read]",
			 (unsigned long long)f->addr);
		return buf;
	}
	snprintf(buf, len, "[%s+0x%llx]", *file ? base_name(file) : "unknown",
		 (unsigned long long)f->addr);
	return buf;
}

const char *stack_frame__line(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	char fbuf[512];
	const char *func = stack_frame__func(f, m, fbuf, sizeof(fbuf));
	const char *file = stack_frame__file(f, m);

	if (f->kind == BS_FRAME_PYTHON)
		snprintf(buf, len, "%s(%u): %s", file, f->line, func);
	else if (f->kind == BS_FRAME_NATIVE)
		snprintf(buf, len, "%s(0x%llx): %s", *file ? file : "[unknown]",
			 (unsigned long long)f->addr, func);
	else
		snprintf(buf, len, "%s", func);
	return buf;
}

void stack__json(const struct trace_stack *s, const struct trace_model *m, struct json *j)
{
	char buf[512];

	json__begin_array(j);
	for (__u32 i = 0; i < s->nframes; i++) {
		const struct bs_frame *f = &s->frames[i];

		json__begin_object(j);
		json__kv_str(j, "func", stack_frame__func(f, m, buf, sizeof(buf)));
		json__kv_str(j, "file", stack_frame__file(f, m));
		if (f->kind == BS_FRAME_PYTHON)
			json__kv_u64(j, "line", f->line);
		else if (f->kind == BS_FRAME_NATIVE) {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)f->addr);
			json__kv_str(j, "addr", buf);
		}
		json__end_object(j);
	}
	if (s->flags & BS_STACK_TRUNCATED) {
		json__begin_object(j);
		json__kv_str(j, "func", "[truncated]");
		json__kv_str(j, "file", "");
		json__end_object(j);
	}
	json__end_array(j);
}
