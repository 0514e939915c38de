// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shim_sum (ours): per process that sent cupti-shim records, what the shim was doing and what
 * it sent: its last state bits, CUPTI's version, how often a tracer attached, CUPTI errors
 * (count, the last one named), records it dropped (full buffers), and the records of each
 * shim family that reached the trace, as the families count them (struct family_shim's
 * counts: kernels, NVTX ranges...). `bpfsight info` prints it for traces that have shim
 * records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu.h"
#include "family_record.h"
#include "gpu_decode.h"
#include "pyfunc_records.h"
#include "shim_family.h"
#include "report.h"
#include "hmap.h"
#include "table.h"

#define MAX_COUNTS 32 /* columns of the families' counts */

/* The shim families' counts, in registry order, made once (the registry does not change). */
static struct {
	int n;
	const struct shim_count *col[MAX_COUNTS];
	__s8 fam_of[BS_REC_TYPE_MAX]; /* the family that sends a type, -1: none */
	__u8 base[FAMILY_MAX];	      /* a family's first column */
} counts = { .n = -1 };

static void counts_init(void)
{
	if (counts.n >= 0)
		return;
	counts.n = 0;
	for (int t = 0; t < BS_REC_TYPE_MAX; t++)
		counts.fam_of[t] = (__s8)shim_family__of((__u16)t, NULL);
	for_each_family_while(fit, fit.i < FAMILY_MAX) {
		const struct family_shim *fs = fit.f->record->shim;

		counts.base[fit.i] = (__u8)counts.n;
		for (const struct shim_count *c = fs ? fs->counts : NULL; c && c->key; c++)
			if (counts.n < MAX_COUNTS)
				counts.col[counts.n++] = c;
	}
}

/* Which column REC (of its type's full size, as reports are given) adds to; -1 for none. */
static int shim_count_of(const struct bs_hdr *rec)
{
	int f = rec->type < BS_REC_TYPE_MAX ? counts.fam_of[rec->type] : -1, k;
	const struct family_shim *fs = f >= 0 ? families[f]->record->shim : NULL;

	if (!fs || !fs->count_of || (k = fs->count_of(rec)) < 0)
		return -1;
	return counts.base[f] + k < counts.n ? counts.base[f] + k : -1;
}

struct shim_proc {
	__u32 pid;
	__u32 statuses; /* STATUS records */
	__u32 state, cupti_version;
	__u64 attaches, errors, dropped, seq;
	__s32 last_result;
	const char *last_error; /* model string: the failing call */
	const char *pyfunc;	/* model string: the pyfunc module's last note (its mechanism) */
	int exited;
	__u64 counts[MAX_COUNTS];
};

struct shim_sum {
	struct hmap *procs; /* {pid} -> shim_proc */
	int err;
};

static void *shim_sum__new(void)
{
	struct shim_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	counts_init();
	st->procs = hmap__new(sizeof(struct shim_proc));
	if (!st->procs) {
		free(st);
		return NULL;
	}
	return st;
}

static void shim_sum__free(void *vst)
{
	struct shim_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->procs);
	free(st);
}

static void shim_status(struct shim_proc *p, const struct bs_shim_status *s,
			const struct trace_model *m)
{
	p->statuses++;
	p->state = s->state;
	if (s->cupti_version)
		p->cupti_version = s->cupti_version;
	p->dropped += s->dropped;
	if (s->seq > p->seq)
		p->seq = s->seq;
	switch (s->event) {
	case BS_SHIM_EV_ATTACH:
		p->attaches++;
		break;
	case BS_SHIM_EV_JOIN: /* this recording's start, when it joined a session already on */
		if (!p->attaches)
			p->attaches++;
		break;
	case BS_SHIM_EV_CUPTI_ERROR:
	case BS_SHIM_EV_NO_SHIM: /* the recorder's note: why this target has no shim */
		/*
		 * A note (no CUPTI call failed: no libcuda yet, NVTX out of reach, --inject
		 * refused) is the last word, not an error: another recording's semaphores
		 * (shared by every process mapping the shim) make a job asked only for torch
		 * look for NVTX, and its note is no failure of this one.
		 */
		if (s->cupti_result)
			p->errors++;
		p->last_result = s->cupti_result;
		p->last_error = s->detail_id ? trace_model__string(m, s->detail_id) : NULL;
		break;
	case BS_SHIM_EV_PYFUNC: /* how it traces, or why not; a name never found is pyfunc's */
		if (s->cupti_result != BS_PYFUNC_NEVER_FOUND && s->detail_id)
			p->pyfunc = trace_model__string(m, s->detail_id);
		break;
	case BS_SHIM_EV_EXIT:
		p->exited = 1;
		break;
	default:
		break;
	}
}

static void shim_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct shim_sum *st = vst;
	struct shim_proc *p;
	int k = shim_count_of(rec);

	if (k < 0 && rec->type != BS_REC_SHIM_STATUS)
		return;
	p = hmap__get(st->procs, (struct hkey){ rec->pid, 0 }, 1);
	if (!p) {
		st->err = -ENOMEM;
		return;
	}
	p->pid = rec->pid;
	if (k >= 0)
		p->counts[k]++;
	else
		shim_status(p, (const void *)rec, m);
}

