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
 * The table holds a strong reference to each code object found, so a pointer seen by a
 * callback is never another object's; it is an open-addressing hash by address.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_pyfunc.h"

#define CO_NEWLOCALS 0x2
/* CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR */
#define CO_SUSPENDS  0x3a0
#define MAX_DEPTH    24
#define MAX_FRAMES   512
#define NAME_MAX_LEN 1024

static struct pyfunc_code *codes; /* in the order added */
static int nbases;
static struct base {
	PyObject *cls; /* a reference */
	char method[256], domain[256];
} bases[32];
static uint32_t ncodes, cap_codes;
static uint32_t *slots; /* index + 1 into codes, 0: empty */
static uint32_t nslots; /* a power of two, at least twice ncodes */

static long attr_long(PyObject *o, const char *name);

static uint32_t slot_of(const PyObject *code)
{
	uintptr_t h = (uintptr_t)code >> 4;

	h ^= h >> 17;
	h *= 0x9e3779b1u;
	return (uint32_t)h & (nslots - 1);
}

const struct pyfunc_code *shim_pyfunc_codes__get(const PyObject *code)
{
	uint32_t i;

	if (!nslots)
		return NULL;
	for (i = slot_of(code); slots[i]; i = (i + 1) & (nslots - 1))
		if (codes[slots[i] - 1].code == code)
			return &codes[slots[i] - 1];
	return NULL;
}

uint32_t shim_pyfunc_codes__count(void)
{
	return ncodes;
}

void shim_pyfunc_codes__for_each(void (*fn)(const struct pyfunc_code *c, void *arg), void *arg)
{
	for (uint32_t i = 0; i < ncodes; i++)
		fn(&codes[i], arg);
}

void shim_pyfunc_codes__clear(void)
{
	while (nbases > 0)
		py.Py_DecRef(bases[--nbases].cls);
	for (uint32_t i = 0; i < ncodes; i++)
		py.Py_DecRef(codes[i].code);
	ncodes = 0;
	if (slots)
		memset(slots, 0, nslots * sizeof(*slots));
}

static bool rehash(uint32_t want)
{
	uint32_t *s = calloc(want, sizeof(*s));

	if (!s)
		return false;
	free(slots);
	slots = s;
	nslots = want;
	for (uint32_t k = 0; k < ncodes; k++) {
		uint32_t i = slot_of(codes[k].code);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = k + 1;
	}
	return true;
}

