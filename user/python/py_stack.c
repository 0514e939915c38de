// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Python frames: the per-version layout BPF walks, and naming frames (py_stack.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gil_python.h"
#include "py_mem.h"
#include "py_stack.h"
#include "hmap.h"

/*
 * Offsets from each version's internal headers (pycore_frame.h, cpython/code.h,
 * cpython/pystate.h, cpython/unicodeobject.h), x86-64, default (GIL) build; the same in
 * every patch release of a minor version. A wrong one never names a frame wrongly: the
 * code object's name and file pointers BPF read must match what is read here.
 */
enum py_lines {
	LINES_LNOTAB,	 /* 3.8, 3.9: co_lnotab, f_lasti in bytes */
	LINES_LINETABLE, /* 3.10: co_linetable (PEP 626), f_lasti in code units */
	LINES_LOCATIONS, /* 3.11+: co_linetable (locations.md), an instruction pointer */
};

struct py_layout {
	__u32 minor;
	__u32 ts_frame, cframe_frame; /* thread state -> current frame */
	/* _PyInterpreterFrame (3.11+) or PyFrameObject (3.8-3.10) */
	__u32 fr_code, fr_prev, fr_instr, fr_owner, fr_entry;
	__u32 owner_cstack;
	__u32 co_name, co_filename, co_qualname, co_linetable, co_firstlineno, co_code;
	enum py_lines lines; /* how fr_instr and co_linetable say the line */
	/*
	 * The thread state's word that says its thread holds the GIL, and the bits that say
	 * it (checked with gdb's ptype /o on 3.12.1, 3.13.0 and Debian's 3.14.10 debug build):
	 * a stack reads it with the thread state, where the GIL's own state costs a copy more.
	 */
	__u32 ts_gil, ts_gil_mask;
};

// clang-format off
static const struct py_layout layouts[] = {
	/* 3.8-3.10: tstate->frame, f_back, f_code, f_lasti (an int); no qualname. */
	{  8, 24, BS_PY_NONE,  32, 24, 104, BS_PY_NONE, BS_PY_ALL, BS_PY_NONE,
	  112, 104, 0, 120, 40, 48,   LINES_LNOTAB,   BS_PY_NONE, 0 },
	{  9, 24, BS_PY_NONE,  32, 24, 104, BS_PY_NONE, BS_PY_ALL, BS_PY_NONE,
	  112, 104, 0, 120, 40, 48,   LINES_LNOTAB,   BS_PY_NONE, 0 },
	{ 10, 24, BS_PY_NONE,  32, 24, 96,  BS_PY_NONE, BS_PY_ALL, BS_PY_NONE,
	  112, 104, 0, 120, 40, 48,   LINES_LINETABLE, BS_PY_NONE, 0 },
	{ 11, 56, 8,           32, 48, 56, 69, 68,          BS_PY_NONE,
	  120, 112, 128, 136, 72, 184,   LINES_LOCATIONS, BS_PY_NONE, 0 },
	/* 3.12: _status.active (bit 4 at 24): the thread state is its thread's current one. */
	{ 12, 56, 0,           0, 8, 56, 70, BS_PY_NONE,    3,
	  120, 112, 128, 136, 68, 192,   LINES_LOCATIONS, 24, 0x10 },
	/* 3.13: _status.holds_gil (bit 5 at 32). */
	{ 13, 72, BS_PY_NONE,  0, 8, 56, 70, BS_PY_NONE,    3,
	  120, 112, 128, 136, 68, 200,   LINES_LOCATIONS, 32, 0x20 },
	/* 3.14: f_executable is a _PyStackRef (tag bits masked in BPF), owner moved; holds_gil
	 * is an int of its own (at 36). */
	{ 14, 72, BS_PY_NONE,  0, 8, 56, 74, BS_PY_NONE,    3,
	  120, 112, 128, 136, 68, 208,   LINES_LOCATIONS, 36, ~0u },
};
// clang-format on

#define VAR_SIZE  16	     /* PyVarObject: ob_size */
#define TABLE_MAX (1u << 20) /* bytes of a location table read */

