/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An op's FLOPs as torch.profiler's with_flops counts them (torch/csrc/profiler/util.cpp,
 * computeFlops, the same in 1.13 and 2.x): aten::conv2d (2 * N * H_out * W_out * kh * kw *
 * C_in * C_out / groups), aten::mm and aten::addmm (2 * M * K * N), aten::bmm and
 * aten::baddbmm (2 * B * M * K * N), aten::mul and aten::add (the first input's elements);
 * every other op has none. From the op's input shapes and (conv2d's stride, padding,
 * dilation and groups) concrete inputs as --torch-shapes records them; an op whose inputs are
 * not as torch's formula needs them has none, as in torch.
 */
#ifndef BPFSIGHT_TORCH_FLOPS_H
#define BPFSIGHT_TORCH_FLOPS_H

#include <linux/types.h>

/* Does torch count FLOPs for ops named NAME? */
int torch_flops__counted(const char *name);
/*
 * The FLOPs of op NAME whose inputs' shapes are SHAPES ("[[4, 8], [], [8]]") and concrete
 * inputs CONCRETE ('["", "", "[2, 2]"]', NULL: not recorded): 0 when none.
 */
__u64 torch_flops__of(const char *name, const char *shapes, const char *concrete);

#endif /* BPFSIGHT_TORCH_FLOPS_H */