/* A new code object into the table (a reference taken); NULL when known or out of memory. */
static const struct pyfunc_code *codes_add(PyObject *code, const char *name, const char *domain)
{
	struct pyfunc_code *c;
	PyObject *file, *line;
	const char *text;
	uint32_t i;

	if (shim_pyfunc_codes__get(code))
		return NULL;
	if (ncodes == cap_codes) {
		uint32_t n = cap_codes ? 2 * cap_codes : 64;
		struct pyfunc_code *m = realloc(codes, n * sizeof(*m));

		if (!m)
			return NULL;
		codes = m;
		cap_codes = n;
	}
	if (2 * (ncodes + 1) > nslots && !rehash(nslots ? 2 * nslots : 256))
		return NULL;
	c = &codes[ncodes];
	memset(c, 0, sizeof(*c));
	c->code = code;
	py.Py_IncRef(code);
	c->func = shim_str__intern_c(name);
	c->domain = domain && *domain ? shim_str__intern_c(domain) : NULL;
	file = py.PyObject_GetAttrString(code, "co_filename");
	text = file ? py.PyUnicode_AsUTF8(file) : NULL;
	c->file = shim_str__intern_c(text ? text : "");
	line = py.PyObject_GetAttrString(code, "co_firstlineno");
	c->line = line ? (uint32_t)py.PyLong_AsLong(line) : 0;
	c->gen = attr_long(code, "co_flags") & CO_SUSPENDS;
	if (file)
		py.Py_DecRef(file);
	if (line)
		py.Py_DecRef(line);
	py.PyErr_Clear();
	for (i = slot_of(code); slots[i];)
		i = (i + 1) & (nslots - 1);
	slots[i] = ++ncodes;
	return c;
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
static PyObject *attr(PyObject *o, const char *name)
{
	PyObject *v = py.PyObject_GetAttrString(o, name);

	if (!v)
		py.PyErr_Clear();
	return v;
}

/* A string attribute of O into BUF ("" when none). */
static const char *attr_str(PyObject *o, const char *name, char *buf, size_t len)
{
	PyObject *v = attr(o, name);
	const char *s = v ? py.PyUnicode_AsUTF8(v) : NULL;

	snprintf(buf, len, "%s", s ? s : "");
	if (!s)
		py.PyErr_Clear();
	if (v)
		py.Py_DecRef(v);
	return buf;
}

static long attr_long(PyObject *o, const char *name)
{
	PyObject *v = attr(o, name);
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
	PyObject *cells = attr(fn, "__closure__"), *found = NULL;
	long n = cells && cells != py.none ? py.PyObject_Size(cells) : 0;
	char fname[256];

	for (long i = 0; i < n && !found; i++) {
		PyObject *cell = py.PySequence_GetItem(cells, i);
		PyObject *v = cell ? attr(cell, "cell_contents") : NULL;

		if (v && !strcmp(attr_str(v, "__name__", fname, sizeof(fname)), name))
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
	while (hops++ < 16 && (next = attr(o, "__wrapped__"))) {
		py.Py_DecRef(o);
		o = next;
	}
	if ((next = attr(o, "__code__"))) {
		if (!is_code(next)) {
			py.Py_DecRef(next);
			py.Py_DecRef(o);
			return NULL;
		}
		if (name && strcmp(attr_str(next, "co_name", co_name, sizeof(co_name)), name) &&
		    (inner = closure_code(o, name))) {
			py.Py_DecRef(next);
			next = inner;
		}
		py.Py_DecRef(o);
		return next;
	}
	if ((next = attr(o, "__func__"))) {
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
		next = attr(o, part);
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
	bool in_function = attr_long(code, "co_flags") & CO_NEWLOCALS;
	long n;

	if (depth > MAX_DEPTH || !(consts = attr(code, "co_consts")))
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
			attr_str(c, "co_qualname", child, sizeof(child));
		} else {
			attr_str(c, "co_name", name, sizeof(name));
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

	attr_str(code, "co_name", name, sizeof(name));
	if (!strcmp(name, "<module>"))
		buf[0] = 0;
	else if (py.minor >= 11)
		attr_str(code, "co_qualname", buf, len);
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
			PyObject *globals = attr(f, "f_globals"), *code = attr(f, "f_code");
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
			next = attr(f, "f_back");
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

struct entry {
	char module[256], qual[NAME_MAX_LEN], flags[16], domain[256];
};

static bool parse_line(const char *line, size_t n, struct entry *e)
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

static int add(PyObject *code, const char *name, const char *domain,
	       void (*added)(const struct pyfunc_code *c))
{
	const struct pyfunc_code *c = codes_add(code, name, domain);

	if (c)
		added(c);
	return 1;
}

/* Flag 's': METHOD's override in every subclass of CLS (and theirs). */
/* CLS's own METHOD (in its __dict__), traced under CLS's name. */
static void override(PyObject *cls, const char *method, const char *domain,
		     void (*added)(const struct pyfunc_code *c))
{
	PyObject *dict = attr(cls, "__dict__"), *fn, *code;
	char mod[256], qual[NAME_MAX_LEN / 2], name[NAME_MAX_LEN];

	fn = dict ? py.PyObject_CallMethod(dict, "get", "s", method) : NULL;
	py.PyErr_Clear();
	if (fn && fn != py.none && (code = code_of(fn, method))) {
		snprintf(name, sizeof(name), "%s:%s.%s",
			 attr_str(cls, "__module__", mod, sizeof(mod)),
			 attr_str(cls, "__qualname__", qual, sizeof(qual)), method);
		add(code, name, domain, added);
		py.Py_DecRef(code);
	}
	if (fn)
		py.Py_DecRef(fn);
	if (dict)
		py.Py_DecRef(dict);
}

static void subclasses(PyObject *cls, const char *method, const char *domain,
		       void (*added)(const struct pyfunc_code *c), int depth)
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

void shim_pyfunc_resolve_class(PyObject *cls, void (*added)(const struct pyfunc_code *c))
{
	PyObject *saved[3];

	/* A class statement may run while an exception is being handled: keep it. */
	py.PyErr_Fetch(&saved[0], &saved[1], &saved[2]);
	for (int i = 0; i < nbases; i++) {
		if (py.PyObject_IsSubclass(cls, bases[i].cls) == 1)
			override(cls, bases[i].method, bases[i].domain, added);
		py.PyErr_Clear();
	}
	py.PyErr_Restore(saved[0], saved[1], saved[2]);
}

/* One entry: 1 when something was found for it. */
static int resolve_entry(PyObject *modules, const struct entry *e,
			 void (*added)(const struct pyfunc_code *c))
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
	if (!code)
		code = search_running(e->module, e->qual);
	if (code) {
		found = add(code, name, e->domain, added);
		py.Py_DecRef(code);
	}
	return found;
}

int shim_pyfunc_resolve(const char *text, void (*added)(const struct pyfunc_code *c), char *missing,
			size_t len)
{
	PyObject *modules = py.PySys_GetObject("modules");
	struct entry *e = malloc(sizeof(*e));
	int nmissing = 0;
	size_t used = 0;

	if (missing && len)
		missing[0] = 0;
	if (!e || !modules) {
		free(e);
		return -1;
	}
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (parse_line(p, n, e) && !resolve_entry(modules, e, added)) {
			nmissing++;
			if (missing && used + 1 < len)
				used += (size_t)snprintf(missing + used, len - used, "%s%s:%s",
							 used ? ", " : "", e->module, e->qual);
			if (used >= len)
				used = len - 1;
		}
		p += n + (nl ? 1 : 0);
	}
	free(e);
	return nmissing;
}
