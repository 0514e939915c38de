// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The spec's entries -> code objects (shim_pyfunc.h), GIL held, importing nothing: a module
 * is looked for in sys.modules only, so tracing never runs a module's import (its side
 * effects, its time) the job did not ask for.
 *
 *   - MODULE:QUALNAME walked through attributes; a decorated function's __wrapped__
 *     unwrapped, a method's __func__ taken, a wrapper made without functools.wraps looked
 *     through (the function of its name in its closure); "outer.<locals>.inner" is inner's code among
 *     outer's constants (no function object of it need exist yet);
 *   - flag 's': the override of every subclass of the class, each named by the class that
 *     defines it;
 *   - a function not defined yet (a def below the line running now): its code object is a
 *     constant of code that is running, found in the frames of the module's code on every
 *     thread (sys._current_frames), so its first call is traced.
 *
 * Discovery at the first call: while an entry is not found, the mechanisms hand each code
 * object that starts and is not traced to shim_pyfunc_resolve__discover (3.12+: a global
 * PY_START that switches itself off per code object; before: the frame-evaluation hook, or
 * the profile function). Its
 * co_name, interned, is compared by address with the last parts of the entries not found
 * (the candidates); on a match those entries are resolved at once, and the code is traced
 * from that very call when it is theirs. A code whose name matched but that is not theirs
 * is remembered until the next resolve (a small cache by address), so a loop calling it pays
 * one probe, not a resolve.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_pyfunc.h"

#define CO_NEWLOCALS 0x2
#define MAX_DEPTH    24
#define MAX_FRAMES   512
#define NAME_MAX_LEN 1024

static int nbases;
static struct base {
	PyObject *cls; /* a reference */
	char method[256], domain[256];
} bases[32];

static struct pyfunc_entry *entries;
static int nentries;
/* The entries' lifetime and why[] against the drain, which reads them without the GIL. */
pthread_mutex_t shim_pyfunc_entries_lock = PTHREAD_MUTEX_INITIALIZER;

/* The candidates: the last parts of the entries not found, by address (interned). */
#define NCANDIDATES 128 /* a power of two, at least twice the entries looked for */
static const PyObject *candidates[NCANDIDATES];
static bool scanning;
/* Codes whose name is a candidate's but that are none of its entries': until a resolve. */
#define NREJECTED 64
static const PyObject *rejected[NREJECTED];

/* Set while a code object that starts is tried: it has not run before (no restart needed). */
static const PyObject *starting;
static bool in_class_hook;
static PyObject *adding_fn; /* the class hook's function being added (borrowed) */

PyObject *shim_pyfunc_resolve__adding_fn(void)
{
	return in_class_hook ? adding_fn : NULL;
}

/* ---- looking at objects ---- */

static bool is_code(PyObject *o)
{
	PyObject *t = py.PyObject_Type(o);
	bool yes = t == py.code_type;

	if (t)
		py.Py_DecRef(t);
	return yes;
}

/* O's attribute NAME as a new reference, or NULL (no error left set). */
PyObject *shim_pyfunc_attr(PyObject *o, const char *name)
{
	PyObject *v = py.PyObject_GetAttrString(o, name);

	if (!v)
		py.PyErr_Clear();
	return v;
}

/* A string attribute of O into BUF ("" when none). */
const char *shim_pyfunc_attr_str(PyObject *o, const char *name, char *buf, size_t len)
{
	PyObject *v = shim_pyfunc_attr(o, name);
	const char *s = v ? py.PyUnicode_AsUTF8(v) : NULL;

	snprintf(buf, len, "%s", s ? s : "");
	if (!s)
		py.PyErr_Clear();
	if (v)
		py.Py_DecRef(v);
	return buf;
}

long shim_pyfunc_attr_long(PyObject *o, const char *name)
{
	PyObject *v = shim_pyfunc_attr(o, name);
	long n = v ? py.PyLong_AsLong(v) : 0;

	if (v)
		py.Py_DecRef(v);
	py.PyErr_Clear();
	return n;
}

