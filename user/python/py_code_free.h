/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The probe that lets BPF keep code objects' identities between stacks (py_codes,
 * bpf/pycode.bpf.c): a uprobe on the interpreter's code_dealloc, found as PyCode_Type's
 * tp_dealloc in the process's memory (so stripped interpreters have it too: PyCode_Type is
 * exported), attached for each process it is asked for, by a link of that process's own: no
 * other process that maps the interpreter gets its int3.
 */
#ifndef BPFSIGHT_PY_CODE_FREE_H
#define BPFSIGHT_PY_CODE_FREE_H

#include <sys/types.h>
#include <linux/types.h>

struct record_ctx;
struct py_code_free;

/* Loads bpf/pycode.bpf.c with the recording's shared maps; NULL with *ERR set. */
struct py_code_free *py_code_free__new(struct record_ctx *ctx, int *err);
void py_code_free__free(struct py_code_free *f); /* detaches */
/*
 * Probe the dealloc of PID's code objects, whose type object is at CODE_TYPE in its memory:
 * 0 once the probe is attached (now or before), else a negative errno (then BPF must not
 * keep identities for PID).
 */
int py_code_free__watch(struct py_code_free *f, pid_t pid, __u64 code_type);
/* PID exited: its probe goes. */
void py_code_free__forget(struct py_code_free *f, pid_t pid);

#endif /* BPFSIGHT_PY_CODE_FREE_H */