static const struct py_layout *layout_of(__u32 minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

struct py_stack {
	struct hmap *layouts; /* pid -> struct py_layout py_stack__cfg gave BPF */
	struct hmap *codes;   /* (code address, pid) -> struct code_ent */
	struct py_mem *mem;
};

/*
 * 3.13+: the offsets the interpreter itself publishes in _Py_DebugOffsets (its own build's:
 * a debug build, a patch release that moved a field). What they do not say comes from the
 * version's row, or for a version after the table's last (3.15 on) from that row: the entry
 * frames' owner value (3 from 3.12 on), the line table's format (3.11's locations), and
 * before 3.15 where the thread state says it holds the GIL. NULL when the offsets are not
 * read (PY->dbg.format 0).
 */
static const struct py_layout *from_debug_offsets(const struct gil_py *py, struct py_layout *d)
{
	const struct py_dbg *o = &py->dbg;
	const struct py_layout *l = layout_of(py->version >> 16 & 0xff);

	if (!o->format)
		return NULL;
	*d = l ? *l : layouts[sizeof(layouts) / sizeof(layouts[0]) - 1];
	d->minor = py->version >> 16 & 0xff;
	d->ts_frame = o->ts_current_frame;
	d->fr_code = o->fr_executable;
	d->fr_prev = o->fr_previous;
	d->fr_instr = o->fr_instr_ptr;
	d->fr_owner = o->fr_owner;
	d->co_name = o->co_name;
	d->co_filename = o->co_filename;
	d->co_qualname = o->co_qualname;
	d->co_linetable = o->co_linetable;
	d->co_firstlineno = o->co_firstlineno;
	d->co_code = o->co_code_adaptive;
	if (o->ts_holds_gil != PY_DBG_NONE) {
		d->ts_gil = o->ts_holds_gil; /* an int of its own */
		d->ts_gil_mask = ~0u;
	}
	return d;
}

int py_stack__table_check(const struct gil_py *py, char *field, size_t len)
{
	const struct py_layout *l = layout_of(py->version >> 16 & 0xff);
	struct py_layout d;
	// clang-format off
	static const struct { const char *name; size_t off; } fields[] = {
#define F(x) { #x, offsetof(struct py_layout, x) }
		F(ts_frame), F(fr_code), F(fr_prev), F(fr_instr), F(fr_owner), F(co_name),
		F(co_filename), F(co_qualname), F(co_linetable), F(co_firstlineno), F(co_code),
#undef F
	};
	// clang-format on

	if (!l || !from_debug_offsets(py, &d))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		__u32 a, b;

		memcpy(&a, (const char *)l + fields[i].off, 4);
		memcpy(&b, (const char *)&d + fields[i].off, 4);
		if (a != b) {
			snprintf(field, len, "%s: %u in the table, %u in _Py_DebugOffsets",
				 fields[i].name, a, b);
			return 1;
		}
	}
	return 0;
}

int py_stack__cfg(struct py_stack *ps, pid_t pid, const struct gil_py *py, struct bs_py_cfg *out)
{
	__u32 minor = py->version >> 16 & 0xff;
	const struct py_layout *l = minor >= 13 ? NULL : layout_of(minor);
	struct py_layout d, *kept;

	if ((py->version >> 24) != 3 || py->free_threaded)
		return -ENOTSUP;
	if (minor >= 13)
		l = from_debug_offsets(py, &d);
	if (!l)
		return -ENOTSUP;
	kept = hmap__get(ps->layouts, (struct hkey){ (__u64)pid, 0 }, 1);
	if (!kept)
		return -ENOMEM;
	*kept = *l;
	*out = (struct bs_py_cfg){
		.locked = py->cfg.locked,
		.holder = py->cfg.holder,
		.tid_off = py->cfg.tid_off,
		.pthread_tid_off = py->cfg.pthread_tid_off,
		.ts_frame = l->ts_frame,
		.cframe_frame = l->cframe_frame,
		.fr_code = l->fr_code,
		.fr_prev = l->fr_prev,
		.fr_instr = l->fr_instr,
		.fr_owner = l->fr_owner,
		.fr_entry = l->fr_entry,
		.owner_cstack = l->owner_cstack,
		.co_name = l->co_name,
		.co_filename = l->co_filename,
		.co_firstlineno = l->co_firstlineno,
		/* A thread state names its thread by native_thread_id (3.11+) or by thread_id,
		 * its pthread_t, which the stack walk matches with the task's fs base (3.8-3.10). */
		.interp = py->interp,
		.threads_head = py->threads_head_off,
		.ts_gil = l->ts_gil,
		.ts_gil_mask = l->ts_gil_mask,
	};
	return 0;
}

/* A code object read once: its names, first line and location table. */
struct code_ent {
	__u64 name, file; /* the pointers it had (identity) */
	__u32 pid, first;
	char *func, *path;
	__u8 *table;
	size_t table_len;
};

struct py_stack *py_stack__new(void)
{
	struct py_stack *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->layouts = hmap__new(sizeof(struct py_layout));
	ps->codes = hmap__new(sizeof(struct code_ent));
	ps->mem = py_mem__new();
	if (!ps->layouts || !ps->codes || !ps->mem) {
		hmap__free(ps->layouts);
		hmap__free(ps->codes);
		py_mem__free(ps->mem);
		free(ps);
		return NULL;
	}
	return ps;
}

