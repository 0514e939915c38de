// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * usdt_notes tests: every note of the sys/sdt.h fixture (bpfsight-style probes with
 * semaphores, an inlined probe with two sites) and of libstdc++ (no semaphores, a memory
 * argument) compared with what readelf says, the file offsets checked against the section
 * table and the bytes there (a nop at each probe, a zero semaphore), a copy whose
 * .stapsdt.base was moved (prelink), the real cupti-shim when it is built, argument specs of
 * every form, and files that are no ELF or are cut short.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "usdt_notes.h"
#include "unit.h"

/* unit.h's messages quote both strings whole; a long one is cut, which is fine here. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define LIBSTDCXX "/lib/x86_64-linux-gnu/libstdc++.so.6"

static char fixture[512], shim[512];
static char tmp[64];

struct rnote {
	char provider[64], name[64], args[256];
	unsigned long long pc, sema;
};

/* The stapsdt notes of PATH as `readelf -n --wide` prints them, in file order. */
static int readelf_notes(const char *path, struct rnote *v, int max)
{
	char cmd[PATH_MAX + 64], line[512];
	int n = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -n --wide '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;

		line[strcspn(line, "\n")] = 0;
		if ((p = strstr(line, "Provider: "))) {
			if (++n >= max)
				break;
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].provider, sizeof(v[n].provider), "%s", p + 10);
		} else if (n >= 0 && n < max && (p = strstr(line, "Name: "))) {
			snprintf(v[n].name, sizeof(v[n].name), "%s", p + 6);
		} else if (n >= 0 && n < max && (p = strstr(line, "Location: "))) {
			sscanf(p, "Location: %llx, Base: %*x, Semaphore: %llx", &v[n].pc,
			       &v[n].sema);
		} else if (n >= 0 && n < max && (p = strstr(line, "Arguments: "))) {
			snprintf(v[n].args, sizeof(v[n].args), "%s", p + 11);
		}
	}
	pclose(f);
	return n + 1 > max ? max : n + 1;
}

/* Address and file offset of section NAME, from readelf -S. */
static bool section(const char *path, const char *name, unsigned long long *addr,
		    unsigned long long *off)
{
	char cmd[PATH_MAX + 128], line[512];
	bool found = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -S -W '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ']'), sname[64], type[32];

		if (p && sscanf(p + 1, "%63s %31s %llx %llx", sname, type, addr, off) == 4 &&
		    !strcmp(sname, name))
			found = true;
	}
	pclose(f);
	return found;
}

static bool same_notes(const char *path, const struct usdt_notes *n, int *count)
{
	struct rnote r[64];
	int nr = readelf_notes(path, r, 64);

	*count = nr;
	if (!ASSERT_TRUE(nr > 0, "readelf found notes") ||
	    !ASSERT_EQ(usdt_notes__count(n), nr, "note count"))
		return false;
	for (int i = 0; i < nr; i++) {
		const struct usdt_note *u = usdt_notes__get(n, i);

		if (!ASSERT_STREQ(u->provider, r[i].provider, "provider") ||
		    !ASSERT_STREQ(u->name, r[i].name, "name") ||
		    !ASSERT_STREQ(u->args, r[i].args, "args") || !ASSERT_EQ(u->pc, r[i].pc, "pc") ||
		    !ASSERT_EQ(u->sema, r[i].sema, "sema") ||
		    !ASSERT_EQ(u->args_err, 0, "args parsed"))
			return false;
	}
	return true;
}

