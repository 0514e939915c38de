// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading a uprobe family's BPF object and registering its table with the manager. */
#include <bpf/libbpf.h>
#include "recorder.h"
#include "ucall_family.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"

int ucall_family__load(struct record_ctx *ctx, const struct ucall_table *table,
		       struct bpf_object *obj, struct bpf_program *entry, struct bpf_program *ret)
{
	struct uprobe_mgr *mgr;
	int err;

	if (uprobe_multi__supported()) {
		uprobe_multi__prepare(entry);
		uprobe_multi__prepare(ret);
	}
	err = record_ctx__prepare(ctx, obj);
	if (!err)
		err = bpf_object__load(obj);
	if (err)
		return err;
	mgr = uprobe_mgr__get(ctx, &err);
	if (!mgr)
		return err;
	return uprobe_mgr__add_family(mgr, table, entry, ret);
}
