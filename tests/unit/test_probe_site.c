// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Probe-site tests: hand-assembled prologues for every rule (what the kernel emulates, what
 * the walk may step over), the real prologues of libcudart, glibc and the -fcf-protection
 * fixture, and the instruction-length decoder checked against objdump over whole libraries.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include "elf_syms.h"
#include "probe_site.h"
#include "unit.h"

#define CUDART "/usr/local/cuda/lib64/libcudart.so.13"
#define NCCL   "/usr/local/cuda/lib64/libnccl.so.2"
#define LIBC   "/lib/x86_64-linux-gnu/libc.so.6"

static char fixture[512];

static bool site_is(const __u8 *code, size_t len, __u32 off, __u32 insn_len, enum probe_cost cost,
		    const char *text)
{
	struct probe_site s;

	probe_site__choose(code, len, &s);
	return ASSERT_EQ(s.offset, off, "offset") && ASSERT_EQ(s.insn_len, insn_len, "insn_len") &&
	       ASSERT_STREQ(probe_cost__name(s.cost), probe_cost__name(cost), "cost") &&
	       ASSERT_STREQ(s.insn, text, "insn");
}

#define SITE(off, ilen, cost, text, ...)                                                           \
	({                                                                                         \
		static const __u8 ___c[] = { __VA_ARGS__ };                                        \
		site_is(___c, sizeof(___c), off, ilen, cost, text);                                \
	})

static void test_push_at_0(void)
{
	SITE(0, 1, PROBE_EMULATED, "push %rbp", 0x55, 0x48, 0x89, 0xe5);
	SITE(0, 2, PROBE_EMULATED, "push %r15", 0x41, 0x57, 0x41, 0x56);
	SITE(0, 1, PROBE_EMULATED, "push %rbx", 0x53, 0x89, 0xfb);
}

static void test_endbr64_then_push(void)
{
	SITE(4, 1, PROBE_EMULATED, "push %rbp", 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5);
	SITE(4, 2, PROBE_EMULATED, "push %r12", 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54);
	/* gcc's tail call: endbr64; jmp puts */
	SITE(4, 5, PROBE_EMULATED, "jmp rel32", 0xf3, 0x0f, 0x1e, 0xfa, 0xe9, 0, 0, 0, 0);
}

static void test_endbr64_alone_single_steps(void)
{
	/* endbr64; sub $8,%rsp: nothing emulated before rsp moves, so offset 0 (endbr64). */
	SITE(0, 4, PROBE_SINGLE_STEP, "endbr64", 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08);
}

static void test_skip_mov_to_callee_saved(void)
{
	/* mov %rdi,%r15; push %rbp: r15 is no argument register, rdi is only read. */
	SITE(3, 1, PROBE_EMULATED, "push %rbp", 0x49, 0x89, 0xff, 0x55);
	/* mov %edi,%r12d (32-bit form); push %rbx */
	SITE(3, 1, PROBE_EMULATED, "push %rbx", 0x41, 0x89, 0xfc, 0x53);
	/* mov %rsp,%rbp (8b form: 48 8b ec); push %r15 */
	SITE(3, 2, PROBE_EMULATED, "push %r15", 0x48, 0x8b, 0xec, 0x41, 0x57);
	/* endbr64; mov %rsp,%rbp; mov $0x22,%eax; push %rbx */
	SITE(12, 1, PROBE_EMULATED, "push %rbx", 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xe5, 0xb8,
	     0x22, 0, 0, 0, 0x53);
}

static void test_mov_to_arg_register_stops(void)
{
	/* mov %rsi,%rdi; push %rbp: the probe would see the wrong first argument. */
	SITE(0, 3, PROBE_SINGLE_STEP, "bytes 48 89 f7", 0x48, 0x89, 0xf7, 0x55);
	/* mov %r10,%r9 (49 89 d1... 4d 89 d1) writes r9 */
	SITE(0, 3, PROBE_SINGLE_STEP, "bytes 4d 89 d1", 0x4d, 0x89, 0xd1, 0x55);
	/* mov %ecx,%r8d */
	SITE(0, 3, PROBE_SINGLE_STEP, "bytes 41 89 c8", 0x41, 0x89, 0xc8, 0x55);
	/* mov %rax,%rsp moves the stack */
	SITE(0, 3, PROBE_SINGLE_STEP, "bytes 48 89 c4", 0x48, 0x89, 0xc4, 0x55);
	/* mov %rdi,%rbx is fine, but mov %rbx,(%rsp) writes memory: stop, back to 0 */
	SITE(0, 3, PROBE_SINGLE_STEP, "mov %rdi,%rbx", 0x48, 0x89, 0xfb, 0x48, 0x89, 0x1c, 0x24,
	     0x55);
}

