// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight merge, start to end (merge.h): scan every file, pick the reference, fit, write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "merge.h"
#include "msg.h"

/* IN's rank in its largest group; -1 when it has none. */
static __s32 main_rank(const struct merge_input *in, __s32 *nranks)
{
	__s32 rank = -1;

	*nranks = -1;
	for (__u32 m = 0; m < in->nmembers; m++) {
		if (in->members[m].nranks > *nranks ||
		    (in->members[m].nranks == *nranks && in->members[m].rank < rank)) {
			*nranks = in->members[m].nranks;
			rank = in->members[m].rank;
		}
	}
	return rank;
}

/* The file given as --reference, or the one holding rank 0 of the largest group, or the first. */
static int pick_reference(const struct merge_opts *o, const struct merge_input *in, __u32 n,
			  __u32 *ref)
{
	__s32 best = -1, nr, r;

	*ref = 0;
	if (o->reference) {
		for (__u32 i = 0; i < n; i++)
			if (!strcmp(in[i].path, o->reference)) {
				*ref = i;
				return 0;
			}
		pr_err("--reference %s is not one of the files to merge\n", o->reference);
		return -ENOENT;
	}
	for (__u32 i = 0; i < n; i++) {
		r = main_rank(&in[i], &nr);
		if (r == 0 && nr > best) {
			best = nr;
			*ref = i;
		}
	}
	return 0;
}

struct ord {
	__u32 idx;
	__s32 rank;
};

static int cmp_ord(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;
	__u32 rx = (__u32)x->rank, ry = (__u32)y->rank; /* -1 (none) after every rank */

	if (rx != ry)
		return rx < ry ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The reference first, then by rank, then as given. */
static __u32 *section_order(const struct merge_input *in, __u32 n, __u32 ref)
{
	struct ord *v = calloc(n, sizeof(*v));
	__u32 *order = calloc(n, sizeof(*order)), k = 0;
	__s32 nr;

	if (!v || !order) {
		free(v);
		free(order);
		return NULL;
	}
	for (__u32 i = 0; i < n; i++)
		v[i] = (struct ord){ i, main_rank(&in[i], &nr) };
	qsort(v, n, sizeof(*v), cmp_ord);
	order[k++] = ref;
	for (__u32 i = 0; i < n; i++)
		if (v[i].idx != ref)
			order[k++] = v[i].idx;
	free(v);
	return order;
}

int merge__run(const struct merge_opts *o, struct merge_input **inp, __u32 **orderp)
{
	struct merge_input *in = calloc(o->nfiles, sizeof(*in));
	__u32 ref, *order = NULL, bad = 0;
	char err[256];
	int e = 0;

	*inp = in;
	*orderp = NULL;
	if (!in)
		return -ENOMEM;
	for (__u32 i = 0; i < o->nfiles; i++) {
		err[0] = 0;
		e = merge_scan__file(&in[i], o->files[i], err, sizeof(err));
		if (e) {
			pr_err("%s: %s\n", o->files[i], err);
			bad++;
		}
	}
	if (bad)
		return e;
	e = pick_reference(o, in, o->nfiles, &ref);
	if (e)
		return e;
	e = merge_fit(in, o->nfiles, ref, o->wall_only);
	if (e) {
		pr_info("aligning the files: %s\n", strerror(-e));
		return e;
	}
	order = section_order(in, o->nfiles, ref);
	if (!order)
		return -ENOMEM;
	*orderp = order;
	return merge_write(o, in, order, o->nfiles);
}
