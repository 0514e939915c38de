// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Why an entry of --python-functions is not found (shim_pyfunc.h), said in words a user can
 * act on, as Python's own NameError does ("did you mean ...?"):
 *   - its module is not in sys.modules: never imported, or imported under another name (the
 *     script run is __main__, whatever its file's name), with the closest names imported;
 *   - a part of its qualified name is not an attribute: which object lacks which name, with
 *     the closest names it has (dir());
 *   - what it names is not a Python function (a class, C code): what it is instead.
 * Imports nothing (sys.modules only); GIL held.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_pyfunc.h"

#define MAX_NAME 256
#define NCLOSE	 3

/* Optimal string alignment distance (a transposition is one edit), case-blind. */
static unsigned distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	unsigned *d, r;

	if (n >= MAX_NAME || m >= MAX_NAME)
		return ~0u;
	d = malloc((n + 1) * (m + 1) * sizeof(*d));
	if (!d)
		return ~0u;
#define D(i, j) d[(i) * (m + 1) + (j)]
	for (size_t i = 0; i <= n; i++)
		D(i, 0) = (unsigned)i;
	for (size_t j = 0; j <= m; j++)
		D(0, j) = (unsigned)j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned best = D(i - 1, j - 1) + cost;

			if (D(i - 1, j) + 1 < best)
				best = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < best)
				best = D(i, j - 1) + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    D(i - 2, j - 2) + 1 < best)
				best = D(i - 2, j - 2) + 1;
			D(i, j) = best;
		}
	r = D(n, m);
#undef D
	free(d);
	return r;
}

struct close {
	char name[NCLOSE][MAX_NAME];
	unsigned dist[NCLOSE];
	int n;
};

/* NAME into the closest kept, when near enough to WANT to be a slip of the fingers. */
static void consider(struct close *c, const char *want, const char *name)
{
	size_t w = strlen(want);
	unsigned d, most = w < 3 ? 1 : (unsigned)(w / 3);
	int at;

	if (!strcmp(name, want) || (name[0] == '_' && name[1] == '_' && want[0] != '_'))
		return;
	d = distance(want, name);
	if (d > most)
		return;
	for (at = c->n; at > 0 && (c->dist[at - 1] > d ||
				   (c->dist[at - 1] == d && strcmp(c->name[at - 1], name) > 0));
	     at--)
		;
	if (at >= NCLOSE)
		return;
	if (c->n < NCLOSE)
		c->n++;
	for (int k = c->n - 1; k > at; k--) {
		c->dist[k] = c->dist[k - 1];
		memcpy(c->name[k], c->name[k - 1], MAX_NAME);
	}
	c->dist[at] = d;
	snprintf(c->name[at], MAX_NAME, "%s", name);
}

/* The closest of the strings of LIST (a sequence) to WANT. */
static void closest_in(PyObject *list, const char *want, struct close *c)
{
	long n = list ? py.PyObject_Size(list) : 0;

	c->n = 0;
	for (long i = 0; i < n; i++) {
		PyObject *s = py.PySequence_GetItem(list, i);
		const char *text = s ? py.PyUnicode_AsUTF8(s) : NULL;

		if (text)
			consider(c, want, text);
		if (s)
			py.Py_DecRef(s);
	}
	py.PyErr_Clear();
}

/*
 * "; did you mean a?" or "; did you mean a, b or c?" after TEXT (LEN bytes): the strings of
 * NAMES (a new reference, released; NULL: none) closest to WANT.
 */
static void suggest(char *text, size_t len, PyObject *names, const char *want)
{
	size_t used = strlen(text);
	struct close close, *c = &close;

	closest_in(names, want, c);
	if (names)
		py.Py_DecRef(names);
	py.PyErr_Clear();
	for (int i = 0; i < c->n && used < len; i++)
		used += (size_t)snprintf(text + used, len - used, "%s%s",
					 !i		 ? "; did you mean "
					 : i == c->n - 1 ? " or "
							 : ", ",
					 c->name[i]);
	if (c->n && used < len)
		snprintf(text + used, len - used, "?");
}

