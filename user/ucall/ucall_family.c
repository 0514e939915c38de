// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A uprobe-API family's copy of the generic program, loaded and handed to the manager. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "msg.h"
#include "ucall.skel.h"

/* Load SKEL (opened, its rodata set) on the shared maps; its thread-exit program attached. */
static int load(struct record_ctx *ctx, const struct ucall_table *table, struct ucall_bpf *skel)
{
	/* ucall.bpf.h's: WRAPPED functions' probes where the kernel has uprobe sessions. */
	struct bpf_program *session = skel->progs.ucall_session;
	int err;

	if (uprobe_multi__supported()) {
		uprobe_multi__prepare(skel->progs.ucall_entry);
		uprobe_multi__prepare(skel->progs.ucall_return);
	}
	/* Sessions are uprobe_multi links: none where those are forced off; none loaded for a
	 * table without WRAPPED functions (nccl), which would only cost its verification. */
	if (table->wrapped_flag && uprobe_multi__supported() && kfeature__has(KF_UPROBE_SESSION))
		uprobe_multi__prepare_session(session);
	else
		bpf_program__set_autoload(session, false);
	err = record_ctx__prepare(ctx, skel->obj);
	if (!err)
		err = ucall_bpf__load(skel);
	if (err)
		return err;
	if (bpf_program__autoload(skel->progs.ucall_exit_btf)) {
		skel->links.ucall_exit_btf = bpf_program__attach(skel->progs.ucall_exit_btf);
		if (!skel->links.ucall_exit_btf) {
			err = -errno;
			pr_err("%s: cannot attach %s: %s\n", table->family,
			       bpf_program__name(skel->progs.ucall_exit_btf), strerror(-err));
			return err;
		}
	}
	return 0;
}

int ucall_family__attach(const struct family_attach *a, void **state)
{
	const struct ucall_table *table = a->self->api;
	struct record_ctx *ctx = a->ctx;
	struct ucall_bpf *skel;
	int err;

	if (!table || !a->uprobes)
		return -EINVAL; /* a family without a table, or without FAMILY_UPROBES */
	skel = ucall_bpf__open();
	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx);
	skel->rodata->ucall_rec_type = table->rec_type;
	skel->rodata->ucall_loss_depth = table->loss_depth;
	skel->rodata->ucall_block = table->rec_type & 0xf0; /* its record-type block, records.h */
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, a->self);
	err = load(ctx, table, skel);
	if (!err)
		err = uprobe_mgr__add_family(
			a->uprobes, table, skel->progs.ucall_entry, skel->progs.ucall_return,
			bpf_program__autoload(skel->progs.ucall_session) ? skel->progs.ucall_session
									 : NULL);
	if (err) {
		ucall_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

void ucall_family__detach(struct record_ctx *ctx, void *state)
{
	ucall_bpf__destroy(state);
}
