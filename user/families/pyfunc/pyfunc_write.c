// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The spec into each shim (pyfunc.h): a listener of the uprobe manager, as the channel is.
 * A file that exports BS_PYFUNC_SPEC_SYMBOL is a shim with the pyfunc module; for every
 * process that maps it (the targets' first scan, a fork, an exec or a dlopen seen later, and
 * with -a every process) the text goes to the symbol's address in that process with
 * process_vm_writev: the text and its NUL first, then len, then gen last, so a shim that sees
 * gen move reads a whole text. Added before the channel attaches (pyfunc.c), it writes before
 * the semaphore rises where it is the channel's first family; elsewhere the shim waits for a
 * gen it has not installed (it puts gen back to 0 when its recording ends).
 *
 * Written once per process image: an exec (a wrapper, `env python`, `chrt`, `sh -c`, a
 * launcher, that becomes the job) maps the shim again at another address, and is written
 * again there. Before each write the buffer's magic is read where the mapping said: a child
 * told of by its fork with its parent's mappings may have exec'd meanwhile, and what lies at
 * that address in its new image is left alone (its exec's scan writes it).
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "elf_syms.h"
#include "hmap.h"
#include "mono_clock.h"
#include "msg.h"
#include "pyfunc.h"
#include "record_ctx.h"
#include "uprobe_mgr.h"

struct pyfunc_writer {
	const char *text;
	__u32 len, gen;
	struct uprobe_mgr *mgr;
	int listener;
	struct hmap *done;   /* (pid, file) -> the process's image (images[pid]) + 1 written */
	struct hmap *images; /* pid that mapped a shim -> __u64: new at each exec and its exit */
	__u64 nimages;
};

struct spec_file {
	__u64 vaddr; /* the symbol's ELF address */
};

static void *on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct spec_file *f;
	struct elf_sym sym;

	(void)arg;
	(void)path;
	(void)shown;
	if (!syms || elf_syms__find_data(syms, BS_PYFUNC_SPEC_SYMBOL, &sym) ||
	    sym.size < sizeof(struct bs_pyfunc_spec))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f)
		f->vaddr = sym.vaddr;
	return f;
}

static int put(pid_t pid, __u64 addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* The shim's buffer is at ADDR in PID's memory now: its magic reads back. */
static int is_spec(pid_t pid, __u64 addr)
{
	__u64 magic = 0;
	struct iovec local = { &magic, sizeof(magic) }, remote = { (void *)(uintptr_t)addr, 8 };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(magic) &&
	       magic == BS_PYFUNC_SPEC_MAGIC;
}

static void on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		      const struct uprobe_mapping *mp)
{
	struct pyfunc_writer *w = arg;
	const struct spec_file *f = cookie;
	__u64 at = mp->bias + f->vaddr;
	__u64 *image = hmap__get(w->images, (struct hkey){ (__u64)pid, 0 }, 1), now, *done;
	int err;

	(void)path;
	if (!image)
		return;
	now = *image + 1;
	done = hmap__get(w->done, (struct hkey){ (__u64)pid, (__u64)(uintptr_t)f }, 1);
	if (!done || *done == now)
		return; /* this image has it (a rescan) */
	if (!is_spec(pid, at))
		return; /* another image now, or gone: its exec's scan comes */
	*done = now;
	err = put(pid, at + offsetof(struct bs_pyfunc_spec, text), w->text, w->len + 1);
	if (!err)
		err = put(pid, at + offsetof(struct bs_pyfunc_spec, len), &w->len, sizeof(w->len));
	if (!err)
		err = put(pid, at + offsetof(struct bs_pyfunc_spec, gen), &w->gen, sizeof(w->gen));
	/* A process that is gone meanwhile missed nothing. */
	if (err && err != -ESRCH)
		pr_warn("pid %d: the Python functions to trace could not be written into its "
			"cupti-shim (%s): none are traced there\n",
			pid, strerror(-err));
}

int pyfunc_writer__new(struct uprobe_mgr *mgr, const char *text, struct pyfunc_writer **out)
{
	struct pyfunc_writer *w = calloc(1, sizeof(*w));
	/* First: the spec is in each shim before the channel raises its semaphores there. */
	struct uprobe_listener l = { .file = on_file, .mapped = on_mapped, .arg = w, .first = 1 };
	int id;

	if (!w || !(w->done = hmap__new(sizeof(__u64))) ||
	    !(w->images = hmap__new(sizeof(__u64)))) {
		if (w)
			hmap__free(w->done);
		free(w);
		return -ENOMEM;
	}
	w->text = text;
	w->len = (__u32)strlen(text);
	/* A new value per recording: the shim installs a gen it has not installed yet. */
	w->gen = (__u32)(mono_now_ns() >> 8) | 1;
	id = mgr ? uprobe_mgr__add_listener(mgr, &l) : -EINVAL;
	if (id < 0) {
		hmap__free(w->done);
		hmap__free(w->images);
		free(w);
		return id;
	}
	w->listener = id;
	w->mgr = mgr;
	*out = w;
	return 0;
}

void pyfunc_writer__free(struct pyfunc_writer *w)
{
	if (!w)
		return;
	uprobe_mgr__remove_listener(w->mgr, w->listener);
	hmap__free(w->done);
	hmap__free(w->images);
	free(w);
}

void pyfunc_writer__observe(struct pyfunc_writer *w, const struct bs_hdr *rec)
{
	__u64 *image;

	/* A new image (or, after an exit, a new process with the pid): written again. */
	if (rec->type != BS_REC_EXEC && !(rec->type == BS_REC_EXIT && rec->pid == rec->tid))
		return;
	image = hmap__get(w->images, (struct hkey){ (__u64)rec->pid, 0 }, 0);
	if (image)
		*image = ++w->nimages;
}
