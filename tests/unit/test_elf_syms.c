// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elf_syms tests against real files: libcudart and glibc compared with what nm and readelf
 * say about them, the -g fixture (a static function in .symtab), the same fixture stripped
 * with its debug file found by build-id and by .gnu_debuglink, /proc/PID/map_files paths,
 * 120k synthetic functions, and files that are no ELF or are cut short.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "elf_syms.h"
#include "unit.h"
#include "../workloads/demangle_bomb.h"

#define CUDART "/usr/local/cuda/lib64/libcudart.so.13"
#define LIBC   "/lib/x86_64-linux-gnu/libc.so.6"

static char fixture[512];
static char tmp[64];

/* Run a shell command; true when it exits 0. */
static bool sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool sh(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0;
}

/* The first line of a shell command's output, without its newline; false when none. */
static bool sh_line(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool sh_line(char *out, size_t len, const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	FILE *f;
	bool ok;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	if (!f)
		return false;
	ok = fgets(out, (int)len, f) != NULL;
	pclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok && out[0];
}

/* nm's address of NAME in PATH (NM_ARGS e.g. "-D"), from a line matching PATTERN. */
static __u64 nm_addr(const char *nm_args, const char *path, const char *pattern)
{
	char line[512];

	if (!sh_line(line, sizeof(line), "nm %s %s | grep -E '%s' | head -1", nm_args, path,
		     pattern))
		return 0;
	return strtoull(line, NULL, 16);
}

/* File offset of VADDR from readelf's program headers (an independent parser). */
static __u64 readelf_off(const char *path, __u64 vaddr)
{
	char cmd[PATH_MAX + 64], line[512];
	__u64 res = ~0ull;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -lW %s", path);
	f = popen(cmd, "r");
	if (!f)
		return res;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, va, pa, fsz;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fsz) == 4 &&
		    vaddr >= va && vaddr < va + fsz)
			res = vaddr - va + off;
	}
	pclose(f);
	return res;
}

static bool build_id_of(const char *path, char *out, size_t len)
{
	return sh_line(out, len, "readelf -n %s | sed -n 's/.*Build ID: //p' | head -1", path);
}

struct collect {
	char **lines;
	size_t n, cap;
	const char *only_src;
};

static int collect_cb(const struct elf_sym *sym, void *arg)
{
	struct collect *c = arg;
	char buf[1024];

	if (c->only_src && strcmp(sym->source, c->only_src))
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->lines = realloc(c->lines, c->cap * sizeof(*c->lines));
	}
	snprintf(buf, sizeof(buf), "%016llx %s", (unsigned long long)sym->vaddr, sym->name);
	c->lines[c->n++] = strdup(buf);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_free(struct collect *c)
{
	while (c->n)
		free(c->lines[--c->n]);
	free(c->lines);
}

/* Every defined function of libcudart's .dynsym, exactly as nm -D lists them. */
static void test_cudart_all_functions_match_nm(void)
{
	struct collect ours = { 0 }, nm = { 0 };
	struct elf_syms *s = elf_syms__open(CUDART, NULL);
	char line[1024], *vers;
	size_t i;
	FILE *f;

	if (!ASSERT_TRUE(s, "open libcudart"))
		return;
	elf_syms__for_each(s, collect_cb, &ours);
	/* --format=posix: "NAME TYPE VALUE SIZE"; functions are in text: T/t, W/w, i. */
	f = popen("nm -D --defined-only --format=posix " CUDART, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char name[512], type;
		unsigned long long va;

		if (sscanf(line, "%511s %c %llx", name, &type, &va) != 3 || !strchr("TtWwi", type))
			continue;
		vers = strchr(name, '@');
		if (vers)
			*vers = 0;
		collect_cb(&(struct elf_sym){ .vaddr = va, .name = name, .source = "" }, &nm);
	}
	if (f)
		pclose(f);
	qsort(ours.lines, ours.n, sizeof(char *), cmp_str);
	qsort(nm.lines, nm.n, sizeof(char *), cmp_str);
	printf("# libcudart: %zu functions, nm -D: %zu\n", ours.n, nm.n);
	if (ASSERT_TRUE(nm.n > 300, "nm -D functions") && ASSERT_EQ(ours.n, nm.n, "count"))
		for (i = 0; i < ours.n; i++)
			if (!ASSERT_STREQ(ours.lines[i], nm.lines[i], "symbol"))
				break;
	ASSERT_EQ(elf_syms__has_symtab(s), 0, "libcudart has no .symtab");
	collect_free(&ours);
	collect_free(&nm);
	elf_syms__free(s);
}

