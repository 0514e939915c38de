// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The code objects' dealloc probe (py_code_free.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "py_code_free.h"
#include "py_debug_offsets.h"
#include "pycode.skel.h"
#include "record_ctx.h"
#include "uprobe_broker.h"
#include "hmap.h"

/* PyTypeObject (3.8 on, checked to 3.15): tp_dealloc after tp_name, basicsize, itemsize. */
#define TP_DEALLOC 48

struct py_code_free {
	struct pycode_bpf *skel;
	struct hmap *probes; /* (dev ^ ino, file offset) -> struct bpf_link * */
};

struct py_code_free *py_code_free__new(struct record_ctx *ctx, int *err)
{
	struct py_code_free *f = calloc(1, sizeof(*f));

	*err = -ENOMEM;
	if (!f)
		return NULL;
	f->probes = hmap__new(sizeof(struct bpf_link *));
	f->skel = pycode_bpf__open();
	if (!f->probes || !f->skel) {
		py_code_free__free(f);
		return NULL;
	}
	RECORD_CTX_SET_COMMON_RODATA(f->skel, ctx, NULL);
	*err = record_ctx__prepare(ctx, f->skel->obj);
	if (!*err)
		*err = pycode_bpf__load(f->skel);
	if (*err) {
		py_code_free__free(f);
		return NULL;
	}
	return f;
}

void py_code_free__free(struct py_code_free *f)
{
	struct bpf_link **l;
	size_t it = 0;

	if (!f)
		return;
	while (f->probes && (l = hmap__next(f->probes, &it, NULL)))
		bpf_link__destroy(*l);
	hmap__free(f->probes);
	pycode_bpf__destroy(f->skel);
	free(f);
}

static int mem_read(int fd, __u64 addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EIO;
}

/* The executable mapping of PID holding ADDR: its map_files path and ADDR's file offset. */
static int mapping_of(pid_t pid, __u64 addr, char *path, size_t len, __u64 *off)
{
	char fn[64], line[512], perms[8];
	unsigned long long start, end, pgoff;
	int found = -ENOENT;
	FILE *m;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	m = fopen(fn, "re");
	if (!m)
		return -errno;
	while (fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%llx-%llx %7s %llx", &start, &end, perms, &pgoff) != 4 ||
		    addr < start || addr >= end)
			continue;
		if (perms[2] == 'x') {
			snprintf(path, len, "/proc/%d/map_files/%llx-%llx", pid, start, end);
			*off = addr - start + pgoff;
			found = 0;
		}
		break;
	}
	fclose(m);
	return found;
}

int py_code_free__watch(struct py_code_free *f, pid_t pid, __u64 code_type)
{
	char fn[64], path[96], name[8] = "";
	__u64 tp_name = 0, dealloc = 0, off = 0;
	struct bpf_link **l;
	struct stat st;
	int fd, err;

	if (!code_type)
		return -ENOENT;
	snprintf(fn, sizeof(fn), "/proc/%d/mem", pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The type is the code type only if it says so: its name is "code". */
	err = mem_read(fd, code_type + PY_TP_NAME, &tp_name, 8) ?:
	      mem_read(fd, tp_name, name, 5) ?: mem_read(fd, code_type + TP_DEALLOC, &dealloc, 8);
	close(fd);
	if (err)
		return err;
	if (memcmp(name, "code", 5) || !dealloc)
		return -ENOENT;
	err = mapping_of(pid, dealloc, path, sizeof(path), &off);
	if (err)
		return err;
	if (stat(path, &st))
		return -errno;
	l = hmap__get(f->probes, (struct hkey){ st.st_ino, (__u64)st.st_dev << 40 ^ off }, 1);
	if (!l)
		return -ENOMEM;
	if (*l)
		return 0;
	*l = uprobe_broker__attach(f->skel->progs.py_code_free, -1, path, off, NULL);
	if (!*l) {
		err = -errno;
		return err ? err : -EINVAL;
	}
	return 0;
}