static void test_sub_rsp_stops(void)
{
	SITE(0, 4, PROBE_SINGLE_STEP, "bytes 48 83 ec 28", 0x48, 0x83, 0xec, 0x28, 0x55);
	/* endbr64; sub $0x28,%rsp; push: past the sub the return address is no longer at rsp */
	SITE(0, 4, PROBE_SINGLE_STEP, "endbr64", 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x28,
	     0x55);
}

static void test_branches_are_emulated(void)
{
	SITE(0, 5, PROBE_EMULATED, "jmp rel32", 0xe9, 0x10, 0x20, 0, 0);
	SITE(0, 2, PROBE_EMULATED, "jmp rel8", 0xeb, 0x05);
	SITE(0, 5, PROBE_EMULATED, "call rel32", 0xe8, 0, 0, 0, 0);
	SITE(0, 2, PROBE_EMULATED, "jne rel8", 0x75, 0x10);
	SITE(0, 6, PROBE_EMULATED, "je rel32", 0x0f, 0x84, 0, 1, 0, 0);
	/* The kernel refuses 0x66-prefixed branches for emulation. */
	SITE(0, 7, PROBE_SINGLE_STEP, "bytes 66 0f 84 00 00 00 00", 0x66, 0x0f, 0x84, 0, 0, 0, 0);
	/* jmp *0x10(%rip) (a PLT entry) is single-stepped */
	SITE(0, 6, PROBE_SINGLE_STEP, "bytes ff 25 10 00 00 00", 0xff, 0x25, 0x10, 0, 0, 0);
}

static void test_lea_single_steps(void)
{
	SITE(0, 7, PROBE_SINGLE_STEP, "bytes 48 8d 05 00 10 00 00", 0x48, 0x8d, 0x05, 0, 0x10, 0, 0,
	     0xc3);
	/* lea 0x10(%rip),%rax writes rax, fine, but it is no emulated instruction: the walk
	 * stops at it (only endbr64, mov reg,reg and mov $imm are stepped over). */
	SITE(0, 4, PROBE_SINGLE_STEP, "endbr64", 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8d, 0x05, 0x10, 0,
	     0, 0, 0x55);
}

static void test_nop_forms(void)
{
	/* The kernel's x86_nops[1..8] are emulated; other encodings of nop are not. */
	SITE(0, 1, PROBE_EMULATED, "nop", 0x90);
	SITE(0, 2, PROBE_EMULATED, "nop", 0x66, 0x90);
	SITE(0, 3, PROBE_EMULATED, "nop", 0x0f, 0x1f, 0x00);
	SITE(0, 5, PROBE_EMULATED, "nop", 0x0f, 0x1f, 0x44, 0x00, 0x00);
	SITE(0, 6, PROBE_EMULATED, "nop", 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00);
	SITE(0, 8, PROBE_EMULATED, "nop", 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0);
	SITE(0, 2, PROBE_EMULATED, "pause", 0xf3, 0x90);
	SITE(0, 9, PROBE_SINGLE_STEP, "bytes 66 0f 1f 84 00 00 00 00 00", 0x66, 0x0f, 0x1f, 0x84, 0,
	     0, 0, 0, 0);
	/* endbr64; nopl 0(%rax,%rax): the nop is the cheap site */
	SITE(4, 5, PROBE_EMULATED, "nop", 0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x00);
}

