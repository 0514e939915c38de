// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native frames named from the files the uprobe manager found mapped (native_frames.h): the
 * x86-64 code around an address decides what a frame-pointer walk cannot (whether a call
 * precedes a return address, where a function without a frame keeps its return address).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_syms.h"
#include "native_frames.h"
#include "uprobe_mgr.h"

char *native_frames__symbolize(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	struct uprobe_code c;
	char buf[4096];
	struct elf_sym s;

	if (uprobe_mgr__code_at(m, pid, addr, 1, &c) || elf_syms__at(c.syms, c.vaddr, &s))
		return NULL;
	demangle(s.name, buf, sizeof(buf));
	return strdup(buf);
}

/*
 * Does a call instruction end right before VADDR? A return address always follows one; an
 * address a frame-pointer walk read from a frame that had no frame pointer is, nearly always,
 * not. Forms: E8 rel32, and FF /2 (call r/m64, with a REX prefix or not) of every length.
 */
static int call_before(const struct elf_syms *s, __u64 vaddr)
{
	__u8 b[8];

	if (vaddr < sizeof(b) || elf_syms__read(s, vaddr - sizeof(b), b, sizeof(b)))
		return 0;
	if (b[3] == 0xe8)
		return 1;
	for (int at = 0; at <= 6; at++) {
		__u8 modrm = b[at + 1], mod = modrm >> 6, rm = modrm & 7;
		int len = 2;

		if (b[at] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4) { /* SIB */
			len++;
			if (mod == 0 && at + 2 < 8 && (b[at + 2] & 7) == 5)
				len += 4;
		}
		if (mod == 0 && rm == 5)
			len += 4; /* rip-relative */
		len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
		if (at + len == 8)
			return 1;
	}
	return 0;
}

/*
 * The code at ADDR for a word that may not be code at all (a word on top of a stack): only
 * an address in a mapping already known, without a new scan of the process's maps.
 */
static int code_at(struct uprobe_mgr *m, pid_t pid, __u64 addr, struct uprobe_code *c)
{
	return addr ? uprobe_mgr__code_at(m, pid, addr, 0, c) : -ENOENT;
}

static int follows_call(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	struct uprobe_code c;

	return !code_at(m, pid, addr, &c) && call_before(c.syms, c.vaddr);
}

/* The 8 bytes at ADDR of PID's memory (a GOT entry), or 0. */
static __u64 mem_word(pid_t pid, __u64 addr)
{
	char path[64];
	__u64 v = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, &v, sizeof(v), (off_t)addr) != sizeof(v))
		v = 0;
	close(fd);
	return v;
}

/*
 * Where the call before return address RA of PID went: a direct call's (E8 rel32) target,
 * followed through a PLT stub (jmp *GOT(%rip), after endbr64 and bnd or not) to where its GOT
 * entry points now (a libc function called from a program); 0 when no direct call precedes RA.
 */
static __u64 call_dest(struct uprobe_mgr *m, pid_t pid, __u64 ra)
{
	struct uprobe_code c;
	__u64 t, got;
	__u8 b[16];
	__s32 rel;
	int at = 0;

	if (code_at(m, pid, ra, &c) || c.vaddr < 5 || elf_syms__read(c.syms, c.vaddr - 5, b, 5) ||
	    b[0] != 0xe8)
		return 0;
	memcpy(&rel, b + 1, sizeof(rel));
	t = ra + (__s64)rel;
	if (code_at(m, pid, t, &c) || elf_syms__read(c.syms, c.vaddr, b, sizeof(b)))
		return t;
	if (!memcmp(b, "\xf3\x0f\x1e\xfa", 4))
		at = 4; /* endbr64 */
	if (b[at] == 0xf2)
		at++; /* bnd */
	if (b[at] != 0xff || b[at + 1] != 0x25)
		return t;
	memcpy(&rel, b + at + 2, sizeof(rel));
	got = mem_word(pid, t + at + 6 + (__s64)rel);
	return got ? got : t;
}

int native_frames__return_slot(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
			       const __u64 *top, int ntop)
{
	struct uprobe_code c;
	struct elf_sym s;
	__u64 start;
	__u8 b[6]; /* b[0]: the byte before ADDR */
	int at = -1;

	if (code_at(m, pid, addr, &c) || !c.vaddr)
		return -1;
	/* No frame yet, or none any more: the return address is on top (under a pushed %rbp). */
	if (!is_return && !elf_syms__read(c.syms, c.vaddr - 1, b, sizeof(b))) {
		if (b[1] == 0xc3 || (b[1] == 0xf3 && b[2] == 0xc3))
			at = 0; /* ret, rep ret */
		else if (b[1] == 0x55 && b[2] == 0x48 && b[3] == 0x89 && b[4] == 0xe5)
			at = 0; /* push %rbp; mov %rsp,%rbp */
		else if (b[1] == 0xf3 && b[2] == 0x0f && b[3] == 0x1e && b[4] == 0xfa &&
			 b[5] == 0x55)
			at = 0; /* endbr64; push %rbp */
		else if (b[0] == 0x55 && b[1] == 0x48 && b[2] == 0x89 && b[3] == 0xe5)
			at = 1; /* mov %rsp,%rbp after the push */
		if (at >= 0)
			return at < ntop && follows_call(m, pid, top[at]) ? at : -1;
	}
	/*
	 * Elsewhere (a fast path that never made a frame, a function built without frame
	 * pointers: a libc system-call wrapper) the first word on top that returns into a call
	 * of this very function (its symbol), directly or through a PLT stub.
	 */
	if (elf_syms__at(c.syms, is_return ? c.vaddr - 1 : c.vaddr, &s))
		return -1;
	start = addr - (c.vaddr - s.vaddr);
	for (at = 0; at < ntop; at++)
		if (call_dest(m, pid, top[at]) == start)
			return at;
	return -1;
}

int native_frames__resolve(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
			   struct native_frame *out)
{
	struct uprobe_code c;
	struct elf_sym s;

	memset(out, 0, sizeof(*out));
	if (uprobe_mgr__code_at(m, pid, addr, 1, &c))
		return -ENOENT;
	out->module = c.path;
	out->vaddr = c.vaddr;
	out->valid = !is_return || call_before(c.syms, c.vaddr);
	/* A return address may be past the end of a function that ends in its call. */
	if (!elf_syms__at(c.syms, is_return ? c.vaddr - 1 : c.vaddr, &s))
		demangle(s.name, out->func, sizeof(out->func));
	return 0;
}