static PyObject *code_of(PyObject *obj, const char *name);

/*
 * A wrapper made without functools.wraps (torch's optimizers' step: one wrapper code for
 * every class): the function named NAME among the closure's cells, the one it wraps. A
 * wrapper's code is shared by all it wraps, so it cannot stand for one of them.
 */
static PyObject *closure_code(PyObject *fn, const char *name)
{
	PyObject *cells = shim_pyfunc_attr(fn, "__closure__"), *found = NULL;
	long n = cells && cells != py.none ? py.PyObject_Size(cells) : 0;
	char fname[256];

	for (long i = 0; i < n && !found; i++) {
		PyObject *cell = py.PySequence_GetItem(cells, i);
		PyObject *v = cell ? shim_pyfunc_attr(cell, "cell_contents") : NULL;

		if (v && !strcmp(shim_pyfunc_attr_str(v, "__name__", fname, sizeof(fname)), name))
			found = code_of(v, NULL);
		if (v)
			py.Py_DecRef(v);
		if (cell)
			py.Py_DecRef(cell);
		py.PyErr_Clear();
	}
	if (cells)
		py.Py_DecRef(cells);
	return found;
}

/*
 * The code object behind a function, method, staticmethod or decorated function (new ref);
 * NAME (or NULL): the name it is looked up by, which a wrapper's code does not have.
 */
static PyObject *code_of(PyObject *obj, const char *name)
{
	PyObject *o = obj, *next, *inner;
	char co_name[256];
	int hops = 0;

	py.Py_IncRef(o);
	/* functools.wraps' chain, then a bound method's or a staticmethod's function */
	while (hops++ < 16 && (next = shim_pyfunc_attr(o, "__wrapped__"))) {
		py.Py_DecRef(o);
		o = next;
	}
	if ((next = shim_pyfunc_attr(o, "__code__"))) {
		if (!is_code(next)) {
			py.Py_DecRef(next);
			py.Py_DecRef(o);
			return NULL;
		}
		if (name &&
		    strcmp(shim_pyfunc_attr_str(next, "co_name", co_name, sizeof(co_name)), name) &&
		    (inner = closure_code(o, name))) {
			py.Py_DecRef(next);
			next = inner;
		}
		py.Py_DecRef(o);
		return next;
	}
	if ((next = shim_pyfunc_attr(o, "__func__"))) {
		PyObject *c = code_of(next, name);

		py.Py_DecRef(next);
		py.Py_DecRef(o);
		return c;
	}
	py.Py_DecRef(o);
	return NULL;
}

/* ROOT's attributes along the dotted PATH (up to N bytes of it): new reference or NULL. */
static PyObject *walk(PyObject *root, const char *path, size_t n)
{
	char part[256];
	PyObject *o = root, *next;
	size_t i = 0;

	py.Py_IncRef(o);
	while (i < n) {
		size_t k = 0;

		while (i < n && path[i] != '.' && k + 1 < sizeof(part))
			part[k++] = path[i++];
		part[k] = 0;
		i++;
		next = shim_pyfunc_attr(o, part);
		py.Py_DecRef(o);
		if (!next)
			return NULL;
		o = next;
	}
	return o;
}

/*
 * A code object among CODE's constants (and theirs) whose qualified name is WANT. QUAL is
 * CODE's own ("" for a module's code); before 3.11 (no co_qualname) a child's is its parent's
 * and its name, joined by ".<locals>." below a function and "." below a class body.
 */
