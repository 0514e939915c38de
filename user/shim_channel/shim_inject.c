// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* record --inject: which processes get the cupti-shim, and when not (see shim_inject.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elf_syms.h"
#include "env.h"
#include "ptrace_call.h"
#include "record_ctx.h"
#include "shim_blob.h"
#include "shim_inject.h"
#include "hmap.h"
#include "uprobe_mgr.h"
#include "msg.h"

#define INJECT_TIMEOUT_S 2
#define MSG_LEN		 384

/* What a file is to an injection. */
#define F_DLOPEN 0x1 /* defines dlopen (glibc >= 2.34's libc, or libdl) */
#define F_LIBC	 0x2 /* glibc's libc: no thread is borrowed inside it (malloc's locks) */
#define F_LOADER 0x4 /* ld.so: nor inside it (the loader lock) */
#define F_MUSL	 0x8
#define F_CUDA	 0x10 /* libcudart or libcuda, shared or linked in: -a's candidates */

struct inj_file {
	__u32 flags;
	__u64 dlopen, restorer; /* ELF addresses; restorer 0 = none found */
};

struct inj_pid {
	__u32 flags; /* F_* of what it maps */
	__u64 dlopen, restorer;
	__u32 nunsafe;
	__u64 unsafe[PTRACE_CALL_MAX_UNSAFE][2];
	int tried, sent;
	char *failure;
};

struct shim_inject {
	struct record_ctx *ctx;
	struct hmap *pids; /* (pid, 0) -> struct inj_pid */
	struct inj_file **files;
	size_t nfiles;
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* glibc's `mov $15,%rax; syscall` (__restore_rt, its sa_restorer): an ELF address or 0. */
static __u64 find_restorer(const struct elf_syms *syms)
{
	struct elf_seg segs[8];
	size_t n = elf_syms__code_segments(syms, segs, 8);
	unsigned char buf[65536];

	for (size_t i = 0; i < n && i < 8; i++) {
		/* Chunks overlap by the pattern's length less one, so none is missed. */
		for (__u64 off = 0; off < segs[i].filesz; off += sizeof(buf) - 8) {
			size_t len = segs[i].filesz - off < sizeof(buf) ? segs[i].filesz - off
									: sizeof(buf);
			long at;

			if (elf_syms__read(syms, segs[i].vaddr + off, buf, len))
				break;
			at = ptrace_call__find_restorer(buf, len);
			if (at >= 0)
				return segs[i].vaddr + off + (__u64)at;
			if (len < sizeof(buf))
				break;
		}
	}
	return 0;
}

static void *on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct shim_inject *si = arg;
	const char *b = base_name(shown);
	struct inj_file f = { 0 }, *kept, **nf;
	struct elf_sym s;

	if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
		f.flags |= F_MUSL | F_LOADER;
	else if (!strncmp(b, "ld-linux", 8))
		f.flags |= F_LOADER;
	if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5))
		f.flags |= F_LIBC;
	if (!elf_syms__find(syms, "dlopen", &s)) {
		f.flags |= F_DLOPEN;
		f.dlopen = s.vaddr;
	}
	/*
	 * musl's libc is its loader too, named libc.so by distributions (Debian:
	 * /usr/lib/x86_64-linux-musl/libc.so, which ld-musl-x86_64.so.1 points to): a libc
	 * without glibc's gnu_get_libc_version is not glibc.
	 */
	if ((f.flags & F_LIBC) &&
	    (strstr(shown, "musl") || elf_syms__find(syms, "gnu_get_libc_version", &s)))
		f.flags |= F_MUSL | F_LOADER;
	if (f.flags & F_LIBC)
		f.restorer = find_restorer(syms);
	if (!elf_syms__find(syms, "cuInit", &s) || !elf_syms__find(syms, "cudaGetDeviceCount", &s))
		f.flags |= F_CUDA;
	if (!f.flags)
		return NULL;
	kept = malloc(sizeof(*kept));
	nf = realloc(si->files, (si->nfiles + 1) * sizeof(*nf));
	if (!kept || !nf) {
		free(kept);
		if (nf)
			si->files = nf;
		return NULL;
	}
	*kept = f;
	si->files = nf;
	si->files[si->nfiles++] = kept;
	return kept;
}

