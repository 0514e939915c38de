// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elf_strref: the CUDA runtime's entry points found by the name strings they load, checked
 * two independent ways on CUDA 13's libraries: in libcudart.so.13 against its exported
 * symbols; in the stripped libcublas.so.13 and libcublasLt.so.13 by the callback id each
 * entry point passes to CUPTI (`mov $cbid, %edi`, the ids of cupti_runtime_cbid.h).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "cuda.h"
#include "elf_strref.h"
#include "elf_syms.h"
#include "unit.h"

#define CUDA_LIB "/usr/local/cuda/lib64/"
#define CBID_H	 "/usr/local/cuda/include/cupti_runtime_cbid.h"

static const char *names[512];
static size_t nnames, nprefixed;

static void table_names(void)
{
	nnames = cuda_table.napis < 512 ? cuda_table.napis : 512;
	for (size_t i = 0; i < nnames; i++) {
		names[i] = cuda_table.apis[i].name;
		nprefixed += !strncmp(names[i], "cuda", 4);
	}
}

static int find(const char *path, __u64 *vaddr, struct elf_strref_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -1;
	n = elf_strref__find(fd, "cuda", names, nnames, 1, vaddr, st);
	close(fd);
	return n;
}

/* The CUPTI callback id of runtime function NAME (any _vNNNN version): 0 or -1. */
static int cbid_of(const char *name, __u32 *ids, int max)
{
	char line[256], want[160];
	int n = 0;
	FILE *f = fopen(CBID_H, "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "CUPTI_RUNTIME_TRACE_CBID_%s_v", name);
	while (n < max && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, want), *eq;
		char *end;

		if (!p || !(eq = strchr(p, '=')))
			continue;
		strtoul(p + strlen(want), &end, 10); /* the version: nothing after it */
		if (*end != ' ' && *end != '=')
			continue;
		ids[n++] = (__u32)strtoul(eq + 1, NULL, 10);
	}
	fclose(f);
	return n;
}

static void test_cudart_matches_symbols(void)
{
	__u64 vaddr[512];
	struct elf_strref_stats st;
	struct elf_syms *syms = elf_syms__open(CUDA_LIB "libcudart.so.13", NULL);
	int n = find(CUDA_LIB "libcudart.so.13", vaddr, &st);

	if (!syms || n < 0) {
		elf_syms__free(syms);
		UNIT_SKIP("no " CUDA_LIB "libcudart.so.13");
		return;
	}
	ASSERT_EQ(n, nprefixed, "every runtime entry point of the table found");
	ASSERT_EQ(st.ambiguous, 0, "no name loaded by two functions");
	for (size_t i = 0; i < nnames; i++) {
		struct elf_sym s;

		if (strncmp(names[i], "cuda", 4))
			continue;
		if (!ASSERT_TRUE(!elf_syms__find(syms, names[i], &s), names[i]) ||
		    !ASSERT_EQ(vaddr[i], s.vaddr, names[i]))
			break;
	}
	elf_syms__free(syms);
}

static void check_cbids(const char *path)
{
	__u64 vaddr[512];
	struct elf_strref_stats st;
	struct elf_syms *syms = elf_syms__open(path, NULL);
	int n = find(path, vaddr, &st);

	if (!syms || n < 0 || access(CBID_H, R_OK)) {
		elf_syms__free(syms);
		UNIT_SKIP("no %s or " CBID_H, path);
		return;
	}
	ASSERT_EQ(n, nprefixed, "every runtime entry point of the table found");
	ASSERT_EQ(st.ambiguous, 0, "no name loaded by two functions");
	for (size_t i = 0; i < nnames; i++) {
		__u8 code[4096];
		__u32 ids[8];
		int nid, hit = 0;

		if (strncmp(names[i], "cuda", 4))
			continue;
		nid = cbid_of(names[i], ids, 8);
		if (!ASSERT_TRUE(nid > 0, names[i]) ||
		    !ASSERT_EQ(elf_syms__read(syms, vaddr[i], code, sizeof(code)), 0, names[i]))
			break;
		for (int k = 0; k < nid && !hit; k++)
			for (size_t j = 0; j + 5 <= sizeof(code) && !hit; j++)
				hit = code[j] == 0xbf && !memcmp(code + j + 1, &ids[k], 4);
		if (!ASSERT_TRUE(hit, names[i]))
			break;
	}
	elf_syms__free(syms);
}

static void test_cublas_callback_ids(void)
{
	check_cbids(CUDA_LIB "libcublas.so.13");
}

static void test_cublaslt_callback_ids(void)
{
	check_cbids(CUDA_LIB "libcublasLt.so.13");
}

/* A file without the names costs one pass over .rodata and finds nothing. */
static void test_libc_nothing(void)
{
	__u64 vaddr[512];
	struct elf_strref_stats st;
	int n = find("/lib/x86_64-linux-gnu/libc.so.6", vaddr, &st);

	if (n < 0) {
		UNIT_SKIP("no /lib/x86_64-linux-gnu/libc.so.6");
		return;
	}
	ASSERT_EQ(n, 0, "found in libc");
	ASSERT_TRUE(st.rodata_bytes > 0 && !st.text_bytes && !st.strings, "only .rodata searched");
}

/*
 * libnvrtc holds one of the names as a string of its own (not a runtime): with a minimum of
 * 32, its .text (74 MB) is not searched.
 */
static void test_few_names_no_text_pass(void)
{
	__u64 vaddr[512];
	struct elf_strref_stats st;
	int fd = open(CUDA_LIB "libnvrtc.so.13", O_RDONLY | O_CLOEXEC), n;

	if (fd < 0) {
		UNIT_SKIP("no " CUDA_LIB "libnvrtc.so.13");
		return;
	}
	n = elf_strref__find(fd, "cuda", names, nnames, 32, vaddr, &st);
	close(fd);
	ASSERT_EQ(n, 0, "found in libnvrtc");
	ASSERT_TRUE(st.names > 0 && st.names < 32, "a few names in .rodata");
	ASSERT_EQ(st.text_bytes, 0, ".text searched");
}

int main(void)
{
	table_names();
	RUN_TEST(test_cudart_matches_symbols);
	RUN_TEST(test_cublas_callback_ids);
	RUN_TEST(test_cublaslt_callback_ids);
	RUN_TEST(test_libc_nothing);
	RUN_TEST(test_few_names_no_text_pass);
	return UNIT_EXIT();
}
