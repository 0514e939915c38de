// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 3.11: the traced functions' own calls, so that no frame-evaluation hook need stay in the
 * interpreter's slot (docs/PYFUNC-mechanism.md, "3.11: each function's own calls").
 *
 * Any hook in the slot stops 3.11's inlined Python-to-Python calls for the whole process
 * (CALL inlines only when interp->eval_frame is NULL), which costs a step of small calls
 * about 1.4x. But 3.11 inlines, and specializes (CALL_PY_EXACT_ARGS, CALL_PY_WITH_DEFAULTS,
 * PRECALL_PYFUNC, BINARY_SUBSCR_GETITEM), only a callable whose type is exactly
 * PyFunction_Type (PyFunction_Check is an exact check in 3.11's funcobject.h); any other
 * callable is called through its vectorcall field. So each function object of a traced code
 * object gets a type of the shim's, a subtype of function that differs from it in nothing a
 * program reads but its identity (its name "function", every slot inherited, a __reduce_ex__
 * that pickles it by reference as function's own pickling does, a tp_dealloc that forgets it
 * first), and a vectorcall of the shim's that records the call around
 * _PyFunction_Vectorcall, as the hook would. The hook then leaves the slot: the rest of the
 * job's calls run inlined. func_version is set to 0, so a call site or a __getitem__ already
 * specialized for the function deoptimizes (its cache holds the old version).
 *
 * Exact only where every function object of a traced code object is known and none can
 * appear unseen: a plain function's code (not a generator's or coroutine's, whose calls
 * resume without any function; not a nested one's, made anew at each call of the function
 * around it), and at least one function object found (a function not defined yet has
 * none). The functions are found with gc.get_referrers, once per batch of new code objects,
 * or handed by the class hook for a class just created. A function object made later from
 * a code object already swapped (the same def run again) holds the code object: the poller
 * compares each code object's reference count with what it accounts for (its swapped
 * functions, the calls running through the shim, the rest counted at the last look) and
 * looks again when it grew (said: calls of such a function before the look were missed).
 * Elsewhere the frame-evaluation hook stays (shim_pyfunc_eval.c), which says why.
 *
 * Removal puts PyFunction_Type and _PyFunction_Vectorcall back in every function swapped;
 * a forked child's poller does the same in its copy. Layouts: CPython 3.11's PyTypeObject
 * and PyFunctionObject (Include/cpython/object.h, funcobject.h), checked against the running
 * interpreter's own PyFunction_Type before anything is swapped.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_pyfunc.h"

/* PyTypeObject (3.11) */
#define OB_REFCNT	     0
#define OB_TYPE		     8
#define TP_NAME		     24
#define TP_BASICSIZE	     32
#define TP_DEALLOC	     48
#define TP_VECTORCALL_OFFSET 56
#define TP_CALL		     128
#define TP_FLAGS	     168
#define TP_DOC		     176
#define TP_TRAVERSE	     184
#define TP_CLEAR	     192
#define TP_METHODS	     232
#define TP_BASE		     256
#define TYPE_SIZE_311	     408
/* Py_TPFLAGS_* set by PyType_Ready or only for another type */
#define TPF_READY	      (1UL << 12)
#define TPF_READYING	      (1UL << 13)
#define TPF_VALID_VERSION_TAG (1UL << 19)
#define TPF_BASETYPE	      (1UL << 10)
#define TPF_HEAPTYPE	      (1UL << 9)
/* PyFunctionObject (3.11) */
#define FUNC_CODE	48
#define FUNC_VECTORCALL 120
#define FUNC_VERSION	128
#define FUNC_SIZE_311	136
/* PyCodeObject.co_flags: a function nested in another's */
#define CO_NESTED 0x10

