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
#include <string.h>
#include <unistd.h>
#include "abandonable.h"
#include "elf_syms.h"
#include "hmap.h"
#include "kdev.h"
#include "mono_clock.h"
#include "record_ctx.h"
#include "safe_open.h"
#include "uprobe_mgr_priv.h"
#include "msg.h"

/*
 * A file's first reads are left behind after READS_MAX_MS (a big library's symbols take a
 * second or two), or once the recording must stop and they have run STOP_GRACE_NS: files
 * read while stopping (stacks named at the end) still are.
 */
#define READS_MAX_MS  10000u
#define STOP_GRACE_NS 1000000000ull

struct first_reads {
	char open_path[PATH_MAX + 64], root[64], fd_path[64];
	int want_fd, fd;
	struct elf_syms *syms;
};

/*
 * 1 when the device DEV (kdev.h) holds a FUSE file system, from /proc/self/mountinfo: the
 * kernel's own table, no request to the file system. Only such a device is given up on for
 * good; a slow read elsewhere (a big library on a loaded disk) costs that file alone.
 */
static int is_fuse(__u64 dev)
{
	char line[4096], type[64];
	unsigned int maj, min;
	int found = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	while (f && !found && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		found = sep && sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2 &&
			kdev(maj, min) == dev && sscanf(sep + 3, "%63s", type) == 1 &&
			!strncmp(type, "fuse", 4);
	}
	if (f)
		fclose(f);
	return found;
}

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
	/* The file's examination: its names looked up, never an address (uprobe_mgr_priv.h). */
	r->syms = elf_syms__open_names(r->fd_path, r->root[0] ? r->root : NULL);
}

static void first_reads_drop(void *arg)
{
	struct first_reads *r = arg;

	elf_syms__free(r->syms);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

struct give_up {
	struct record_ctx *ctx;
	__u64 since;
};

static int must_stop(void *arg)
{
	struct give_up *g = arg;

	return mono_now_ns() - g->since >= STOP_GRACE_NS && record_ctx__must_stop(g->ctx);
}

int uprobe_obj__first_reads(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			    const char *root, int *fd, struct elf_syms **syms)
{
	struct give_up g = { m->ctx, mono_now_ns() };
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
	if (abandonable__run(first_reads, first_reads_drop, r, READS_MAX_MS, must_stop, &g)) {
		int fuse = is_fuse(o->dev);

		dev = fuse ? hmap__get(m->stalled, (struct hkey){ o->dev, 0 }, 1) : NULL;
		if (dev)
			*dev = 1;
		pr_warn("%s: its reads had not ended after %.1f s%s%s: not read%s\n", o->path,
			(double)(mono_now_ns() - g.since) / 1e9,
			record_ctx__must_stop(m->ctx) ? " as the recording stopped" : "",
			fuse ? " (a FUSE file system that does not answer?)" : "",
			fuse ? ", nor other files of its file system" : "");
		return -ETIMEDOUT;
	}
	if (fd)
		*fd = r->fd;
	*syms = r->syms;
	free(r);
	return 0;
}
