// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython interpreters found through the uprobe manager's discovery (py_find.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gil_python.h"
#include "py_find.h"
#include "uprobe_mgr.h"

/* A file that defines _PyRuntime. */
struct py_file {
	struct gil_pyfile pf;
	struct py_file *next;
};

struct py_find {
	struct uprobe_mgr *m;
	struct py_file *files;
	/* The look in progress (uprobe_mgr__scan calls on_mapped meanwhile). */
	pid_t pid;
	char exe[PATH_MAX];
	struct py_file *py;
	__u64 bias;
	char shown[PATH_MAX];
};

static void *on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct py_find *f = arg;
	struct py_file *pf = calloc(1, sizeof(*pf));

	if (!pf || gil_pyfile__read(syms, shown, &pf->pf)) {
		free(pf);
		return NULL;
	}
	pf->next = f->files;
	f->files = pf;
	return pf;
}

static void on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		      const struct uprobe_mapping *mp)
{
	struct py_find *f = arg;

	if (pid != f->pid || f->py || !gil_python__is_interpreter(mp->shown, f->exe))
		return;
	f->py = cookie;
	f->bias = mp->bias;
	snprintf(f->shown, sizeof(f->shown), "%s", mp->shown);
}

struct py_find *py_find__new(struct uprobe_mgr *m, int *err)
{
	struct py_find *f = calloc(1, sizeof(*f));
	struct uprobe_listener l = { .file = on_file, .mapped = on_mapped };

	*err = f ? 0 : -ENOMEM;
	if (!f)
		return NULL;
	f->m = m;
	l.arg = f;
	*err = uprobe_mgr__add_listener(m, &l);
	if (*err < 0) {
		free(f);
		return NULL;
	}
	*err = 0;
	return f;
}

void py_find__free(struct py_find *f)
{
	struct py_file *pf, *next;

	if (!f)
		return;
	for (pf = f->files; pf; pf = next) {
		next = pf->next;
		free(pf);
	}
	free(f);
}

int py_find__inspect(struct py_find *f, pid_t pid, struct gil_py *py)
{
	char fn[64];
	ssize_t n;
	int err;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", pid);
	n = readlink(fn, f->exe, sizeof(f->exe) - 1);
	f->exe[n > 0 ? n : 0] = 0;
	f->py = NULL;
	f->pid = pid;
	err = uprobe_mgr__scan(f->m, pid);
	f->pid = 0;
	if (err)
		return err;
	if (!f->py) {
		memset(py, 0, sizeof(*py));
		py->status = GIL_PY_NOT_PYTHON;
		return 0;
	}
	err = gil_python__inspect(pid, &f->py->pf, f->bias + f->py->pf.rt_vaddr, py);
	if (!err) {
		snprintf(py->object, sizeof(py->object), "%s", f->shown);
		py->code_type = f->py->pf.code_type_vaddr ? f->bias + f->py->pf.code_type_vaddr : 0;
	}
	return err;
}
