// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython 3.13+'s _Py_DebugOffsets decoded (py_debug_offsets.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "py_debug_offsets.h"

/*
 * Where each known version's struct _Py_DebugOffsets (Include/internal/pycore_debug_offsets.h)
 * keeps what the readers use: word indices (byte offset / 8; 0: the version has no such field),
 * from gdb's ptype /o of each (pyenv's 3.13.0, Debian's 3.14 and 3.15 debug builds) and checked
 * on the release builds' bytes (tests/unit/test_py_debug_offsets.c). Every version starts with
 * the cookie, the version, free_threaded and runtime_state{size, finalizing, interpreters_head}.
 */
struct dbg_row {
	__u32 minor;
	/* interpreter_state */
	__u8 interp_size, interp_next, threads_head, imports_modules, ceval_gil, gil_state,
		gil_enabled, gil_locked, gil_holder;
	/* thread_state */
	__u8 ts_size, ts_prev, ts_next, ts_interp, ts_current_frame, ts_thread_id, ts_native,
		ts_holds_gil;
	/* interpreter_frame */
	__u8 fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	/* code_object */
	__u8 co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_adaptive;
	/* type_object, heap_type_object */
	__u8 tp_name, tp_flags, tp_basicsize, tp_dictoffset, ht_cached_keys;
	/* dict_object, bytes_object, unicode_object */
	__u8 ma_keys, ma_values, ob_sval, str_ascii, str_compact;
};

#define RUNTIME_HEAD 5 /* runtime_state.interpreters_head, in every version */

// clang-format off
static const struct dbg_row rows[] = {
	{ .minor = 13,
	  6, 8, 9, 11, 14, 15, 16, 17, 18,
	  19, 20, 21, 22, 23, 24, 25, 0,
	  28, 29, 30, 31, 33,
	  34, 35, 36, 37, 38, 39, 43,
	  47, 49, 0, 0, 0,
	  57, 58, 66, 70, 0 },
	/* threads_main in interpreter_state; stackpointer, tlbc_index, co_tlbc, sets, floats */
	{ .minor = 14,
	  6, 8, 9, 12, 15, 16, 17, 18, 19,
	  22, 23, 24, 25, 26, 27, 28, 0,
	  31, 32, 33, 34, 36,
	  39, 40, 41, 42, 43, 44, 48,
	  53, 55, 0, 0, 0,
	  67, 68, 76, 80, 0 },
	/* thread_state: base_frame and the profiler's before thread_id, holds_gil; err_stackitem;
	 * the type's basicsize and dictoffset, heap types, str's compact size */
	{ .minor = 15,
	  6, 8, 9, 12, 15, 16, 17, 18, 19,
	  22, 23, 24, 25, 26, 30, 31, 34,
	  39, 40, 41, 42, 44,
	  47, 48, 49, 50, 51, 52, 56,
	  61, 63, 64, 65, 67,
	  79, 80, 88, 92, 93 },
};
// clang-format on

#define NROWS (sizeof(rows) / sizeof(rows[0]))

__u32 py_dbg__newest(void)
{
	return rows[NROWS - 1].minor;
}

/* The words a row reads: up to its last index. */
static size_t row_words(const struct dbg_row *r)
{
	const __u8 *b = (const __u8 *)&r->interp_size;
	size_t n = RUNTIME_HEAD;

	for (size_t i = 0; i < sizeof(*r) - offsetof(struct dbg_row, interp_size); i++)
		if (b[i] > n)
			n = b[i];
	return n + 1;
}

/* Word IX of W as an offset (PY_DBG_NONE for index 0, or a value no struct has). */
static __u32 off(const __u64 *w, __u8 ix)
{
	return ix && w[ix] < (1u << 24) ? (__u32)w[ix] : PY_DBG_NONE;
}

/* Is the field at IX said, and inside its struct of SIZE bytes? */
static int inside(const __u64 *w, __u8 ix, __u64 size)
{
	return !ix || w[ix] + 1 <= size;
}

/*
 * What the readers rely on, checked on W read as row R: each struct's offsets inside its size,
 * the relations every version has, and the fixed offsets the readers use where the table says
 * them. NULL when all hold, else the part that does not (what is missing).
 */