static void test_cudart_launch_kernel(void)
{
	struct elf_syms *s = elf_syms__open(CUDART, NULL);
	__u8 ours[32], file[32];
	struct elf_sym sym, at;
	__u64 want, vaddr;
	int fd;

	if (!ASSERT_TRUE(s, "open libcudart"))
		return;
	want = nm_addr("-D --defined-only", CUDART, " T cudaLaunchKernel@@");
	if (!ASSERT_TRUE(want, "nm cudaLaunchKernel") ||
	    !ASSERT_EQ(elf_syms__find(s, "cudaLaunchKernel", &sym), 0, "find"))
		goto out;
	ASSERT_STREQ(sym.name, "cudaLaunchKernel", "name");
	ASSERT_EQ(sym.vaddr, want, "vaddr");
	ASSERT_EQ(sym.file_off, readelf_off(CUDART, want), "file_off");
	ASSERT_STREQ(sym.source, "dynsym", "source");
	ASSERT_TRUE(sym.size > 16, "size");
	/* The versioned spelling asks for the same (default) symbol. */
	ASSERT_EQ(elf_syms__find(s, "cudaLaunchKernel@@libcudart.so.13", &at), 0, "find @@");
	ASSERT_EQ(at.vaddr, want, "vaddr @@");
	ASSERT_EQ(elf_syms__find(s, "cudaLaunchKerne", NULL), -ENOENT, "prefix is no match");
	ASSERT_EQ(elf_syms__find(s, "cudaLaunchKernelX", NULL), -ENOENT, "longer is no match");
	/* Code bytes: read through the segments == read at the file offset. */
	fd = open(CUDART, O_RDONLY);
	if (ASSERT_TRUE(fd >= 0, "open") &&
	    ASSERT_EQ(pread(fd, file, sizeof(file), (off_t)sym.file_off), sizeof(file), "pread") &&
	    ASSERT_EQ(elf_syms__read(s, sym.vaddr, ours, sizeof(ours)), 0, "read")) {
		ASSERT_TRUE(!memcmp(ours, file, sizeof(ours)), "code bytes");
		ASSERT_EQ(ours[0], 0x55, "push %rbp");
	}
	if (fd >= 0)
		close(fd);
	ASSERT_EQ(elf_syms__off_to_vaddr(s, sym.file_off, &vaddr), 0, "off_to_vaddr");
	ASSERT_EQ(vaddr, sym.vaddr, "off_to_vaddr value");
	/* An address inside the function, its last byte, and one past it. */
	if (ASSERT_EQ(elf_syms__at(s, sym.vaddr + 10, &at), 0, "at +10")) {
		ASSERT_STREQ(at.name, "cudaLaunchKernel", "at name");
		ASSERT_EQ(at.vaddr, sym.vaddr, "at vaddr");
		ASSERT_EQ(at.size, sym.size, "at size");
	}
	ASSERT_EQ(elf_syms__at(s, sym.vaddr + sym.size - 1, &at), 0, "at last byte");
	ASSERT_TRUE(elf_syms__at(s, sym.vaddr + sym.size, &at) != 0 ||
			    strcmp(at.name, "cudaLaunchKernel"),
		    "at one past the end");
	ASSERT_EQ(elf_syms__at(s, 0x10, &at), -ENOENT, "at below every symbol");
out:
	elf_syms__free(s);
}

static void test_build_id_matches_readelf(void)
{
	static const char *const paths[] = { CUDART, LIBC };
	char want[256];
	size_t i;

	for (i = 0; i < 2; i++) {
		struct elf_syms *s = elf_syms__open(paths[i], NULL);

		if (ASSERT_TRUE(s, paths[i]) &&
		    ASSERT_TRUE(build_id_of(paths[i], want, sizeof(want)), "readelf -n"))
			ASSERT_STREQ(elf_syms__build_id(s), want, paths[i]);
		elf_syms__free(s);
	}
}

struct count_name {
	const char *name;
	int n;
};

static int count_name_cb(const struct elf_sym *sym, void *arg)
{
	struct count_name *c = arg;

	c->n += !strcmp(sym->name, c->name);
	return 0;
}

/* Callers bind to pthread_cond_timedwait@@GLIBC_2.3.2, not the @GLIBC_2.2.5 compat one. */
static void test_glibc_default_version(void)
{
	struct count_name c = { .name = "pthread_cond_timedwait" };
	struct elf_syms *s = elf_syms__open(LIBC, NULL);
	__u64 def, compat;
	struct elf_sym sym;

	if (!ASSERT_TRUE(s, "open libc"))
		return;
	def = nm_addr("-D --defined-only", LIBC, " pthread_cond_timedwait@@GLIBC");
	compat = nm_addr("-D --defined-only", LIBC, " pthread_cond_timedwait@GLIBC");
	if (ASSERT_TRUE(def && compat && def != compat, "nm: two versions") &&
	    ASSERT_EQ(elf_syms__find(s, "pthread_cond_timedwait", &sym), 0, "find")) {
		ASSERT_EQ(sym.vaddr, def, "default version");
		ASSERT_STREQ(sym.source, "dynsym", "source");
		ASSERT_EQ(sym.file_off, readelf_off(LIBC, def), "file_off");
	}
	/* Both versions are functions of the file. */
	elf_syms__for_each(s, count_name_cb, &c);
	ASSERT_EQ(c.n, 2, "both versions listed");
	if (ASSERT_EQ(elf_syms__at(s, compat + 1, &sym), 0, "at compat"))
		ASSERT_EQ(sym.vaddr, compat, "at compat start");
	elf_syms__free(s);
}

