/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How a stack of the trace reads (dump's "stack", the reports, the folded export): a frame's
 * function, file and line or address, and a marker frame's text. docs/STACKS.md.
 */
#ifndef BPFSIGHT_STACK_FORMAT_H
#define BPFSIGHT_STACK_FORMAT_H

#include <stddef.h>
#include "records.h"

/* A frame kind that is never on disk: the kernel part of a sample taken in kernel code. */
#define STACK_FRAME_KERNEL 0x100
/* Another: the marker the exports put where a truncated stack's outer frames were cut. */
#define STACK_FRAME_TRUNCATED 0x101
/* Another: cpu_sum --python's row of the samples that had no Python frame. */
#define STACK_FRAME_NO_PYTHON 0x102

/* Those two frames, for the exports to put in a stack. */
extern const struct bs_frame stack_frame_kernel, stack_frame_truncated;

struct json;
struct trace_model;
struct trace_stack;

/*
 * FRAME's function for people: its name; "[MODULE+0xADDR]" when it has none; a marker's
 * "[unwind stopped in MODULE: no frame pointers]" or "[truncated]". Uses BUF (LEN bytes).
 */
const char *stack_frame__func(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len);
/* FRAME's file: the source file (python) or the module's path (native); "" when unknown. */
const char *stack_frame__file(const struct bs_frame *f, const struct trace_model *m);
/*
 * A Python source file as py-spy names it: its path below the sys.path entry it was imported
 * from, "torch/autograd/__init__.py" of ".../site-packages/torch/autograd/__init__.py" (the
 * last site-packages or dist-packages, else the standard library's lib/pythonX.Y); else its
 * base name (the script's own directory is sys.path's first entry). A suffix of PATH.
 */
const char *stack_file__module(const char *path);
/*
 * FRAME as one line of text, as torch.profiler writes a stack's frames (Kineto's "Call stack"):
 * "FILE(LINE): FUNC" for Python, "MODULE(0xADDR): FUNC" for native code, a marker's text
 * alone. Uses BUF (LEN bytes).
 */
const char *stack_frame__line(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len);
/*
 * What tells frames apart in the exports' interning: kind, function, file, and the line
 * (Python) or address (native). Into KEY[2].
 */
void stack_frame__key(const struct bs_frame *f, __u64 key[2]);
/* The frames of S as a JSON list, innermost first; a truncated stack ends with a marker. */
void stack__json(const struct trace_stack *s, const struct trace_model *m, struct json *j);

#endif /* BPFSIGHT_STACK_FORMAT_H */
