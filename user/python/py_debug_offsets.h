/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * _Py_DebugOffsets: how CPython 3.13+ describes its own layout to out-of-process tools, at the
 * start of _PyRuntime (a cookie, its PY_VERSION_HEX, whether the build is free-threaded, then
 * the offsets of the runtime, interpreter and thread states, frames, code, type, dict and str
 * objects), which CPython's own remote debugging (PEP 768, `python -m pdb -p`) reads. What
 * every Python reader takes from 3.13 on (gil_python.c, py_stack.c, py_threads.c), so that a
 * patch release or a debug build that moved a field is read as it is, and a new release
 * needs no table of its own.
 *
 * The table's own layout is per minor version (3.14 and 3.15 added fields inside it): each
 * known one is a row of word indices (py_debug_offsets.c). Every row read is checked by the
 * relations its offsets must have (a thread state's prev, next and interp at 0, 8 and 16, a
 * code object's filename, name, qualname and linetable a word apart, ...). A release newer
 * than the newest row is read as that row when those relations hold (the readers' checks on
 * the live interpreter then decide); else what is missing is said.
 */
#ifndef BPFSIGHT_PY_DEBUG_OFFSETS_H
#define BPFSIGHT_PY_DEBUG_OFFSETS_H

#include <stddef.h>
#include <linux/types.h>

#define PY_DBG_COOKIE "xdebugpy"
#define PY_DBG_BYTES  1024	  /* bytes of _PyRuntime read: more than any known table */
#define PY_DBG_NONE   0xffffffffu /* a field the version's table does not have */

/*
 * What the readers take as fixed (x86-64, default build; the str sizes from 3.12 on): checked
 * against the debug offsets wherever a version's table says them (py_dbg__parse).
 */
#define PY_TP_NAME	    24	/* PyTypeObject: tp_name */
#define PY_TP_BASICSIZE	    32	/* tp_basicsize */
#define PY_TP_FLAGS	    168 /* tp_flags */
#define PY_TP_DICTOFFSET    288 /* tp_dictoffset */
#define PY_DICT_KEYS	    32	/* PyDictObject: ma_keys */
#define PY_DICT_VALUES	    40	/* ma_values */
#define PY_BYTES_SVAL	    32	/* PyBytesObject: ob_sval */
#define PY_STR_ASCII_SIZE   40	/* sizeof(PyASCIIObject) */
#define PY_STR_COMPACT_SIZE 56	/* sizeof(PyCompactUnicodeObject) */

/* The offsets the readers use, in bytes; PY_DBG_NONE where the version's table has none. */
struct py_dbg {
	__u32 version; /* PY_VERSION_HEX */
	__u32 format;  /* the minor version whose table layout it was read as: 13, 14, 15... */
	int free_threaded;
	__u32 interpreters_head; /* _PyRuntimeState: interpreters.head */
	/* PyInterpreterState */
	__u32 interp_next, threads_head, imports_modules, ceval_gil;
	__u32 gil_runtime_state, gil_locked, gil_holder; /* _gil, its locked and last_holder */
	/* PyThreadState */
	__u32 ts_next, ts_interp, ts_current_frame, ts_thread_id, ts_native_thread_id;
	__u32 ts_holds_gil; /* an int (3.15+) */
	/* _PyInterpreterFrame */
	__u32 fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	/* PyCodeObject */
	__u32 co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
	/* PyHeapTypeObject: the keys its instances share (3.15+) */
	__u32 ht_cached_keys;
};

/*
 * Decode the LEN bytes BUF at the start of _PyRuntime into OUT. 0 (OUT->format says which
 * table layout), -EINVAL when BUF is no _Py_DebugOffsets (no cookie, too short), -ENOTSUP when
 * it is one no row reads (WHY, WLEN bytes, says what is missing in a phrase).
 */
int py_dbg__parse(const void *buf, size_t len, struct py_dbg *out, char *why, size_t wlen);
/* The newest minor version whose table layout is known (the last row). */
__u32 py_dbg__newest(void);

#endif /* BPFSIGHT_PY_DEBUG_OFFSETS_H */