static void on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		      const struct uprobe_mapping *mp)
{
	struct shim_inject *si = arg;
	const struct inj_file *f = cookie;
	struct inj_pid *p = hmap__get(si->pids, (struct hkey){ (__u64)pid, 0 }, 1);

	if (!p)
		return;
	p->flags |= f->flags;
	if ((f->flags & F_DLOPEN) && !p->dlopen)
		p->dlopen = f->dlopen + mp->bias;
	if (f->restorer && !p->restorer)
		p->restorer = f->restorer + mp->bias;
	if ((f->flags & (F_LIBC | F_LOADER | F_DLOPEN)) && p->nunsafe < PTRACE_CALL_MAX_UNSAFE) {
		for (__u32 i = 0; i < p->nunsafe; i++)
			if (p->unsafe[i][0] == mp->start)
				return; /* a rescan */
		p->unsafe[p->nunsafe][0] = mp->start;
		p->unsafe[p->nunsafe++][1] = mp->end;
	}
}

struct shim_inject *shim_inject__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err)
{
	struct shim_inject *si = calloc(1, sizeof(*si));
	struct uprobe_listener lis = { .file = on_file, .mapped = on_mapped };

	*err = -ENOMEM;
	if (!si || !(si->pids = hmap__new(sizeof(struct inj_pid))))
		goto fail;
	si->ctx = ctx;
	lis.arg = si;
	*err = uprobe_mgr__add_listener(mgr, &lis);
	if (*err < 0)
		goto fail;
	*err = 0;
	return si;
fail:
	shim_inject__free(si);
	return NULL;
}

void shim_inject__free(struct shim_inject *si)
{
	struct inj_pid *p;
	size_t it = 0;

	if (!si)
		return;
	while (si->pids && (p = hmap__next(si->pids, &it, NULL)))
		free(p->failure);
	hmap__free(si->pids);
	for (size_t i = 0; i < si->nfiles; i++)
		free(si->files[i]);
	free(si->files);
	free(si);
}

/* ---- the refusals ---- */