static const char *row_fails(const __u64 *w, const struct dbg_row *r, int ft)
{
	__u64 is = w[r->interp_size], ts = w[r->ts_size], fs = w[r->fr_size], cs = w[r->co_size];
	__u64 gil = w[r->gil_state], shift = ft ? 8 : 0;

	if (!is || is > (1u << 24) || !inside(w, r->interp_next, is) ||
	    !inside(w, r->threads_head, is) || !inside(w, r->imports_modules, is) ||
	    !inside(w, r->ceval_gil, is) || !inside(w, r->gil_state, is) || !gil ||
	    w[r->gil_enabled] != 0 || w[r->gil_locked] != gil + 16 + shift ||
	    w[r->gil_holder] != gil + 8 + shift)
		return "the interpreter state's GIL fields";
	if (!ts || ts > 65536 || w[r->ts_prev] != 0 || w[r->ts_next] != 8 ||
	    w[r->ts_interp] != 16 || !inside(w, r->ts_current_frame, ts) ||
	    !inside(w, r->ts_thread_id, ts) || w[r->ts_native] != w[r->ts_thread_id] + 8 ||
	    !inside(w, r->ts_native, ts) || !inside(w, r->ts_holds_gil, ts))
		return "the thread state's fields";
	if (!fs || fs > 1024 || w[r->fr_previous] != 8 || w[r->fr_executable] != 0 ||
	    !inside(w, r->fr_instr_ptr, fs) || !inside(w, r->fr_owner, fs))
		return "the interpreter frame's fields";
	if (!cs || cs > 1024 || w[r->co_name] != w[r->co_filename] + 8 ||
	    w[r->co_qualname] != w[r->co_name] + 8 || w[r->co_linetable] != w[r->co_qualname] + 8 ||
	    !inside(w, r->co_linetable, cs) || !inside(w, r->co_firstlineno, cs) ||
	    !inside(w, r->co_adaptive, cs))
		return "the code object's fields";
	if (w[r->tp_name] != PY_TP_NAME || w[r->tp_flags] != PY_TP_FLAGS ||
	    (r->tp_basicsize && w[r->tp_basicsize] != PY_TP_BASICSIZE) ||
	    (r->tp_dictoffset && w[r->tp_dictoffset] != PY_TP_DICTOFFSET))
		return "the type object's fields";
	if (w[r->ma_keys] != PY_DICT_KEYS || w[r->ma_values] != PY_DICT_VALUES ||
	    w[r->ob_sval] != PY_BYTES_SVAL || w[r->str_ascii] != PY_STR_ASCII_SIZE ||
	    (r->str_compact && w[r->str_compact] != PY_STR_COMPACT_SIZE))
		return "the dict, bytes and str objects' fields";
	return NULL;
}

static void fill(const __u64 *w, const struct dbg_row *r, struct py_dbg *o)
{
	o->format = r->minor;
	o->interpreters_head = off(w, RUNTIME_HEAD);
	o->interp_next = off(w, r->interp_next);
	o->threads_head = off(w, r->threads_head);
	o->imports_modules = off(w, r->imports_modules);
	o->ceval_gil = off(w, r->ceval_gil);
	o->gil_runtime_state = off(w, r->gil_state);
	o->gil_locked = off(w, r->gil_locked);
	o->gil_holder = off(w, r->gil_holder);
	o->ts_next = off(w, r->ts_next);
	o->ts_interp = off(w, r->ts_interp);
	o->ts_current_frame = off(w, r->ts_current_frame);
	o->ts_thread_id = off(w, r->ts_thread_id);
	o->ts_native_thread_id = off(w, r->ts_native);
	o->ts_holds_gil = off(w, r->ts_holds_gil);
	o->fr_previous = off(w, r->fr_previous);
	o->fr_executable = off(w, r->fr_executable);
	o->fr_instr_ptr = off(w, r->fr_instr_ptr);
	o->fr_owner = off(w, r->fr_owner);
	o->co_filename = off(w, r->co_filename);
	o->co_name = off(w, r->co_name);
	o->co_qualname = off(w, r->co_qualname);
	o->co_linetable = off(w, r->co_linetable);
	o->co_firstlineno = off(w, r->co_firstlineno);
	o->co_code_adaptive = off(w, r->co_adaptive);
	o->ht_cached_keys = off(w, r->ht_cached_keys);
}

int py_dbg__parse(const void *buf, size_t len, struct py_dbg *o, char *why, size_t wlen)
{
	__u64 w[PY_DBG_BYTES / 8] = { 0 };
	const struct dbg_row *r = NULL;
	const char *bad;
	__u32 minor;

	memset(o, 0, sizeof(*o));
	snprintf(why, wlen, "%s", "");
	if (len < 8 * (RUNTIME_HEAD + 1) || memcmp(buf, PY_DBG_COOKIE, 8))
		return -EINVAL;
	memcpy(w, buf, len < sizeof(w) ? len : sizeof(w));
	o->version = (__u32)w[1];
	o->free_threaded = w[2] != 0;
	minor = o->version >> 16 & 0xff;
	if (o->version >> 24 != 3 || minor < rows[0].minor) {
		snprintf(why, wlen, "its _Py_DebugOffsets say version %#x", o->version);
		return -ENOTSUP;
	}
	/* Its own row, or the newest for a newer release. */
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].minor <= minor)
			r = &rows[i];
	if (len < 8 * row_words(r))
		return -EINVAL;
	bad = row_fails(w, r, o->free_threaded);
	if (bad) {
		if (r->minor == minor)
			snprintf(why, wlen, "its _Py_DebugOffsets do not hold %s", bad);
		else
			snprintf(why, wlen,
				 "its _Py_DebugOffsets are laid out as no version bpfsight knows "
				 "(read as 3.%u's: %s not found)",
				 r->minor, bad);
		return -ENOTSUP;
	}
	fill(w, r, o);
	return 0;
}