/* MODULE is not in sys.modules. */
static void no_module(PyObject *modules, const char *module, const char *qual, char *why,
		      size_t len)
{
	PyObject *main = py.PyDict_GetItemString(modules, "__main__");
	char file[512], first[MAX_NAME];
	const char *base, *dot = strrchr(module, '.');

	snprintf(first, sizeof(first), "%.*s", (int)strcspn(qual, "."), qual);
	/* `python train.py` runs train.py as __main__: "train" is never imported. */
	if (main && py.PyObject_HasAttrString(main, first)) {
		/* Python takes __file__ off __main__ once the script returns: argv[0] is it. */
		if (!shim_pyfunc_attr_str(main, "__file__", file, sizeof(file))[0]) {
			PyObject *argv = py.PySys_GetObject("argv");
			PyObject *arg0 = argv ? py.PySequence_GetItem(argv, 0) : NULL;
			const char *text = arg0 ? py.PyUnicode_AsUTF8(arg0) : NULL;

			snprintf(file, sizeof(file), "%s", text ? text : "");
			if (arg0)
				py.Py_DecRef(arg0);
			py.PyErr_Clear();
		}
		base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
		if (!strncmp(base, dot ? dot + 1 : module, strlen(dot ? dot + 1 : module)) &&
		    !strcmp(base + strlen(dot ? dot + 1 : module), ".py")) {
			snprintf(why, len,
				 "%s is the script run, whose module is __main__: name it "
				 "__main__:%s",
				 base, qual);
			return;
		}
	}
	snprintf(why, len, "the module %s was never imported (sys.modules has no %s)", module,
		 module);
	suggest(why, len, py.PyDict_Keys(modules), module);
}

/* What OBJ is, when it has no code a hook can see. */
static void not_function(PyObject *obj, const char *shown, const char *module, const char *qual,
			 char *why, size_t len)
{
	PyObject *type = py.PyObject_Type(obj);
	char tname[MAX_NAME] = "";

	if (type) {
		shim_pyfunc_attr_str(type, "__name__", tname, sizeof(tname));
		py.Py_DecRef(type);
	}
	if (py.PyObject_HasAttrString(obj, "__mro__"))
		snprintf(why, len,
			 "%s is a class, not a function: name one of its methods (%s:%s.METHOD)",
			 shown, module, qual);
	else if (!strcmp(tname, "builtin_function_or_method") ||
		 !strcmp(tname, "method_descriptor") || !strcmp(tname, "wrapper_descriptor"))
		snprintf(why, len, "%s is a %s: C code, which has no Python code object to trace",
			 shown, tname);
	else
		snprintf(why, len, "%s is a %s, not a Python function", shown,
			 tname[0] ? tname : "object");
	py.PyErr_Clear();
}

void shim_pyfunc_why(PyObject *modules, const char *module, const char *qual, char *why, size_t len)
{
	PyObject *obj = py.PyDict_GetItemString(modules, module), *next;
	char shown[1024], part[MAX_NAME];
	const char *p = qual;

	why[0] = 0;
	if (!obj) {
		no_module(modules, module, qual, why, len);
		return;
	}
	py.Py_IncRef(obj);
	snprintf(shown, sizeof(shown), "%s", module);
	while (*p) {
		size_t n = strcspn(p, ".");

		snprintf(part, sizeof(part), "%.*s", (int)n, p);
		if (!strcmp(part, "<locals>")) {
			snprintf(why, len,
				 "%s has no local function %s (not among its code's constants)",
				 shown, p + n + (p[n] ? 1 : 0));
			py.Py_DecRef(obj);
			return;
		}
		next = shim_pyfunc_attr(obj, part);
		if (!next) {
			snprintf(why, len, "%s has no %s", shown, part);
			suggest(why, len, py.PyObject_Dir(obj), part);
			py.Py_DecRef(obj);
			return;
		}
		py.Py_DecRef(obj);
		obj = next;
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), ".%s", part);
		p += n + (p[n] ? 1 : 0);
	}
	if (!py.PyObject_HasAttrString(obj, "__code__") &&
	    !py.PyObject_HasAttrString(obj, "__func__"))
		not_function(obj, shown, module, qual, why, len);
	else
		snprintf(why, len, "%s was found but its code object was not (a wrapper?)", shown);
	py.PyErr_Clear();
	py.Py_DecRef(obj);
}