/* Exported variables (how gil finds _PyRuntime) are found apart from functions. */
static void test_glibc_exported_variables(void)
{
	struct elf_syms *s = elf_syms__open(LIBC, NULL);
	__u64 pin = nm_addr("-D --defined-only", LIBC, " [DV] program_invocation_name@@"),
	      env = nm_addr("-D --defined-only", LIBC, " B __environ@@");
	struct elf_sym sym;

	if (!ASSERT_TRUE(s, "open libc") || !ASSERT_TRUE(pin && env, "nm -D: the variables"))
		goto out;
	if (ASSERT_EQ(elf_syms__find_data(s, "program_invocation_name", &sym), 0, "find_data")) {
		ASSERT_EQ(sym.vaddr, pin, "vaddr");
		ASSERT_EQ(sym.size, 8, "a pointer");
		ASSERT_EQ(sym.file_off, readelf_off(LIBC, pin), "file_off (.data)");
	}
	if (ASSERT_EQ(elf_syms__find_data(s, "__environ", &sym), 0, "find_data .bss")) {
		ASSERT_EQ(sym.vaddr, env, "vaddr");
		ASSERT_EQ(sym.file_off, 0, "no file bytes (.bss)");
	}
	ASSERT_EQ(elf_syms__find(s, "__environ", NULL), -ENOENT, "a variable is no function");
	ASSERT_EQ(elf_syms__find_data(s, "malloc", NULL), -ENOENT, "a function is no variable");
	ASSERT_EQ(elf_syms__at(s, env, NULL), -ENOENT, "variables are not named by address");
out:
	elf_syms__free(s);
}

/* The executable segments, as readelf lists them: what a code mapping's load bias needs. */
static void test_glibc_code_segments(void)
{
	struct elf_syms *s = elf_syms__open(LIBC, NULL);
	unsigned long long off, va, pa, fsz;
	struct elf_seg seg[4];
	char line[512];

	if (!ASSERT_TRUE(s, "open libc") ||
	    !ASSERT_TRUE(sh_line(line, sizeof(line), "readelf -lW %s | grep ' LOAD .* R E '", LIBC),
			 "readelf: the code segment") ||
	    !ASSERT_EQ(sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fsz), 4,
		       "parse readelf"))
		goto out;
	if (ASSERT_EQ(elf_syms__code_segments(s, seg, 4), 1, "one executable segment")) {
		ASSERT_EQ(seg[0].off, off, "file offset");
		ASSERT_EQ(seg[0].vaddr, va, "vaddr");
		ASSERT_EQ(seg[0].filesz, fsz, "file size");
	}
	ASSERT_EQ(elf_syms__code_segments(s, seg, 0), 1, "counted past MAX");
out:
	elf_syms__free(s);
}

