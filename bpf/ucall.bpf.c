// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe-API families' one program (cuda, nccl, cublas, cudnn, blas and the next ones):
 * the generic uprobe pair of ucall.bpf.h. Each family loads its own copy (user/ucall/
 * ucall_family.c), whose rodata, set from the family's API table before load, says which
 * records it writes and which loss it counts: a new family needs no program of its own.
 */
#include "vmlinux.h"

/* The family's call record type (BS_REC_*), its loss for calls nested too deep. */
const volatile __u16 ucall_rec_type;
const volatile __u16 ucall_loss_depth;

#define UCALL_REC_TYPE	 ucall_rec_type
#define UCALL_LOSS_DEPTH ucall_loss_depth
#include "common.bpf.h"
#include "ucall.bpf.h"
