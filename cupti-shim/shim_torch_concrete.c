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
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shim_torch.h"

#define IVALUE_SIZE	16
#define IVALUE_TAG	8
#define MAX_INPUTS	32
#define LIST_MAX	30 /* torch's SCALAR_LIST_LENGTH_LIMIT */
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

/* A scalar IValue's text into OUT (at least SCALAR_TEXT_MAX); its length, or -1. */
static int put_scalar(const struct torch_layout *l, const uint8_t *iv, char *out)
{
	uint32_t tag = *(const uint32_t *)(iv + IVALUE_TAG);

	if (tag == l->tag_int)
		return snprintf(out, SCALAR_TEXT_MAX, "%lld", *(const long long *)iv);
	if (tag == l->tag_double)
		return put_double(out, SCALAR_TEXT_MAX, *(const double *)iv);
	if (tag == l->tag_bool)
		return snprintf(out, SCALAR_TEXT_MAX, "%s", *iv ? "True" : "False");
	return -1;
}

/* A list of scalars as "[2, 2]" into OUT (LEN bytes); its length, or -1. */
static int put_list(const struct torch_layout *l, const uint8_t *impl, char *out, size_t len)
{
	const uint8_t *const *vec = (const uint8_t *const *)(impl + l->list_vector);
	const uint8_t *begin = vec[0], *end = vec[1], *cap = vec[2];
	size_t n = (size_t)(end - begin) / IVALUE_SIZE, used = 1;
	char one[SCALAR_TEXT_MAX];

	/* a std::vector<IValue>: begin <= end <= capacity, whole IValues, malloc's alignment */
	if (end < begin || cap < end || (size_t)(end - begin) % IVALUE_SIZE ||
	    (size_t)(cap - begin) % IVALUE_SIZE || (uintptr_t)begin % 16 || n > LIST_MAX ||
	    (n && !begin))
		return -1;
	out[0] = '[';
	for (size_t i = 0; i < n; i++) {
		int k = put_scalar(l, begin + i * IVALUE_SIZE, one);

		if (k < 0 || used + (size_t)k + 3 >= len)
			return -1;
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", one);
	}
	out[used++] = ']';
	out[used] = 0;
	return (int)used;
}

size_t shim_torch_concrete__format(const struct torch_layout *l, const void *inputs, size_t n,
				   char *buf, size_t len)
{
	const uint8_t *iv = inputs;
	char one[LIST_MAX * (SCALAR_TEXT_MAX + 2) + 4];
	size_t used = 1;

	if (!l->list_vector || !inputs || n > MAX_INPUTS || len < 4)
		return 0;
	buf[0] = '[';
	for (size_t i = 0; i < n; i++, iv += IVALUE_SIZE) {
		uint32_t tag = *(const uint32_t *)(iv + IVALUE_TAG);
		const uint8_t *impl = *(const uint8_t *const *)iv;
		int k = tag == l->tag_list ? (impl ? put_list(l, impl, one, sizeof(one)) : -1)
					   : put_scalar(l, iv, one);

		if (k < 0)
			k = one[0] = 0;
		if (used + (size_t)k + 6 >= len)
			return 0; /* never a list cut short: none at all */
		used += (size_t)snprintf(buf + used, len - used, "%s\"%s\"", i ? ", " : "", one);
	}
	buf[used++] = ']';
	buf[used] = 0;
	return used;
}
