// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading a uprobe family's BPF object and registering its table with the manager. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "record_ctx.h"
#include "ucall_family.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"

int ucall_family__load(struct record_ctx *ctx, const struct ucall_table *table,
		       struct bpf_object *obj, struct bpf_program *entry, struct bpf_program *ret,
		       struct bpf_program *exit, struct bpf_link **exit_link)
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
	if (bpf_program__autoload(exit)) {
		*exit_link = bpf_program__attach(exit);
		if (!*exit_link) {
			err = -errno;
			fprintf(stderr, "bpfsight record: %s: cannot attach %s: %s\n",
				table->family, bpf_program__name(exit), strerror(-err));
			return err;
		}
	}
	mgr = uprobe_mgr__get(ctx, &err);
	if (!mgr)
		return err;
	return uprobe_mgr__add_family(mgr, table, entry, ret);
}
