/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which processes run a CPython, and where its runtime and GIL are, through the uprobe
 * manager's discovery (the one maps reader and ELF reader): a listener keeps the files that
 * define _PyRuntime, and a look at a process picks its interpreter as the gil family does
 * (gil_python__is_interpreter) and inspects its memory (gil_python__inspect). For families
 * that read Python state without probing the interpreter (cpu's Python frames).
 */
#ifndef BPFSIGHT_PY_FIND_H
#define BPFSIGHT_PY_FIND_H

#include <sys/types.h>

struct gil_py;
struct uprobe_mgr;
struct py_find;

/* Listens to M from now on: add it before the manager's first scan. */
struct py_find *py_find__new(struct uprobe_mgr *m, int *err);
void py_find__free(struct py_find *f);
/*
 * Look at PID and fill PY: status GIL_PY_NOT_PYTHON when no interpreter is mapped. 0, or a
 * negative errno when PID cannot be looked at (gone).
 */
int py_find__inspect(struct py_find *f, pid_t pid, struct gil_py *py);

#endif /* BPFSIGHT_PY_FIND_H */
