// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython 3.13+'s _Py_DebugOffsets decoded (user/python/py_debug_offsets.c): the tables of real
 * releases (3.13.0, Debian's 3.14.10 and 3.15.2, word 0 the cookie) field by field; a
 * free-threaded one; a release newer than the last row, read as it where its relations hold
 * and refused, saying what is missing, where they do not; bad input. Then the interpreters
 * installed here (pyenv's 3.13, /opt/cpython's 3.14 and 3.15 and their debug builds): the
 * offsets their files' _PyRuntime holds give the layout py_stack.c's kept tables have for
 * 3.13 and 3.14, on every field that is read.
 */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include "elf_syms.h"
#include "gil_python.h"
#include "py_debug_offsets.h"
#include "py_stack.h"
#include "unit.h"

// clang-format off
/* CPython 3.13.0 (pyenv's libpython3.13.so.1.0): the whole table, 584 bytes. */
static const __u64 py313[73] = {
	0, 0x30d00f0, 0x0, 0x452b8, 0x260, 0x278, 0x2f998, 0x1c68, 0x1c60, 0x1cb0, 0x1ce8, 0x1de8,
	0x1dd8, 0x1de0, 0x10, 0x1e48, 0x0, 0x1e58, 0x1e50, 0x130, 0x0, 0x8, 0x10, 0x48, 0x98, 0xa0,
	0xe8, 0x20, 0x50, 0x8, 0x0, 0x38, 0x48, 0x46, 0xd0, 0x70, 0x78, 0x80, 0x88, 0x44, 0x34, 0x60,
	0x68, 0xc8, 0x10, 0x8, 0x1a0, 0x18, 0x58, 0xa8, 0x20, 0x18, 0x10, 0x28, 0x18, 0x10, 0x30,
	0x20, 0x28, 0x18, 0x10, 0x20, 0x10, 0x18, 0x28, 0x10, 0x20, 0x40, 0x20, 0x10, 0x28, 0xf0,
	0xc8,
};

/* Debian unstable's CPython 3.14.10 (python3.14, stripped): 760 bytes. */
static const __u64 py314[95] = {
	0, 0x30e0af0, 0x0, 0x4d4c8, 0x310, 0x328, 0x37248, 0x1c70, 0x1c68, 0x1cb0, 0x1cc0, 0x1cf0,
	0x1e08, 0x1df8, 0x1e00, 0x10, 0x1e68, 0x0, 0x1e78, 0x1e70, 0x1f38, 0x0, 0x340, 0x0, 0x8, 0x10,
	0x48, 0x98, 0xa0, 0xe8, 0x20, 0x58, 0x8, 0x0, 0x38, 0x50, 0x4a, 0x40, 0x0, 0xd8, 0x70, 0x78,
	0x80, 0x88, 0x44, 0x34, 0x60, 0x68, 0xd0, 0x0, 0x10, 0x8, 0x1a0, 0x18, 0x58, 0xa8, 0x28, 0x20,
	0x10, 0x28, 0x18, 0x10, 0xc8, 0x18, 0x28, 0x20, 0x30, 0x20, 0x28, 0x18, 0x10, 0x20, 0x10,
	0x18, 0x28, 0x10, 0x20, 0x40, 0x20, 0x10, 0x28, 0x108, 0xc0, 0xa0, 0x18, 0x48, 0x43, 0x0, 0x8,
	0x18, 0x130, 0x1f8c, 0x0, 0x4, 0x200,
};

/* Debian unstable's CPython 3.15.2 (python3.15, stripped): 888 bytes. */
static const __u64 py315[111] = {
	0, 0x30f02f0, 0x0, 0x549c8, 0x390, 0x3a8, 0x373c0, 0x1c68, 0x1c60, 0x1ca8, 0x1cb8, 0x1ce8,
	0x1da8, 0x1d98, 0x1da0, 0x10, 0x1e38, 0x0, 0x1e48, 0x1e40, 0x1f08, 0x0, 0x378, 0x0, 0x8, 0x10,
	0x48, 0x50, 0x58, 0x60, 0xb0, 0xb8, 0x100, 0x20, 0x24, 0x28, 0x88, 0x120, 0x0, 0x58, 0x8, 0x0,
	0x38, 0x50, 0x4a, 0x40, 0x0, 0xd8, 0x70, 0x78, 0x80, 0x88, 0x44, 0x34, 0x60, 0x68, 0xd0, 0x0,
	0x10, 0x8, 0x1a8, 0x18, 0x58, 0xa8, 0x20, 0x120, 0x3b0, 0x378, 0x28, 0x20, 0x10, 0x28, 0x18,
	0x10, 0xc8, 0x18, 0x28, 0x20, 0x30, 0x20, 0x28, 0x18, 0x10, 0x20, 0x10, 0x18, 0x28, 0x10,
	0x20, 0x40, 0x20, 0x10, 0x28, 0x38, 0xb0, 0x70, 0x78, 0x460, 0x68, 0xa0, 0x18, 0x48, 0x43,
	0x0, 0x8, 0x18, 0x158, 0x1f5c, 0x0, 0x4, 0x200,
};
// clang-format on

static __u64 w[PY_DBG_BYTES / 8];
static char why[160];

/* TABLE (N words) into w, its cookie in word 0. */
static void load(const __u64 *table, size_t n)
{
	memset(w, 0, sizeof(w));
	memcpy(w, table, n * 8);
	memcpy(w, PY_DBG_COOKIE, 8);
}

static int parse(size_t len, struct py_dbg *o)
{
	return py_dbg__parse(w, len, o, why, sizeof(why));
}

/* The fields every version's table has, as 3.13 to 3.15 keep them. */
static void check_common(const struct py_dbg *o)
{
	ASSERT_EQ(o->free_threaded, 0, "not free-threaded");
	ASSERT_EQ(o->interp_next,
		  o->format == 13   ? 0x1c60
		  : o->format == 14 ? 0x1c68
				    : 0x1c60,
		  "interp.next");
	ASSERT_EQ(o->ceval_gil, 0x10, "interp.ceval.gil");
	ASSERT_EQ(o->ts_next, 8, "tstate.next");
	ASSERT_EQ(o->ts_interp, 16, "tstate.interp");
	ASSERT_EQ(o->ts_current_frame, 0x48, "tstate.current_frame");
	ASSERT_EQ(o->fr_previous, 8, "frame.previous");
	ASSERT_EQ(o->fr_executable, 0, "frame.f_executable");
	ASSERT_EQ(o->fr_instr_ptr, 0x38, "frame.instr_ptr");
	ASSERT_EQ(o->co_filename, 0x70, "code.co_filename");
	ASSERT_EQ(o->co_name, 0x78, "code.co_name");
	ASSERT_EQ(o->co_qualname, 0x80, "code.co_qualname");
	ASSERT_EQ(o->co_linetable, 0x88, "code.co_linetable");
	ASSERT_EQ(o->co_firstlineno, 0x44, "code.co_firstlineno");
}

static void test_debug_offsets_313(void)
{
	struct py_dbg o;

	load(py313, 73);
	if (!ASSERT_EQ(parse(73 * 8, &o), 0, why))
		return;
	ASSERT_EQ(o.version, 0x30d00f0, "version 3.13.0 final");
	ASSERT_EQ(o.format, 13, "read as 3.13's table");
	check_common(&o);
	ASSERT_EQ(o.interpreters_head, 0x278, "runtime.interpreters.head");
	ASSERT_EQ(o.threads_head, 0x1cb0, "interp.threads.head");
	ASSERT_EQ(o.imports_modules, 0x1de8, "interp.imports.modules");
	ASSERT_EQ(o.gil_runtime_state, 0x1e48, "interp._gil");
	ASSERT_EQ(o.gil_locked, 0x1e58, "_gil.locked");
	ASSERT_EQ(o.gil_holder, 0x1e50, "_gil.last_holder");
	ASSERT_EQ(o.ts_thread_id, 0x98, "tstate.thread_id");
	ASSERT_EQ(o.ts_native_thread_id, 0xa0, "tstate.native_thread_id");
	ASSERT_EQ(o.ts_holds_gil, PY_DBG_NONE, "holds_gil: not in 3.13's table");
	ASSERT_EQ(o.fr_owner, 0x46, "frame.owner");
	ASSERT_EQ(o.co_code_adaptive, 0xc8, "code.co_code_adaptive");
	ASSERT_EQ(o.ht_cached_keys, PY_DBG_NONE, "ht_cached_keys: not in 3.13's table");
}

/* 3.14: interpreter_state.threads_main; frame.stackpointer, tlbc_index; code.co_tlbc. */
static void test_debug_offsets_314(void)
{
	struct py_dbg o;

	load(py314, 95);
	if (!ASSERT_EQ(parse(95 * 8, &o), 0, why))
		return;
	ASSERT_EQ(o.version, 0x30e0af0, "version 3.14.10 final");
	ASSERT_EQ(o.format, 14, "read as 3.14's table");
	check_common(&o);
	ASSERT_EQ(o.interpreters_head, 0x328, "runtime.interpreters.head");
	ASSERT_EQ(o.threads_head, 0x1cb0, "interp.threads.head");
	ASSERT_EQ(o.imports_modules, 0x1e08, "interp.imports.modules");
	ASSERT_EQ(o.gil_runtime_state, 0x1e68, "interp._gil");
	ASSERT_EQ(o.gil_locked, 0x1e78, "_gil.locked");
	ASSERT_EQ(o.gil_holder, 0x1e70, "_gil.last_holder");
	ASSERT_EQ(o.ts_thread_id, 0x98, "tstate.thread_id");
	ASSERT_EQ(o.ts_native_thread_id, 0xa0, "tstate.native_thread_id");
	ASSERT_EQ(o.ts_holds_gil, PY_DBG_NONE, "holds_gil: not in 3.14's table");
	ASSERT_EQ(o.fr_owner, 0x4a, "frame.owner moved");
	ASSERT_EQ(o.co_code_adaptive, 0xd0, "code.co_code_adaptive moved");
}

/*
 * 3.15: base_frame, last_profiled_frame and its sequence before thread_id in thread_state,
 * then holds_gil; the type's basicsize and dictoffset, heap types' ht_cached_keys (888: 880
 * before), str's compact size.
 */
static void test_debug_offsets_315(void)
{
	struct py_dbg o;

	load(py315, 111);
	if (!ASSERT_EQ(parse(111 * 8, &o), 0, why))
		return;
	ASSERT_EQ(o.version, 0x30f02f0, "version 3.15.2 final");
	ASSERT_EQ(o.format, 15, "read as 3.15's table");
	check_common(&o);
	ASSERT_EQ(o.interpreters_head, 0x3a8, "runtime.interpreters.head");
	ASSERT_EQ(o.threads_head, 0x1ca8, "interp.threads.head");
	ASSERT_EQ(o.imports_modules, 0x1da8, "interp.imports.modules");
	ASSERT_EQ(o.gil_runtime_state, 0x1e38, "interp._gil");
	ASSERT_EQ(o.gil_locked, 0x1e48, "_gil.locked");
	ASSERT_EQ(o.gil_holder, 0x1e40, "_gil.last_holder");
	ASSERT_EQ(o.ts_thread_id, 0xb0, "tstate.thread_id after the profiler's fields");
	ASSERT_EQ(o.ts_native_thread_id, 0xb8, "tstate.native_thread_id");
	ASSERT_EQ(o.ts_holds_gil, 0x24, "tstate.holds_gil");
	ASSERT_EQ(o.fr_owner, 0x4a, "frame.owner");
	ASSERT_EQ(o.co_code_adaptive, 0xd0, "code.co_code_adaptive");
	ASSERT_EQ(o.ht_cached_keys, 0x378, "heap type's ht_cached_keys");
	ASSERT_EQ(py_dbg__newest(), 15, "the newest table known");
}

/* A free-threaded build: `int enabled` first in the GIL's struct moves locked and holder. */
static void test_debug_offsets_free_threaded(void)
{
	struct py_dbg o;

	load(py314, 95);
	w[2] = 1;
	ASSERT_EQ(parse(95 * 8, &o), -ENOTSUP, "the default build's GIL offsets, free-threaded");
	w[18] += 8; /* locked */
	w[19] += 8; /* last_holder */
	if (!ASSERT_EQ(parse(95 * 8, &o), 0, why))
		return;
	ASSERT_EQ(o.free_threaded, 1, "free-threaded");
	ASSERT_EQ(o.gil_locked, 0x1e80, "locked after enabled");
	ASSERT_EQ(o.gil_holder, 0x1e78, "holder after enabled");
}

/*
 * A release newer than the last row: its table read as the last row's where the relations
 * hold there (a version with no new field inside it); refused, saying which part is not
 * found, where they do not (3.16 with a field more in the thread state before its ids).
 */
static void test_debug_offsets_newer_release(void)
{
	struct py_dbg o;

	load(py315, 111);
	w[1] = 0x31000a0; /* 3.16.0a0 */
	if (!ASSERT_EQ(parse(111 * 8, &o), 0, why))
		return;
	ASSERT_EQ(o.version, 0x31000a0, "its own version");
	ASSERT_EQ(o.format, 15, "read as 3.15's table");
	ASSERT_EQ(o.ts_native_thread_id, 0xb8, "tstate.native_thread_id");
	/* One more word inside thread_state, before thread_id: every later field one word on. */
	memmove(w + 28, w + 27, (111 - 27) * 8);
	w[27] = 0x200;
	ASSERT_EQ(parse(112 * 8, &o), -ENOTSUP, "3.16 laid out otherwise");
	ASSERT_TRUE(strstr(why, "laid out as no version bpfsight knows") &&
			    strstr(why, "read as 3.15's") && strstr(why, "thread state"),
		    why);
}

static void test_debug_offsets_bad(void)
{
	struct py_dbg o;

	load(py313, 73);
	w[0] = 0; /* no cookie: not a table (3.12 and older start _PyRuntime otherwise) */
	ASSERT_EQ(parse(73 * 8, &o), -EINVAL, "no cookie");
	load(py315, 111);
	ASSERT_EQ(parse(60 * 8, &o), -EINVAL, "cut short");
	ASSERT_EQ(parse(40, &o), -EINVAL, "shorter than the runtime's offsets");
	w[1] = 0x30c07f0; /* 3.12.7 */
	ASSERT_EQ(parse(111 * 8, &o), -ENOTSUP, "a table of a version before any");
	ASSERT_TRUE(strstr(why, "0x30c07f0") != NULL, why);
	load(py315, 111);
	w[24] = 0x18; /* tstate.next not at 8 */
	ASSERT_EQ(parse(111 * 8, &o), -ENOTSUP, "its own version's table broken");
	ASSERT_TRUE(strstr(why, "do not hold the thread state's fields") != NULL, why);
	load(py315, 111);
	w[50] = 0x90; /* co_qualname no longer right after co_name */
	ASSERT_EQ(parse(111 * 8, &o), -ENOTSUP, "code object's fields");
	ASSERT_TRUE(strstr(why, "code object") != NULL, why);
	load(py315, 111);
	w[92] = 0x30; /* sizeof(PyASCIIObject) other than what the readers take */
	ASSERT_EQ(parse(111 * 8, &o), -ENOTSUP, "str objects laid out otherwise");
	ASSERT_TRUE(strstr(why, "str") != NULL, why);
	load(py315, 111);
	w[67] = 0x2000000; /* a value no struct has */
	ASSERT_EQ(parse(111 * 8, &o), 0, why);
	ASSERT_EQ(o.ht_cached_keys, PY_DBG_NONE, "an offset out of range is none");
}

/*
 * The interpreters installed here: each file's _PyRuntime decoded, and where a table is kept
 * for its version (3.13, 3.14) the layout it gives BPF and the naming equals the table's.
 */
static void test_installed_interpreters_equal_the_tables(void)
{
	const char *opt = getenv("BPFSIGHT_OPT_CPYTHON") ?: "/opt/cpython";
	const char *root = getenv("PYENV_ROOT") ?: "/root/.pyenv";
	char pat[2][512], field[160];
	int seen[16] = { 0 }, n = 0;
	glob_t g;

	snprintf(pat[0], sizeof(pat[0]), "%s/versions/3.1[3-9].*/lib/libpython3.1[3-9].so.1.0",
		 root);
	snprintf(pat[1], sizeof(pat[1]), "%s/3.1[3-9]*/bin/python3.1[3-9]", opt);
	for (int p = 0; p < 2; p++) {
		if (glob(pat[p], 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			struct elf_syms *s = elf_syms__open(g.gl_pathv[i], NULL);
			struct gil_py py = { 0 };
			struct elf_sym sym;
			__u32 minor;
			int err;

			if (!ASSERT_TRUE(s && !elf_syms__find_data(s, "_PyRuntime", &sym) &&
						 !elf_syms__read(s, sym.vaddr, w, sizeof(w)),
					 g.gl_pathv[i])) {
				elf_syms__free(s);
				continue;
			}
			elf_syms__free(s);
			err = py_dbg__parse(w, sizeof(w), &py.dbg, why, sizeof(why));
			if (!ASSERT_EQ(err, 0, g.gl_pathv[i]))
				continue;
			py.version = py.dbg.version;
			minor = py.version >> 16 & 0xff;
			ASSERT_EQ(py.dbg.format, minor, g.gl_pathv[i]);
			err = py_stack__table_check(&py, field, sizeof(field));
			if (minor <= 14 && !ASSERT_EQ(err, 0, g.gl_pathv[i]))
				unit_fail("%s: %s", g.gl_pathv[i], field);
			if (minor > 14)
				ASSERT_EQ(err, -ENOENT, "no table kept after 3.14");
			seen[minor & 15] = 1;
			n++;
		}
		globfree(&g);
	}
	if (!n)
		UNIT_SKIP("no CPython 3.13+ under %s/versions or %s (make deps installs 3.14 and "
			  "3.15)",
			  root, opt);
	else if (!seen[13] || !seen[14])
		UNIT_SKIP("%d interpreters read, but not both 3.13 and 3.14 (pyenv's and make "
			  "deps')",
			  n);
}

int main(void)
{
	RUN_TEST(test_debug_offsets_313);
	RUN_TEST(test_debug_offsets_314);
	RUN_TEST(test_debug_offsets_315);
	RUN_TEST(test_debug_offsets_free_threaded);
	RUN_TEST(test_debug_offsets_newer_release);
	RUN_TEST(test_debug_offsets_bad);
	RUN_TEST(test_installed_interpreters_equal_the_tables);
	return UNIT_EXIT();
}