/* The same file through /proc/self/map_files, as the tracer opens a traced process's maps. */
static void test_map_files_path(void)
{
	char line[1024], path[PATH_MAX] = "";
	struct elf_syms *s;
	struct elf_sym sym;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (strstr(line, "/libc.so.6") &&
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x') {
			snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", lo, hi);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!ASSERT_TRUE(path[0], "libc mapped executable"))
		return;
	s = elf_syms__open(path, "/proc/self/root");
	if (ASSERT_TRUE(s, path) &&
	    ASSERT_EQ(elf_syms__find(s, "pthread_cond_timedwait", &sym), 0, "find"))
		ASSERT_EQ(sym.vaddr, nm_addr("-D", LIBC, " pthread_cond_timedwait@@GLIBC"),
			  "vaddr");
	elf_syms__free(s);
}

/* The -g fixture: its static function comes from .symtab. */
static void test_fixture_symtab(void)
{
	struct elf_syms *s = elf_syms__open(fixture, NULL);
	struct elf_sym sym, at;
	char line[256];
	unsigned long long va, size;

	if (!ASSERT_TRUE(s, "open fixture"))
		return;
	ASSERT_EQ(elf_syms__has_symtab(s), 1, "has .symtab");
	if (ASSERT_TRUE(
		    sh_line(line, sizeof(line), "nm -S %s | grep ' t fx_local_helper$'", fixture),
		    "nm fx_local_helper") &&
	    ASSERT_EQ(sscanf(line, "%llx %llx", &va, &size), 2, "nm line") &&
	    ASSERT_EQ(elf_syms__find(s, "fx_local_helper", &sym), 0, "find")) {
		ASSERT_EQ(sym.vaddr, va, "vaddr");
		ASSERT_EQ(sym.size, size, "size");
		ASSERT_STREQ(sym.source, "symtab", "source");
		ASSERT_EQ(sym.file_off, readelf_off(fixture, va), "file_off");
		if (ASSERT_EQ(elf_syms__at(s, va + size / 2, &at), 0, "at"))
			ASSERT_STREQ(at.name, "fx_local_helper", "at name");
	}
	if (ASSERT_EQ(elf_syms__find(s, "fx_global", &sym), 0, "find fx_global"))
		ASSERT_EQ(sym.vaddr, nm_addr("", fixture, " T fx_global$"), "fx_global vaddr");
	elf_syms__free(s);
}

/* Strip a copy of the fixture into DIR/NAME and keep its debug file as DIR/fx.debug. */
static bool make_stripped(const char *dir, const char *name)
{
	return sh("mkdir -p %s && objcopy --only-keep-debug %s %s/fx.debug && "
		  "strip -o %s/%s %s",
		  dir, fixture, dir, dir, name, fixture);
}

static void check_debug_symbols(const char *path, const char *root, const char *what)
{
	struct elf_syms *s = elf_syms__open(path, root), *full = elf_syms__open(fixture, NULL);
	struct elf_sym sym, want;
	__u8 a[16], b[16];

	if (!ASSERT_TRUE(s && full, what))
		goto out;
	ASSERT_EQ(elf_syms__has_symtab(s), 1, what);
	if (ASSERT_EQ(elf_syms__find(s, "fx_local_helper", &sym), 0, what) &&
	    ASSERT_EQ(elf_syms__find(full, "fx_local_helper", &want), 0, "unstripped")) {
		ASSERT_STREQ(sym.source, "debug", "source");
		ASSERT_EQ(sym.vaddr, want.vaddr, "vaddr");
		ASSERT_EQ(sym.size, want.size, "size");
		ASSERT_EQ(sym.file_off, want.file_off, "file_off");
		/* Code comes from the stripped file (the debug file has none). */
		ASSERT_EQ(elf_syms__read(s, sym.vaddr, a, sizeof(a)), 0, "read");
		ASSERT_EQ(elf_syms__read(full, sym.vaddr, b, sizeof(b)), 0, "read full");
		ASSERT_TRUE(!memcmp(a, b, sizeof(a)), "code bytes");
	}
out:
	elf_syms__free(s);
	elf_syms__free(full);
}

/* Stripped: not found; with ROOT/usr/lib/debug/.build-id/xx/yyyy.debug: found via "debug". */
static void test_fixture_debug_by_build_id(void)
{
	char dir[256], path[512], bid[256];
	struct elf_syms *s;

	snprintf(dir, sizeof(dir), "%s/bid", tmp);
	snprintf(path, sizeof(path), "%s/fx_stripped", dir);
	if (!ASSERT_TRUE(make_stripped(dir, "fx_stripped"), "strip"))
		return;
	s = elf_syms__open(path, NULL);
	if (!ASSERT_TRUE(s, "open stripped"))
		return;
	ASSERT_EQ(elf_syms__has_symtab(s), 0, "stripped: no .symtab");
	ASSERT_EQ(elf_syms__find(s, "fx_local_helper", NULL), -ENOENT, "stripped: no static");
	if (!ASSERT_TRUE(build_id_of(fixture, bid, sizeof(bid)), "readelf -n") ||
	    !ASSERT_STREQ(elf_syms__build_id(s), bid, "build-id")) {
		elf_syms__free(s);
		return;
	}
	elf_syms__free(s);
	if (!ASSERT_TRUE(sh("mkdir -p %s/root/usr/lib/debug/.build-id/%.2s && "
			    "cp %s/fx.debug %s/root/usr/lib/debug/.build-id/%.2s/%s.debug",
			    dir, bid, dir, dir, bid, bid + 2),
			 "install debug file"))
		return;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/root");
	check_debug_symbols(path, dir, "by build-id");
}

/* .gnu_debuglink: ROOT/usr/lib/debug/<dir of the file>/<link name>, checked by build-id. */
static void test_fixture_debuglink(void)
{
	char dir[256], root[128], path[512];

	snprintf(root, sizeof(root), "%s/link", tmp);
	snprintf(dir, sizeof(dir), "%s/opt/app", root);
	snprintf(path, sizeof(path), "%s/fx_linked", dir);
	if (!ASSERT_TRUE(make_stripped(dir, "fx_linked"), "strip") ||
	    !ASSERT_TRUE(sh("cd %s && objcopy --add-gnu-debuglink=fx.debug fx_linked && "
			    "mkdir -p %s/usr/lib/debug/opt/app && "
			    "mv fx.debug %s/usr/lib/debug/opt/app/",
			    dir, root, root),
			 "debuglink"))
		return;
	check_debug_symbols(path, root, "by debuglink");
}

/* Without build-ids the debuglink CRC decides: a debug file that does not match is unused. */
static void test_fixture_debuglink_crc(void)
{
	char dir[256], path[512], fdpath[64];
	struct elf_syms *s;
	int fd;

	snprintf(dir, sizeof(dir), "%s/crc/bin", tmp);
	snprintf(path, sizeof(path), "%s/fx_nobid", dir);
	if (!ASSERT_TRUE(make_stripped(dir, "fx_nobid"), "strip") ||
	    !ASSERT_TRUE(sh("cd %s && objcopy -R .note.gnu.build-id fx_nobid && "
			    "objcopy -R .note.gnu.build-id fx.debug && "
			    "objcopy --add-gnu-debuglink=fx.debug fx_nobid && mkdir -p .debug && "
			    "mv fx.debug .debug/",
			    dir),
			 "debuglink without build-id"))
		return;
	s = elf_syms__open(path, NULL);
	if (ASSERT_TRUE(s, "open") && ASSERT_STREQ(elf_syms__build_id(s), "", "no build-id"))
		ASSERT_EQ(elf_syms__find(s, "fx_local_helper", NULL), 0, "found via <dir>/.debug");
	elf_syms__free(s);
	/* Opened through an fd (how the discovery passes a file): <dir> is where it leads. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	s = fd >= 0 ? elf_syms__open(fdpath, NULL) : NULL;
	if (ASSERT_TRUE(s, "open through the fd"))
		ASSERT_EQ(elf_syms__find(s, "fx_local_helper", NULL), 0,
			  "found via the fd's <dir>/.debug");
	elf_syms__free(s);
	if (fd >= 0)
		close(fd);
	/* One byte changed in the debug file: its CRC no longer matches. */
	if (!ASSERT_TRUE(sh("cd %s/.debug && printf x | dd of=fx.debug bs=1 seek=100 "
			    "conv=notrunc status=none",
			    dir),
			 "corrupt"))
		return;
	s = elf_syms__open(path, NULL);
	if (ASSERT_TRUE(s, "open"))
		ASSERT_EQ(elf_syms__find(s, "fx_local_helper", NULL), -ENOENT, "CRC mismatch");
	elf_syms__free(s);
}

static void test_not_elf(void)
{
	char path[PATH_MAX];
	int fd;

	errno = 0;
	ASSERT_TRUE(!elf_syms__open("/etc/passwd", NULL), "text file");
	ASSERT_EQ(errno, ENOEXEC, "text file errno");
	errno = 0;
	ASSERT_TRUE(!elf_syms__open("/nonexistent/lib.so", NULL), "missing file");
	ASSERT_EQ(errno, ENOENT, "missing file errno");
	errno = 0;
	ASSERT_TRUE(!elf_syms__open("/tmp", NULL), "directory");
	ASSERT_EQ(errno, ENOEXEC, "directory errno");
	snprintf(path, sizeof(path), "%s/empty", tmp);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	errno = 0;
	ASSERT_TRUE(!elf_syms__open(path, NULL), "empty file");
	ASSERT_EQ(errno, ENOEXEC, "empty file errno");
	/* An ELF that is no executable or shared object: a relocatable object. */
	snprintf(path, sizeof(path), "%s/obj.o", tmp);
	if (ASSERT_TRUE(sh("echo 'int f(void){return 1;}' | cc -x c -c -o %s -", path), "cc -c")) {
		errno = 0;
		ASSERT_TRUE(!elf_syms__open(path, NULL), "ET_REL");
		ASSERT_EQ(errno, ENOEXEC, "ET_REL errno");
	}
	/* NULL everywhere is harmless. */
	elf_syms__free(NULL);
	ASSERT_EQ(elf_syms__find(NULL, "x", NULL), -EINVAL, "find NULL");
	ASSERT_STREQ(elf_syms__build_id(NULL), "", "build_id NULL");
}

/* The fixture cut at many lengths: never a crash, always NULL with ENOEXEC. */
static void test_truncated(void)
{
	char path[PATH_MAX];
	long long first_bad = -1;
	int fd = -1, bad = 0, tried = 0;
	__u64 huge = 1ull << 40;
	struct stat st;
	size_t cut;
	char *img;

	snprintf(path, sizeof(path), "%s/cut", tmp);
	fd = open(fixture, O_RDONLY);
	if (!ASSERT_TRUE(fd >= 0, "open fixture") || !ASSERT_EQ(fstat(fd, &st), 0, "stat"))
		goto out;
	img = malloc(st.st_size);
	if (!ASSERT_TRUE(img, "malloc") ||
	    !ASSERT_EQ(pread(fd, img, st.st_size, 0), st.st_size, "read fixture"))
		goto out_img;
	close(fd);
	for (cut = 0; cut < (size_t)st.st_size; cut += (cut < 128 ? 1 : 97)) {
		struct elf_syms *s;

		fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (!ASSERT_TRUE(fd >= 0, "create") ||
		    !ASSERT_EQ(write(fd, img, cut), (ssize_t)cut, "write"))
			goto out_img;
		close(fd);
		fd = -1;
		errno = 0;
		s = elf_syms__open(path, NULL);
		tried++;
		if (s || errno != ENOEXEC) {
			if (!bad++)
				first_bad = (long long)cut;
			elf_syms__free(s);
		}
	}
	printf("# truncated fixture: %d lengths tried\n", tried);
	ASSERT_EQ(bad, 0, "cuts accepted");
	ASSERT_EQ(first_bad, -1, "first accepted cut");
	/* Whole, but with the section header table (e_shoff) pointing past the end. */
	memcpy(img + 0x28, &huge, 8);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (ASSERT_TRUE(fd >= 0, "create") &&
	    ASSERT_EQ(write(fd, img, st.st_size), st.st_size, "write")) {
		errno = 0;
		ASSERT_TRUE(!elf_syms__open(path, NULL), "bad e_shoff");
		ASSERT_EQ(errno, ENOEXEC, "bad e_shoff errno");
	}
out_img:
	free(img);
out:
	if (fd >= 0)
		close(fd);
}

/*
 * 120k functions (libtorch_cuda's order of magnitude): every third has size 0, every fifth
 * is local, every seventh has an alias. Each address of each function must name it.
 */
#define BIG_N 120000

static void test_large_library(void)
{
	char src[PATH_MAX], lib[PATH_MAX];
	struct timespec t0, t1, t2;
	struct elf_syms *s = NULL;
	struct elf_sym sym, first;
	__u64 i, bad = 0, lookups = 0;
	FILE *f;

	snprintf(src, sizeof(src), "%s/big.S", tmp);
	snprintf(lib, sizeof(lib), "%s/big.so", tmp);
	f = fopen(src, "w");
	if (!ASSERT_TRUE(f, "big.S"))
		return;
	fprintf(f, ".text\n");
	for (i = 0; i < BIG_N; i++) {
		if (i % 5)
			fprintf(f, ".globl big_fn_%llu\n", (unsigned long long)i);
		fprintf(f, ".type big_fn_%llu,@function\nbig_fn_%llu:\n", (unsigned long long)i,
			(unsigned long long)i);
		if (i % 7 == 0)
			fprintf(f,
				".globl big_alias_%llu\n.type big_alias_%llu,@function\n"
				"big_alias_%llu:\n",
				(unsigned long long)i, (unsigned long long)i,
				(unsigned long long)i);
		fprintf(f, "push %%rbp\npop %%rbp\nret\n");
		if (i % 3)
			fprintf(f, ".size big_fn_%llu,.-big_fn_%llu\n", (unsigned long long)i,
				(unsigned long long)i);
	}
	fclose(f);
	if (!ASSERT_TRUE(sh("cc -shared -nostdlib -o %s %s", lib, src), "cc big.so"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	s = elf_syms__open(lib, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!ASSERT_TRUE(s, "open big.so") ||
	    !ASSERT_EQ(elf_syms__find(s, "big_fn_0", &first), 0, "find big_fn_0"))
		goto out;
	for (i = 0; i < BIG_N; i++) {
		char name[32];
		__u64 k;

		snprintf(name, sizeof(name), "big_fn_%llu", (unsigned long long)i);
		if (elf_syms__find(s, name, &sym) || sym.vaddr != first.vaddr + 3 * i) {
			bad++;
			continue;
		}
		for (k = 0; k < 3; k++, lookups++) {
			struct elf_sym at;

			/* The alias (larger score: it has size 0) must not win over the sized. */
			if (elf_syms__at(s, sym.vaddr + k, &at) || at.vaddr != sym.vaddr ||
			    (i % 7 && strcmp(at.name, name)) || at.size != 3)
				bad++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t2);
	printf("# %d functions: open %.1f ms, %d finds + %llu at() in %.1f ms\n", BIG_N,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6, BIG_N,
	       (unsigned long long)lookups,
	       ((t2.tv_sec - t1.tv_sec) * 1e9 + (t2.tv_nsec - t1.tv_nsec)) / 1e6);
	ASSERT_EQ(bad, 0, "wrong lookups");
	/* Past the last function: the end of the code. */
	ASSERT_EQ(elf_syms__at(s, first.vaddr + 3 * BIG_N, &sym), -ENOENT, "past the end");
out:
	elf_syms__free(s);
}

/*
 * Every PLT stub objdump names ("<malloc@plt>") has that name here too, and the symbol just
 * before the PLT (_init, of size 0) does not swallow it: samples in stubs were credited to
 * _init on pyenv's libpython (issue 30). The .plt's first entry (objdump's "<X@plt-0x10>",
 * lazy binding's jump into ld.so) is _dl_runtime_resolve@plt: a sample there had no name (an
 * address in libpython).
 */
static void check_plt(const char *path)
{
	struct elf_syms *syms = elf_syms__open(path, NULL);
	unsigned long long addr;
	char line[512], name[400];
	int checked = 0;
	struct elf_sym s;
	FILE *f;

	snprintf(line, sizeof(line),
		 "objdump -d -j .plt -j .plt.got -j .plt.sec %s 2>/dev/null | "
		 "grep -e '@plt>:$' -e '@plt-0x10>:$'",
		 path);
	f = popen(line, "r");
	if (!ASSERT_TRUE(syms && f, path))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx <%399[^>]>:", &addr, name) != 2 || name[0] == '*')
			continue;	       /* IRELATIVE slots name no symbol */
		if (strstr(name, "@plt-0x10")) /* the PLT's first entry */
			snprintf(name, sizeof(name), "_dl_runtime_resolve@plt");
		if (!ASSERT_EQ(elf_syms__at(syms, addr, &s), 0, name) ||
		    !ASSERT_STREQ(s.name, name, "the stub's name") ||
		    !ASSERT_EQ(elf_syms__at(syms, addr + 4, &s), 0, "inside the stub") ||
		    !ASSERT_STREQ(s.name, name, "inside the stub"))
			break;
		checked++;
	}
	ASSERT_TRUE(checked >= 10, "objdump named stubs to compare");
out:
	if (f)
		pclose(f);
	elf_syms__free(syms);
}

static void test_plt_stubs_named(void)
{
	char path[PATH_MAX];

	if (system("command -v objdump >/dev/null 2>&1")) {
		UNIT_SKIP("objdump (binutils) is not installed");
		return;
	}
	check_plt("/bin/ls");
	check_plt(LIBC);
	/* pyenv's shared libpython: its _init sits right before 1,400 stubs. */
	snprintf(path, sizeof(path), "%s/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
		 getenv("HOME") ? getenv("HOME") : "/root");
	if (!access(path, R_OK))
		check_plt(path);
}

static void test_demangle(void)
{
	char buf[256];

	demangle("_Z6kernelPfi", buf, sizeof(buf));
	ASSERT_STREQ(buf, "kernel(float*, int)", "kernel");
	/* A PyTorch kernel's host stub; the expectation is c++filt's output. */
	demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE"
		 "NS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
		 buf, sizeof(buf));
	ASSERT_STREQ(buf,
		     "void at::native::vectorized_elementwise_kernel<4, "
		     "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, "
		     "at::native::FillFunctor<float>, "
		     "at::detail::Array<char*, 1>)",
		     "template");
	demangle("cudaLaunchKernel", buf, sizeof(buf));
	ASSERT_STREQ(buf, "cudaLaunchKernel", "C name");
	demangle("_Znot_mangled!", buf, sizeof(buf));
	ASSERT_STREQ(buf, "_Znot_mangled!", "bad mangling");
	demangle("_Z6kernelPfi", buf, 8);
	ASSERT_STREQ(buf, "kernel(", "truncated");
	demangle(NULL, buf, sizeof(buf));
	ASSERT_STREQ(buf, "", "NULL");
}

/* Names over the budget come back as they are, counted; the cache answers as the first call. */
static void test_demangle_budget(void)
{
	unsigned long long before = demangle__over_budget();
	char buf[4096], big[1100];

	demangle(DEMANGLE_BOMB_30, buf, sizeof(buf));
	ASSERT_TRUE(!strcmp(buf, DEMANGLE_BOMB_30), "the 30-level bomb, mangled");
	ASSERT_EQ(demangle__over_budget(), before + 1, "counted");
	demangle(DEMANGLE_BOMB_30, buf, sizeof(buf));
	ASSERT_TRUE(!strcmp(buf, DEMANGLE_BOMB_30), "again, from the cache");
	/* 12 levels: 4096 copies of P<int, int>, ~45 KiB, within the budget: cut at the buffer */
	demangle("_Z3hot1PIS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IiiES0_ES1_ES2_ES3_ES4_ES5_ES6_ES7_ES8_"
		 "ES9_ESA_E",
		 buf, sizeof(buf));
	ASSERT_EQ(strlen(buf), sizeof(buf) - 1, "a long name within the budget: truncated");
	ASSERT_TRUE(!strncmp(buf, "hot(P<P<P<", 10), "demangled");
	ASSERT_EQ(demangle__over_budget(), before + 1, "not counted");
	/* over 1 KiB of mangled name: not tried */
	memset(big, 'i', sizeof(big) - 1);
	memcpy(big, "_Z1fv", 5);
	big[sizeof(big) - 1] = 0;
	demangle(big, buf, sizeof(buf));
	ASSERT_TRUE(!strcmp(buf, big), "over 1 KiB");
	ASSERT_EQ(demangle__over_budget(), before + 2, "counted");
	demangle("_Z6kernelPfi", buf, sizeof(buf));
	demangle("_Z6kernelPfi", buf, 8);
	ASSERT_TRUE(!strcmp(buf, "kernel("), "cached, truncated to the caller's buffer");
}

struct fn_list {
	struct elf_sym *v;
	size_t n, cap;
};

static int list_cb(const struct elf_sym *sym, void *arg)
{
	struct fn_list *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = *sym;
	return 0;
}

/*
 * A names-only open (the uprobe manager's look at every file) finds what a whole one finds,
 * lists the same functions in the same order, and refuses to name an address (it has no
 * PLT stubs to name them by) rather than name one otherwise.
 */
static void test_names_only_open(void)
{
	struct elf_syms *full = elf_syms__open(LIBC, NULL),
			*names = elf_syms__open_names(LIBC, NULL);
	struct fn_list a = {}, b = {};
	struct elf_sym x, y;
	size_t i, same = 0;

	if (!ASSERT_TRUE(full && names, "open libc both ways"))
		goto out;
	elf_syms__for_each(full, list_cb, &a);
	elf_syms__for_each(names, list_cb, &b);
	if (!ASSERT_TRUE(a.n > 1000 && a.n == b.n, "the same functions listed"))
		goto out;
	for (i = 0; i < a.n; i++) {
		if (elf_syms__find(full, a.v[i].name, &x) || elf_syms__find(names, a.v[i].name, &y))
			continue;
		same += !strcmp(a.v[i].name, b.v[i].name) && a.v[i].vaddr == b.v[i].vaddr &&
			x.vaddr == y.vaddr && x.size == y.size && x.file_off == y.file_off &&
			!strcmp(x.source, y.source);
	}
	ASSERT_EQ(same, a.n, "each found alike, in the same order");
	ASSERT_EQ(elf_syms__find_data(names, "program_invocation_name", &y), 0, "variables too");
	ASSERT_EQ(elf_syms__at(full, a.v[0].vaddr, &x), 0, "a whole open names an address");
	ASSERT_EQ(elf_syms__at(names, a.v[0].vaddr, &y), -EINVAL, "a names-only one refuses");
out:
	free(a.v);
	free(b.v);
	elf_syms__free(full);
	elf_syms__free(names);
}

struct at_arg {
	const struct elf_syms *s, *ref; /* REF sorted already */
	const struct fn_list *l;
	size_t wrong;
};

static void *at_all(void *p)
{
	struct at_arg *a = p;
	struct elf_sym e, r;

	for (size_t i = 0; i < a->l->n; i++) {
		__u64 va = a->l->v[i].vaddr + 1;
		int got = elf_syms__at(a->s, va, &e), want = elf_syms__at(a->ref, va, &r);

		a->wrong += got != want || (!got && (e.vaddr != r.vaddr || e.size != r.size ||
						     strcmp(e.name, r.name)));
	}
	return NULL;
}

/*
 * The index by address is sorted by the first lookup that needs it: threads naming
 * addresses of a table nobody looked up by address yet all get whole answers.
 */
static void test_first_lookups_by_address_at_once(void)
{
	struct elf_syms *ref = elf_syms__open(LIBC, NULL), *s = elf_syms__open(LIBC, NULL);
	struct at_arg args[4];
	pthread_t th[4];
	struct fn_list l = {};
	size_t wrong = 0;

	if (!ASSERT_TRUE(ref && s, "open libc twice"))
		goto out;
	elf_syms__for_each(ref, list_cb, &l);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct at_arg){ s, ref, &l, 0 };
		pthread_create(&th[i], NULL, at_all, &args[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		wrong += args[i].wrong;
	}
	ASSERT_TRUE(l.n > 1000, "libc's functions");
	ASSERT_EQ(wrong, 0, "every address named as the sorted table names it, by every thread");
out:
	free(l.v);
	elf_syms__free(ref);
	elf_syms__free(s);
}

int main(void)
{
	char self[400];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int ret;

	self[n > 0 ? n : 0] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	snprintf(fixture, sizeof(fixture), "%s/fixtures/syms_fixture", self);
	snprintf(tmp, sizeof(tmp), "/tmp/test_elf_syms.XXXXXX");
	if (!mkdtemp(tmp)) {
		printf("not ok - setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}

	RUN_TEST(test_cudart_all_functions_match_nm);
	RUN_TEST(test_cudart_launch_kernel);
	RUN_TEST(test_build_id_matches_readelf);
	RUN_TEST(test_glibc_default_version);
	RUN_TEST(test_glibc_exported_variables);
	RUN_TEST(test_glibc_code_segments);
	RUN_TEST(test_map_files_path);
	RUN_TEST(test_fixture_symtab);
	RUN_TEST(test_fixture_debug_by_build_id);
	RUN_TEST(test_fixture_debuglink);
	RUN_TEST(test_fixture_debuglink_crc);
	RUN_TEST(test_not_elf);
	RUN_TEST(test_truncated);
	RUN_TEST(test_large_library);
	RUN_TEST(test_demangle);
	RUN_TEST(test_demangle_budget);
	RUN_TEST(test_plt_stubs_named);
	RUN_TEST(test_names_only_open);
	RUN_TEST(test_first_lookups_by_address_at_once);
	ret = UNIT_EXIT();
	sh("rm -rf %s", tmp);
	return ret;
}