static PyObject *search(PyObject *code, const char *qual, const char *want, int depth)
{
	PyObject *consts, *found = NULL;
	bool in_function = shim_pyfunc_attr_long(code, "co_flags") & CO_NEWLOCALS;
	long n;

	if (depth > MAX_DEPTH || !(consts = shim_pyfunc_attr(code, "co_consts")))
		return NULL;
	n = py.PyObject_Size(consts);
	for (long i = 0; i < n && !found; i++) {
		PyObject *c = py.PySequence_GetItem(consts, i);
		char name[NAME_MAX_LEN / 4], child[NAME_MAX_LEN];
		size_t len;

		if (!c) {
			py.PyErr_Clear();
			continue;
		}
		if (!is_code(c)) {
			py.Py_DecRef(c);
			continue;
		}
		if (py.minor >= 11) {
			shim_pyfunc_attr_str(c, "co_qualname", child, sizeof(child));
		} else {
			shim_pyfunc_attr_str(c, "co_name", name, sizeof(name));
			snprintf(child, sizeof(child), "%s%s%s", qual,
				 !*qual	       ? ""
				 : in_function ? ".<locals>."
					       : ".",
				 name);
		}
		len = strlen(child);
		if (!strcmp(child, want)) {
			found = c;
			break;
		}
		if (!strncmp(want, child, len) && want[len] == '.')
			found = search(c, child, want, depth + 1);
		py.Py_DecRef(c);
	}
	py.Py_DecRef(consts);
	return found;
}

/* FRAME's code's qualified name as search() counts it. */
static void frame_qual(PyObject *code, char *buf, size_t len)
{
	char name[NAME_MAX_LEN];

	shim_pyfunc_attr_str(code, "co_name", name, sizeof(name));
	if (!strcmp(name, "<module>"))
		buf[0] = 0;
	else if (py.minor >= 11)
		shim_pyfunc_attr_str(code, "co_qualname", buf, len);
	else
		snprintf(buf, len, "%s", name);
}

/* Code running now in MODULE (any thread) that holds WANT among its constants. */
static PyObject *search_running(const char *module, const char *want)
{
	PyObject *sys_frames = py.PySys_GetObject("_current_frames"), *all, *frames, *found = NULL;
	long n, seen = 0;

	if (!sys_frames || !(all = py.PyObject_CallFunction(sys_frames, NULL))) {
		py.PyErr_Clear();
		return NULL;
	}
	frames = py.PyDict_Values(all);
	py.Py_DecRef(all);
	if (!frames) {
		py.PyErr_Clear();
		return NULL;
	}
	n = py.PyObject_Size(frames);
	for (long i = 0; i < n && !found; i++) {
		PyObject *f = py.PySequence_GetItem(frames, i), *next;

		while (f && !found && seen++ < MAX_FRAMES) {
			PyObject *globals = shim_pyfunc_attr(f, "f_globals"),
				 *code = shim_pyfunc_attr(f, "f_code");
			PyObject *name =
				globals ? py.PyDict_GetItemString(globals, "__name__") : NULL;
			const char *text = name ? py.PyUnicode_AsUTF8(name) : NULL;
			char qual[NAME_MAX_LEN];

			if (text && code && !strcmp(text, module)) {
				frame_qual(code, qual, sizeof(qual));
				found = search(code, qual, want, 0);
			}
			py.PyErr_Clear();
			if (globals)
				py.Py_DecRef(globals);
			if (code)
				py.Py_DecRef(code);
			next = shim_pyfunc_attr(f, "f_back");
			py.Py_DecRef(f);
			f = next != py.none ? next : NULL;
			if (next == py.none)
				py.Py_DecRef(next);
		}
		if (f)
			py.Py_DecRef(f);
	}
	py.Py_DecRef(frames);
	return found;
}

/* ---- the entries ---- */

static bool parse_line(const char *line, size_t n, struct pyfunc_entry *e)
{
	char *fields[4] = { e->module, e->qual, e->flags, e->domain };
	size_t sizes[4] = { sizeof(e->module), sizeof(e->qual), sizeof(e->flags),
			    sizeof(e->domain) };
	size_t i = 0;

	for (int f = 0; f < 4; f++) {
		size_t k = 0;

		while (i < n && line[i] != '\t') {
			if (k + 1 < sizes[f])
				fields[f][k++] = line[i];
			i++;
		}
		fields[f][k] = 0;
		i++;
	}
	return e->module[0] && e->qual[0];
}

/* The qualname's last part: what a code object's co_name is. */
static const char *last_part(const char *qual)
{
	const char *dot = strrchr(qual, '.');

	return dot ? dot + 1 : qual;
}