/* KEY's value in /proc/PID[/task/TID]/status into VAL; 0 or -ENOENT. */
static int status_field(const char *fn, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key);
	char line[512];
	FILE *f = fopen(fn, "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		snprintf(val, len, "%s", line + klen + 1 + strspn(line + klen + 1, " \t"));
		val[strcspn(val, "\n")] = 0;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static void comm_of(pid_t pid, char *buf, size_t len)
{
	char fn[64];

	snprintf(fn, sizeof(fn), "/proc/%d/status", pid);
	if (status_field(fn, "Name", buf, len))
		snprintf(buf, len, "?");
}

/* A thread of PID with a tracer (gdb, strace): its pid, or 0. */
static pid_t tracer_of(pid_t pid)
{
	char fn[300], val[32];
	struct dirent *d;
	pid_t tracer = 0;
	DIR *dir;

	snprintf(fn, sizeof(fn), "/proc/%d/task", pid);
	dir = opendir(fn);
	while (dir && !tracer && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(fn, sizeof(fn), "/proc/%d/task/%s/status", pid, d->d_name);
		if (!status_field(fn, "TracerPid", val, sizeof(val)))
			tracer = (pid_t)atoi(val);
	}
	if (dir)
		closedir(dir);
	return tracer;
}

/* 1 when /proc/PID/exe is an x86-64 ELF (a 32-bit process cannot take our frame). */
static int is_x86_64(pid_t pid)
{
	unsigned char e[20];
	char fn[64];
	int fd, ok;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1; /* unreadable (a deleted file): the maps said what it maps */
	ok = read(fd, e, sizeof(e)) == (ssize_t)sizeof(e) && e[EI_CLASS] == ELFCLASS64 &&
	     (e[18] | e[19] << 8) == EM_X86_64;
	close(fd);
	return ok;
}

/* Why PID must not be injected, into MSG; 0 when it may be. */
static int refuse(const struct inj_pid *p, pid_t pid, char *msg, size_t len)
{
	char fn[64], val[128], comm[64];
	pid_t tracer;
	FILE *f;
	int scope = 0;

#ifndef __x86_64__
	snprintf(msg, len, "--inject works on x86-64 only");
	return 1;
#endif
	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(msg, len, "it exited");
		return 1;
	}
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 3) {
		snprintf(msg, len,
			 "kernel.yama.ptrace_scope is 3: ptrace is off on this machine until "
			 "reboot; start the job with CUDA_INJECTION64_PATH=<shim> instead");
		return 1;
	}
	tracer = tracer_of(pid);
	if (tracer) {
		comm_of(tracer, comm, sizeof(comm));
		snprintf(msg, len,
			 "already traced by pid %d (%s): a process has one tracer; detach it "
			 "(gdb, strace...) and record again",
			 tracer, comm);
		return 1;
	}
	snprintf(fn, sizeof(fn), "/proc/%d/status", pid);
	if (!status_field(fn, "Seccomp", val, sizeof(val)) && strcmp(val, "0")) {
		snprintf(msg, len,
			 "it runs under seccomp (mode %s): the system calls of a dlopen could be "
			 "denied or kill it",
			 val);
		return 1;
	}
	if (!status_field(fn, "x86_Thread_features", val, sizeof(val)) && strstr(val, "shstk")) {
		snprintf(msg, len,
			 "it runs with shadow stacks (CET): a borrowed call cannot return");
		return 1;
	}
	if (!is_x86_64(pid)) {
		snprintf(msg, len, "not an x86-64 process: --inject works on x86-64 only");
		return 1;
	}
	if (p->flags & F_MUSL) {
		snprintf(msg, len,
			 "it uses musl libc (or another libc than glibc): only glibc processes "
			 "can be injected");
		return 1;
	}
	if (!(p->flags & F_LOADER)) {
		/* A static glibc may hold a dlopen, but not one that can load a shared library. */
		snprintf(msg, len,
			 "it is linked statically (no ld.so): nothing can load the shim into it");
		return 1;
	}
	if (!p->dlopen) {
		snprintf(msg, len,
			 "it has no dlopen (a static binary, or glibc older than 2.34 without "
			 "libdl loaded): nothing can load the shim into it");
		return 1;
	}
	if (!p->restorer) {
		snprintf(msg, len, "its libc has no rt_sigreturn stub (not glibc?)");
		return 1;
	}
	return 0;
}

/* ---- installing and injecting ---- */

/* Does PID see the file system as we do: the same mount namespace, and no chroot? */
static int same_root(pid_t pid)
{
	struct stat a, b, c, d;
	char ns[64], root[64];

	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", pid);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	if (stat("/proc/self/ns/mnt", &a) || stat(ns, &b))
		return 1; /* no namespaces to tell apart */
	if (stat("/", &c) || stat(root, &d))
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino && c.st_dev == d.st_dev &&
	       c.st_ino == d.st_ino;
}

/*
 * The shim where PID can open it, at TARGET_PATH in its own view of the file system: under
 * /run/bpfsight, else /tmp/bpfsight, written under /proc/PID/root when PID has a root of its
 * own (a container, a chroot). Nothing is written through a symlink, or into a directory
 * that anyone but root can write (shim_blob__install): a process that made its own root
 * would otherwise point root's writes anywhere on the host.
 */
static int install_for(pid_t pid, char *target_path, size_t len, char *msg, size_t mlen)
{
	static const char *const dirs[] = { SHIM_RUN_DIR, "/tmp/bpfsight" };
	char name[96], root[64], path[PATH_MAX];
	int same = same_root(pid), err = -ENOENT;

	if (!shim_blob__size()) {
		snprintf(msg, mlen, "this bpfsight was built without the cupti-shim");
		return -ENOENT;
	}
	shim_blob__inject_name(name, sizeof(name));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		err = shim_blob__install(same ? NULL : root, dirs[i], name, path, sizeof(path));
		if (!err) {
			snprintf(target_path, len, "%s/%s", dirs[i], name);
			return 0;
		}
	}
	snprintf(msg, mlen, "cannot write the shim where it can open it (%s%s): %s",
		 same ? "" : "its own root, ", SHIM_RUN_DIR,
		 err == -EPERM	 ? "a directory on the way is not root's, or others can write it"
		 : err == -ELOOP ? "a symlink on the way"
				 : strerror(-err));
	return err;
}

