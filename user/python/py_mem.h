/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A live CPython's memory read from outside (/proc/PID/mem, never stopping it): words, and
 * objects only while they are alive and of the type asked for (the process runs meanwhile
 * and may free what is read: pymalloc reuses the memory), strings decoded to UTF-8. What
 * py_stack (code objects) and py_threads (the threading module's names) read through.
 */
#ifndef BPFSIGHT_PY_MEM_H
#define BPFSIGHT_PY_MEM_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* The object types asked for, checked by their type's tp_name (once per type object). */
enum py_kind {
	PY_KIND_CODE,
	PY_KIND_STR,
	PY_KIND_BYTES,
	PY_KIND_DICT,
	PY_KIND_INT,
	PY_KIND_MODULE,
	PY_KIND_COUNT,
};

struct py_mem;

struct py_mem *py_mem__new(void);
void py_mem__free(struct py_mem *m);
/* PID exec'd or exited: its types and its memory are gone. */
void py_mem__forget(struct py_mem *m, pid_t pid);

/* LEN bytes at ADDR of PID: 0, or a negative errno (-EIO when short, -ESRCH when gone). */
int py_mem__read(struct py_mem *m, pid_t pid, __u64 addr, void *buf, size_t len);
/* The u64 at ADDR, 0 when unreadable. */
__u64 py_mem__u64(struct py_mem *m, pid_t pid, __u64 addr);
/*
 * Is there a live object of KIND at ADDR? Its reference count is not 0 and its type is the
 * one named KIND.
 */
int py_mem__is(struct py_mem *m, pid_t pid, __u64 addr, enum py_kind kind);
/* The type object of the live object at ADDR, 0 when there is none. */
__u64 py_mem__live_type(struct py_mem *m, pid_t pid, __u64 addr);
/* TYPE's tp_name into NAME (LEN bytes): 0, or -EIO. */
int py_mem__type_name(struct py_mem *m, pid_t pid, __u64 type, char *name, size_t len);
/*
 * LEN (>= 16) bytes of the live object of KIND at ADDR into BUF, in one read: 0, -EIO when
 * unreadable, -EINVAL when it is no live object of KIND.
 */
int py_mem__obj(struct py_mem *m, pid_t pid, __u64 addr, enum py_kind kind, void *buf, size_t len);
/*
 * The text of the str object at ADDR of CPython 3.MINOR (compact strings: every name, file
 * and identifier CPython makes), malloc'ed, at most 1024 characters; NULL when it is none.
 */
char *py_mem__str(struct py_mem *m, pid_t pid, __u32 minor, __u64 addr);
/* The value of the int object at ADDR (up to 62 bits) into *V: 0, or -EINVAL. */
int py_mem__int(struct py_mem *m, pid_t pid, __u32 minor, __u64 addr, __s64 *v);

#endif /* BPFSIGHT_PY_MEM_H */