#define FIELD(o, off, T) (*(T *)((char *)(o) + (off)))
#define LOOK_NS		 (1000 * SHIM_NS_PER_MS) /* a walk of the heap at most once a second */

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* C's qualified name, for what is said. */
static const char *name_of(const struct pyfunc_code *c, char *buf, size_t len)
{
	return shim_pyfunc_attr_str(c->code, "co_qualname", buf, len);
}

typedef PyObject *(*vectorcall_fn)(PyObject *, PyObject *const *, size_t, PyObject *);
typedef void (*dealloc_fn)(PyObject *);

static char *ftype;		      /* &PyFunction_Type */
static vectorcall_fn func_vectorcall; /* _PyFunction_Vectorcall */
static _Alignas(16) char our_type[512];
static int ready; /* 0: not tried, 1: ours ready, -1: not usable here */
static bool active;

/* A function swapped: borrowed (our tp_dealloc forgets it before it goes). */
struct swapped_fn {
	PyObject *fn;
	const PyObject *code; /* its code object when swapped (__code__ may be set since) */
	uint32_t index;	      /* that code's table index */
};
static struct swapped_fn *fns;
static uint32_t nfns, cap_fns;

/* Per traced code object (its table index): what its reference count is made of. */
struct code_state {
	const PyObject *code; /* the table's code at that index when seen */
	long base;	      /* references neither functions swapped nor calls running */
	uint32_t nfns;	      /* its functions swapped, alive */
	uint32_t running;     /* its calls running through the shim's vectorcall */
	long walked_refs;     /* its count when a walk found no function of it (0: none) */
	bool covered;	      /* every function object of it swapped */
	bool noted_late;      /* a function found after its swap: said once */
};
/*
 * By table index, in place for good: the poller reads them without the GIL
 * (shim_pyfunc_swap__stale) while a callback may add one. Code objects past the last are
 * not swapped (the hook stays).
 */
#define MAX_CODES 8192
static struct code_state cs[MAX_CODES];
static uint32_t ncs; /* [0, ncs) may be in use */

static struct code_state *state_of(const struct pyfunc_code *c)
{
	if (c->index >= MAX_CODES)
		return NULL;
	if (c->index >= ncs)
		ncs = c->index + 1;
	if (cs[c->index].code != c->code)
		memset(&cs[c->index], 0, sizeof(cs[c->index]));
	cs[c->index].code = c->code;
	return &cs[c->index];
}

static long refcnt(const PyObject *o)
{
	return *(volatile long *)((const char *)o + OB_REFCNT);
}

/* ---- the type ---- */

static void forget(PyObject *fn)
{
	for (uint32_t i = 0; i < nfns; i++) {
		struct swapped_fn f = fns[i];

		if (f.fn != fn)
			continue;
		fns[i] = fns[--nfns];
		/* Its reference to the code goes with it (func_dealloc, next). */
		if (f.index < ncs && cs[f.index].code == f.code && cs[f.index].nfns)
			cs[f.index].nfns--;
		return;
	}
}

static void our_dealloc(PyObject *fn)
{
	forget(fn);
	FIELD(fn, OB_TYPE, char *) = ftype;
	FIELD(ftype, TP_DEALLOC, dealloc_fn)(fn);
}

/*
 * pickle and copy dispatch on a function's exact type: for ours they ask __reduce_ex__,
 * whose string answer means "a global, by this name" (pickle), "atomic" (copy, deepcopy):
 * what they do for a function.
 */
static PyObject *by_reference(PyObject *self, PyObject *const *args, long nargs)
{
	(void)args;
	(void)nargs;
	return py.PyObject_GetAttrString(self, "__qualname__");
}

static struct py_method_def our_methods[] = {
	{ "__reduce_ex__", (void *)by_reference, METH_FASTCALL, NULL },
	{ "__reduce__", (void *)by_reference, METH_FASTCALL, NULL },
	{ NULL, NULL, 0, NULL },
};