static void test_fixture_notes(void)
{
	struct usdt_notes *n = usdt_notes__open(fixture);
	unsigned long long taddr, toff, paddr, poff;
	int count, fd = -1, inlined = 0;

	if (!ASSERT_TRUE(n, "open fixture") || !same_notes(fixture, n, &count))
		goto out;
	ASSERT_EQ(count, 7, "3 bpfsight + 4 fx notes");
	ASSERT_TRUE(usdt_notes__has_provider(n, "bpfsight"), "has bpfsight");
	ASSERT_TRUE(!usdt_notes__has_provider(n, "bpfsigh"), "no prefix match");
	if (!ASSERT_TRUE(section(fixture, ".text", &taddr, &toff), "readelf .text") ||
	    !ASSERT_TRUE(section(fixture, ".probes", &paddr, &poff), "readelf .probes"))
		goto out;
	fd = open(fixture, O_RDONLY);
	for (__u32 i = 0; i < usdt_notes__count(n); i++) {
		const struct usdt_note *u = usdt_notes__get(n, i);
		unsigned char insn = 0;
		unsigned short sem = 1;

		if (!ASSERT_EQ(u->pc_off, u->pc - taddr + toff, "pc_off") ||
		    !ASSERT_EQ(u->sema_off, u->sema - paddr + poff, "sema_off") ||
		    !ASSERT_EQ(pread(fd, &insn, 1, u->pc_off), 1, "read probe byte") ||
		    !ASSERT_EQ(insn, 0x90, "a nop at the probe") ||
		    !ASSERT_EQ(pread(fd, &sem, 2, u->sema_off), 2, "read semaphore") ||
		    !ASSERT_EQ(sem, 0, "semaphore is 0 in the file"))
			goto out;
		inlined += !strcmp(u->name, "inlined");
		if (!strcmp(u->provider, "bpfsight")) {
			/* Plain 64-bit values, as the shim passes them. */
			ASSERT_EQ(u->arg[0].kind, USDT_ARG_REG, "register arg");
			ASSERT_EQ(u->arg[0].size, 8, "8 bytes");
			ASSERT_EQ(u->arg[0].is_signed, 0, "unsigned");
			ASSERT_EQ(u->nargs, !strcmp(u->name, "batch") ? 2 : 1, "nargs");
		}
		if (!strcmp(u->name, "sizes")) {
			ASSERT_EQ(u->nargs, 4, "sizes nargs");
			ASSERT_EQ(u->arg[0].size, 1, "char");
			ASSERT_EQ(u->arg[1].size, 2, "short");
			ASSERT_EQ(u->arg[2].size, 4, "int");
			ASSERT_EQ(u->arg[3].size, 8, "long");
			for (int a = 0; a < 4; a++)
				ASSERT_EQ(u->arg[a].is_signed, 1, "signed");
		}
		if (!strcmp(u->name, "constant")) {
			ASSERT_EQ(u->arg[0].kind, USDT_ARG_CONST, "constant");
			ASSERT_EQ(u->arg[0].val, 42, "42");
		}
	}
	ASSERT_EQ(inlined, 2, "an inlined probe has a note per site");
out:
	if (fd >= 0)
		close(fd);
	usdt_notes__free(n);
}

/* libstdc++: probes without semaphores, a memory argument. */
static void test_libstdcxx(void)
{
	struct usdt_notes *n = usdt_notes__open(LIBSTDCXX);
	int count, mem = 0;

	if (!ASSERT_TRUE(n, "open libstdc++") || !same_notes(LIBSTDCXX, n, &count))
		goto out;
	for (__u32 i = 0; i < usdt_notes__count(n); i++) {
		const struct usdt_note *u = usdt_notes__get(n, i);

		ASSERT_EQ(u->sema, 0, "no semaphore");
		ASSERT_EQ(u->sema_off, 0, "no ref_ctr offset");
		for (__u32 a = 0; a < u->nargs; a++)
			mem += u->arg[a].kind == USDT_ARG_MEM;
	}
	ASSERT_TRUE(mem > 0, "a memory argument (8@-80(%rbx) style)");
	ASSERT_TRUE(!usdt_notes__has_provider(n, "bpfsight"), "not a shim");
out:
	usdt_notes__free(n);
}

