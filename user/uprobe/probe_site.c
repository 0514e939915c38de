// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Probe-site choice for x86-64 uprobes. What the kernel emulates (Linux 6.18,
 * arch/x86/kernel/uprobes.c, arch_uprobe_analyze_insn(); checked against the disassembly of
 * the running 6.18.44 kernel's arch_uprobe_analyze_insn and its x86_nops[] table):
 *   - branch_setup_xol_ops(): an instruction byte-identical to the kernel's x86_nops[len]
 *     (len 1..8: 90, 66 90, 0f 1f 00, 0f 1f 40 00, 0f 1f 44 00 00, 66 0f 1f 44 00 00,
 *     0f 1f 80 00*4, 0f 1f 84 00*5; the 9..11 byte forms carry a CS prefix, which
 *     is_prefix_bad() refuses); opcode 0x90 behind any prefixes; jmp rel8/rel32 (eb, e9),
 *     call rel32 (e8), jcc rel8/rel32 (70-7f, 0f 80-8f) unless they carry a 0x66 prefix;
 *   - push_setup_xol_ops(): push r64 (50-57) alone or behind exactly REX 0x41 (r8-r15);
 *     any other REX (48 55) or a 0x66 prefix is single-stepped.
 * Everything else the kernel accepts is single-stepped out of line, endbr64 (f3 0f 1e fa)
 * included. What each costs: bench/RESULTS.md, "Per-probe cost" (and, alone,
 * tests/fixtures/elf/probe_cost.sh). 6.18 may also turn a probed 5-byte nop into a call to a
 * trampoline after its first hit (arch_uprobe_optimize); what that saves was measured twice,
 * with different answers (bench/RESULTS.md, "Figures the code's comments cite").
 */
#include <stdio.h>
#include <string.h>
#include "probe_site.h"

