/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * torch's input-bound rule (torch_input_verdict.c) as rows its claims read, whether a pass
 * over the records summed them or the server did (torch_input_from.c: stats --from): a
 * thread's waits, or a DataLoader worker's blocks and samples, at one stack's site.
 */
#ifndef BPFSIGHT_TORCH_INPUT_H
#define BPFSIGHT_TORCH_INPUT_H

#include <linux/types.h>

struct json;
struct table;
struct trace_model;
struct trace_stack;

enum input_what {
	INPUT_WAIT,    /* a thread's off-CPU time inside the DataLoader's __next__ */
	INPUT_BLOCKED, /* a worker's main thread off its CPU, at its site */
	INPUT_SAMPLES, /* a worker's main thread's CPU samples there (ns: the samples) */
};

#define INPUT_SITE_LEN 192 /* a site's text, as the claims print it */
#define INPUT_FUNC_LEN 160

struct input_row {
	__u64 thread; /* pid << 32 | tid */
	enum input_what what;
	char func[INPUT_FUNC_LEN]; /* a worker site's function (its lines summed); "" the loop */
	char site[INPUT_SITE_LEN]; /* its line, as said: "`main` (train.py:42)" */
	__u64 ns, count;
};

struct bs_frame;
/* S is in the DataLoader iterator's __next__: a trainer waiting there waits for a batch. */
int torch_input__in_loader(const struct trace_stack *s, const struct trace_model *m);
/*
 * Where a worker's stack S is in the dataset's code: its innermost frame of the job's own
 * code inside the worker loop, &torch_input__loop when S reaches the loop first, NULL without
 * Python frames.
 */
const struct bs_frame *torch_input__worker_site(const struct trace_stack *s,
						const struct trace_model *m);
extern const struct bs_frame torch_input__loop;
/* Site F's text into BUF (INPUT_SITE_LEN) and its function's key into FUNC (INPUT_FUNC_LEN). */
void torch_input__site(const struct bs_frame *f, const struct trace_model *m, char *buf,
		       char *func);
struct ex_sink;
/* What the rule reads of stack S (loader, wfunc, wsite): keys on its row (struct ex_rows). */
void torch_input__stack_keys(struct ex_sink *x, void *st, const struct trace_stack *s, int kernel);
/* The server's state table T (torch_input_waits) as rows, by model M's DataLoader workers:
 * malloc'd array of *N, NULL with *N 0 when none or out of memory. */
struct input_row *torch_input__rows_of(const struct table *t, const struct trace_model *m,
				       size_t *n);
/* A worker's main thread: PID's, a process of a DataLoader pool (torch_roles.c). */
int torch_input__is_worker(const struct trace_model *m, __u32 pid, __u32 tid);

#endif /* BPFSIGHT_TORCH_INPUT_H */