/* This interpreter's function type as 3.11's headers lay it out? Then ours, ready. */
static bool make_type(void)
{
	void *base_object = sym("PyBaseObject_Type");
	void *type_type = sym("PyType_Type");
	int (*type_ready)(void *) = (int (*)(void *))sym("PyType_Ready");
	PyObject *size;
	long n = 0;

	ftype = sym("PyFunction_Type");
	func_vectorcall = (vectorcall_fn)sym("_PyFunction_Vectorcall");
	if (py.minor != 11 || !ftype || !func_vectorcall || !base_object || !type_type ||
	    !type_ready)
		return false;
	size = py.PyObject_CallMethod(type_type, "__sizeof__", "O", ftype);
	if (size) {
		n = py.PyLong_AsLong(size);
		py.Py_DecRef(size);
	}
	py.PyErr_Clear();
	if (n != TYPE_SIZE_311 || FIELD(ftype, OB_TYPE, void *) != type_type ||
	    FIELD(ftype, TP_BASICSIZE, long) != FUNC_SIZE_311 ||
	    FIELD(ftype, TP_VECTORCALL_OFFSET, long) != FUNC_VECTORCALL ||
	    FIELD(ftype, TP_BASE, void *) != base_object ||
	    !(FIELD(ftype, TP_FLAGS, unsigned long) & TPF_READY))
		return false;
	memset(our_type, 0, sizeof(our_type));
	FIELD(our_type, OB_REFCNT, long) = 1L << 40; /* static: never freed */
	FIELD(our_type, OB_TYPE, void *) = type_type;
	FIELD(our_type, TP_NAME, const char *) = "function";
	FIELD(our_type, TP_BASICSIZE, long) = FUNC_SIZE_311;
	FIELD(our_type, TP_DEALLOC, void *) = (void *)our_dealloc;
	FIELD(our_type, TP_VECTORCALL_OFFSET, long) = FUNC_VECTORCALL;
	FIELD(our_type, TP_CALL, void *) = FIELD(ftype, TP_CALL, void *);
	FIELD(our_type, TP_FLAGS, unsigned long) =
		FIELD(ftype, TP_FLAGS, unsigned long) &
		~(TPF_READY | TPF_READYING | TPF_VALID_VERSION_TAG | TPF_BASETYPE | TPF_HEAPTYPE);
	FIELD(our_type, TP_DOC, const char *) = FIELD(ftype, TP_DOC, const char *);
	FIELD(our_type, TP_TRAVERSE, void *) = FIELD(ftype, TP_TRAVERSE, void *);
	FIELD(our_type, TP_CLEAR, void *) = FIELD(ftype, TP_CLEAR, void *);
	FIELD(our_type, TP_METHODS, void *) = our_methods;
	FIELD(our_type, TP_BASE, void *) = ftype;
	if (type_ready(our_type)) {
		py.PyErr_Clear();
		return false;
	}
	return true;
}

static bool usable(void)
{
	if (!ready)
		ready = make_type() ? 1 : -1;
	return ready > 0;
}

/* ---- the calls ---- */

/* The exception that NULL result carries passed through CODE's frame: the call ran. */
static bool frame_ran(const PyObject *code)
{
	PyObject *type, *value, *tb, *frame, *fcode;
	bool ran = false;

	py.PyErr_Fetch(&type, &value, &tb);
	if (tb && py.PyFrame_GetCode && (frame = shim_pyfunc_attr(tb, "tb_frame"))) {
		fcode = py.PyFrame_GetCode(frame);
		ran = fcode == code;
		if (fcode)
			py.Py_DecRef(fcode);
		py.Py_DecRef(frame);
	}
	py.PyErr_Restore(type, value, tb);
	return ran;
}