static int proc_cmp(const void *x, const void *y)
{
	const struct shim_proc *a = *(struct shim_proc *const *)x,
			       *b = *(struct shim_proc *const *)y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* "gpu_on,nvtx_on" */
static void state_text(__u32 state, char *buf, size_t len)
{
	size_t used = 0;
	int n;

	buf[0] = 0;
	for (__u32 b = 0; b < 32 && used < len; b++) {
		if (!(state & (1u << b)))
			continue;
		n = shim_state_names()[b]
			    ? snprintf(buf + used, len - used, "%s%s", used ? "," : "",
				       shim_state_names()[b])
			    : snprintf(buf + used, len - used, "%sbit_%u", used ? "," : "", b);
		if (n < 0)
			break;
		used += n;
	}
}

static void error_text(const struct shim_proc *p, char *buf, size_t len)
{
	const char *name = cupti_result_name(p->last_result);
	char code[24];

	if (!p->last_result && p->last_error && *p->last_error) {
		snprintf(buf, len, "%s", p->last_error); /* no CUPTI call: a note (no_shim...) */
		return;
	}
	if (!name) {
		snprintf(code, sizeof(code), "CUptiResult %d", p->last_result);
		name = code;
	}
	if (p->last_error && *p->last_error)
		snprintf(buf, len, "%s: %s (%d)", p->last_error, name, p->last_result);
	else
		snprintf(buf, len, "%s (%d)", name, p->last_result);
}

static int shim_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_PROCESS,
		C_STATE,
		C_CUPTI_VERSION,
		C_ATTACHES,
		C_CUPTI_ERRORS,
		C_LAST_ERROR,
		C_PYFUNC,
		C_DROPPED,
		C_SEQ,
		C_EXITED,
		C_COUNTS /* the families' counts, one column each: the registry's, at run time */
	};
	static const struct table_col cols[C_COUNTS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_STATE] = { "state", "Shim State", TABLE_STR },
		[C_CUPTI_VERSION] = { "cupti_version", "CUPTI", TABLE_U64, TABLE_COL_IF_ANY },
		[C_ATTACHES] = { "attaches", "Attaches", TABLE_U64 },
		[C_CUPTI_ERRORS] = { "cupti_errors", "CUPTI Errors", TABLE_U64, TABLE_COL_IF_ANY },
		[C_LAST_ERROR] = { "last_error", "Last Error or Note", TABLE_STR,
				   TABLE_COL_IF_ANY },
		[C_PYFUNC] = { "python_functions", "Python Functions", TABLE_STR,
			       TABLE_COL_IF_ANY },
		[C_DROPPED] = { "dropped", "Dropped", TABLE_U64 },
		[C_SEQ] = { "seq", "Batches", TABLE_U64 },
		[C_EXITED] = { "exited", "Exited", TABLE_U64 },
	};
	struct shim_sum *st = vst;
	struct shim_proc **rows, *p;
	size_t it = 0, n = 0;
	char buf[256];
	int err;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->procs) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((p = hmap__next(st->procs, &it, NULL)))
		rows[n++] = p;
	qsort(rows, n, sizeof(*rows), proc_cmp);
	table__add_cols(t, cols, C_COUNTS);
	for (int k = 0; k < counts.n; k++)
		table__add_col(t, &(const struct table_col){ counts.col[k]->key,
							     counts.col[k]->heading, TABLE_U64,
							     TABLE_COL_MINOR | TABLE_COL_IF_ANY });
	for (size_t i = 0; i < n; i++) {
		p = rows[i];
		table__row(t);
		table__set_u64(t, C_PID, p->pid);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, p->pid));
		if (p->statuses) { /* else no STATUS record reached the trace: state unknown */
			state_text(p->state, buf, sizeof(buf));
			table__set_str(t, C_STATE, buf);
			table__set_u64(t, C_CUPTI_VERSION, p->cupti_version);
		}
		table__set_u64(t, C_ATTACHES, p->attaches);
		table__set_u64(t, C_CUPTI_ERRORS, p->errors);
		if (p->errors || p->last_error) { /* a failure, or a note */
			error_text(p, buf, sizeof(buf));
			table__set_str(t, C_LAST_ERROR, buf);
		}
		if (p->pyfunc)
			table__set_str(t, C_PYFUNC, p->pyfunc);
		table__set_u64(t, C_DROPPED, p->dropped);
		table__set_u64(t, C_SEQ, p->seq);
		table__set_u64(t, C_EXITED, p->exited);
		for (int k = 0; k < counts.n; k++)
			table__set_u64(t, C_COUNTS + k, p->counts[k]);
	}
	err = table__err(t);
	free(rows);
	return err;
}

const struct report shim_sum = {
	.name = "shim_sum",
	.desc = "cupti-shim per Process: State, CUPTI Errors, Drops, Records",
	.new = shim_sum__new,
	.add = shim_sum__add,
	.emit = shim_sum__emit,
	.free = shim_sum__free,
	.info = &(const struct report_info){ "cupti-shim", "shim" },
};
