// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the unwind-table builder (user/stacks/eh_frame.c, cfi_rows.c,
 * unwind_table.c, unwind_elf.c): .eh_frame and .debug_frame come from files a traced process
 * controls, so any bytes. An input that starts with an ELF header is the whole file (through
 * a memfd: unwind_table__build_fd, compressed sections included); any other is one section:
 * a byte of flags (bit 0: .debug_frame's format), 4 of its address, 4 of DW_EH_PE_datarel's
 * base, then the section's bytes, copied into memory of exactly their size. Every table must
 * be sorted by pc, strictly, with known kinds, and end in a STOP_NONE row; find() must agree
 * with a walk.
 *   build/tests/fuzz_eh_frame -runs=100000 CORPUS tests/fuzz/seeds-eh_frame
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "unwind_build.h"
#include "unwind_rows.h"

static int kind_known(__u8 k)
{
	return k <= BS_UNW_END || (k >= BS_UNW_STOP_FIRST && k <= BS_UNW_STOP_BAD);
}

static void check_table(const struct unwind_table *t)
{
	__u32 i;

	if (t->n && t->rows[t->n - 1].kind != BS_UNW_STOP_NONE)
		abort();
	for (i = 0; i < t->n; i++) {
		if (!kind_known(t->rows[i].kind) || (i && t->rows[i].pc <= t->rows[i - 1].pc))
			abort();
		if (unwind_table__find(t, t->rows[i].pc) != &t->rows[i])
			abort();
		if (t->rows[i].pc > 0 && i &&
		    unwind_table__find(t, t->rows[i].pc - 1) != &t->rows[i - 1])
			abort();
	}
}

static void whole_file(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	int fd = memfd_create("fuzz_eh_frame", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, data, size) == (ssize_t)size &&
	    !unwind_table__build_fd(fd, "/nonexistent/fuzz", "/nonexistent", &t)) {
		check_table(&t);
		unwind_table__free(&t);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t = { 0 };
	struct eh_section s = { 0 };
	__u32 vaddr, datarel;
	uint8_t *sec;

	if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
		whole_file(data, size);
		return 0;
	}
	if (size < 9)
		return 0;
	memcpy(&vaddr, data + 1, 4);
	memcpy(&datarel, data + 5, 4);
	s.len = size - 9;
	sec = malloc(s.len ? s.len : 1); /* exactly the section: a read past it trips ASan */
	if (!sec)
		return 0;
	memcpy(sec, data + 9, s.len);
	s.data = sec;
	s.vaddr = vaddr;
	s.datarel = datarel;
	s.debug_frame = data[0] & 1;
	if (!unwind_table__rows(&s, 1, NULL, NULL, &t))
		check_table(&t);
	unwind_table__free(&t);
	free(sec);
	return 0;
}