static PyObject *our_vectorcall(PyObject *fn, PyObject *const *args, size_t nargsf,
				PyObject *kwnames)
{
	const struct pyfunc_code *c = shim_pyfunc_codes__get(FIELD(fn, FUNC_CODE, PyObject *));
	PyObject *res;
	uint32_t i;

	if (!c)
		return func_vectorcall(fn, args, nargsf, kwnames);
	/*
	 * Its frame holds the code object while it runs: counted (shim_pyfunc_swap__stale), by
	 * index (the states may move while it runs).
	 */
	i = c->index;
	if (i < ncs && cs[i].code == c->code)
		cs[i].running++;
	if (!active || c->gen || !shim_pyfunc__on() || shim_pyfunc_eval__profiled()) {
		res = func_vectorcall(fn, args, nargsf, kwnames);
	} else {
		shim_pyfunc__begin(c, false);
		res = func_vectorcall(fn, args, nargsf, kwnames);
		if (res)
			shim_pyfunc__end(c, BS_PYFUNC_END_RETURN);
		else if (frame_ran(c->code))
			shim_pyfunc__end(c, BS_PYFUNC_END_UNWIND);
		else /* its arguments did not bind: no frame ran, no call (as the hook sees it) */
			shim_pyfunc__cancel(c);
	}
	if (i < ncs && cs[i].code == c->code && cs[i].running)
		cs[i].running--;
	return res;
}

/* ---- swapping ---- */

static bool swapped(const PyObject *fn)
{
	return FIELD(fn, OB_TYPE, char *) == our_type;
}

static int swap(PyObject *fn, struct code_state *s)
{
	struct swapped_fn *m;

	if (swapped(fn))
		return 0;
	if (FIELD(fn, OB_TYPE, char *) != ftype ||
	    FIELD(fn, FUNC_VECTORCALL, vectorcall_fn) != func_vectorcall)
		return -1; /* another's vectorcall, or not a plain function */
	if (nfns == cap_fns) {
		uint32_t n = cap_fns ? 2 * cap_fns : 64;

		if (!(m = realloc(fns, n * sizeof(*m))))
			return -1;
		fns = m;
		cap_fns = n;
	}
	fns[nfns++] = (struct swapped_fn){ fn, s->code, (uint32_t)(s - cs) };
	FIELD(fn, OB_TYPE, char *) = our_type;
	FIELD(fn, FUNC_VECTORCALL, void *) = (void *)our_vectorcall;
	FIELD(fn, FUNC_VERSION, uint32_t) = 0; /* specialized call sites deoptimize */
	s->nfns++;
	return 0;
}

static bool swappable_code(const struct pyfunc_code *c, char *why, size_t len)
{
	char name[256];

	if (c->gen) {
		snprintf(why, len, "%s is a generator or coroutine",
			 name_of(c, name, sizeof(name)));
		return false;
	}
	if (shim_pyfunc_attr_long(c->code, "co_flags") & CO_NESTED) {
		snprintf(why, len, "%s is made anew at each call of the function around it",
			 name_of(c, name, sizeof(name)));
		return false;
	}
	return true;
}

struct batch {
	PyObject *codes[256];
	struct code_state *st[256];
	uint32_t n;
	char *why;
	size_t len;
	bool ok;
};

static void collect(const struct pyfunc_code *c, void *arg)
{
	struct batch *b = arg;
	struct code_state *s;

	if (!b->ok)
		return;
	if (!(s = state_of(c))) {
		snprintf(b->why, b->len, "more than %d code objects traced", MAX_CODES);
		b->ok = false;
		return;
	}
	if (s->covered)
		return;
	/*
	 * No function of it at the last walk, and nothing new holds it since (a holder that let
	 * go lowers the mark): none yet, no walk.
	 */
	if (s->walked_refs && refcnt(c->code) < s->walked_refs)
		s->walked_refs = refcnt(c->code);
	if (s->walked_refs && refcnt(c->code) == s->walked_refs) {
		char name[256];

		snprintf(b->why, b->len, "%s has no function object yet",
			 name_of(c, name, sizeof(name)));
		b->ok = false;
		return;
	}
	if (!swappable_code(c, b->why, b->len) || b->n == 256) {
		if (b->n == 256)
			snprintf(b->why, b->len, "too many code objects at once");
		b->ok = false;
		return;
	}
	b->codes[b->n] = c->code;
	b->st[b->n++] = s;
}