static void code_clear(struct code_ent *e)
{
	free(e->func);
	free(e->path);
	free(e->table);
	memset(e, 0, sizeof(*e));
}

void py_stack__free(struct py_stack *ps)
{
	size_t it = 0;
	struct code_ent *e;

	if (!ps)
		return;
	while ((e = hmap__next(ps->codes, &it, NULL)))
		code_clear(e);
	hmap__free(ps->layouts);
	hmap__free(ps->codes);
	py_mem__free(ps->mem);
	free(ps);
}

void py_stack__forget(struct py_stack *ps, pid_t pid)
{
	size_t it = 0;
	struct code_ent *e;

	while ((e = hmap__next(ps->codes, &it, NULL)))
		if (e->pid == (__u32)pid)
			code_clear(e); /* an empty entry: a miss from now on */
	hmap__del(ps->layouts, (struct hkey){ (__u64)pid, 0 });
	py_mem__forget(ps->mem, pid);
}

static int mem_read(struct py_stack *ps, pid_t pid, __u64 addr, void *buf, size_t len)
{
	return py_mem__read(ps->mem, pid, addr, buf, len);
}

static int mem_u64(struct py_stack *ps, pid_t pid, __u64 addr, __u64 *v)
{
	return py_mem__read(ps->mem, pid, addr, v, sizeof(*v));
}

