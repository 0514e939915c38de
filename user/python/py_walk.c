// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Python frames read from user space, as BPF reads them (py_walk.h). */
#include <errno.h>
#include <string.h>
#include "py_mem.h"
#include "py_walk.h"

#define TS_BYTES   256 /* a thread state's first bytes: its next, frame and tid lie there */
#define FR_BYTES   128 /* a frame's first bytes: code, previous, instruction, owner */
#define MAX_TSTATE 256 /* thread states walked */

static __u64 word_at(const __u8 *b, size_t size, __u32 off)
{
	__u64 w = 0;

	if (off != BS_PY_NONE && off + 8 <= size)
		memcpy(&w, b + off, 8);
	return w;
}

/* The thread state whose key is KEY into TS (TS_BYTES), its address; 0 when none. */
static __u64 tstate_of(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c, __u64 key, __u8 *ts)
{
	__u64 t;

	if (!c->interp || !c->threads_head)
		return 0;
	t = py_mem__u64(m, pid, c->interp + c->threads_head);
	for (int i = 0; t && i < MAX_TSTATE; i++) {
		if (py_mem__read(m, pid, t, ts, TS_BYTES))
			return 0;
		if (word_at(ts, TS_BYTES, c->tid_off) == key)
			return t;
		t = word_at(ts, TS_BYTES, 8); /* PyThreadState.next, in every version */
	}
	return 0;
}

/* The code object's identity as BPF computes it (stack_code_id) into F. */
static void code_id(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c, struct bs_py_frame *f)
{
	__u64 name = py_mem__u64(m, pid, f->code + c->co_name);
	__u64 file = py_mem__u64(m, pid, f->code + c->co_filename);
	__s32 first = 0;

	py_mem__read(m, pid, f->code + c->co_firstlineno, &first, sizeof(first));
	f->name = BS_PY_NAME_ID(name, name ? py_mem__u64(m, pid, name + BS_PY_STR_HASH) : 0);
	f->file = BS_PY_FILE_ID(file, first);
}

int py_walk__frames(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c, __u64 key,
		    struct bs_py_frame *out, int max)
{
	__u8 ts[TS_BYTES], h[FR_BYTES];
	__u64 fr;
	int k = 0;

	if (!tstate_of(m, pid, c, key, ts))
		return -ENOENT;
	fr = word_at(ts, TS_BYTES, c->ts_frame);
	if (fr && c->cframe_frame != BS_PY_NONE)
		fr = py_mem__u64(m, pid, fr + c->cframe_frame);
	/* Entry frames are skipped, not counted: room for a few of them, as in BPF. */
	for (int i = 0; fr && k < max && i < max + 32; i++) {
		/* A frame may end short of FR_BYTES at a page's end: then read the least. */
		if (py_mem__read(m, pid, fr, h, FR_BYTES) && py_mem__read(m, pid, fr, h, 80))
			break;
		fr = word_at(h, FR_BYTES, c->fr_prev);
		if (c->owner_cstack != BS_PY_NONE && c->fr_owner < FR_BYTES &&
		    h[c->fr_owner] == c->owner_cstack) {
			/* The eval loop's entry frame: the frame before it was the first it ran. */
			if (k)
				out[k - 1].file |= BS_PY_FRAME_ENTRY;
			continue;
		}
		out[k] = (struct bs_py_frame){ .code = word_at(h, FR_BYTES, c->fr_code) & ~7ull,
					       .instr = word_at(h, FR_BYTES, c->fr_instr) };
		if (out[k].code)
			code_id(m, pid, c, &out[k]);
		if (c->fr_entry == BS_PY_ALL ||
		    (c->fr_entry != BS_PY_NONE && c->fr_entry < FR_BYTES && h[c->fr_entry]))
			out[k].file |= BS_PY_FRAME_ENTRY;
		k++;
	}
	return k;
}

__u64 py_walk__gil_holder(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c)
{
	__u8 ts[TS_BYTES];
	__s32 locked = 0;
	__u64 holder;

	if (py_mem__read(m, pid, c->locked, &locked, sizeof(locked)) || locked != 1)
		return 0;
	holder = py_mem__u64(m, pid, c->holder);
	if (!holder || py_mem__read(m, pid, holder, ts, TS_BYTES))
		return 0;
	return word_at(ts, TS_BYTES, c->tid_off);
}