/* gc.get_referrers(*CODES): a new reference, or NULL. */
static PyObject *referrers(PyObject *const *codes, uint32_t n)
{
	PyObject *gc = py.PyImport_ImportModule("gc"), *fn, *args, *res = NULL;
	PyObject *(*tuple_new)(long) = (PyObject * (*)(long)) sym("PyTuple_New");
	int (*tuple_set)(PyObject *, long, PyObject *) =
		(int (*)(PyObject *, long, PyObject *))sym("PyTuple_SetItem");

	if (!gc || !tuple_new || !tuple_set) {
		if (gc)
			py.Py_DecRef(gc);
		py.PyErr_Clear();
		return NULL;
	}
	fn = py.PyObject_GetAttrString(gc, "get_referrers");
	args = tuple_new(n);
	for (uint32_t i = 0; args && i < n; i++) {
		py.Py_IncRef(codes[i]);
		tuple_set(args, i, codes[i]);
	}
	if (fn && args)
		res = py.PyObject_Call(fn, args, NULL);
	if (args)
		py.Py_DecRef(args);
	if (fn)
		py.Py_DecRef(fn);
	py.Py_DecRef(gc);
	py.PyErr_Clear();
	return res;
}

/*
 * Every function object of the N code objects swapped: false (WHY) when one cannot be, or a
 * code object has none. LATE: they were covered already (a function made since).
 */
static bool swap_all_of(PyObject *const *codes, struct code_state *const *st, uint32_t n, char *why,
			size_t len)
{
	PyObject *refs = referrers(codes, n);
	char name[256];
	long count = refs ? py.PyObject_Size(refs) : -1;
	bool ok = true;

	if (count < 0) {
		py.PyErr_Clear();
		snprintf(why, len, "gc.get_referrers failed");
		return false;
	}
	for (long i = 0; i < count; i++) {
		PyObject *r = py.PySequence_GetItem(refs, i);
		char *t = r ? FIELD(r, OB_TYPE, char *) : NULL;

		for (uint32_t k = 0; r && (t == ftype || t == our_type) && k < n; k++) {
			const struct pyfunc_code *c;

			if (FIELD(r, FUNC_CODE, PyObject *) != codes[k])
				continue;
			if (swap(r, st[k]) && ok) {
				c = shim_pyfunc_codes__get(codes[k]);
				snprintf(why, len, "a function of %s has a vectorcall of another's",
					 c ? name_of(c, name, sizeof(name)) : "?");
				ok = false;
			}
		}
		if (r)
			py.Py_DecRef(r);
	}
	py.Py_DecRef(refs);
	py.PyErr_Clear();
	for (uint32_t k = 0; k < n; k++) {
		if (!st[k]->nfns && ok) {
			const struct pyfunc_code *c = shim_pyfunc_codes__get(codes[k]);

			snprintf(why, len, "%s has no function object yet",
				 c ? name_of(c, name, sizeof(name)) : "?");
			ok = false;
		}
		st[k]->covered = st[k]->nfns > 0;
		st[k]->walked_refs = st[k]->nfns ? 0 : refcnt(codes[k]);
		st[k]->base = refcnt(codes[k]) - st[k]->nfns - st[k]->running;
	}
	return ok;
}

bool shim_pyfunc_swap__enter(char *why, size_t len)
{
	struct batch b = { .why = why, .len = len, .ok = true };

	if (!usable()) {
		snprintf(why, len, "this interpreter's function type is not laid out as 3.11's");
		return false;
	}
	shim_pyfunc_codes__for_each(collect, &b);
	if (!b.ok)
		return false;
	if (b.n && !swap_all_of(b.codes, b.st, b.n, why, len))
		return false;
	active = true;
	return true;
}