static void set_failure(struct inj_pid *p, const char *msg)
{
	free(p->failure);
	p->failure = strdup(msg);
}

static void inject(struct shim_inject *si, struct inj_pid *p, pid_t pid)
{
	struct ptrace_call c = { .pid = pid, .timeout_s = INJECT_TIMEOUT_S };
	const char *tid = env__trusted("BPFSIGHT_INJECT_TID");
	char msg[MSG_LEN], path[PATH_MAX];
	struct ptrace_call_result r;
	int err;

	p->tried = 1;
	if (refuse(p, pid, msg, sizeof(msg)) ||
	    install_for(pid, path, sizeof(path), msg, sizeof(msg))) {
		pr_err("--inject: pid %d not injected: %s\n", pid, msg);
		set_failure(p, msg);
		return;
	}
	/* Tests borrow the thread they want to see restarted (a read, a futex, a nanosleep). */
	c.only_tid = tid && *tid ? (pid_t)atoi(tid) : 0;
	c.func = p->dlopen;
	c.restorer = p->restorer;
	c.arg = path;
	c.arg2 = RTLD_NOW | RTLD_GLOBAL;
	c.nunsafe = p->nunsafe;
	memcpy(c.unsafe, p->unsafe, sizeof(c.unsafe));
	err = ptrace_call__run(&c, &r, msg, sizeof(msg));
	if (err) {
		pr_err("--inject: pid %d not injected: %s\n", pid, msg);
		set_failure(p, msg);
		return;
	}
	p->sent = 1;
	/* Tests and the benchmark read this line: keep its shape. */
	pr_info("--inject: pid %d: thread %d loads %s (stopped %llu us, %u "
		"tries)\n",
		pid, r.tid, path, (unsigned long long)(r.stopped_ns / 1000), r.tries);
}

void shim_inject__run(struct shim_inject *si, int (*has_shim)(void *arg, pid_t pid), void *arg)
{
	const struct record_opts *o = si ? si->ctx->opts : NULL;
	struct inj_pid *p;
	struct hkey k;
	size_t it = 0;

	if (!o || !o->inject || o->dry_run)
		return;
	for (__u32 i = 0; i < o->npids; i++) {
		p = hmap__get(si->pids, (struct hkey){ (__u64)o->pids[i], 0 }, 1);
		if (p && !p->tried && !has_shim(arg, o->pids[i]))
			inject(si, p, o->pids[i]);
	}
	if (!o->system_wide)
		return;
	/* -a: the processes using CUDA (inject() may grow the map: restart after each). */
	for (;;) {
		pid_t pid = 0;

		it = 0;
		while ((p = hmap__next(si->pids, &it, &k)))
			if (!p->tried && (p->flags & F_CUDA) && (pid_t)k.a != si->ctx->self_pid &&
			    !has_shim(arg, (pid_t)k.a)) {
				pid = (pid_t)k.a;
				break;
			}
		if (!pid)
			return;
		inject(si, p, pid);
	}
}

void shim_inject__proc_exit(struct shim_inject *si, pid_t pid)
{
	struct inj_pid *p = si ? hmap__get(si->pids, (struct hkey){ (__u64)pid, 0 }, 0) : NULL;

	if (!p)
		return;
	/* -p targets stay: the end of the recording says what became of them. */
	for (__u32 i = 0; i < si->ctx->opts->npids; i++)
		if (si->ctx->opts->pids[i] == pid)
			return;
	free(p->failure);
	hmap__del(si->pids, (struct hkey){ (__u64)pid, 0 });
}

const char *shim_inject__failure(const struct shim_inject *si, pid_t pid)
{
	const struct inj_pid *p =
		si ? hmap__get(si->pids, (struct hkey){ (__u64)pid, 0 }, 0) : NULL;

	return p ? p->failure : NULL;
}

int shim_inject__sent(const struct shim_inject *si, pid_t pid)
{
	const struct inj_pid *p =
		si ? hmap__get(si->pids, (struct hkey){ (__u64)pid, 0 }, 0) : NULL;

	return p && p->sent;
}
