// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Python's thread names read from a live CPython (py_threads.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gil_python.h"
#include "py_mem.h"
#include "py_threads.h"
#include "hmap.h"

/* PyTypeObject, PyDictObject: PY_TP_* and PY_DICT_* (py_debug_offsets.h). */
#define TPF_INLINE_VALUES (1ull << 2) /* 3.13+: the instance's values follow it */
#define TPF_MANAGED_DICT  (1ull << 4) /* 3.11+: its dict (or values) before its header */
#define MD_DICT		  16	      /* PyModuleObject.md_dict */
#define MAX_ENTRIES	  16384	      /* entries of a dict read (sys.modules of a big program) */
#define CACHE_MAX	  65536	      /* types and dict layouts remembered, of every process */

/*
 * Per minor version, from gdb's ptype /o on pyenv's 3.8-3.13 and Debian's 3.14 debug build:
 * where PyInterpreterState keeps sys.modules (3.13+: _Py_DebugOffsets says) and where
 * PyHeapTypeObject keeps the keys its instances share (3.11+; 3.15+: _Py_DebugOffsets say,
 * and a version after the last row is read as that row otherwise).
 */
static const struct names_layout {
	__u32 minor, interp_modules, ht_cached_keys;
} layouts[] = {
	{ 8, 56, 0 },	  { 9, 856, 0 },  { 10, 856, 0 }, { 11, 888, 872 },
	{ 12, 944, 880 }, { 13, 0, 880 }, { 14, 0, 880 },
};

#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/* The interned str objects of the names looked up: attribute names are interned. */
enum { KEY_THREADING, KEY_ACTIVE, KEY_NAME, KEY_NATIVE_ID, KEY_COUNT };
static const char *const key_text[KEY_COUNT] = { "threading", "_active", "_name", "_native_id" };

struct py_proc {
	__u32 minor;
	__u32 ht_cached_keys;
	__u64 modules_at;	  /* where the interpreter points to sys.modules */
	__u64 active;		  /* threading._active once found, else 0 */
	__u64 modules_used;	  /* sys.modules' length when threading was last not in it */
	__u64 key_obj[KEY_COUNT]; /* the str object of each key, once met */
};

/* What a Thread's type says of where its attributes are, read once per type. */
struct type_info {
	__u64 flags, basicsize, keys;
	__s64 dictoffset;
	int dummy; /* threading._DummyThread: not started by threading */
};

/*
 * Where a keys object holds _name and _native_id: their entries' indices (-1: none), learnt
 * once per keys object (an entry never moves while the object lives; a combined dict's
 * entry read later says by its key object that it still holds that key).
 */
struct keys_ix {
	__u64 entries; /* the first entry's address, 0 until learnt */
	__s32 ix[2];   /* of KEY_NAME, KEY_NATIVE_ID */
	__u32 esize, koff;
};

struct py_threads {
	struct py_mem *mem;
	struct hmap *procs;  /* pid -> struct py_proc */
	struct hmap *types;  /* (type, pid) -> struct type_info */
	struct hmap *keysix; /* (keys object, pid) -> struct keys_ix */
	__u8 *buf;	     /* a dict's entries */
};

/* A dict's entries as read: NAME's value is that of the entry whose key is NAME. */
struct dict_view {
	__u64 values;  /* a split table's values (their values[0]), else 0 */
	__u64 entries; /* where the entries are in the process */
	__u32 n, esize, koff, voff;
};

struct py_threads *py_threads__new(void)
{
	struct py_threads *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->mem = py_mem__new();
	t->procs = hmap__new(sizeof(struct py_proc));
	t->types = hmap__new(sizeof(struct type_info));
	t->keysix = hmap__new(sizeof(struct keys_ix));
	t->buf = malloc((size_t)MAX_ENTRIES * 24);
	if (!t->mem || !t->procs || !t->types || !t->keysix || !t->buf) {
		py_threads__free(t);
		return NULL;
	}
	return t;
}

