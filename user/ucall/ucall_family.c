// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading a uprobe family's BPF object and registering its table with the manager. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "msg.h"

int ucall_family__load(struct record_ctx *ctx, const struct ucall_table *table,
		       struct bpf_object *obj, struct bpf_program *entry, struct bpf_program *ret,
		       struct bpf_program *exit, struct bpf_link **exit_link)
{
	/* ucall.bpf.h's: WRAPPED functions' probes where the kernel has uprobe sessions. */
	struct bpf_program *session = bpf_object__find_program_by_name(obj, "ucall_session");
	struct uprobe_mgr *mgr;
	int err;

	if (uprobe_multi__supported()) {
		uprobe_multi__prepare(entry);
		uprobe_multi__prepare(ret);
	}
	/* Sessions are uprobe_multi links: none where those are forced off; none loaded for a
	 * table without WRAPPED functions (nccl), which would only cost its verification. */
	if (session && table->wrapped_flag && uprobe_multi__supported() &&
	    kfeature__has(KF_UPROBE_SESSION))
		uprobe_multi__prepare_session(session);
	else if (session) {
		bpf_program__set_autoload(session, false);
		session = NULL;
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
			pr_err("%s: cannot attach %s: %s\n", table->family, bpf_program__name(exit),
			       strerror(-err));
			return err;
		}
	}
	mgr = uprobe_mgr__get(ctx, &err);
	if (!mgr)
		return err;
	return uprobe_mgr__add_family(mgr, table, entry, ret, session);
}