int shim_pyfunc_resolve__load(const char *text)
{
	struct pyfunc_entry *v = NULL, *m;
	int n = 0, cap = 0;

	shim_pyfunc_resolve__unload();
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(m = realloc(v, (size_t)cap * sizeof(*v)))) {
				free(v);
				return -ENOMEM;
			}
			v = m;
		}
		memset(&v[n], 0, sizeof(v[n]));
		if (parse_line(p, len, &v[n])) {
			v[n].last = py.PyUnicode_InternFromString(last_part(v[n].qual));
			py.PyErr_Clear();
			n++;
		}
		p += len + (nl ? 1 : 0);
	}
	pthread_mutex_lock(&shim_pyfunc_entries_lock);
	entries = v;
	nentries = n;
	pthread_mutex_unlock(&shim_pyfunc_entries_lock);
	return 0;
}

void shim_pyfunc_resolve__unload(void)
{
	struct pyfunc_entry *v;
	int n;

	while (nbases > 0)
		py.Py_DecRef(bases[--nbases].cls);
	pthread_mutex_lock(&shim_pyfunc_entries_lock);
	v = entries;
	n = nentries;
	entries = NULL;
	nentries = 0;
	pthread_mutex_unlock(&shim_pyfunc_entries_lock);
	for (int i = 0; i < n; i++)
		if (v[i].last)
			py.Py_DecRef(v[i].last);
	free(v);
	memset(candidates, 0, sizeof(candidates));
	memset(rejected, 0, sizeof(rejected));
	scanning = false;
}

static int add(PyObject *code, const char *name, const char *domain, pyfunc_added_fn added)
{
	const struct pyfunc_code *c = shim_pyfunc_codes__add(code, name, domain);

	/* Found at its own first call, or in a class just created: it never ran. */
	if (c)
		added(c, code != starting && !in_class_hook);
	return 1;
}

/* Flag 's': METHOD's override in every subclass of CLS (and theirs). */
/* CLS's own METHOD (in its __dict__), traced under CLS's name. */
static void override(PyObject *cls, const char *method, const char *domain, pyfunc_added_fn added)
{
	PyObject *dict = shim_pyfunc_attr(cls, "__dict__"), *fn, *code;
	char mod[256], qual[NAME_MAX_LEN / 2], name[NAME_MAX_LEN];

	fn = dict ? py.PyObject_CallMethod(dict, "get", "s", method) : NULL;
	py.PyErr_Clear();
	if (fn && fn != py.none && (code = code_of(fn, method))) {
		snprintf(name, sizeof(name), "%s:%s.%s",
			 shim_pyfunc_attr_str(cls, "__module__", mod, sizeof(mod)),
			 shim_pyfunc_attr_str(cls, "__qualname__", qual, sizeof(qual)), method);
		adding_fn = fn;
		add(code, name, domain, added);
		adding_fn = NULL;
		py.Py_DecRef(code);
	}
	if (fn)
		py.Py_DecRef(fn);
	if (dict)
		py.Py_DecRef(dict);
}

static void subclasses(PyObject *cls, const char *method, const char *domain, pyfunc_added_fn added,
		       int depth)
{
	PyObject *subs =
		depth < MAX_DEPTH ? py.PyObject_CallMethod(cls, "__subclasses__", NULL) : NULL;
	long n;

	if (!subs) {
		py.PyErr_Clear();
		return;
	}
	n = py.PyObject_Size(subs);
	for (long i = 0; i < n; i++) {
		PyObject *sub = py.PySequence_GetItem(subs, i);

		if (!sub) {
			py.PyErr_Clear();
			continue;
		}
		override(sub, method, domain, added);
		subclasses(sub, method, domain, added, depth + 1);
		py.Py_DecRef(sub);
	}
	py.Py_DecRef(subs);
}

/* The bases of flag 's' entries found (bases[], above): a class created later is checked
 * against them. */
#define MAX_BASES ((int)(sizeof(bases) / sizeof(bases[0])))

