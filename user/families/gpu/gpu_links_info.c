// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpfsight info`'s GPU links: GPU records by how the launch join, run again as the file was
 * read (shim_relink.h), linked them to the call that launched them (docs/GPU.md). The gpu
 * family's reorder hook's info hooks (struct family_reorder), so info names no family.
 */
#include <stdio.h>
#include "json.h"
#include "shim_relink.h"

void gpu_links__text(const void *st, FILE *f)
{
	struct shim_join_stats js;
	char why[512];

	shim_relink__stats(st, &js);
	if (!js.linked_cuda && !js.linked_api && !js.unlinked)
		return;
	fprintf(f,
		"gpu links:       %llu linked to their cuda call, %llu to CUPTI's API record only, "
		"%llu unlinked\n",
		(unsigned long long)js.linked_cuda, (unsigned long long)js.linked_api,
		(unsigned long long)js.unlinked);
	if (js.linked_order)
		fprintf(f, "  by launch order: %llu (no CUPTI API records)\n",
			(unsigned long long)js.linked_order);
	if (js.order_linked || js.order_unlinked)
		fprintf(f,
			"  launch order:  finds the call of %llu, none for %llu; where a link was "
			"there too (CUPTI's API record, the file's), the same call for %llu, "
			"another for %llu\n",
			(unsigned long long)js.order_linked, (unsigned long long)js.order_unlinked,
			(unsigned long long)js.order_agree, (unsigned long long)js.order_differ);
	if (shim_join_stats__why(&js, why, sizeof(why)))
		fprintf(f, "  not linked:    %s\n", why);
}

void gpu_links__json(const void *st, struct json *j)
{
	struct shim_join_stats js;

	shim_relink__stats(st, &js);
	json__key(j, "gpu_links");
	json__begin_object(j);
	json__kv_u64(j, "linked_cuda", js.linked_cuda);
	json__kv_u64(j, "linked_api", js.linked_api);
	json__kv_u64(j, "unlinked", js.unlinked);
	json__kv_u64(j, "linked_by_order", js.linked_order);
	json__kv_u64(j, "order_found", js.order_linked);
	json__kv_u64(j, "order_none", js.order_unlinked);
	json__kv_u64(j, "order_agrees", js.order_agree);
	json__kv_u64(j, "order_differs", js.order_differ);
	json__key(j, "not_linked_by_reason");
	json__begin_object(j);
	for (unsigned int i = 0; i < JOIN_WHY_MAX; i++)
		if (js.why[i])
			json__kv_u64(j, join_why__name(i), js.why[i]);
	json__end_object(j);
	json__end_object(j);
}
