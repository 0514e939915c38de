/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the driver (user/session/) hands a family's attach hook: the recording, the family
 * itself, and the services the recording runs. The driver makes each service before any family
 * attaches, and only when a family it records uses it (struct family.flags FAMILY_UPROBES and
 * FAMILY_STACKS, struct family.shim; the stack service for --stacks too), gives each service the
 * ones below it that it uses, and frees them after the families detach. A family keeps what it
 * needs of them in its state: services never reach one another through the recording.
 */
#ifndef BPFSIGHT_FAMILY_ATTACH_H
#define BPFSIGHT_FAMILY_ATTACH_H

struct family;
struct record_ctx;
struct shim_link;  /* shim_link.h */
struct stack_svc;  /* stack_svc.h */
struct uprobe_mgr; /* uprobe_mgr.h */

struct family_attach {
	struct record_ctx *ctx;	   /* options, shared maps, writing, losses (record_ctx.h) */
	const struct family *self; /* the family attaching (its index, options, --stacks) */
	/*
	 * Finding and probing code in the targets (uprobe_mgr.h): made when a family recorded
	 * has FAMILY_UPROBES or a shim, or stacks are read; else NULL. After the probes are
	 * detached at the stop it is closed (uprobe_mgr__closed), not freed, until every family
	 * has detached.
	 */
	struct uprobe_mgr *uprobes;
	/* Stacks on events (stack_svc.h): when a family has FAMILY_STACKS or --stacks. */
	struct stack_svc *stacks;
	/* The cupti-shim channel (shim_link.h): when a family recorded has a shim. */
	struct shim_link *shim;
};

#endif /* BPFSIGHT_FAMILY_ATTACH_H */