static __u32 varint(const __u8 *t, size_t len, size_t *pos)
{
	__u32 v = 0, shift = 0;
	__u8 b;

	do {
		if (*pos >= len || shift > 28)
			return v;
		b = t[(*pos)++];
		v |= (__u32)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static __s32 svarint(const __u8 *t, size_t len, size_t *pos)
{
	__u32 v = varint(t, len, pos);

	return v & 1 ? -(__s32)(v >> 1) : (__s32)(v >> 1);
}

/*
 * CPython 3.11+'s location table (Objects/locations.md): entries of 1-8 code units, each a
 * header byte (bit 7 set, code in bits 3-6, length - 1 in bits 0-2) and its data: 15 no
 * location, 14 long form (line delta, end line, columns), 13 line delta only, 10-12 one
 * line (delta code - 10) with two column bytes, 0-9 the same line with one column byte.
 */
__u32 py_stack__line(const __u8 *t, size_t len, __u32 first, __s64 index)
{
	__s64 line = first, addr = 0;
	size_t pos = 0;

	if (index < 0)
		return first; /* not started yet: its first line */
	while (pos < len) {
		__u8 h = t[pos++];
		int code = h >> 3 & 15, n = (h & 7) + 1, none = 0;

		if (!(h & 0x80))
			return 0; /* out of step: no answer rather than a wrong one */
		switch (code) {
		case 15:
			none = 1;
			break;
		case 14:
			line += svarint(t, len, &pos);
			varint(t, len, &pos);
			varint(t, len, &pos);
			varint(t, len, &pos);
			break;
		case 13:
			line += svarint(t, len, &pos);
			break;
		case 10:
		case 11:
		case 12:
			line += code - 10;
			pos += 2;
			break;
		default:
			pos += 1;
			break;
		}
		if (index < addr + n)
			return none || line <= 0 ? 0 : (__u32)line;
		addr += n;
	}
	return 0;
}

/*
 * 3.10's co_linetable (PEP 626, Objects/lnotab_notes.txt): pairs of an unsigned bytecode
 * delta and a signed line delta (-128: no line) from line FIRST; the line of byte OFF.
 */
__u32 py_stack__line310(const __u8 *t, size_t len, __u32 first, __s64 off)
{
	__s64 line = first, addr = 0;

	if (off < 0)
		return first;
	for (size_t i = 0; i + 1 < len; i += 2) {
		__s64 end = addr + t[i];
		__s8 dl = (__s8)t[i + 1];

		if (dl != -128)
			line += dl;
		if (off >= addr && off < end)
			return dl == -128 || line <= 0 ? 0 : (__u32)line;
		addr = end;
	}
	return 0;
}

/*
 * 3.8-3.9's co_lnotab: pairs of an unsigned bytecode increment and a signed line increment
 * from line FIRST; the line of byte OFF (the last pair whose address is not past it).
 */
__u32 py_stack__lnotab(const __u8 *t, size_t len, __u32 first, __s64 off)
{
	__s64 line = first, addr = 0;

	if (off < 0)
		return first;
	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (__s8)t[i + 1];
	}
	return line <= 0 ? 0 : (__u32)line;
}

/* The code object's identity now: 0, or -ESTALE when it is not the one F saw. */
static int code_same(struct py_stack *ps, pid_t pid, const struct py_layout *l,
		     const struct bs_py_frame *f, __u64 file, __u64 *name, __u64 *path)
{
	__u64 hash = 0;
	__s32 first = 0;

	if (!py_mem__is(ps->mem, pid, f->code, PY_KIND_CODE))
		return -ESTALE;
	if (mem_u64(ps, pid, f->code + l->co_name, name) ||
	    mem_u64(ps, pid, f->code + l->co_filename, path) ||
	    mem_read(ps, pid, f->code + l->co_firstlineno, &first, sizeof(first)) ||
	    mem_u64(ps, pid, *name + BS_PY_STR_HASH, &hash))
		return -EIO;
	if (BS_PY_NAME_ID(*name, hash) != f->name || BS_PY_FILE_ID(*path, first) != file)
		return -ESTALE; /* another object lives there now */
	return 0;
}

/*
 * Read the code object at F->code into E: only while it is alive and the one BPF saw, before
 * and after every read (the process runs meanwhile: it may free it, and pymalloc reuses the
 * memory for the next object of its size).
 */
static int code_read(struct py_stack *ps, pid_t pid, const struct py_layout *l,
		     const struct bs_py_frame *f, __u64 file, struct code_ent *e)
{
	__u64 name = 0, path = 0, qual = 0, table = 0, tlen = 0, n2, p2;
	__s32 first = 0;
	int err = code_same(ps, pid, l, f, file, &name, &path);

	if (err)
		return err;
	if (mem_read(ps, pid, f->code + l->co_firstlineno, &first, sizeof(first)) ||
	    (l->co_qualname && mem_u64(ps, pid, f->code + l->co_qualname, &qual)) ||
	    mem_u64(ps, pid, f->code + l->co_linetable, &table) ||
	    !py_mem__is(ps->mem, pid, table, PY_KIND_BYTES) ||
	    mem_u64(ps, pid, table + VAR_SIZE, &tlen))
		return -EIO;
	e->func = py_mem__str(ps->mem, pid, l->minor, qual ? qual : name);
	e->path = py_mem__str(ps->mem, pid, l->minor, path);
	if (tlen && tlen <= TABLE_MAX && (e->table = malloc(tlen))) {
		if (mem_read(ps, pid, table + PY_BYTES_SVAL, e->table, tlen)) {
			free(e->table);
			e->table = NULL;
		} else {
			e->table_len = tlen;
		}
	}
	if (!e->func || !e->path) {
		code_clear(e);
		return -EIO;
	}
	err = code_same(ps, pid, l, f, file, &n2, &p2);
	if (err || n2 != name || p2 != path) {
		code_clear(e);
		return err ? err : -ESTALE;
	}
	e->name = f->name;
	e->file = file;
	e->pid = pid;
	e->first = first > 0 ? first : 0;
	return 0;
}

int py_stack__name(struct py_stack *ps, pid_t pid, __u32 minor, const struct bs_py_frame *f,
		   struct py_frame_name *out)
{
	const struct py_layout *l = hmap__get(ps->layouts, (struct hkey){ (__u64)pid, 0 }, 0);
	__u64 file = f->file & ~BS_PY_FRAME_ENTRY;
	struct code_ent *e;
	__s64 index;
	int err;

	if (!l)
		l = layout_of(minor);
	if (!l || !f->code)
		return -ENOTSUP;
	e = hmap__get(ps->codes, (struct hkey){ f->code, (__u64)pid }, 1);
	if (!e)
		return -ENOMEM;
	if (!e->func || e->name != f->name || e->file != file) {
		code_clear(e);
		err = code_read(ps, pid, l, f, file, e);
		if (err)
			return err;
	}
	out->func = e->func;
	out->file = e->path;
	out->line = 0;
	if (!e->table)
		return 0;
	switch (l->lines) {
	case LINES_LOCATIONS: /* the code unit the instruction pointer is at */
		index = ((__s64)f->instr - (__s64)(f->code + l->co_code)) / 2;
		out->line = py_stack__line(e->table, e->table_len, e->first, index);
		break;
	case LINES_LINETABLE: /* f_lasti (an int; BPF read a word) counts code units */
		out->line = py_stack__line310(e->table, e->table_len, e->first,
					      2 * (__s64)(__s32)f->instr);
		break;
	case LINES_LNOTAB: /* f_lasti counts bytes */
		out->line = py_stack__lnotab(e->table, e->table_len, e->first, (__s32)f->instr);
		break;
	}
	/*
	 * An instruction with no line of its own (3.12's RESUME that opens a module, a frame
	 * sampled before its first line ran) is the code's start: its first line, never 0.
	 */
	if (!out->line)
		out->line = e->first;
	return 0;
}
