// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --torch-shapes: the values of an op's scalar inputs (conv2d's stride, padding, dilation and
 * groups: what FLOPs need), read in its start callback as torch 2.x's Kineto trace writes
 * them under "Concrete Inputs" (torch/csrc/profiler/collection.cpp, InputOutputEncoder, and
 * util.cpp, ivalueListToStr: an IValue printed by its operator<<, None as ""):
 *
 *   Int      decimal                       "2"
 *   Double   an integral value as "2.", else C++'s setprecision(17)   "0.10000000000000001"
 *   Bool     "True" / "False"
 *   a list of those (GenericList, up to 30: SCALAR_LIST_LENGTH_LIMIT), "[2, 2]", "[]"
 *   anything else (a tensor, None, a string, a longer list)   ""
 *
 * A SymInt list with no symbolic element is boxed as a list of Int (IValue(ArrayRef<SymInt>)
 * decays it), so conv2d's SymInt[2] is read as int[2] is. What torch prints and the shim does
 * not read (a complex, a symbolic SymInt/SymFloat/SymBool, a list of lists) is "".
 *
 * An IValue is 16 bytes: its payload (the value, or a pointer), then its tag. A list's
 * payload points at a c10::detail::ListImpl whose std::vector<IValue> (begin, end, capacity)
 * lies at the layout's list_vector; only elements the vector's bounds promise are read, and
 * a list longer than 30, or one with an element that is not a scalar, is "" as a whole.
 *
 * Read and formatted apart, as the shapes are: the words read key the thread's cache of texts.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shim_torch.h"

#define IVALUE_SIZE	16
#define IVALUE_TAG	8
#define SCALAR_TEXT_MAX 32 /* "-9223372036854775808.", "-1.7976931348623157e+308" */

/* A double as IValue's operator<< prints it. */
static int put_double(char *out, size_t len, double d)
{
	int c = fpclassify(d);

	/* int64_t(d) == d: on x86-64 an out-of-range cast gives INT64_MIN, equal only to it */
	if ((c == FP_NORMAL || c == FP_ZERO) && fabs(d) < 0x1p63 && (double)(long long)d == d)
		return snprintf(out, len, "%lld.", (long long)d);
	if (d == -0x1p63)
		return snprintf(out, len, "%lld.", (long long)-0x1p63);
	return snprintf(out, len, "%.17g", d);
}

/* What an input was read as (the first word of its words). */
enum { C_NONE, C_INT, C_DOUBLE, C_BOOL, C_LIST };

/* A scalar IValue as two words, its kind and its value, into W; false when it is none. */
static bool read_scalar(const struct torch_layout *l, const uint8_t *iv, uint64_t *w)
{
	uint32_t tag = *(const uint32_t *)(iv + IVALUE_TAG);

	w[1] = *(const uint64_t *)iv;
	if (tag == l->tag_int) {
		w[0] = C_INT;
	} else if (tag == l->tag_double) {
		w[0] = C_DOUBLE;
	} else if (tag == l->tag_bool) {
		w[0] = C_BOOL;
		w[1] = *iv != 0;
	} else {
		return false;
	}
	return true;
}

/* A list of scalars as C_LIST | n << 8, then its elements' two words each; the words, or 0. */
static size_t read_list(const struct torch_layout *l, const uint8_t *impl, uint64_t *w)
{
	const uint8_t *const *vec = (const uint8_t *const *)(impl + l->list_vector);
	const uint8_t *begin = vec[0], *end = vec[1], *cap = vec[2];
	size_t n = (size_t)(end - begin) / IVALUE_SIZE;

	/* a std::vector<IValue>: begin <= end <= capacity, whole IValues, malloc's alignment */
	if (end < begin || cap < end || (size_t)(end - begin) % IVALUE_SIZE ||
	    (size_t)(cap - begin) % IVALUE_SIZE || (uintptr_t)begin % 16 || n > TORCH_LIST_MAX ||
	    (n && !begin))
		return 0;
	w[0] = C_LIST | (uint64_t)n << 8;
	for (size_t i = 0; i < n; i++)
		if (!read_scalar(l, begin + i * IVALUE_SIZE, w + 1 + 2 * i))
			return 0;
	return 1 + 2 * n;
}

long shim_torch_concrete__read(const struct torch_layout *l, const void *inputs, size_t n,
			       uint64_t *w)
{
	const uint8_t *iv = inputs;
	size_t nw = 0, k;

	if (!l->list_vector || !inputs || n > TORCH_MAX_INPUTS)
		return -1;
	for (size_t i = 0; i < n; i++, iv += IVALUE_SIZE) {
		uint32_t tag = *(const uint32_t *)(iv + IVALUE_TAG);
		const uint8_t *impl = *(const uint8_t *const *)iv;

		if (tag == l->tag_list)
			k = impl ? read_list(l, impl, w + nw) : 0;
		else
			k = read_scalar(l, iv, w + nw) ? 2 : 0;
		if (!k) {
			w[nw] = C_NONE;
			k = 1;
		}
		nw += k;
	}
	return (long)nw;
}

/* A scalar's text, from its two words W, into OUT (SCALAR_TEXT_MAX); its length, or -1. */
static int put_scalar(const uint64_t *w, char *out)
{
	double d;

	switch (w[0]) {
	case C_INT:
		return snprintf(out, SCALAR_TEXT_MAX, "%lld", (long long)w[1]);
	case C_DOUBLE:
		memcpy(&d, &w[1], sizeof(d));
		return put_double(out, SCALAR_TEXT_MAX, d);
	case C_BOOL:
		return snprintf(out, SCALAR_TEXT_MAX, "%s", w[1] ? "True" : "False");
	}
	return -1;
}

/* An input's text, from its words at W (*K of them, set), into OUT (LEN bytes); or -1. */
static int put_input(const uint64_t *w, size_t *k, char *out, size_t len)
{
	size_t n = w[0] >> 8, used = 1;
	char one[SCALAR_TEXT_MAX];

	if ((w[0] & 0xff) != C_LIST) {
		*k = w[0] == C_NONE ? 1 : 2;
		return w[0] == C_NONE ? -1 : put_scalar(w, out);
	}
	*k = 1 + 2 * n;
	out[0] = '[';
	for (size_t i = 0; i < n; i++) {
		int m = put_scalar(w + 1 + 2 * i, one);

		if (m < 0 || used + (size_t)m + 3 >= len)
			return -1;
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", one);
	}
	out[used++] = ']';
	out[used] = 0;
	return (int)used;
}

size_t shim_torch_concrete__text(const uint64_t *w, size_t nw, char *buf, size_t len)
{
	char one[TORCH_LIST_MAX * (SCALAR_TEXT_MAX + 2) + 4];
	size_t used = 1, k;

	if (len < 4)
		return 0;
	buf[0] = '[';
	for (size_t at = 0, i = 0; at < nw; at += k, i++) {
		int m = put_input(w + at, &k, one, sizeof(one));

		if (m < 0)
			m = one[0] = 0;
		if (used + (size_t)m + 6 >= len)
			return 0; /* never a list cut short: none at all */
		used += (size_t)snprintf(buf + used, len - used, "%s\"%s\"", i ? ", " : "", one);
	}
	buf[used++] = ']';
	buf[used] = 0;
	return used;
}