static void test_push_encodings(void)
{
	/* Only 50-57 alone or behind REX 0x41 are emulated. */
	SITE(0, 2, PROBE_SINGLE_STEP, "bytes 48 55", 0x48, 0x55);
	SITE(0, 2, PROBE_SINGLE_STEP, "bytes 66 55", 0x66, 0x55);
	SITE(0, 5, PROBE_SINGLE_STEP, "bytes 68 01 00 00 00", 0x68, 1, 0, 0, 0);
}

static void test_short_input(void)
{
	/* A buffer that ends inside the instruction: never read past it. */
	SITE(0, 0, PROBE_SINGLE_STEP, "bytes 48 8d", 0x48, 0x8d);
	SITE(0, 0, PROBE_SINGLE_STEP, "bytes f3 0f 1e", 0xf3, 0x0f, 0x1e);
	/* Twelve undecodable bytes: the text ends in ".." where it would not fit */
	SITE(0, 0, PROBE_SINGLE_STEP, "bytes 06 06 06 06 06 06 06 06", 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
	     6, 6);
	site_is(NULL, 0, 0, 0, PROBE_SINGLE_STEP, "bytes");
}

static bool site_of(const char *path, const char *func, struct probe_site *site)
{
	struct elf_syms *s = elf_syms__open(path, NULL);
	struct elf_sym sym;
	__u8 code[64];
	bool ok = false;

	if (!ASSERT_TRUE(s, path))
		return false;
	if (ASSERT_EQ(elf_syms__find(s, func, &sym), 0, func) &&
	    ASSERT_EQ(elf_syms__read(s, sym.vaddr, code, sizeof(code)), 0, "read")) {
		probe_site__choose(code, sizeof(code), site);
		ok = true;
	}
	elf_syms__free(s);
	return ok;
}

static void test_real_cudart(void)
{
	struct probe_site s;

	if (!site_of(CUDART, "cudaLaunchKernel", &s))
		return;
	ASSERT_EQ(s.offset, 0, "offset");
	ASSERT_STREQ(s.insn, "push %rbp", "insn");
	ASSERT_EQ(s.cost, PROBE_EMULATED, "cost");
}

static void test_real_glibc(void)
{
	struct probe_site s;

	if (!site_of(LIBC, "pthread_cond_timedwait", &s))
		return;
	ASSERT_EQ(s.offset, 0, "offset");
	ASSERT_STREQ(s.insn, "push %r15", "insn");
	ASSERT_EQ(s.cost, PROBE_EMULATED, "cost");
}

static void test_real_cf_protection_fixture(void)
{
	struct probe_site s;

	if (!site_of(fixture, "fx_global", &s))
		return;
	/* endbr64; push %r12 */
	if (!ASSERT_EQ(s.offset, 4, "offset") || !ASSERT_STREQ(s.insn, "push %r12", "insn") ||
	    !ASSERT_EQ(s.cost, PROBE_EMULATED, "cost"))
		return;
	if (!site_of(fixture, "fx_local_helper", &s))
		return;
	ASSERT_EQ(s.offset, 0, "offset");
	ASSERT_STREQ(s.insn, "push %rbx", "insn");
}

struct tally {
	const struct elf_syms *s;
	long funcs, emulated, moved, bad_boundary;
};

static int tally_cb(const struct elf_sym *sym, void *arg)
{
	struct tally *t = arg;
	struct probe_site site;
	__u8 code[64];
	__u32 off = 0;
	size_t n;

	if (elf_syms__read(t->s, sym->vaddr, code, sizeof(code)))
		return 0;
	probe_site__choose(code, sizeof(code), &site);
	t->funcs++;
	t->emulated += site.cost == PROBE_EMULATED;
	t->moved += site.offset > 0;
	/* The site must be an instruction boundary. */
	while (off < site.offset && (n = probe_site__insn_len(code + off, sizeof(code) - off)))
		off += n;
	t->bad_boundary += off != site.offset;
	return 0;
}

/* Every function of three real libraries gets a site on an instruction boundary. */
static void test_all_functions(void)
{
	static const char *const libs[] = { CUDART, NCCL, LIBC };
	size_t i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		struct tally t = { 0 };
		struct elf_syms *s = elf_syms__open(libs[i], NULL);

		if (!ASSERT_TRUE(s, libs[i]))
			return;
		t.s = s;
		elf_syms__for_each(s, tally_cb, &t);
		printf("# %s: %ld functions, %ld emulated sites, %ld moved past offset 0\n",
		       libs[i], t.funcs, t.emulated, t.moved);
		elf_syms__free(s);
		if (!ASSERT_TRUE(t.funcs > 100, "functions") ||
		    !ASSERT_EQ(t.bad_boundary, 0, "sites off an instruction boundary"))
			return;
	}
}

