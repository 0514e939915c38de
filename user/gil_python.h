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
#include "records.h"

enum gil_py_status {
	GIL_PY_NOT_PYTHON = 0, /* no _PyRuntime in any mapped file */
	GIL_PY_PENDING,	       /* python, but the interpreter is not initialised yet */
	GIL_PY_READY,	       /* cfg is usable (verified, or static and not checkable yet) */
	GIL_PY_NO_GIL,	       /* free-threaded build running without its GIL */
	GIL_PY_UNSUPPORTED,    /* python, but its GIL cannot be located: note says why */
};

struct gil_py {
	enum gil_py_status status;
	char object[PATH_MAX]; /* the ELF file with _PyRuntime, as /proc/PID/maps names it */
	char open_path[64];    /* /proc/PID/map_files/START-END: opens it, even in a container */
	__u64 dev, ino;	       /* kernel dev_t (major << 20 | minor) and inode of the file */
	__u64 runtime;	       /* &_PyRuntime in the process */
	__u32 version;	       /* PY_VERSION_HEX, or 3 << 24 | minor << 16 (only 3.X known) */
	int free_threaded;
	int initialized;  /* the main interpreter exists */
	int verified;	  /* the GIL's address and fields were checked against live memory */
	int holder_known; /* cfg.tid_off is usable */
	const char *how;  /* "offsets", "debug_offsets", "search": how the GIL was found */
	__u64 gil;	  /* &struct _gil_runtime_state */
	struct bs_gil_cfg cfg;
	char note[192]; /* what is missing or why nothing is measured ("" when nothing) */
};

struct gil_finder;

struct gil_finder *gil_finder__new(void);
void gil_finder__free(struct gil_finder *f);
/*
 * Look at process PID and fill PY (status first). Cheap to repeat: which files define
 * _PyRuntime is remembered per (dev, inode). Negative errno only when PID cannot be read.
 */
int gil_finder__inspect(struct gil_finder *f, pid_t pid, struct gil_py *py);

/*
 * The file holding the interpreter of executable EXE, before it runs: EXE itself when it
 * defines _PyRuntime, else the libpython3.X it needs, found as ld.so would (RUNPATH/RPATH with
 * $ORIGIN, LD_LIBRARY_PATH, the usual directories). 0, or -ENOENT when EXE is no python.
 */
int gil_python__interpreter_file(const char *exe, char *out, size_t len);

/*
 * The _Py_DebugOffsets of 3.13+ (the start of _PyRuntime, LEN bytes of it), decoded into
 * what the GIL needs. Exposed for the unit test. 0, or -EINVAL when BUF is no such table.
 */
struct gil_debug_offsets {
	__u64 version;
	__u64 free_threaded;
	__u64 interpreters_head; /* runtime offsets */
	__u64 interp_next;
	__u64 ceval_gil; /* interpreter offsets */
	__u64 gil_runtime_state;
	__u64 gil_locked;
	__u64 gil_holder;
	__u64 threads_head;
	__u64 ts_next; /* thread-state offsets */
	__u64 ts_interp;
	__u64 ts_thread_id;
	__u64 ts_native_thread_id;
};

int gil_debug_offsets__parse(const void *buf, size_t len, struct gil_debug_offsets *out);

#endif /* BPFSIGHT_GIL_PYTHON_H */
