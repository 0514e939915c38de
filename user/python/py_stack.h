/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames: how BPF walks a CPython's frames (bs_py_cfg, per version from each
 * version's own headers), and naming the frames it saw by reading their code objects from
 * the process while it lives: qualified name, file, and the line of the instruction (the
 * location table). 3.8 to 3.12 by per-version tables, 3.13 on by the interpreter's own
 * _Py_DebugOffsets (docs/STACKS.md, "Versions and builds", says what is not read).
 */
#ifndef BPFSIGHT_PY_STACK_H
#define BPFSIGHT_PY_STACK_H

#include <sys/types.h>
#include <linux/types.h>
#include "records.h"

struct gil_py; /* gil_python.h */
struct py_stack;

struct py_stack *py_stack__new(void);
void py_stack__free(struct py_stack *ps);
/*
 * How BPF reads the frames of the interpreter PY describes (process PID): the per-version
 * table up to 3.12, from 3.13 on the offsets of its own _Py_DebugOffsets; kept for naming
 * PID's frames. 0, or -ENOTSUP (a version before 3.8, a free-threaded build, 3.13+ whose
 * offsets were not read).
 */
int py_stack__cfg(struct py_stack *ps, pid_t pid, const struct gil_py *py, struct bs_py_cfg *out);
/*
 * The layout PY's _Py_DebugOffsets give against the table kept for its version (3.13,
 * 3.14), on every field BPF and the naming use: 0 when equal, 1 with the first that is not
 * in FIELD (LEN bytes), -ENOENT when there is no table or no offsets. For the tests.
 */
int py_stack__table_check(const struct gil_py *py, char *field, size_t len);

struct py_frame_name {
	const char *func; /* co_qualname; valid until the next call */
	const char *file; /* co_filename */
	__u32 line;	  /* 0 when the instruction has no line */
};

/*
 * Name frame F of process PID running CPython 3.MINOR. 0, or -ESTALE when the code object
 * at F->code is not the one BPF saw (freed and its memory reused: never named after the new
 * one), or another negative errno when it cannot be read (the process is gone).
 */
int py_stack__name(struct py_stack *ps, pid_t pid, __u32 minor, const struct bs_py_frame *f,
		   struct py_frame_name *out);
/* PID exec'd or exited: its code objects and its memory are gone. */
void py_stack__forget(struct py_stack *ps, pid_t pid);

/*
 * The line of code unit INDEX in a 3.11+ location table (co_linetable) starting at line
 * FIRST: 0 when INDEX has no line or lies past the table. Exposed for the unit test.
 */
__u32 py_stack__line(const __u8 *table, size_t len, __u32 first, __s64 index);
/* 3.10's co_linetable and 3.8-3.9's co_lnotab: the line of bytecode byte OFF. */
__u32 py_stack__line310(const __u8 *table, size_t len, __u32 first, __s64 off);
__u32 py_stack__lnotab(const __u8 *table, size_t len, __u32 first, __s64 off);

#endif /* BPFSIGHT_PY_STACK_H */
