// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding PyTorch in the process: libtorch_cpu (where RecordFunction lives), its version, the
 * layout verified for that version, and the four C++ entry points the shim calls.
 *
 * The version comes from the files, never from calling into torch: the library's own name
 * when it carries one (Debian: libtorch_cpu.so.1.13.0), else the package beside it (a wheel's
 * or conda's torch/version.py, a libtorch archive's build-version). A version without a
 * verified layout is refused (docs/TORCH.md lists how each was verified).
 *
 * BPFSIGHT_SHIM_TORCH_VERSION (tests only) replaces the version found, read once at the
 * shim's start: tests/e2e/test_torch.py checks the refusal with it. BPFSIGHT_SHIM_TORCH_EMPTY
 * (benchmarks only) registers the callback with its slots empty: what torch's own
 * RecordFunction machinery costs with a callback (bench/bench_torch.py's floor).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "shim_torch.h"

// clang-format off
/*
 * Per version: num_scopes; RecordFunction's thread_id, scope, needs_inputs, fn_index, seq,
 * inputs, fwd_tid; TensorImpl's impl_sizes, impl_numel; IValue's tags Double, Int, Bool,
 * GenericList; ListImpl's list_vector. tests/torch/layout.cpp prints the same from a
 * release's real headers; `make check-torch-versions` compares and runs each it can.
 */
static const struct torch_layout layouts[] = {
	/*
	 * Debian's 1.13.1 (python3-torch), read in its libtorch_cpu.so.1.13.0: addGlobalCallback
	 * copies 40 bytes from its first stack argument; enableProfiler fills scopes_ with 10
	 * bytes at offset 24; RecordFunction::num_inputs reads inputs_.size() at 0xd8 and
	 * fn_'s index at 0xc0, runStartCallbacks the callbacks' count at 0x10 (a vtable before
	 * step_callbacks_ at 0x8), isAsync is_async_ at 0x108: the fields between follow the
	 * header's order. Checked at run time in tests/e2e/test_torch.py (sequence numbers and
	 * forward thread ids equal torch.profiler's); the TensorImpl offsets read from tensors
	 * of known shapes; the tags from its ivalue.h (no SymBool yet), ListImpl's vector after
	 * intrusive_ptr_target's two size_t counts, both checked by the concrete inputs of
	 * conv2d (tests/e2e/test_torch_concrete.py).
	 */
	{ "1.13", "Debian 1.13.1: disassembled, real headers (tests/torch/layout.cpp) and run",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0xf8, 0x48, 0xa8, 3, 5, 8, 12, 0x18 },
	/*
	 * The other releases: tests/torch/layout.cpp built against each release's own installed
	 * headers, as a libtorch archive or a wheel's torch/include ships them (copies kept in
	 * public repositories; docs/TORCH.md names them), compared by check_torch_versions.py
	 * --headers; not run here. Their member lists are 1.13's but for five changes: SymBool's
	 * IValue tag (2.1 on: Bool 9, GenericList 13), intrusive_ptr_target's counts two u32
	 * (2.3 on: TensorImpl's sizes 0x40, ListImpl's vector 0x10), RecordFunction's kwinputs_
	 * (2.4 on: fwd_thread_id_ 0x130), UInt's tag (2.9 on: Bool 10, GenericList 14),
	 * PyObjectSlot without its interpreter (2.13 on: TensorImpl's sizes 0x38). The first
	 * op's check guards the RecordFunction part of each (kwinputs_ where it is said to be).
	 */
	{ "2.0", "libtorch 2.0.1's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0xf8, 0x48, 0xa8, 3, 5, 8, 12, 0x18 },
	{ "2.1", "libtorch 2.1.1's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0xf8, 0x48, 0xa8, 3, 5, 9, 13, 0x18 },
	{ "2.2", "libtorch 2.2.2's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0xf8, 0x48, 0xa8, 3, 5, 9, 13, 0x18 },
	{ "2.3", "libtorch 2.3.1's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0xf8, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	{ "2.4", "the 2.4.0 and 2.4.1 wheels' headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	{ "2.5", "the 2.5.1 wheel's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	/* Debian's 2.6.0 (trixie's libtorch-dev and python3-torch): real headers and run. */
	{ "2.6", "Debian 2.6.0: real headers (tests/torch/layout.cpp) and run",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	{ "2.7", "libtorch 2.7.1's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	/*
	 * 2.8: no headers of it seen. 2.7.1's and 2.9.0's differ only by UInt's tag, added by
	 * pytorch #160102 in August 2025, after 2.8's branch (2.8.0: 6 August 2025): 2.7's row.
	 */
	{ "2.8", "read: between 2.7.1's and 2.9.0's headers, before UInt's tag",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 9, 13, 0x10 },
	{ "2.9", "the 2.9.0 wheel's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 10, 14, 0x10 },
	{ "2.10", "libtorch 2.10.0's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 10, 14, 0x10 },
	{ "2.11", "libtorch 2.11.0's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 10, 14, 0x10 },
	{ "2.12", "libtorch 2.12.1's headers",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x40, 0xa0, 3, 5, 10, 14, 0x10 },
	/* 2.13: its nightly's headers (libtorch 2.13.0.dev20260428), the release's not seen */
	{ "2.13", "libtorch 2.13.0.dev20260428's headers (a nightly)",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x38, 0x98, 3, 5, 10, 14, 0x10 },
	/* Debian's 2.14.1 (sid's libtorch-dev and python3-torch): real headers and run. */
	{ "2.14", "Debian 2.14.1: real headers (tests/torch/layout.cpp) and run",
	  10, 0x58, 0x60, 0x61, 0xc0, 0xc8, 0xd0, 0x130, 0x38, 0x98, 3, 5, 10, 14, 0x10 },
};
// clang-format on

#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

static const char *const syms[] = {
	"_ZN2at17addGlobalCallbackENS_22RecordFunctionCallbackE", /* at::addGlobalCallback */
	"_ZN2at14removeCallbackEm",				  /* at::removeCallback(u64) */
	"_ZNK2at14RecordFunction4nameEv",			  /* RecordFunction::name() */
	"_ZN2at14RecordFunction15currentThreadIdEv", /* RecordFunction::currentThreadId() */
};

#define NSYMS (sizeof(syms) / sizeof(syms[0]))

static char forced_version[64]; /* BPFSIGHT_SHIM_TORCH_VERSION */
bool shim_torch_empty;		/* BPFSIGHT_SHIM_TORCH_EMPTY */

void shim_torch_lib__init(void)
{
	const char *v = secure_getenv("BPFSIGHT_SHIM_TORCH_VERSION");
	const char *e = secure_getenv("BPFSIGHT_SHIM_TORCH_EMPTY");

	if (v && *v)
		snprintf(forced_version, sizeof(forced_version), "%s", v);
	shim_torch_empty = e && *e && strcmp(e, "0");
}

const char *shim_torch_lib__verified(void)
{
	static char list[256];

	if (!list[0])
		for (size_t i = 0; i < NLAYOUTS; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", layouts[i].version);
	return list;
}

struct found {
	char path[PATH_MAX];
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct found *f = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	if (!base || strncmp(base + 1, "libtorch_cpu.so", 15))
		return 0;
	snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
	return 1;
}

/* "libtorch_cpu.so.1.13.0" -> "1.13.0"; 0 when the name carries no version. */
static int version_from_name(const char *path, char *out, size_t len)
{
	char real[PATH_MAX];
	const char *base, *v;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	base = strrchr(real, '/');
	v = base ? base + 1 + strlen("libtorch_cpu.so") : NULL;
	if (!v || v[0] != '.' || v[1] < '0' || v[1] > '9')
		return 0;
	snprintf(out, len, "%s", v + 1);
	return 1;
}

/*
 * In Python source TEXT, the quote that opens the string assigned to NAME at the start of a
 * line ("__version__ = '2.11.0+cu130'", "__version__: str = ..."), or NULL. Not a mention
 * before it: torch 2.x's version.py names __version__ in __all__ first.
 */
static const char *assigned(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = text; (p = strstr(p, name)); p += len) {
		const char *q = p + len;

		if (p != text && p[-1] != '\n')
			continue;
		if (*q == ':') /* an annotation */
			q += strcspn(q, "=\n");
		q += strspn(q, " \t");
		if (*q != '=' || q[1] == '=')
			continue;
		q += 1 + strspn(q + 1, " \t");
		if (*q == '\'' || *q == '"')
			return q;
	}
	return NULL;
}

/* The version in DIR/../FILE: version.py's __version__, or build-version's first line. */
static int version_from_file(const char *path, const char *file, char *out, size_t len)
{
	char fn[PATH_MAX + 32], buf[4096];
	const char *p, *end;
	const char *slash = strrchr(path, '/');
	ssize_t n;
	int fd;

	if (!slash)
		return 0;
	snprintf(fn, sizeof(fn), "%.*s/../%s", (int)(slash - path), path, file);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (!strcmp(file, "version.py")) { /* the quoted value assigned to __version__ */
		p = assigned(buf, "__version__");
		end = p ? strchr(p + 1, *p) : NULL;
		if (!end)
			return 0;
		p++;
	} else { /* build-version: the file is the version */
		p = buf;
		end = p + strcspn(p, "\r\n");
	}
	if (end == p || p[0] < '0' || p[0] > '9')
		return 0;
	snprintf(out, len, "%.*s", (int)(end - p), p);
	return 1;
}

/* "1.13" matches "1.13", "1.13.0", "1.13.1a0"; not "1.130". */
static const struct torch_layout *layout_for(const char *version)
{
	for (size_t i = 0; i < NLAYOUTS; i++) {
		size_t n = strlen(layouts[i].version);

		if (!strncmp(version, layouts[i].version, n) &&
		    (version[n] == 0 || version[n] == '.' || version[n] == '+'))
			return &layouts[i];
	}
	return NULL;
}

int shim_torch_lib__find(struct torch_lib *lib, char *why, size_t len)
{
	struct found f = { { 0 } };
	void *h, *fn[NSYMS];

	dl_iterate_phdr(find_lib, &f);
	if (!f.path[0])
		return -ENOENT;
	memset(lib, 0, sizeof(*lib));
	snprintf(lib->path, sizeof(lib->path), "%s", f.path);
	if (forced_version[0])
		snprintf(lib->version, sizeof(lib->version), "%s", forced_version);
	else if (!version_from_name(f.path, lib->version, sizeof(lib->version)) &&
		 !version_from_file(f.path, "version.py", lib->version, sizeof(lib->version)) &&
		 !version_from_file(f.path, "build-version", lib->version, sizeof(lib->version))) {
		snprintf(why, len,
			 "torch ops not recorded: the version of %s is unknown (no version in its "
			 "name, no torch/version.py or build-version beside it)",
			 f.path);
		return -ENOTSUP;
	}
	lib->layout = layout_for(lib->version);
	if (!lib->layout) {
		snprintf(why, len,
			 "torch ops not recorded: torch %s (%s) is not a version whose "
			 "RecordFunction layout bpfsight has verified (%s)",
			 lib->version, f.path, shim_torch_lib__verified());
		return -ENOTSUP;
	}
	/*
	 * NOLOAD: only a library already there. dlopen takes the loader's lock, which a dlopen
	 * under way holds until its constructors ran: once it returns, torch is initialized.
	 */
	h = dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h) {
		snprintf(why, len, "torch ops not recorded: %s: %s", f.path, dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < NSYMS; i++)
		fn[i] = dlsym(h, syms[i]);
	/* in libc10, which libtorch_cpu needs: its scope has it; without it none is undefined */
	lib->undefined = dlsym(h, "_ZN3c1019UndefinedTensorImpl10_singletonE");
	dlclose(h); /* the process keeps it loaded: torch libraries are never unloaded */
	for (size_t i = 0; i < NSYMS; i++)
		if (!fn[i]) {
			snprintf(why, len, "torch ops not recorded: %s has no %s", f.path, syms[i]);
			return -ENOTSUP;
		}
	*(void **)&lib->add_global = fn[0];
	*(void **)&lib->remove = fn[1];
	*(void **)&lib->name = fn[2];
	*(void **)&lib->current_thread_id = fn[3];
	return 0;
}