/* Prelink moves sections: a .stapsdt.base 2 bytes lower moves every probe by -2. */
static void test_moved_base(void)
{
	char copy[PATH_MAX];
	struct usdt_notes *orig = usdt_notes__open(fixture), *moved = NULL;
	Elf64_Ehdr eh;
	int fd = -1, patched = 0;

	snprintf(copy, sizeof(copy), "%s/moved", tmp);
	{
		char cmd[2 * PATH_MAX];

		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fixture, copy);
		if (!ASSERT_EQ(system(cmd), 0, "cp"))
			goto out;
	}
	fd = open(copy, O_RDWR);
	if (!ASSERT_TRUE(fd >= 0 && orig, "open") ||
	    !ASSERT_EQ(pread(fd, &eh, sizeof(eh), 0), sizeof(eh), "ehdr"))
		goto out;
	for (int i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh, strsh;
		char name[32] = "";
		off_t at = eh.e_shoff + (off_t)i * sizeof(sh);

		if (pread(fd, &sh, sizeof(sh), at) != sizeof(sh) ||
		    pread(fd, &strsh, sizeof(strsh),
			  eh.e_shoff + (off_t)eh.e_shstrndx * sizeof(strsh)) != sizeof(strsh) ||
		    pread(fd, name, sizeof(name) - 1, strsh.sh_offset + sh.sh_name) <= 0)
			continue;
		if (strcmp(name, ".stapsdt.base"))
			continue;
		sh.sh_addr -= 2;
		patched = pwrite(fd, &sh, sizeof(sh), at) == sizeof(sh);
	}
	close(fd);
	fd = -1;
	if (!ASSERT_TRUE(patched, "patched .stapsdt.base"))
		goto out;
	moved = usdt_notes__open(copy);
	if (!ASSERT_TRUE(moved, "open moved") ||
	    !ASSERT_EQ(usdt_notes__count(moved), usdt_notes__count(orig), "count"))
		goto out;
	for (__u32 i = 0; i < usdt_notes__count(orig); i++) {
		const struct usdt_note *a = usdt_notes__get(orig, i),
				       *b = usdt_notes__get(moved, i);

		if (!ASSERT_EQ(b->pc, a->pc - 2, "pc moved") ||
		    !ASSERT_EQ(b->pc_off, a->pc_off - 2, "pc_off moved") ||
		    !ASSERT_EQ(b->sema, a->sema - 2, "sema moved") ||
		    !ASSERT_EQ(b->sema_off, a->sema_off - 2, "sema_off moved"))
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	usdt_notes__free(orig);
	usdt_notes__free(moved);
}

static void test_arg_specs(void)
{
	static const struct {
		const char *spec;
		int err;
		__u8 kind, size, is_signed, reg;
		__s64 val;
	} cases[] = {
		{ "8@%rdi", 0, USDT_ARG_REG, 8, 0, 14, 0 },
		{ "-8@%rax", 0, USDT_ARG_REG, 8, 1, 10, 0 },
		{ "-4@%r8d", 0, USDT_ARG_REG, 4, 1, 9, 0 },
		{ "2@%r15w", 0, USDT_ARG_REG, 2, 0, 0, 0 },
		{ "-1@%sil", 0, USDT_ARG_REG, 1, 1, 13, 0 },
		{ "1@%bl", 0, USDT_ARG_REG, 1, 0, 5, 0 },
		{ "8@-80(%rbx)", 0, USDT_ARG_MEM, 8, 0, 5, -80 },
		{ "4@16(%rsp)", 0, USDT_ARG_MEM, 4, 0, 19, 16 },
		{ "8@(%rbp)", 0, USDT_ARG_MEM, 8, 0, 4, 0 },
		{ "8@0x18(%r12)", 0, USDT_ARG_MEM, 8, 0, 3, 24 },
		{ "-4@$42", 0, USDT_ARG_CONST, 4, 1, 0, 42 },
		{ "8@$-1", 0, USDT_ARG_CONST, 8, 0, 0, -1 },
		{ "8@$0x10", 0, USDT_ARG_CONST, 8, 0, 0, 16 },
		{ "8@foo(%rip)", -ENOTSUP },
		{ "8@8(%rax,%rbx,8)", -ENOTSUP },
		{ "8@%ah", -ENOTSUP },
		{ "8@%xmm0", -ENOTSUP },
		{ "8@$sym", -ENOTSUP },
		{ "3@%rax", -EINVAL },
		{ "%rax", -EINVAL },
		{ "", -EINVAL },
		{ "8@", -ENOTSUP },
	};
	struct usdt_arg a[USDT_MAX_ARGS];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = usdt_arg__parse(cases[i].spec, &a[0]);

		if (!ASSERT_EQ(err, cases[i].err, cases[i].spec))
			return;
		if (err)
			continue;
		if (!ASSERT_EQ(a[0].kind, cases[i].kind, cases[i].spec) ||
		    !ASSERT_EQ(a[0].size, cases[i].size, cases[i].spec) ||
		    !ASSERT_EQ(a[0].is_signed, cases[i].is_signed, cases[i].spec) ||
		    !ASSERT_EQ(a[0].reg, cases[i].reg, cases[i].spec) ||
		    !ASSERT_EQ(a[0].val, cases[i].val, cases[i].spec))
			return;
	}
	ASSERT_EQ(usdt_args__parse(" 8@%rdi  -4@$1 ", a, USDT_MAX_ARGS), 2, "two specs");
	ASSERT_EQ(usdt_args__parse("", a, USDT_MAX_ARGS), 0, "none");
	ASSERT_EQ(usdt_args__parse("8@%rdi 8@%rsi 8@%rdx", a, 2), -E2BIG, "too many");
	ASSERT_EQ(usdt_args__parse("8@%rdi 8@foo(%rip)", a, 4), -ENOTSUP, "one bad spec");
}

