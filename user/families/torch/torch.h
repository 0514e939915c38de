/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * torch family: PyTorch's own ranges (ops, backward ops, user scopes) from a RecordFunction
 * callback the cupti-shim registers while a recording wants it (cupti-shim/shim_torch.c),
 * carried by the shim channel (user/shim_channel/). Record side and options in torch.c, the
 * step capture in torch_steps.c, decoders in torch_decode.c, reports in torch_op_report.c
 * and torch_step_report.c, op -> GPU work in torch_ops.c, exports in export_*_torch.c, its
 * sources of steps for the per-step reports (steps.h) in torch_step_src.c.
 * docs/TORCH.md for users.
 */
#ifndef BPFSIGHT_TORCH_H
#define BPFSIGHT_TORCH_H

#include "family.h"
#include "report.h"
#include "steps.h"
#include "torch_records.h"

struct torch_opts {
	__u32 shapes; /* --torch-shapes */
};

struct record_ctx;
struct torch_steps;

/* torch_steps.c: TORCH_STEP records; --capture-range=steps:[WAIT+]N[xREPEAT] */
int torch_steps__check(const char *arg, const char *cmd);
/* The files ARG writes: REPEAT (one per window), 0 without x (one file, -o). */
__u32 torch_steps__files(const char *arg);
/* ARG: --capture-range=steps's value, NULL when the recording does not capture by steps. */
struct torch_steps *torch_steps__new(struct record_ctx *ctx, const char *arg);
/* Every torch op written: a step boundary opens or closes the gate; the last ends it all. */
void torch_steps__op(struct torch_steps *s, const struct bs_torch_op *r, const char *name);
/* 1 while a steps capture has seen no step boundary yet. */
int torch_steps__waiting(const struct torch_steps *s);
/* The recording ends: what was captured, said on stderr. */
void torch_steps__finish(struct torch_steps *s);
void torch_steps__free(struct torch_steps *s);

/* torch_roles.c: whether stack ST has a Python frame whose function name ends with FUNC
 * (a 3.11+ qualname: _BaseDataLoaderIter.__next__) in a file ending with FILE. */
struct trace_stack;
int torch_roles__in_frame(const struct trace_stack *st, const struct trace_model *m,
			  const char *func, const char *file);

/* torch_input_verdict.c: a trainer waiting for its next batch (input-bound) */
extern const struct family_verdict torch_verdict;

/* torch_decode.c */
const char *torch_scope_name(__u8 scope);
struct trace_model;
/* DataLoader workers named as such from the edges' stacks (torch_roles.c; family.name_observe). */
void torch_roles__observe(struct trace_model *m, const struct bs_hdr *rec);
/* 1 when REC is an op this reader can use (type and size). */
int torch_op__valid(const struct bs_hdr *rec);

extern const struct rec_decoder torch_decoders[];  /* torch_decode.c */
extern const struct report *const torch_reports[]; /* torch_op_report.c */
extern const struct report torch_step_sum;	   /* torch_step_report.c */
extern const struct family_export torch_export;	   /* torch_export.c */
extern const struct family_sql torch_sql;	   /* torch_input_sql.c */
extern const struct page_family torch_page;	   /* torch_page.c */
extern const struct family family_torch;	   /* torch.c */

/* Its sources of steps for the per-step reports (torch_step_src.c). */
extern const struct family_steps torch_step_sources[];

struct family_ledger;
extern const struct family_ledger torch_ledger; /* torch_ledger.c: the ledger's feed */
#endif						/* BPFSIGHT_TORCH_H */
