/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finding the GIL of a running CPython, from outside: the ELF file that defines _PyRuntime
 * (the python executable when libpython is linked in, as Debian's /usr/bin/python3.X, or
 * libpython3.X.so), the interpreter version, and where the GIL's fields are in memory:
 *   3.8-3.12  per-version offsets from _PyRuntime (checked against the live memory; when the
 *             check fails, the GIL is searched for by its shape inside _PyRuntime);
 *   3.13+     _Py_DebugOffsets, which CPython keeps at the start of _PyRuntime for debuggers.
 * Also how to turn a PyThreadState into an OS thread id: native_thread_id (3.11+), or the
 * pthread_t in thread_id and the tid inside glibc's struct pthread (offset learnt from the
 * live threads). Free-threaded builds (3.13t+) are recognised, and whether their GIL is on.
 */
#ifndef BPFSIGHT_GIL_PYTHON_H
#define BPFSIGHT_GIL_PYTHON_H

#include <limits.h>
#include <sys/types.h>
#include <linux/types.h>
#include "gil_records.h"
#include "py_debug_offsets.h"

enum gil_py_status {
	GIL_PY_NOT_PYTHON = 0, /* no _PyRuntime in any mapped file */
	GIL_PY_PENDING,	       /* python, but the interpreter is not initialised yet */
	GIL_PY_READY,	       /* cfg is usable (verified, or static and not checkable yet) */
	GIL_PY_NO_GIL,	       /* free-threaded build running without its GIL */
	GIL_PY_UNSUPPORTED,    /* python, but its GIL cannot be located: note says why */
};

struct elf_syms;

/* What an interpreter file says about python (its symbols and name), read once per file. */
struct gil_pyfile {
	__u64 rt_vaddr, rt_size; /* _PyRuntime */
	__u64 pyver_vaddr;	 /* Py_Version (3.11+), 0 = none */
	__u64 code_type_vaddr;	 /* PyCode_Type, 0 = none */
	__u32 name_minor;	 /* 3.X from the file name, 0 = none */
	int name_ft;		 /* "python3.13t" */
};

/* 0 with PF filled when SYMS (of the file named SHOWN) define _PyRuntime, else -ENOENT. */
int gil_pyfile__read(const struct elf_syms *syms, const char *shown, struct gil_pyfile *pf);

struct gil_py {
	enum gil_py_status status;
	char object[PATH_MAX]; /* the ELF file with _PyRuntime, as /proc/PID/maps names it */
	__u64 runtime;	       /* &_PyRuntime in the process */
	__u64 code_type;       /* &PyCode_Type in the process, 0 = unknown (py_find sets it) */
	__u32 version;	       /* PY_VERSION_HEX, or 3 << 24 | minor << 16 (only 3.X known) */
	int free_threaded;
	int initialized;	/* the main interpreter exists */
	int verified;		/* the GIL's address and fields were checked against live memory */
	int holder_known;	/* cfg.tid_off is usable */
	const char *how;	/* "offsets", "debug_offsets", "search": how the GIL was found */
	__u64 gil;		/* &struct _gil_runtime_state */
	__u64 interp;		/* the main PyInterpreterState (verified), 0 = unknown */
	__u32 threads_head_off; /* its threads.head: the list of its thread states */
	struct bs_gil_cfg cfg;
	struct py_dbg dbg; /* 3.13+ (how "debug_offsets"), else all 0 */
	char note[256];	   /* what is missing or why nothing is measured ("" when nothing) */
};

/*
 * Look at process PID, which maps the interpreter file PF with _PyRuntime at RUNTIME, and
 * fill PY (status first; not OBJECT). Negative errno only when PID's memory cannot be read.
 * Which process maps which file is the caller's (uprobe_mgr's discovery, in user/families/gil/gil.c).
 */
int gil_python__inspect(pid_t pid, const struct gil_pyfile *pf, __u64 runtime, struct gil_py *py);
/*
 * Of the files defining _PyRuntime that a process maps (SHOWN: as its maps name it), the
 * interpreter is the executable EXE itself or a file named like python (libpython3.X.so):
 * an extension module embedding another runtime is neither. Callers take the first in
 * address order.
 */
int gil_python__is_interpreter(const char *shown, const char *exe);

#endif /* BPFSIGHT_GIL_PYTHON_H */