void py_threads__free(struct py_threads *t)
{
	if (!t)
		return;
	py_mem__free(t->mem);
	hmap__free(t->procs);
	hmap__free(t->types);
	hmap__free(t->keysix);
	free(t->buf);
	free(t);
}

void py_threads__forget(struct py_threads *t, pid_t pid)
{
	hmap__del(t->procs, (struct hkey){ (__u64)pid, 0 });
	hmap__del_all(t->types, 1, (__u64)pid);
	hmap__del_all(t->keysix, 1, (__u64)pid);
	py_mem__forget(t->mem, pid);
}

int py_threads__add(struct py_threads *t, pid_t pid, const struct gil_py *py)
{
	__u32 minor = py->version >> 16 & 0xff, modules, cached;
	const struct names_layout *l = NULL;
	struct py_proc *p;

	for (size_t i = 0; i < NLAYOUTS; i++)
		if (layouts[i].minor == minor)
			l = &layouts[i];
	/* A release after the last row: read through its _Py_DebugOffsets. */
	if (!l && py->dbg.format && minor > layouts[NLAYOUTS - 1].minor)
		l = &layouts[NLAYOUTS - 1];
	if (!l || py->free_threaded || !py->interp || (minor >= 13 && !py->dbg.format))
		return -ENOTSUP;
	modules = l->interp_modules ?: py->dbg.imports_modules;
	cached = py->dbg.format && py->dbg.ht_cached_keys != PY_DBG_NONE ? py->dbg.ht_cached_keys
									 : l->ht_cached_keys;
	p = hmap__get(t->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	if (!p)
		return -ENOMEM;
	if (p->minor == minor && p->modules_at)
		return 0; /* known: what was found stays */
	*p = (struct py_proc){ .minor = minor, .ht_cached_keys = cached };
	p->modules_at = py->interp + modules;
	return 0;
}

/* The entries of the keys object KEYS into t->buf (3.11+ and 3.8-3.10 layouts). */
static int keys_read(struct py_threads *t, pid_t pid, __u32 minor, __u64 keys, struct dict_view *v)
{
	__u8 h[40];
	__u64 n, at;

	if (!keys || py_mem__read(t->mem, pid, keys, h, sizeof(h)))
		return -EIO;
	if (minor >= 11) {
		/* dk_log2_size, dk_log2_index_bytes, dk_kind at 8; dk_nentries at 24 */
		memcpy(&n, h + 24, 8);
		at = keys + 32 + (1ull << (h[9] & 63));
		v->esize = h[10] ? 16 : 24; /* unicode and split keys: (key, value) */
		v->koff = h[10] ? 0 : 8;
	} else {
		/* dk_size at 8, dk_nentries at 32, indices of 1-8 bytes each from 40 */
		__u64 size;

		memcpy(&size, h + 8, 8);
		memcpy(&n, h + 32, 8);
		at = keys + 40 +
		     size * (size <= 0xff	     ? 1
			     : size <= 0xffff	     ? 2
			     : size <= 0xffffffffull ? 4
						     : 8);
		v->esize = 24; /* hash, key, value */
		v->koff = 8;
	}
	if (n > MAX_ENTRIES)
		return -E2BIG;
	v->n = n;
	v->entries = at;
	v->voff = v->koff + 8;
	return n ? py_mem__read(t->mem, pid, at, t->buf, n * v->esize) : 0;
}

static int dict_read(struct py_threads *t, pid_t pid, __u32 minor, __u64 dict, struct dict_view *v)
{
	__u64 d[6]; /* head, ma_used, the version or watcher tag, ma_keys, ma_values */

	if (py_mem__obj(t->mem, pid, dict, PY_KIND_DICT, d, sizeof(d)))
		return -EIO;
	/* A split table's values: 3.13+ put a header (capacity, size, ...) before them. */
	v->values = d[PY_DICT_VALUES / 8] ? d[PY_DICT_VALUES / 8] + (minor >= 13 ? 8 : 0) : 0;
	return keys_read(t, pid, minor, d[PY_DICT_KEYS / 8], v);
}

static __u64 entry_word(struct py_threads *t, const struct dict_view *v, __u32 i, __u32 off)
{
	__u64 w;

	memcpy(&w, t->buf + (size_t)i * v->esize + off, 8);
	return w;
}

/* Is the str object at ADDR the text of key K? Learnt once: the keys are interned. */
static int is_key(struct py_threads *t, pid_t pid, struct py_proc *p, __u64 addr, int k)
{
	char *s;
	int yes;

	if (!addr)
		return 0;
	if (p->key_obj[k])
		return addr == p->key_obj[k];
	s = py_mem__str(t->mem, pid, p->minor, addr);
	yes = s && !strcmp(s, key_text[k]);
	free(s);
	if (yes)
		p->key_obj[k] = addr;
	return yes;
}

/*
 * The index of key K's entry in V (read last by keys_read), -1 when it has none. Compares
 * key objects with the interned one once it was met, else texts.
 */
static __s32 view_index(struct py_threads *t, pid_t pid, struct py_proc *p,
			const struct dict_view *v, int k)
{
	__u64 key = p->key_obj[k];

	for (int pass = key ? 0 : 1; pass < 2; pass++) {
		for (__u32 i = 0; i < v->n; i++) {
			__u64 kaddr = entry_word(t, v, i, v->koff);

			if (pass ? is_key(t, pid, p, kaddr, k) : kaddr == key)
				return i;
		}
		/* A key object other than the one learnt (not interned): texts, once. */
		if (!pass)
			p->key_obj[k] = 0;
	}
	return -1;
}

/* The value of key K in the entries of V, 0 when it has none. */
static __u64 view_get(struct py_threads *t, pid_t pid, struct py_proc *p, const struct dict_view *v,
		      int k)
{
	__s32 i = view_index(t, pid, p, v, k);

	if (i < 0)
		return 0;
	if (!v->values)
		return entry_word(t, v, i, v->voff);
	return py_mem__u64(t->mem, pid, v->values + 8ull * i);
}

static __u64 dict_get(struct py_threads *t, pid_t pid, struct py_proc *p, __u64 dict, int k)
{
	struct dict_view v = {};

	return dict_read(t, pid, p->minor, dict, &v) ? 0 : view_get(t, pid, p, &v, k);
}

/* threading._active of P, once threading is imported; 0 before. */
static __u64 active_of(struct py_threads *t, pid_t pid, struct py_proc *p)
{
	__u64 modules, used = 0, threading, md;

	if (p->active && py_mem__is(t->mem, pid, p->active, PY_KIND_DICT))
		return p->active;
	p->active = 0;
	modules = py_mem__u64(t->mem, pid, p->modules_at);
	/* Searched again only when sys.modules changed since it was not there. */
	if (!modules || py_mem__read(t->mem, pid, modules + 16, &used, 8) ||
	    (p->modules_used && used == p->modules_used))
		return 0;
	threading = dict_get(t, pid, p, modules, KEY_THREADING);
	md = py_mem__is(t->mem, pid, threading, PY_KIND_MODULE)
		     ? py_mem__u64(t->mem, pid, threading + MD_DICT)
		     : 0;
	p->active = md ? dict_get(t, pid, p, md, KEY_ACTIVE) : 0;
	if (!py_mem__is(t->mem, pid, p->active, PY_KIND_DICT))
		p->active = 0;
	p->modules_used = p->active ? 0 : used;
	return p->active;
}

/*
 * KEY's entry of the cache *M (of VAL_SIZE values), made if new. The caches are the
 * processes' types and dict layouts, read again when forgotten: past CACHE_MAX entries one
 * starts again, so a process that makes up types or dicts without end grows it no further.
 */
static void *cache_get(struct hmap **m, size_t val_size, struct hkey key)
{
	void *v = hmap__get(*m, key, 0);
	struct hmap *fresh;

	if (v || hmap__count(*m) < CACHE_MAX)
		return v ?: hmap__get(*m, key, 1);
	fresh = hmap__new(val_size);
	if (!fresh)
		return NULL;
	hmap__free(*m);
	*m = fresh;
	return hmap__get(*m, key, 1);
}

static const struct type_info *type_of(struct py_threads *t, pid_t pid, struct py_proc *p,
				       __u64 obj)
{
	__u64 type = py_mem__live_type(t->mem, pid, obj), w[2];
	struct type_info *ti;
	char name[16];

	if (!type)
		return NULL;
	ti = cache_get(&t->types, sizeof(*ti), (struct hkey){ type, (__u64)pid });
	if (!ti || ti->basicsize)
		return ti && ti->basicsize ? ti : NULL;
	if (py_mem__read(t->mem, pid, type + PY_TP_BASICSIZE, &ti->basicsize, 8) ||
	    py_mem__read(t->mem, pid, type + PY_TP_FLAGS, &ti->flags, 8) ||
	    py_mem__read(t->mem, pid, type + PY_TP_DICTOFFSET, &ti->dictoffset, 8)) {
		memset(ti, 0, sizeof(*ti));
		return NULL;
	}
	if (p->minor >= 11 && (ti->flags & TPF_MANAGED_DICT) &&
	    !py_mem__read(t->mem, pid, type + p->ht_cached_keys, w, 8))
		ti->keys = w[0];
	ti->dummy = !py_mem__type_name(t->mem, pid, type, name, sizeof(name)) &&
		    !strcmp(name, "_DummyThread");
	return ti;
}

/*
 * Where the instance OBJ keeps its attributes: its dict (*DICT), or values (*VALUES, their
 * values[0]) indexed like the keys its type shares.
 */
static void attrs_of(struct py_threads *t, pid_t pid, __u32 minor, __u64 obj,
		     const struct type_info *ti, __u64 *dict, __u64 *values)
{
	__u8 valid = 0;
	__u64 w;

	*dict = *values = 0;
	if (minor <= 10 || !(ti->flags & TPF_MANAGED_DICT)) {
		if (ti->dictoffset > 0)
			*dict = py_mem__u64(t->mem, pid, obj + ti->dictoffset);
		return;
	}
	if (minor == 11) {
		/* values at obj - 4 words, the dict (once made) at obj - 3 */
		*values = py_mem__u64(t->mem, pid, obj - 32);
		*dict = *values ? 0 : py_mem__u64(t->mem, pid, obj - 24);
		return;
	}
	w = py_mem__u64(t->mem, pid, obj - 24);
	if (minor == 12) {
		/* one word at obj - 3 words: the values less 1 (so bit 0 is set), or the dict */
		if (w & 1)
			*values = w + 1;
		else
			*dict = w;
		return;
	}
	/* 3.13+: the dict once made, else the values inline after the object (if valid) */
	*dict = w;
	if (!w && (ti->flags & TPF_INLINE_VALUES) &&
	    !py_mem__read(t->mem, pid, obj + ti->basicsize + 3, &valid, 1) && valid)
		*values = obj + ti->basicsize + 8;
}

/* KEYS' indices of _name and _native_id (learnt again when FRESH), NULL when unreadable. */
static const struct keys_ix *keys_ix(struct py_threads *t, pid_t pid, struct py_proc *p, __u64 keys,
				     int fresh)
{
	struct keys_ix *x = cache_get(&t->keysix, sizeof(*x), (struct hkey){ keys, (__u64)pid });
	struct dict_view v = {};

	if (!x || (x->entries && !fresh))
		return x;
	if (keys_read(t, pid, p->minor, keys, &v))
		return NULL;
	*x = (struct keys_ix){ .entries = v.entries, .esize = v.esize, .koff = v.koff };
	x->ix[0] = view_index(t, pid, p, &v, KEY_NAME);
	x->ix[1] = view_index(t, pid, p, &v, KEY_NATIVE_ID);
	return x;
}

/*
 * The values of _name and _native_id into VAL of an instance whose attributes' keys are KEYS
 * and values VALUES (a split table's; 0: KEYS' entries hold them): 0, or -ENOENT.
 */
static int attr_values(struct py_threads *t, pid_t pid, struct py_proc *p, __u64 keys, __u64 values,
		       __u64 *val)
{
	static const int wanted[2] = { KEY_NAME, KEY_NATIVE_ID };
	const struct keys_ix *x;
	__u64 w[32], e[2];
	__s32 lo, hi;
	int ok;

	for (int fresh = 0; fresh < 2; fresh++) {
		x = keys_ix(t, pid, p, keys, fresh);
		if (!x || x->ix[0] < 0 || x->ix[1] < 0)
			continue;
		if (values) {
			/* Both values in one read: they lie a few words apart. */
			lo = x->ix[0] < x->ix[1] ? x->ix[0] : x->ix[1];
			hi = x->ix[0] < x->ix[1] ? x->ix[1] : x->ix[0];
			if (hi - lo >= 32 ||
			    py_mem__read(t->mem, pid, values + 8ull * lo, w, 8ull * (hi - lo + 1)))
				return -ENOENT;
			val[0] = w[x->ix[0] - lo];
			val[1] = w[x->ix[1] - lo];
			return 0;
		}
		ok = 1;
		for (int k = 0; k < 2 && ok; k++) {
			ok = !py_mem__read(t->mem, pid,
					   x->entries + (__u64)x->ix[k] * x->esize + x->koff, e,
					   sizeof(e)) &&
			     e[0] == p->key_obj[wanted[k]];
			val[k] = e[1];
		}
		if (ok)
			return 0;
	}
	return -ENOENT;
}

/* The name and tid of the Thread object OBJ into OUT: 0, or -ENOENT (not one to name). */
static int thread_of(struct py_threads *t, pid_t pid, struct py_proc *p, __u64 obj,
		     struct py_thread_name *out)
{
	const struct type_info *ti = type_of(t, pid, p, obj);
	__u64 dict, values, keys, val[2], d[6];
	__s64 tid = 0;
	char *s;

	if (!ti || ti->dummy)
		return -ENOENT;
	attrs_of(t, pid, p->minor, obj, ti, &dict, &values);
	keys = ti->keys;
	if (dict) {
		if (py_mem__obj(t->mem, pid, dict, PY_KIND_DICT, d, sizeof(d)))
			return -ENOENT;
		keys = d[PY_DICT_KEYS / 8];
		values = d[PY_DICT_VALUES / 8] ? d[PY_DICT_VALUES / 8] + (p->minor >= 13 ? 8 : 0)
					       : 0;
	}
	if (!keys || attr_values(t, pid, p, keys, values, val) ||
	    py_mem__int(t->mem, pid, p->minor, val[1], &tid) || tid <= 0 || tid > 0x7fffffff)
		return -ENOENT; /* not started yet, or ended */
	s = py_mem__str(t->mem, pid, p->minor, val[0]);
	if (!s)
		return -ENOENT;
	out->tid = (__u32)tid;
	snprintf(out->name, sizeof(out->name), "%s", s);
	free(s);
	return 0;
}

int py_threads__read(struct py_threads *t, pid_t pid, struct py_thread_name *out, int max)
{
	struct py_proc *p = hmap__get(t->procs, (struct hkey){ (__u64)pid, 0 }, 0);
	struct dict_view v = {};
	__u64 active, objs[1024];
	__u32 n;
	int k = 0;
	char c;

	if (!p)
		return -ENOENT;
	if (py_mem__read(t->mem, pid, p->modules_at, &c, 1) == -ESRCH)
		return -ESRCH;
	active = active_of(t, pid, p);
	if (!active || dict_read(t, pid, p->minor, active, &v))
		return 0;
	/* The Thread objects first: reading each one reuses the entries' buffer. */
	for (n = 0; n < v.n && n < sizeof(objs) / sizeof(objs[0]); n++)
		objs[n] = v.values ? 0 : entry_word(t, &v, n, v.voff);
	for (__u32 i = 0; i < n && k < max; i++)
		if (objs[i] && !thread_of(t, pid, p, objs[i], &out[k]))
			k++;
	return k;
}
