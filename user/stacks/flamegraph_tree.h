/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The flame graph's merged tree, shared by its builder (flamegraph.c) and drawer (flamegraph_svg.c). */
#ifndef BPFSIGHT_FLAMEGRAPH_TREE_H
#define BPFSIGHT_FLAMEGRAPH_TREE_H

#include <linux/types.h>

/* A stack deeper than this many frames keeps FOLD_OUTER outermost and the innermost frames,
 * the ones between drawn as one "[N frames folded]" frame: the graph's height follows the
 * work, not a rare deep tower (an import chain), and the leaves (where time goes) stay. */
#define FOLD_DEPTH   32
#define FOLD_OUTER   16
#define FRAME_FOLDED 0x1000 /* a node's kind: frames folded into one */

struct node {
	char *name;
	int kind;		  /* BS_FRAME_*, STACK_FRAME_KERNEL, FRAME_FOLDED, 0 for the root */
	__u32 fold_min, fold_max; /* FRAME_FOLDED: how many frames the stacks through it folded */
	__u64 count;
	struct node *child, *next;
};

struct flamegraph {
	struct node root;
	int depth;	  /* the deepest stack as drawn (folded), in frames */
	int folded;	  /* some stack was deeper than FOLD_DEPTH */
	const char *unit; /* what the counts are */
};

#endif /* BPFSIGHT_FLAMEGRAPH_TREE_H */