/*
 * The length decoder against objdump: every instruction objdump decodes in the library's
 * executable sections must have the same length.
 */
static void decoder_vs_objdump(const char *lib)
{
	char cmd[PATH_MAX + 64], line[512], first_bad[160] = "";
	struct elf_syms *s = elf_syms__open(lib, NULL);
	__u64 *addr = NULL;
	__u8 *len = NULL;
	size_t n = 0, cap = 0, i, bad = 0;
	FILE *f;

	if (!ASSERT_TRUE(s, lib))
		return;
	snprintf(cmd, sizeof(cmd), "objdump -d -w %s 2>/dev/null", lib);
	f = popen(cmd, "r");
	if (!ASSERT_TRUE(f, "popen objdump"))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char *bytes, *insn, *tok, *save;
		int nb = 0;

		/* "  74370:\t55                   \tpush   %rbp" */
		if (sscanf(line, " %llx:", &a) != 1 || !(bytes = strchr(line, '\t')))
			continue;
		insn = strchr(++bytes, '\t');
		if (!insn || strstr(insn, "(bad)") || !strncmp(insn + 1, "rex", 3))
			continue;
		*insn = 0;
		for (tok = strtok_r(bytes, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			nb++;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			addr = realloc(addr, cap * sizeof(*addr));
			len = realloc(len, cap);
			if (!addr || !len)
				break;
		}
		addr[n] = a;
		len[n++] = (__u8)nb;
	}
	pclose(f);
	if (!ASSERT_TRUE(n > 10000, "objdump instructions"))
		goto out;
	/* Sections may sit in different segments; read each instruction's bytes. */
	for (i = 0; i < n; i++) {
		__u8 buf[16];
		size_t got;

		if (elf_syms__read(s, addr[i], buf, sizeof(buf)))
			continue;
		got = probe_site__insn_len(buf, sizeof(buf));
		if (got != len[i]) {
			if (!bad++)
				snprintf(first_bad, sizeof(first_bad),
					 "at %llx: decoder %zu, objdump %u (%02x %02x %02x %02x)",
					 (unsigned long long)addr[i], got, len[i], buf[0], buf[1],
					 buf[2], buf[3]);
		}
	}
	printf("# %s: %zu instructions, %zu length mismatches%s%s\n", lib, n, bad,
	       bad ? ", first " : "", first_bad);
	ASSERT_EQ(bad, 0, first_bad);
out:
	free(addr);
	free(len);
	elf_syms__free(s);
}

static void test_decoder_matches_objdump_cudart(void)
{
	decoder_vs_objdump(CUDART);
}

static void test_decoder_matches_objdump_libc(void)
{
	decoder_vs_objdump(LIBC);
}

int main(void)
{
	char self[400];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	snprintf(fixture, sizeof(fixture), "%s/fixtures/syms_fixture", self);

	RUN_TEST(test_push_at_0);
	RUN_TEST(test_endbr64_then_push);
	RUN_TEST(test_endbr64_alone_single_steps);
	RUN_TEST(test_skip_mov_to_callee_saved);
	RUN_TEST(test_mov_to_arg_register_stops);
	RUN_TEST(test_sub_rsp_stops);
	RUN_TEST(test_branches_are_emulated);
	RUN_TEST(test_lea_single_steps);
	RUN_TEST(test_nop_forms);
	RUN_TEST(test_push_encodings);
	RUN_TEST(test_short_input);
	RUN_TEST(test_real_cudart);
	RUN_TEST(test_real_glibc);
	RUN_TEST(test_real_cf_protection_fixture);
	RUN_TEST(test_all_functions);
	RUN_TEST(test_decoder_matches_objdump_cudart);
	RUN_TEST(test_decoder_matches_objdump_libc);
	return UNIT_EXIT();
}