bool shim_pyfunc_swap__active(void)
{
	return active;
}

void shim_pyfunc_swap__leave(void)
{
	active = false;
}

bool shim_pyfunc_swap__added(const struct pyfunc_code *c, PyObject *fn)
{
	char why[160];
	struct code_state *s = state_of(c);

	if (!s || !swappable_code(c, why, sizeof(why)))
		return false;
	/*
	 * A class just created: its method's function, made by the class body's MAKE_FUNCTION,
	 * is the only one of its code object when nothing else holds that: the class body's
	 * constants, the function, the table and the resolver's own reference (4). Otherwise a
	 * walk, at the next resolve.
	 */
	if (!fn || FIELD(fn, OB_TYPE, char *) != ftype ||
	    FIELD(fn, FUNC_CODE, PyObject *) != c->code || refcnt(c->code) > 4 || swap(fn, s))
		return false;
	s->covered = true;
	s->base = refcnt(c->code) - s->nfns - s->running;
	return true;
}

/* What CODE's reference count holds beyond what is accounted for (GIL held: exact). */
static long extra_refs(const struct code_state *s)
{
	return refcnt(s->code) - (long)s->nfns - (long)s->running - s->base;
}

/*
 * Without the GIL (the poller, every look): a covered code object's count moved. Read so,
 * a call just starting or ending can only make it look lower; the poller then takes the
 * GIL and shim_pyfunc_swap__look_again counts exactly.
 */
bool shim_pyfunc_swap__stale(void)
{
	for (uint32_t i = 0; active && i < ncs; i++)
		if (cs[i].covered && cs[i].code && extra_refs(&cs[i]))
			return true;
	return false;
}

bool shim_pyfunc_swap__look_again(char *why, size_t len, char *late, size_t llen)
{
	static uint64_t last_walk;
	PyObject *codes[256];
	struct code_state *st[256];
	uint32_t n = 0, before[256];
	char name[256];

	late[0] = 0;
	for (uint32_t i = 0; i < ncs && n < 256; i++) {
		struct code_state *s = &cs[i];
		long extra = s->covered && s->code ? extra_refs(s) : 0;

		if (extra < 0)
			s->base += extra; /* a holder let go (a frame object, a traceback) */
		else if (extra > 0) {
			codes[n] = (PyObject *)s->code;
			before[n] = s->nfns;
			st[n++] = s;
		}
	}
	/* More holders: a function made since, or a traceback's frame; walked once a second. */
	if (!n || shim_now() - last_walk < LOOK_NS)
		return true;
	last_walk = shim_now();
	if (!swap_all_of(codes, st, n, why, len))
		return false;
	for (uint32_t k = 0; k < n; k++) {
		const struct pyfunc_code *c = shim_pyfunc_codes__get(codes[k]);

		if (st[k]->nfns > before[k] && c && !st[k]->noted_late) {
			st[k]->noted_late = true;
			snprintf(late, llen,
				 "a new function object of %s found: its calls before were not "
				 "traced",
				 name_of(c, name, sizeof(name)));
		}
	}
	return true;
}

uint32_t shim_pyfunc_swap__count(void)
{
	return nfns;
}

/* Every function back to PyFunction_Type and _PyFunction_Vectorcall: GIL held (or a forked
 * child's one thread). */
void shim_pyfunc_swap__restore(void)
{
	active = false;
	for (uint32_t i = 0; i < nfns; i++) {
		PyObject *fn = fns[i].fn;

		if (FIELD(fn, FUNC_VECTORCALL, void *) == (void *)our_vectorcall)
			FIELD(fn, FUNC_VECTORCALL, vectorcall_fn) = func_vectorcall;
		if (swapped(fn))
			FIELD(fn, OB_TYPE, char *) = ftype;
	}
	nfns = 0;
	memset(cs, 0, ncs * sizeof(*cs));
	ncs = 0;
}
