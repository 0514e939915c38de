// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/python/py_mem.c on this process's own memory: Python objects laid out by hand, at the
 * end of a mapping, where a read of the whole object falls short.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "py_mem.h"
#include "unit.h"

/* A type object whose tp_name (at 24) is NAME. */
static __u64 str_type[8];

/*
 * A compact ASCII str of LEN characters (3.12's layout: the text at 40) whose object ends
 * AVAIL bytes before the end of a mapping: its address.
 */
static __u64 str_at_end(char *page_end, size_t avail, const char *text)
{
	__u64 *o = (__u64 *)(page_end - avail);
	__u32 state = 1 << 2 | 1 << 5 | 1 << 6; /* kind 1, compact, ascii */

	memset(o, 0, avail);
	o[0] = 1;			   /* the reference count */
	o[1] = (__u64)(uintptr_t)str_type; /* the type */
	o[2] = strlen(text);
	memcpy((char *)o + 32, &state, 4);
	memcpy((char *)o + 40, text, avail > 40 ? avail - 40 : 0);
	return (__u64)(uintptr_t)o;
}

/* A str whose 128-byte read falls short: only what was read is used. */
static void test_str_at_a_mappings_end(void)
{
	struct py_mem *m = py_mem__new();
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *s;

	str_type[3] = (__u64)(uintptr_t) "str";
	ASSERT_TRUE(m && p != MAP_FAILED && !munmap(p + page, page), "setup");
	/* 48 bytes before the end: the header and "hello" (the text past the 40 read) */
	s = py_mem__str(m, getpid(), 12, str_at_end(p + page, 48, "hello"));
	ASSERT_STREQ(s ? s : "(null)", "hello", "the text read apart");
	free(s);
	/* 40 bytes before the end: the header only; its text is not there to read */
	s = py_mem__str(m, getpid(), 12, str_at_end(p + page, 40, "hello"));
	ASSERT_TRUE(!s, "no text from bytes that were never read");
	free(s);
	munmap(p, page);
	py_mem__free(m);
}

int main(void)
{
	RUN_TEST(test_str_at_a_mappings_end);
	return UNIT_EXIT();
}
