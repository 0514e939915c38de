// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A live CPython's memory read from outside (py_mem.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "py_debug_offsets.h"
#include "py_mem.h"
#include "hmap.h"

#define STR_MAX 1024 /* characters of a string kept */

static const char *const kind_names[PY_KIND_COUNT] = { "code", "str", "bytes",
						       "dict", "int", "module" };

struct py_mem {
	struct hmap *types; /* (type address, pid) -> enum py_kind + 1 it was checked to be */
	pid_t pid;	    /* whose /proc/PID/mem fd is */
	int fd;
};

struct py_mem *py_mem__new(void)
{
	struct py_mem *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->fd = -1;
	m->types = hmap__new(sizeof(__u32));
	if (!m->types) {
		free(m);
		return NULL;
	}
	return m;
}

void py_mem__free(struct py_mem *m)
{
	if (!m)
		return;
	hmap__free(m->types);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

void py_mem__forget(struct py_mem *m, pid_t pid)
{
	hmap__del_all(m->types, 1, (__u64)pid);
	if (m->pid == pid && m->fd >= 0) {
		close(m->fd);
		m->fd = -1;
	}
}

int py_mem__read(struct py_mem *m, pid_t pid, __u64 addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (m->pid != pid || m->fd < 0) {
		if (m->fd >= 0)
			close(m->fd);
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		m->fd = open(path, O_RDONLY | O_CLOEXEC);
		m->pid = pid;
		if (m->fd < 0)
			return errno == ENOENT ? -ESRCH : -errno;
	}
	n = pread(m->fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	/* A process that has exited reads nothing at all; an unmapped address fails. */
	return (size_t)n == len ? 0 : n == 0 && len ? -ESRCH : -EIO;
}

__u64 py_mem__u64(struct py_mem *m, pid_t pid, __u64 addr)
{
	__u64 v = 0;

	if (!addr || py_mem__read(m, pid, addr, &v, sizeof(v)))
		return 0;
	return v;
}

/*
 * The type of the live object whose first 16 bytes are HEAD: its reference count (the low
 * 32 bits: 3.14 keeps ob_flags in the top 16) is not 0 and bits 32-47 are clear (3.14's
 * ob_overflow, before that the count's high half: never set by a real count): pymalloc
 * stores a pointer, or NULL, in a freed block's first word. 0 when it is none.
 */
static __u64 head_type(const __u64 *head)
{
	if (!(__u32)head[0] || head[0] & 0x0000ffff00000000ull || !head[1] || (head[1] & 7))
		return 0;
	return head[1];
}

__u64 py_mem__live_type(struct py_mem *m, pid_t pid, __u64 addr)
{
	__u64 head[2];

	if (!addr || (addr & 7) || py_mem__read(m, pid, addr, head, sizeof(head)))
		return 0;
	return head_type(head);
}

int py_mem__type_name(struct py_mem *m, pid_t pid, __u64 type, char *name, size_t len)
{
	__u64 tp_name = py_mem__u64(m, pid, type + PY_TP_NAME);

	name[0] = 0;
	if (!tp_name || py_mem__read(m, pid, tp_name, name, len - 1))
		return -EIO;
	name[len - 1] = 0;
	return 0;
}

/* Is TYPE the type named KIND? Its tp_name is read once per type object. */
static int type_is(struct py_mem *m, pid_t pid, __u64 type, enum py_kind kind)
{
	__u32 *t = type ? hmap__get(m->types, (struct hkey){ type, (__u64)pid }, 1) : NULL;
	char name[8];

	if (!t)
		return 0;
	if (!*t) {
		if (py_mem__type_name(m, pid, type, name, sizeof(name)))
			return 0;
		*t = PY_KIND_COUNT + 1; /* another type */
		for (int k = 0; k < PY_KIND_COUNT; k++)
			if (!strcmp(name, kind_names[k]))
				*t = k + 1;
	}
	return *t == (__u32)kind + 1;
}

int py_mem__is(struct py_mem *m, pid_t pid, __u64 addr, enum py_kind kind)
{
	return type_is(m, pid, py_mem__live_type(m, pid, addr), kind);
}

int py_mem__obj(struct py_mem *m, pid_t pid, __u64 addr, enum py_kind kind, void *buf, size_t len)
{
	if (!addr || (addr & 7) || len < 16 || py_mem__read(m, pid, addr, buf, len))
		return -EIO;
	return type_is(m, pid, head_type(buf), kind) ? 0 : -EINVAL;
}

/* Append code point CP as UTF-8. */
static size_t put_utf8(char *out, __u32 cp)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | cp >> 6;
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | cp >> 12;
		out[1] = 0x80 | (cp >> 6 & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | (cp >> 18 & 7);
	out[1] = 0x80 | (cp >> 12 & 0x3f);
	out[2] = 0x80 | (cp >> 6 & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

char *py_mem__str(struct py_mem *m, pid_t pid, __u32 minor, __u64 addr)
{
	/* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject): 3.12 dropped wstr. */
	__u32 ascii_size = minor >= 12 ? PY_STR_ASCII_SIZE : 48;
	__u32 compact_size = minor >= 12 ? PY_STR_COMPACT_SIZE : 72;
	__u8 raw[STR_MAX * 4 + 128];
	__u64 len;
	__u32 state, kind, nbytes, at, got = 128;
	char *out, *p;

	/* The header and a short text in one read; a header at a mapping's end alone. */
	if (py_mem__obj(m, pid, addr, PY_KIND_STR, raw, got) &&
	    py_mem__obj(m, pid, addr, PY_KIND_STR, raw, got = 40))
		return NULL;
	memcpy(&len, raw + 16, 8);
	memcpy(&state, raw + 32, 4);
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL; /* not compact (a legacy string): not a name CPython makes */
	if (len > STR_MAX)
		len = STR_MAX;
	nbytes = len * kind;
	at = (state >> 6 & 1) ? ascii_size : compact_size;
	/* The text past what the first read got (never bytes it did not read). */
	if (at + nbytes > got && py_mem__read(m, pid, addr + at, raw + at, nbytes))
		return NULL;
	out = p = malloc(len * 4 + 1);
	if (!out)
		return NULL;
	for (__u32 i = 0; i < len; i++) {
		const __u8 *c = raw + at + i * kind;
		__u32 cp = kind == 1 ? c[0] : kind == 2 ? *(const __u16 *)c : *(const __u32 *)c;

		p += put_utf8(p, cp > 0x10ffff ? 0xfffd : cp);
	}
	*p = 0;
	return out;
}

int py_mem__int(struct py_mem *m, pid_t pid, __u32 minor, __u64 addr, __s64 *v)
{
	/* head, then ob_size (3.8-3.11) or lv_tag (3.12+), then the first 30-bit digits */
	__u64 w[4];
	__s64 ndigits, sign = 1;
	size_t got = sizeof(w);
	__u32 d[2];

	if (py_mem__obj(m, pid, addr, PY_KIND_INT, w, got) &&
	    py_mem__obj(m, pid, addr, PY_KIND_INT, w, got = 28))
		return -EINVAL;
	if (minor >= 12) {
		ndigits = (__s64)(w[2] >> 3);
		sign = (w[2] & 3) == 2 ? -1 : (w[2] & 3) == 1 ? 0 : 1;
	} else {
		ndigits = (__s64)w[2] < 0 ? -(__s64)w[2] : (__s64)w[2];
		sign = (__s64)w[2] < 0 ? -1 : 1;
	}
	/* Two digits are 8 bytes at 24: past a 28-byte read (an int at a mapping's end). */
	if (ndigits > 2 || (ndigits > 1 && got < sizeof(w)))
		return -EINVAL;
	memcpy(d, &w[3], ndigits > 1 ? 8 : 4);
	*v = sign * (__s64)((ndigits > 0 ? d[0] : 0) | (ndigits > 1 ? (__u64)d[1] << 30 : 0));
	return 0;
}