/* The kernel's x86_nops[1..8] (arch/x86/include/asm/nops.h, 64-bit). */
static const __u8 kernel_nops[9][8] = {
	{ 0 },
	{ 0x90 },
	{ 0x66, 0x90 },
	{ 0x0f, 0x1f, 0x00 },
	{ 0x0f, 0x1f, 0x40, 0x00 },
	{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
	{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
	{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
};

static const char *const reg64[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
				       "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };
static const char *const reg32[16] = {
	"eax", "ecx", "edx",  "ebx",  "esp",  "ebp",  "esi",  "edi",
	"r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"
};
static const char *const jcc_name[16] = { "jo", "jno", "jb", "jae", "je", "jne", "jbe", "ja",
					  "js", "jns", "jp", "jnp", "jl", "jge", "jle", "jg" };

enum { REG_SP = 4 };

/* rdi, rsi, rdx, rcx, r8, r9: what a probe at the site reads as the entry arguments. */
static int is_arg_reg(int r)
{
	return r == 7 || r == 6 || r == 2 || r == 1 || r == 8 || r == 9;
}

/* One decoded instruction; only the fields the walk needs. */
struct insn {
	size_t len; /* 0: could not be decoded */
	int npfx;   /* legacy prefixes */
	int has66;
	int bad_pfx;	/* es/cs/ss/ds/lock: the kernel refuses to probe it at all */
	__u8 rex;	/* 0 if none */
	const __u8 *op; /* first opcode byte */
	int map;	/* 0: one-byte, 1: 0f, 2: 0f 38, 3: 0f 3a, 4: vex/evex */
	__u8 modrm;
	int has_modrm;
};

/* Opcode tables, aligned by hand as the manuals print them. */
// clang-format off
static int has_modrm_1b(__u8 op)
{
	if (op < 0x40)
		return (op & 7) < 4;
	switch (op) {
	case 0x62: case 0x63: case 0x69: case 0x6b:
	case 0xc0: case 0xc1: case 0xc4: case 0xc5: case 0xc6: case 0xc7:
	case 0xd0: case 0xd1: case 0xd2: case 0xd3:
	case 0xf6: case 0xf7: case 0xfe: case 0xff:
		return 1;
	}
	if (op >= 0x80 && op <= 0x8f)
		return 1;
	if (op >= 0xd8 && op <= 0xdf)
		return 1;
	return 0;
}

static int has_modrm_0f(__u8 op)
{
	switch (op) {
	case 0x04: case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0a:
	case 0x0b: case 0x0c: case 0x0e: case 0x77: case 0xa0: case 0xa1: case 0xa2:
	case 0xa8: case 0xa9: case 0xaa:
		return 0;
	}
	if (op >= 0x30 && op <= 0x37)
		return 0;
	if (op >= 0x80 && op <= 0x8f)
		return 0;
	if (op >= 0xc8 && op <= 0xcf)
		return 0;
	return 1;
}

/* Immediate bytes of a one-byte opcode (z = 4, or 2 with a 0x66 prefix). */
static int imm_1b(__u8 op, const struct insn *in, int *bad)
{
	int z = in->has66 && !(in->rex & 8) ? 2 : 4;

	if (op < 0x40) {
		if ((op & 7) == 4)
			return 1;
		if ((op & 7) == 5)
			return z;
		if ((op & 7) >= 6)
			*bad = 1; /* push/pop seg, daa...: invalid in 64-bit mode */
		return 0;
	}
	if (op >= 0x70 && op <= 0x7f)
		return 1;
	if (op >= 0xb0 && op <= 0xb7)
		return 1;
	if (op >= 0xb8 && op <= 0xbf)
		return (in->rex & 8) ? 8 : z;
	if (op >= 0xa0 && op <= 0xa3)
		return 8; /* moffs64 */
	switch (op) {
	case 0x68: case 0x69: case 0x81: case 0xa9: case 0xc7: case 0xe8: case 0xe9:
		return z;
	case 0x6a: case 0x6b: case 0x80: case 0x83: case 0xa8: case 0xc0: case 0xc1:
	case 0xc6: case 0xcd: case 0xe0: case 0xe1: case 0xe2: case 0xe3: case 0xe4:
	case 0xe5: case 0xe6: case 0xe7: case 0xeb:
		return 1;
	case 0xc2: case 0xca:
		return 2;
	case 0xc8:
		return 3;
	case 0xf6:
		return ((in->modrm >> 3) & 7) < 2 ? 1 : 0;
	case 0xf7:
		return ((in->modrm >> 3) & 7) < 2 ? z : 0;
	case 0x06: case 0x07: case 0x0e: case 0x16: case 0x17: case 0x1e: case 0x1f:
	case 0x27: case 0x2f: case 0x37: case 0x3f: case 0x60: case 0x61: case 0x82:
	case 0x9a: case 0xce: case 0xd4: case 0xd5: case 0xd6: case 0xea:
		*bad = 1;
		return 0;
	}
	return 0;
}

static int imm_0f(__u8 op)
{
	if (op >= 0x80 && op <= 0x8f)
		return 4;
	switch (op) {
	case 0x70: case 0x71: case 0x72: case 0x73: case 0xa4: case 0xac: case 0xba:
	case 0xc2: case 0xc4: case 0xc5: case 0xc6: case 0x0f:
		return 1;
	}
	return 0;
}
// clang-format on

/* Bytes taken by ModRM + SIB + displacement at P (REM bytes left); -1 when short. */
static int modrm_len(const __u8 *p, size_t rem)
{
	int mod, rm, n = 1;

	if (rem < 1)
		return -1;
	mod = p[0] >> 6;
	rm = p[0] & 7;
	if (mod != 3 && rm == 4) {
		if (rem < 2)
			return -1;
		n++;
		if (mod == 0 && (p[1] & 7) == 5)
			n += 4;
	}
	if (mod == 0 && rm == 5)
		n += 4;
	else if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return (size_t)n <= rem ? n : -1;
}

/*
 * Length-decode the instruction at CODE (REM bytes). Handles legacy prefixes, REX, the
 * one-byte, 0f, 0f 38 and 0f 3a maps and VEX/EVEX; anything else leaves len 0.
 */
static void decode(const __u8 *code, size_t rem, struct insn *in)
{
	size_t i = 0;
	int bad = 0, n, imm = 0;
	__u8 op;

	memset(in, 0, sizeof(*in));
	while (i < rem && i < 15) {
		__u8 b = code[i];

		if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x64 || b == 0x65) {
			in->has66 |= b == 0x66;
		} else if (b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0xf0) {
			in->bad_pfx = 1;
		} else {
			break;
		}
		in->npfx++;
		i++;
	}
	if (i < rem && (code[i] & 0xf0) == 0x40)
		in->rex = code[i++];
	if (i >= rem)
		return;
	in->op = code + i;
	op = code[i++];
	if (op == 0xc4 || op == 0xc5 || op == 0x62) {
		/* VEX3 / VEX2 / EVEX: prefix bytes, opcode, ModRM, optional imm8. */
		size_t plen = op == 0xc5 ? 1 : op == 0xc4 ? 2 : 3;
		int vmap = 1;

		if (in->rex || i + plen >= rem)
			return;
		if (op != 0xc5)
			vmap = code[i] & (op == 0x62 ? 7 : 0x1f);
		i += plen;
		in->map = 4;
		op = code[i++];
		if (vmap == 1 && op == 0x77 && *in->op != 0x62)
			goto done; /* vzeroupper/vzeroall */
		in->has_modrm = 1;
		n = modrm_len(code + i, rem - i);
		if (n < 0)
			return;
		in->modrm = code[i];
		i += n;
		if (vmap == 3 || (vmap == 1 && (imm_0f(op) == 1)))
			imm = 1;
		goto imm;
	}
	if (op == 0x0f) {
		if (i >= rem)
			return;
		op = code[i++];
		if (op == 0x38 || op == 0x3a) {
			in->map = op == 0x38 ? 2 : 3;
			if (i >= rem)
				return;
			i++;
			in->has_modrm = 1;
			imm = in->map == 3;
		} else {
			in->map = 1;
			in->has_modrm = has_modrm_0f(op);
			imm = imm_0f(op); /* jcc rel32 stays rel32 behind 0x66, as for e8/e9 */
		}
	} else {
		in->has_modrm = has_modrm_1b(op);
		if (in->has_modrm && i < rem)
			in->modrm = code[i];
		if (op == 0xe8 || op == 0xe9)
			imm = 4; /* near branches: always rel32 in 64-bit mode on Intel */
		else
			imm = imm_1b(op, in, &bad);
		if (bad)
			return;
	}
	if (in->has_modrm) {
		in->modrm = i < rem ? code[i] : 0;
		n = modrm_len(code + i, rem - i);
		if (n < 0)
			return;
		i += n;
	}
imm:
	i += imm;
done:
	if (i <= rem && i <= 15)
		in->len = i;
}

static int is_kernel_nop(const __u8 *code, size_t len)
{
	return len >= 1 && len <= 8 && !memcmp(code, kernel_nops[len], len);
}

/* Does the 6.18 kernel emulate this instruction (no single step)? Fills TEXT if so. */
static int emulated(const __u8 *code, const struct insn *in, char *text, size_t tlen)
{
	__u8 op;
	int r;

	if (!in->len || in->bad_pfx)
		return 0;
	if (is_kernel_nop(code, in->len)) {
		snprintf(text, tlen, "nop");
		return 1;
	}
	op = *in->op;
	if (in->map == 0 && op == 0x90) {
		/* Behind any prefix; even REX.B (really xchg with r8) is emulated as a nop. */
		snprintf(text, tlen, (in->rex & 1) ? "xchg" : code[0] == 0xf3 ? "pause" : "nop");
		return 1;
	}
	if (in->map == 0 && !in->has66 && (op == 0xeb || op == 0xe9 || op == 0xe8)) {
		snprintf(text, tlen, "%s",
			 op == 0xe8   ? "call rel32"
			 : op == 0xe9 ? "jmp rel32"
				      : "jmp rel8");
		return 1;
	}
	if (in->map == 0 && !in->has66 && op >= 0x70 && op <= 0x7f) {
		snprintf(text, tlen, "%s rel8", jcc_name[op & 15]);
		return 1;
	}
	if (in->map == 1 && !in->has66 && op == 0x0f && in->op[1] >= 0x80 && in->op[1] <= 0x8f) {
		snprintf(text, tlen, "%s rel32", jcc_name[in->op[1] & 15]);
		return 1;
	}
	if (in->map == 0 && op >= 0x50 && op <= 0x57 && !in->npfx &&
	    (in->rex == 0 || in->rex == 0x41)) {
		r = (op & 7) | (in->rex ? 8 : 0);
		snprintf(text, tlen, "push %%%s", reg64[r]);
		return 1;
	}
	return 0;
}

/*
 * Can the probe go past this instruction? Only when it cannot branch, does not touch rsp,
 * writes neither memory nor an argument register: then at the next instruction the entry
 * arguments and the return address are where they were at the first byte.
 */
static int skippable(const __u8 *code, const struct insn *in, char *text, size_t tlen)
{
	int w, reg, rm, dst, src;
	__u8 op;

	if (!in->len || in->bad_pfx)
		return 0;
	if (in->len == 4 && !memcmp(code, "\xf3\x0f\x1e\xfa", 4)) {
		snprintf(text, tlen, "endbr64");
		return 1;
	}
	if (in->npfx || in->map != 0)
		return 0;
	op = *in->op;
	w = !!(in->rex & 8);
	if ((op == 0x89 || op == 0x8b) && (in->modrm >> 6) == 3) {
		/* mov reg,reg: 89 writes r/m from reg, 8b writes reg from r/m. */
		reg = ((in->modrm >> 3) & 7) | ((in->rex & 4) ? 8 : 0);
		rm = (in->modrm & 7) | ((in->rex & 1) ? 8 : 0);
		dst = op == 0x89 ? rm : reg;
		src = op == 0x89 ? reg : rm;
		if (dst == REG_SP || is_arg_reg(dst))
			return 0;
		snprintf(text, tlen, "mov %%%s,%%%s", w ? reg64[src] : reg32[src],
			 w ? reg64[dst] : reg32[dst]);
		return 1;
	}
	if (op >= 0xb8 && op <= 0xbf) {
		/* mov $imm,reg */
		dst = (op & 7) | ((in->rex & 1) ? 8 : 0);
		if (dst == REG_SP || is_arg_reg(dst))
			return 0;
		snprintf(text, tlen, "mov $imm,%%%s", w ? reg64[dst] : reg32[dst]);
		return 1;
	}
	return 0;
}

/* "bytes 48 8d 05 .." : as many bytes as fit, ".." when some did not. */
static void bytes_text(const __u8 *code, size_t n, char *text, size_t tlen)
{
	size_t i, pos, fit = (tlen - 1 - 5) / 3;

	if (n > fit)
		fit = (tlen - 1 - 5 - 3) / 3;
	else
		fit = n;
	pos = (size_t)snprintf(text, tlen, "bytes");
	for (i = 0; i < fit; i++)
		pos += (size_t)snprintf(text + pos, tlen - pos, " %02x", code[i]);
	if (fit < n)
		snprintf(text + pos, tlen - pos, " ..");
}

/* The kernel's class of the instruction at CODE, with its text, for a site at offset OFF. */
static void classify(const __u8 *code, size_t len, __u32 off, struct probe_site *out)
{
	struct insn in;

	decode(code + off, len - off, &in);
	out->offset = off;
	out->insn_len = (__u32)in.len;
	if (emulated(code + off, &in, out->insn, sizeof(out->insn))) {
		out->cost = PROBE_EMULATED;
		return;
	}
	out->cost = PROBE_SINGLE_STEP;
	if (!skippable(code + off, &in, out->insn, sizeof(out->insn)))
		bytes_text(code + off, in.len ? in.len : (len - off < 8 ? len - off : 8), out->insn,
			   sizeof(out->insn));
}

/* How far the walk may go: real prologues reach their first push within a few insns. */
#define MAX_WALK_INSNS 8

void probe_site__choose(const __u8 *code, size_t len, struct probe_site *out)
{
	struct insn in;
	char text[sizeof(out->insn)];
	size_t off = 0;
	int k;

	memset(out, 0, sizeof(*out));
	if (!code || !len) {
		out->cost = PROBE_SINGLE_STEP;
		snprintf(out->insn, sizeof(out->insn), "bytes");
		return;
	}
	for (k = 0; k < MAX_WALK_INSNS && off < len; k++) {
		decode(code + off, len - off, &in);
		if (emulated(code + off, &in, text, sizeof(text))) {
			classify(code, len, (__u32)off, out);
			return;
		}
		if (!skippable(code + off, &in, text, sizeof(text)))
			break;
		off += in.len;
	}
	classify(code, len, 0, out);
}

size_t probe_site__insn_len(const __u8 *code, size_t len)
{
	struct insn in;

	if (!code || !len)
		return 0;
	decode(code, len, &in);
	return in.len;
}

const char *probe_cost__name(enum probe_cost c)
{
	switch (c) {
	case PROBE_EMULATED:
		return "emulated";
	case PROBE_SINGLE_STEP:
		return "single-step";
	}
	return "unknown";
}