static void base_keep(PyObject *cls, const char *method, const char *domain)
{
	for (int i = 0; i < nbases; i++)
		if (bases[i].cls == cls && !strcmp(bases[i].method, method))
			return;
	if (nbases == MAX_BASES)
		return;
	py.Py_IncRef(cls);
	bases[nbases].cls = cls;
	snprintf(bases[nbases].method, sizeof(bases[nbases].method), "%s", method);
	snprintf(bases[nbases].domain, sizeof(bases[nbases].domain), "%s", domain);
	nbases++;
}

bool shim_pyfunc_resolve__has_bases(void)
{
	return nbases > 0;
}

void shim_pyfunc_resolve_class(PyObject *cls, pyfunc_added_fn added)
{
	PyObject *saved[3];

	/* A class statement may run while an exception is being handled: keep it. */
	py.PyErr_Fetch(&saved[0], &saved[1], &saved[2]);
	in_class_hook = true;
	for (int i = 0; i < nbases; i++) {
		if (py.PyObject_IsSubclass(cls, bases[i].cls) == 1)
			override(cls, bases[i].method, bases[i].domain, added);
		py.PyErr_Clear();
	}
	in_class_hook = false;
	py.PyErr_Restore(saved[0], saved[1], saved[2]);
}

/*
 * One entry: 1 when something was found for it. RUNNING: also among the constants of code
 * running now (a def below the line running: not needed at a call, where the def has run).
 */
static int resolve_entry(PyObject *modules, const struct pyfunc_entry *e, pyfunc_added_fn added,
			 bool running)
{
	PyObject *mod = py.PyDict_GetItemString(modules, e->module), *obj = NULL, *code = NULL;
	const char *locals = strstr(e->qual, ".<locals>.");
	const char *last = strrchr(e->qual, '.');
	char name[NAME_MAX_LEN + 256];
	int found = 0;

	snprintf(name, sizeof(name), "%s:%s", e->module, e->qual);
	if (mod) {
		py.Py_IncRef(mod);
		if (locals) {
			obj = walk(mod, e->qual, (size_t)(locals - e->qual));
			PyObject *outer = obj ? code_of(obj, NULL) : NULL;
			char head[NAME_MAX_LEN];

			snprintf(head, sizeof(head), "%.*s", (int)(locals - e->qual), e->qual);
			code = outer ? search(outer, py.minor >= 11 ? "" : head, e->qual, 0) : NULL;
			if (outer)
				py.Py_DecRef(outer);
		} else {
			obj = walk(mod, e->qual, strlen(e->qual));
			code = obj ? code_of(obj, last ? last + 1 : e->qual) : NULL;
		}
		if (obj)
			py.Py_DecRef(obj);
		if (strchr(e->flags, 's') && last && !locals) {
			PyObject *cls = walk(mod, e->qual, (size_t)(last - e->qual));

			if (cls) {
				base_keep(cls, last + 1, e->domain);
				subclasses(cls, last + 1, e->domain, added, 0);
				py.Py_DecRef(cls);
			}
		}
		py.Py_DecRef(mod);
	}
	py.PyErr_Clear();
	if (!code && running)
		code = search_running(e->module, e->qual);
	if (code) {
		found = add(code, name, e->domain, added);
		py.Py_DecRef(code);
	}
	return found;
}

static uint32_t ptr_slot(const PyObject *p, uint32_t n)
{
	uintptr_t h = (uintptr_t)p >> 4;

	return (uint32_t)((h ^ (h >> 13)) * 0x9e3779b1u) & (n - 1);
}

/* The candidates again, from the entries not found (their last parts). */
static void candidates_update(void)
{
	memset(candidates, 0, sizeof(candidates));
	memset(rejected, 0, sizeof(rejected));
	scanning = false;
	for (int i = 0; i < nentries; i++) {
		const struct pyfunc_entry *e = &entries[i];
		uint32_t k, tries = 0;

		if (e->found || !e->last)
			continue;
		for (k = ptr_slot(e->last, NCANDIDATES);
		     candidates[k] && candidates[k] != e->last && tries++ < NCANDIDATES;
		     k = (k + 1) & (NCANDIDATES - 1))
			;
		if (tries < NCANDIDATES)
			candidates[k] = e->last;
		scanning = true;
	}
}

