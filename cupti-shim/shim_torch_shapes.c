// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --torch-shapes: the sizes of an op's tensor inputs, read in its start callback (the only
 * time RecordFunction's inputs are valid), as torch.profiler's record_shapes shows them.
 *
 * An input is a c10::IValue: 16 bytes, its payload first (a tensor's c10::TensorImpl *), its
 * tag after (Tensor is 1 in every version: None comes first). A TensorImpl keeps its sizes in
 * c10::impl::SizesAndStrides at the layout's impl_sizes: the number of dimensions, then up to
 * 5 sizes (and their strides) inline, or a pointer to them past 5. The product of the sizes
 * must be the tensor's numel_ (impl_numel): an input where it is not (an undefined tensor,
 * sizes kept elsewhere by a subclass) shows as [] rather than as numbers that may be wrong.
 * An undefined tensor (a None bias passed on as at::Tensor()) is c10::UndefinedTensorImpl's
 * singleton, whose sizes are [0] in 2.x: [] as the profiler shows it (Tag::UndefinedTensor).
 *
 * Read and formatted apart: the words read key the thread's cache of texts (shim_torch.c),
 * so an op whose inputs have the shapes of an earlier one's costs the read, not the text.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shim_torch.h"

#define IVALUE_SIZE 16
#define IVALUE_TAG  8
#define TAG_TENSOR  1
#define INLINE_DIMS 5

/*
 * Set once a tensor's inline sizes matched its numel_: the layout's offsets are proven, and
 * only then is a pointer read there followed (sizes past 5 dimensions). A wrong layout reads
 * numbers that never match, so it shows [] and never follows what it took for a pointer.
 */
static _Atomic bool proven;

/* The sizes of the tensor at IMPL into SIZES; the number of dimensions, or -1. */
static int tensor_sizes(const struct torch_layout *l, const uint8_t *impl, int64_t *sizes)
{
	uint64_t dims = *(const uint64_t *)(impl + l->impl_sizes);
	const int64_t *src = (const int64_t *)(impl + l->impl_sizes + 8);
	int64_t numel = *(const int64_t *)(impl + l->impl_numel), prod = 1;

	if (dims > TORCH_MAX_DIMS ||
	    (dims > INLINE_DIMS && !atomic_load_explicit(&proven, memory_order_relaxed)))
		return -1;
	if (dims > INLINE_DIMS)
		src = *(int64_t *const *)src;
	for (uint64_t d = 0; d < dims; d++) {
		sizes[d] = src[d];
		if (sizes[d] < 0)
			return -1;
		prod *= sizes[d];
	}
	if (prod != numel)
		return -1;
	if (dims <= INLINE_DIMS && numel > 1)
		atomic_store_explicit(&proven, true, memory_order_relaxed);
	return (int)dims;
}

long shim_torch_shapes__read(const struct torch_lib *lib, const void *inputs, size_t n, uint64_t *w)
{
	const struct torch_layout *l = lib->layout;
	const uint8_t *iv = inputs;
	size_t nw = 0;

	if (!l->impl_sizes || !inputs || n > TORCH_MAX_INPUTS)
		return -1;
	for (size_t i = 0; i < n; i++, iv += IVALUE_SIZE) {
		uint32_t tag = *(const uint32_t *)(iv + IVALUE_TAG);
		const uint8_t *impl = *(const uint8_t *const *)iv;
		int dims = tag == TAG_TENSOR && impl && impl != lib->undefined
				   ? tensor_sizes(l, impl, (int64_t *)w + nw + 1)
				   : -1;

		w[nw] = (uint64_t)(int64_t)dims;
		nw += 1 + (dims > 0 ? (size_t)dims : 0);
	}
	return (long)nw;
}

size_t shim_torch_shapes__text(const uint64_t *w, size_t nw, char *buf, size_t len)
{
	size_t used = 0;

	if (len < 16)
		return 0;
	buf[used++] = '[';
	for (size_t k = 0, i = 0; k < nw && used + 32 < len; i++) {
		int64_t dims = (int64_t)w[k++];

		used += (size_t)snprintf(buf + used, len - used, "%s[", i ? ", " : "");
		for (int64_t d = 0; d < dims && used + 24 < len; d++)
			used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "",
						 (long long)w[k + d]);
		k += dims > 0 ? (size_t)dims : 0;
		buf[used++] = ']';
	}
	buf[used++] = ']';
	buf[used] = 0;
	return used;
}
