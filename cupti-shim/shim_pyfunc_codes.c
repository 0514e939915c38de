// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The code objects traced (shim_pyfunc.h), GIL held: an open-addressing hash by address for
 * the callbacks' lookups, and the entries in the order added. The table holds a strong
 * reference to each code object, so a pointer a callback sees is never another object's.
 *
 * Each entry is allocated once and never moved or freed (a cleared one is reused by the next
 * addition): an open call keeps a pointer to its entry, and the drain writes the calls still
 * open from those pointers without the GIL, while a callback may be adding a code object
 * found at its first call.
 */
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_pyfunc.h"

/* CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR */
#define CO_SUSPENDS 0x3a0

static struct pyfunc_code **codes; /* in the order added; [ncodes, nalloc) cleared, reusable */
static uint32_t ncodes, nalloc, cap_codes;
struct pyfunc_code **shim_pyfunc_codes_slots; /* NULL: empty */
uint32_t shim_pyfunc_codes_nslots;	      /* a power of two, at least twice ncodes */

#define slots  shim_pyfunc_codes_slots
#define nslots shim_pyfunc_codes_nslots

static uint32_t slot_of(const PyObject *code)
{
	return shim_pyfunc_codes__slot(code, nslots);
}

uint32_t shim_pyfunc_codes__count(void)
{
	return ncodes;
}

void shim_pyfunc_codes__for_each(void (*fn)(const struct pyfunc_code *c, void *arg), void *arg)
{
	for (uint32_t i = 0; i < ncodes; i++)
		fn(codes[i], arg);
}

void shim_pyfunc_codes__clear(void)
{
	for (uint32_t i = 0; i < ncodes; i++) {
		py.Py_DecRef(codes[i]->code);
		codes[i]->code = NULL; /* a stale open call's check fails */
	}
	ncodes = 0;
	if (slots)
		memset(slots, 0, nslots * sizeof(*slots));
}

static bool rehash(uint32_t want)
{
	struct pyfunc_code **s = calloc(want, sizeof(*s));

	if (!s)
		return false;
	free(slots);
	slots = s;
	nslots = want;
	for (uint32_t k = 0; k < ncodes; k++) {
		uint32_t i = slot_of(codes[k]->code);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = codes[k];
	}
	return true;
}

/* The next entry to fill: a cleared one, or a new one (NULL when out of memory). */
static struct pyfunc_code *next_entry(void)
{
	struct pyfunc_code *c;

	if (ncodes < nalloc)
		return codes[ncodes];
	if (nalloc == cap_codes) {
		uint32_t n = cap_codes ? 2 * cap_codes : 64;
		struct pyfunc_code **m = realloc(codes, n * sizeof(*m));

		if (!m)
			return NULL;
		codes = m;
		cap_codes = n;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		codes[nalloc++] = c;
	return c;
}

static long code_long(PyObject *code, const char *name)
{
	PyObject *v = py.PyObject_GetAttrString(code, name);
	long n = v ? py.PyLong_AsLong(v) : 0;

	if (v)
		py.Py_DecRef(v);
	return n;
}

const struct pyfunc_code *shim_pyfunc_codes__add(PyObject *code, const char *name,
						 const char *domain)
{
	struct pyfunc_code *c;
	PyObject *file;
	const char *text;
	uint32_t i;

	if (shim_pyfunc_codes__get(code))
		return NULL;
	if (2 * (ncodes + 1) > nslots && !rehash(nslots ? 2 * nslots : 256))
		return NULL;
	c = next_entry();
	if (!c)
		return NULL;
	c->func = shim_str__intern_c(name);
	c->domain = domain && *domain ? shim_str__intern_c(domain) : NULL;
	file = py.PyObject_GetAttrString(code, "co_filename");
	text = file ? py.PyUnicode_AsUTF8(file) : NULL;
	c->file = shim_str__intern_c(text ? text : "");
	if (file)
		py.Py_DecRef(file);
	c->line = (uint32_t)code_long(code, "co_firstlineno");
	c->gen = code_long(code, "co_flags") & CO_SUSPENDS;
	py.PyErr_Clear();
	c->index = ncodes;
	py.Py_IncRef(code);
	c->code = code; /* last: the entry is whole before anyone can match it */
	for (i = slot_of(code); slots[i];)
		i = (i + 1) & (nslots - 1);
	slots[i] = c;
	ncodes++;
	return c;
}