bool shim_pyfunc_resolve__scanning(void)
{
	return scanning;
}

bool shim_pyfunc_resolve__candidate(const PyObject *name)
{
	for (uint32_t k = ptr_slot(name, NCANDIDATES), n = 0; candidates[k] && n < NCANDIDATES;
	     k = (k + 1) & (NCANDIDATES - 1), n++)
		if (candidates[k] == name)
			return true;
	return false;
}

const struct pyfunc_code *shim_pyfunc_resolve__discover(PyObject *code, PyObject *name,
							pyfunc_added_fn added, bool *candidate)
{
	PyObject *modules;
	uint32_t r = ptr_slot(code, NREJECTED);
	const struct pyfunc_code *c = NULL;
	bool any = false;

	*candidate = name && shim_pyfunc_resolve__candidate(name);
	if (!*candidate || rejected[r] == code || starting ||
	    !(modules = py.PySys_GetObject("modules")))
		return NULL;
	starting = code;
	for (int i = 0; i < nentries; i++) {
		struct pyfunc_entry *e = &entries[i];

		if (e->found || e->last != name)
			continue;
		e->found = resolve_entry(modules, e, added, false);
		any |= e->found;
	}
	starting = NULL;
	c = shim_pyfunc_codes__get(code);
	if (any)
		candidates_update();
	else if (!c)
		rejected[r] = code;
	return c;
}

/*
 * Why E is not found, into E->why: worked out with the GIL (Python code may run, and let
 * other threads in), copied under the entries' lock, which the drain takes without the GIL.
 */
static void entry_why(PyObject *modules, struct pyfunc_entry *e)
{
	char why[PYFUNC_WHY_LEN];

	shim_pyfunc_why(modules, e->module, e->qual, why, sizeof(why));
	pthread_mutex_lock(&shim_pyfunc_entries_lock);
	memcpy(e->why, why, sizeof(why));
	pthread_mutex_unlock(&shim_pyfunc_entries_lock);
}

void shim_pyfunc_resolve__why_all(void)
{
	PyObject *modules = py.PySys_GetObject("modules");

	for (int i = 0; modules && i < nentries; i++)
		if (!entries[i].found)
			entry_why(modules, &entries[i]);
}

int shim_pyfunc_resolve(pyfunc_added_fn added, char *missing, size_t len)
{
	PyObject *modules = py.PySys_GetObject("modules");
	int nmissing = 0;
	size_t used = 0;

	if (missing && len)
		missing[0] = 0;
	if (!modules)
		return -1;
	for (int i = 0; i < nentries; i++) {
		struct pyfunc_entry *e = &entries[i];

		e->found = resolve_entry(modules, e, added, true);
		if (e->found)
			continue;
		nmissing++;
		entry_why(modules, e);
		if (missing && used + 1 < len)
			used += (size_t)snprintf(missing + used, len - used, "%s%s:%s",
						 used ? ", " : "", e->module, e->qual);
		if (used >= len)
			used = len - 1;
	}
	candidates_update();
	return nmissing;
}

void shim_pyfunc_resolve__each_never_found(void (*fn)(const char *text, void *arg), void *arg)
{
	char text[NAME_MAX_LEN + 256 + PYFUNC_WHY_LEN + 32];

	pthread_mutex_lock(&shim_pyfunc_entries_lock);
	for (int i = 0; i < nentries; i++) {
		const struct pyfunc_entry *e = &entries[i];

		/* A preset names functions of libraries a job may not have: not said. */
		if (e->found || strchr(e->flags, 'p'))
			continue;
		snprintf(text, sizeof(text), "never found: %s:%s: %s", e->module, e->qual,
			 e->why[0] ? e->why : "not looked for yet");
		fn(text, arg);
	}
	pthread_mutex_unlock(&shim_pyfunc_entries_lock);
}