/* The real shim (when built): the probes shim_records.h names, each with a semaphore. */
static void test_shim(void)
{
	static const char *const probes[] = { "batch", "gpu", "nvtx", "sync", "drain" };
	struct usdt_notes *n;
	int count;

	if (access(shim, R_OK)) {
		UNIT_SKIP("%s not built (needs the CUPTI headers)", shim);
		return;
	}
	n = usdt_notes__open(shim);
	if (!ASSERT_TRUE(n, "open shim") || !same_notes(shim, n, &count))
		goto out;
	for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
		int sites = 0;

		for (__u32 i = 0; i < usdt_notes__count(n); i++) {
			const struct usdt_note *u = usdt_notes__get(n, i);

			if (strcmp(u->provider, "bpfsight") || strcmp(u->name, probes[p]))
				continue;
			sites++;
			ASSERT_TRUE(u->sema_off != 0, "a semaphore");
			ASSERT_EQ(u->nargs, p == 0 ? 2 : 1, "nargs");
			for (__u32 a = 0; a < u->nargs; a++)
				ASSERT_EQ(u->arg[a].size, 8, "64-bit args");
		}
		ASSERT_TRUE(sites > 0, probes[p]);
	}
out:
	usdt_notes__free(n);
}

static void test_bad_files(void)
{
	char path[PATH_MAX], cmd[2 * PATH_MAX];
	struct stat st;
	struct usdt_notes *n;

	errno = 0;
	ASSERT_TRUE(!usdt_notes__open("/nonexistent/file"), "missing");
	ASSERT_EQ(errno, ENOENT, "ENOENT");
	snprintf(path, sizeof(path), "%s/text", tmp);
	snprintf(cmd, sizeof(cmd), "echo not an elf > '%s'", path);
	if (!ASSERT_EQ(system(cmd), 0, "write text"))
		return;
	errno = 0;
	ASSERT_TRUE(!usdt_notes__open(path), "text");
	ASSERT_EQ(errno, ENOEXEC, "ENOEXEC");
	if (!ASSERT_EQ(stat(fixture, &st), 0, "stat"))
		return;
	/* Cut anywhere: NULL or a subset of the notes, never a crash. */
	for (off_t len = 0; len < st.st_size; len += 61) {
		snprintf(path, sizeof(path), "%s/cut", tmp);
		snprintf(cmd, sizeof(cmd), "head -c %lld '%s' > '%s'", (long long)len, fixture,
			 path);
		if (!ASSERT_EQ(system(cmd), 0, "cut"))
			return;
		n = usdt_notes__open(path);
		if (n && !ASSERT_TRUE(usdt_notes__count(n) <= 7, "subset"))
			return;
		usdt_notes__free(n);
	}
}

int main(void)
{
	char self[400], cmd[128];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	snprintf(fixture, sizeof(fixture), "%s/fixtures/usdt_fixture", self);
	snprintf(shim, sizeof(shim), "%s/../libbpfsight-shim.so", self);
	snprintf(tmp, sizeof(tmp), "/tmp/test_usdt_notes.XXXXXX");
	if (!mkdtemp(tmp)) {
		printf("not ok - setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	RUN_TEST(test_fixture_notes);
	RUN_TEST(test_libstdcxx);
	RUN_TEST(test_moved_base);
	RUN_TEST(test_arg_specs);
	RUN_TEST(test_shim);
	RUN_TEST(test_bad_files);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		printf("# could not remove %s\n", tmp);
	return UNIT_EXIT();
}
