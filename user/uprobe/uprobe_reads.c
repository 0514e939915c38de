// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's first reads of a file, where they can be left behind
 * (uprobe_mgr_priv.h): a traced process's file on a FUSE file system is read by the kernel
 * asking the file system's server, which may never answer, and neither O_NONBLOCK nor a
 * signal (but a fatal one) ends the wait.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "abandonable.h"
#include "elf_syms.h"
#include "hmap.h"
#include "record_ctx.h"
#include "safe_open.h"
#include "uprobe_mgr_priv.h"
#include "msg.h"

#define READS_MAX_MS 60000u /* without -d */

struct first_reads {
	char open_path[PATH_MAX + 64], root[64], fd_path[64];
	int want_fd, fd;
	struct elf_syms *syms;
};

static void first_reads(void *arg)
{
	struct first_reads *r = arg;

	if (!r->want_fd) {
		r->syms = elf_syms__open(r->open_path, r->root[0] ? r->root : NULL);
		return;
	}
	r->fd = safe_open__regular(r->open_path, NULL);
	if (r->fd < 0)
		return;
	snprintf(r->fd_path, sizeof(r->fd_path), "/proc/self/fd/%d", r->fd);
	r->syms = elf_syms__open(r->fd_path, r->root[0] ? r->root : NULL);
}

static void first_reads_drop(void *arg)
{
	struct first_reads *r = arg;

	elf_syms__free(r->syms);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

static int must_stop(void *ctx)
{
	return record_ctx__must_stop(ctx);
}

int uprobe_obj__first_reads(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			    const char *root, int *fd, struct elf_syms **syms)
{
	__u64 dur_ms = m->ctx->opts->duration_ns / 1000000;
	unsigned int limit = dur_ms && dur_ms < READS_MAX_MS ? (unsigned int)dur_ms : READS_MAX_MS;
	struct first_reads *r;
	__u8 *dev;

	if (fd)
		*fd = -1;
	*syms = NULL;
	if (hmap__get(m->stalled, (struct hkey){ o->dev, 0 }, 0))
		return -EAGAIN;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->open_path, sizeof(r->open_path), "%s", open_path);
	snprintf(r->root, sizeof(r->root), "%s", root ? root : "");
	r->want_fd = fd != NULL;
	r->fd = -1;
	if (abandonable__run(first_reads, first_reads_drop, r, limit, must_stop, m->ctx)) {
		dev = hmap__get(m->stalled, (struct hkey){ o->dev, 0 }, 1);
		if (dev)
			*dev = 1;
		pr_warn("%s: its reads had not ended after %.1f s%s (a FUSE file system that does "
			"not answer?): not read, nor other files of its file system\n",
			o->path, limit / 1000.0,
			record_ctx__must_stop(m->ctx) ? ", or the recording stopped" : "");
		return -ETIMEDOUT;
	}
	if (fd)
		*fd = r->fd;
	*syms = r->syms;
	free(r);
	return 0;
}
