// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Locating a live CPython's GIL from outside the process; see gil_python.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gil_python.h"
#include "stats_math.h"

#define MAX_TASKS     4096 /* threads of one process looked at to check thread ids */
#define MAX_TSTATES   256  /* thread states walked */
#define MAX_INTERPS   64
#define GLIBC_TID_OFF 0x2d0 /* struct pthread's tid on x86-64 glibc 2.x (fs:0x2d0) */

/*
 * Per-version layout for 3.8-3.12 (x86-64, default build), from offsetof() on each version's
 * own internal headers (Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h).
 * Layouts only change between minor versions; a patch release that moved something is caught
 * by the live check, and the GIL is then searched for by its shape.
 */
struct py_layout {
	__u32 minor;
	__u32 rt_size;	      /* sizeof(_PyRuntimeState): st_size of _PyRuntime */
	__u32 rt_gil;	      /* the main GIL from _PyRuntime (3.12: in _main_interpreter) */
	__u32 rt_interp_main; /* interpreters.main */
	__u32 interp_threads_head;
	__u32 interp_ceval_gil; /* 3.12: interp->ceval.gil, a pointer (0 = none) */
	__u32 ts_thread_id;	/* unsigned long thread_id (the pthread_t) */
	__u32 ts_native;	/* unsigned long native_thread_id (0 = none: before 3.11) */
};

static const struct py_layout layouts[] = {
	{ 8, 1464, 1152, 40, 8, 0, 176, 0 },
	{ 9, 656, 352, 40, 8, 0, 176, 0 },
	{ 10, 672, 352, 40, 8, 0, 176, 0 },
	{ 11, 166688, 360, 48, 16, 0, 152, 160 },
	{ 12, 459944, 76392 + 1040, 48, 72, 384, 136, 144 },
};

/* struct _gil_runtime_state, the same from 3.8 to 3.14 (after `int enabled` when free-threaded). */
#define GIL_INTERVAL	 0
#define GIL_HOLDER	 8
#define GIL_LOCKED	 16
#define GIL_COND	 32
#define GIL_MUTEX	 80  /* after a 48-byte pthread_cond_t */
#define GIL_SWITCH_MUTEX 168 /* after switch_cond (FORCE_SWITCHING, always on) */
#define GIL_SPAN	 208
#define TS_NEXT		 8 /* PyThreadState: prev, next, interp: the same in every version */
#define TS_INTERP	 16

/* What one ELF file says about python, remembered per (dev, inode). */
struct elf_info {
	int has_runtime;
	__u64 rt_vaddr, rt_size;
	__u64 pyver_vaddr; /* Py_Version (3.11+), 0 = none */
	__u64 load_vaddr;  /* p_vaddr of the first PT_LOAD */
	__u32 name_minor;  /* 3.X from the file name, 0 = none */
	int name_ft;	   /* "python3.13t" */
};

struct gil_finder {
	struct hmap *elves; /* (dev, ino) -> struct elf_info */
};

struct gil_finder *gil_finder__new(void)
{
	struct gil_finder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->elves = hmap__new(sizeof(struct elf_info));
	if (!f->elves) {
		free(f);
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		gil_finder__free(f);
		return NULL;
	}
	return f;
}

void gil_finder__free(struct gil_finder *f)
{
	if (!f)
		return;
	hmap__free(f->elves);
	free(f);
}

/* "libpython3.11.so.1.0", "python3.13t", "libpython3.8d.so": the minor version, or 0. */
static __u32 name_minor(const char *path, int *ft)
{
	const char *base = strrchr(path, '/'), *p;
	unsigned minor;
	char c = 0;

	base = base ? base + 1 : path;
	p = strstr(base, "python3.");
	*ft = 0;
	if (!p || sscanf(p + 8, "%u%c", &minor, &c) < 1 || minor > 99)
		return 0;
	*ft = c == 't';
	return minor;
}

static int elf_read_info(const char *path, struct elf_info *info)
{
	size_t shnum, i, n;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	const char *name;
	int fd, err = 0, found_load = 0;
	Elf *e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	if (elf_getphdrnum(e, &n) == 0) {
		for (i = 0; i < n && !found_load; i++) {
			if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD) {
				info->load_vaddr = ph.p_vaddr;
				found_load = 1;
			}
		}
	}
	if (elf_getshdrnum(e, &shnum)) {
		err = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				info->has_runtime = 1;
				info->rt_vaddr = sym.st_value;
				info->rt_size = sym.st_size;
			} else if (!strcmp(name, "Py_Version")) {
				info->pyver_vaddr = sym.st_value;
			}
		}
	}
	if (!found_load)
		info->has_runtime = 0;
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

struct mapping {
	__u64 start, end, off, dev, ino;
	int exec;
	char path[PATH_MAX];
};

static int parse_maps_line(const char *line, struct mapping *m)
{
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	char perms[8];
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &major,
		   &minor, &ino, &pos) < 7)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->off = off;
	m->dev = (__u64)major << 20 | minor;
	m->ino = ino;
	m->exec = perms[2] == 'x';
	snprintf(m->path, sizeof(m->path), "%s", pos ? line + pos : "");
	m->path[strcspn(m->path, "\n")] = 0;
	return 0;
}

struct mem {
	int fd;
};

static int mem_read(const struct mem *m, __u64 addr, void *buf, size_t len)
{
	ssize_t n = pread(m->fd, buf, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static __u64 mem_u64(const struct mem *m, __u64 addr)
{
	__u64 v = 0;

	if (!addr || mem_read(m, addr, &v, sizeof(v)))
		return 0;
	return v;
}

/* The live thread ids of PID, sorted; returns how many (0 on failure). */
static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return (x > y) - (x < y);
}

static int read_tasks(pid_t pid, __u32 *tids, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max)
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			tids[n++] = (__u32)strtoul(d->d_name, NULL, 10);
	closedir(dir);
	qsort(tids, n, sizeof(*tids), cmp_u32);
	return n;
}

static int has_tid(const __u32 *tids, int n, __u32 tid)
{
	return tid && bsearch(&tid, tids, n, sizeof(*tids), cmp_u32) != NULL;
}

/* Thread states of an interpreter, newest first. Returns how many. */
static int walk_tstates(const struct mem *m, __u64 interp, __u64 threads_head, __u64 *ts, int max)
{
	__u64 t = mem_u64(m, interp + threads_head);
	int n = 0;

	while (t && n < max) {
		ts[n++] = t;
		t = mem_u64(m, t + TS_NEXT);
	}
	return n;
}

/* A pthread_mutex_t made by pthread_mutex_init(m, NULL): lock word 0-2, no count, kind or list. */
static int mutex_shape(const __u8 *b)
{
	__s32 lock, count, kind;
	__u64 prev, next;

	memcpy(&lock, b, 4);
	memcpy(&count, b + 4, 4);
	memcpy(&kind, b + 16, 4);
	memcpy(&prev, b + 24, 8);
	memcpy(&next, b + 32, 8);
	return lock >= 0 && lock <= 2 && !count && !kind && !prev && !next;
}

/*
 * Is there a struct _gil_runtime_state at BASE (after `enabled` when free-threaded)? Its
 * interval is sane, locked is 0 or 1, both mutexes look like fresh default mutexes, and the
 * last holder is a thread state of INTERP. Returns 1 yes, 0 no, -EAGAIN when the GIL is not
 * created yet (locked is -1 from _gil_initialize until create_gil) or has no holder yet: the
 * interpreter is starting.
 */
static int gil_shape(const struct mem *m, __u64 base, __u64 interp)
{
	__u8 b[GIL_SPAN];
	__u64 interval, holder;
	__s32 locked, pad;

	if (mem_read(m, base, b, sizeof(b)))
		return 0;
	memcpy(&interval, b + GIL_INTERVAL, 8);
	memcpy(&holder, b + GIL_HOLDER, 8);
	memcpy(&locked, b + GIL_LOCKED, 4);
	memcpy(&pad, b + GIL_LOCKED + 4, 4);
	if (locked == -1 && !pad && interval >= 1 && interval <= 1000000000ull)
		return -EAGAIN;
	if (interval < 1 || interval > 1000000000ull || (locked != 0 && locked != 1) || pad ||
	    holder & 7 || !mutex_shape(b + GIL_MUTEX) || !mutex_shape(b + GIL_SWITCH_MUTEX))
		return 0;
	if (!holder)
		return -EAGAIN;
	return mem_u64(m, holder + TS_INTERP) == interp;
}

/* Search _PyRuntime (copied into BUF) for the one GIL whose holder belongs to INTERP. */
static __u64 gil_search(const struct mem *m, __u64 runtime, const __u8 *buf, size_t len,
			__u64 interp)
{
	__u64 found = 0, interval, holder;
	__s32 locked;
	size_t o;

	for (o = 0; o + GIL_SPAN <= len; o += 8) {
		memcpy(&interval, buf + o + GIL_INTERVAL, 8);
		memcpy(&holder, buf + o + GIL_HOLDER, 8);
		memcpy(&locked, buf + o + GIL_LOCKED, 4);
		if (interval < 1 || interval > 1000000000ull || !holder || holder & 7 ||
		    (locked != 0 && locked != 1))
			continue;
		if (gil_shape(m, runtime + o, interp) != 1)
			continue;
		if (found)
			return 0; /* ambiguous: trust none */
		found = runtime + o;
	}
	return found;
}

static void fill_cfg(struct gil_py *py, __u64 base)
{
	py->cfg.cond = base + GIL_COND;
	py->cfg.mutex = base + GIL_MUTEX;
	py->cfg.locked = base + GIL_LOCKED;
	py->cfg.holder = base + GIL_HOLDER;
}

/* Do the thread states map to live threads of PID when the tid is read at OFF (see below)? */
static int tids_fit(const struct mem *m, const __u64 *ts, int nts, const __u32 *tids, int ntids,
		    __u32 tid_off, __u32 pthread_off)
{
	int i, seen = 0;
	__u32 tid;
	__u64 v;

	for (i = 0; i < nts; i++) {
		v = mem_u64(m, ts[i] + tid_off);
		if (!v)
			continue; /* a thread state not bound to a thread yet */
		tid = (__u32)v;
		if (pthread_off && mem_read(m, v + pthread_off, &tid, sizeof(tid)))
			return 0;
		if (!has_tid(tids, ntids, tid))
			return 0;
		seen++;
	}
	return seen > 0;
}

/*
 * How BPF turns a PyThreadState into a tid: native_thread_id (3.11+), else thread_id, the
 * pthread_t, which points at glibc's struct pthread holding the tid. Both are checked against
 * the live threads; the offset inside struct pthread is searched for when the usual one fails.
 */
static void learn_tids(pid_t pid, const struct mem *m, struct gil_py *py, __u64 interp,
		       __u64 threads_head, __u32 ts_thread_id, __u32 ts_native)
{
	static __u32 tids[MAX_TASKS];
	__u64 ts[MAX_TSTATES];
	int ntids, nts;
	__u32 off;

	py->cfg.tid_off = ts_native ? ts_native : ts_thread_id;
	py->cfg.pthread_tid_off = ts_native ? 0 : GLIBC_TID_OFF;
	py->holder_known = 0;
	if (!py->cfg.tid_off)
		return;
	ntids = read_tasks(pid, tids, MAX_TASKS);
	nts = walk_tstates(m, interp, threads_head, ts, MAX_TSTATES);
	if (!ntids || !nts)
		return;
	if (tids_fit(m, ts, nts, tids, ntids, py->cfg.tid_off, py->cfg.pthread_tid_off)) {
		py->holder_known = 1;
		return;
	}
	if (ts_native)
		return;
	for (off = 8; off < 0x1000; off += 4) {
		if (tids_fit(m, ts, nts, tids, ntids, py->cfg.tid_off, off)) {
			py->cfg.pthread_tid_off = off;
			py->holder_known = 1;
			return;
		}
	}
}

/* The main interpreter: the tail of the list (new ones are prepended). */
static __u64 main_interp(const struct mem *m, __u64 head, __u64 next_off)
{
	__u64 next;

	for (int i = 0; head && i < MAX_INTERPS; i++) {
		next = mem_u64(m, head + next_off);
		if (!next)
			return head;
		head = next;
	}
	return head;
}

int gil_debug_offsets__parse(const void *buf, size_t len, struct gil_debug_offsets *o)
{
	const __u64 *w = buf;
	size_t nw = len / 8, i, j;
	__u64 g;

	memset(o, 0, sizeof(*o));
	if (len < 8 * 40 || memcmp(buf, "xdebugpy", 8))
		return -EINVAL;
	/* cookie, version, free_threaded, runtime_state{size, finalizing, interpreters_head} */
	o->version = w[1];
	o->free_threaded = w[2];
	o->interpreters_head = w[5];
	o->interp_next = w[8];
	/*
	 * interpreter_state{size, id, next, threads_head, ...} grows between versions (3.14 added
	 * threads_main before gc): find its GIL fields by their relations instead of by index:
	 * ceval_gil, gil_runtime_state = G, gil_runtime_state_enabled (an offset inside the GIL
	 * struct: 0), locked = G + 16, holder = G + 8 (+ 8 each when free-threaded).
	 */
	for (i = 10; i + 4 < nw && i < 40; i++) {
		g = w[i + 1];
		if (!g || w[i + 2] != 0 || w[i + 3] != g + GIL_LOCKED + 8 * !!o->free_threaded ||
		    w[i + 4] != g + GIL_HOLDER + 8 * !!o->free_threaded)
			continue;
		o->ceval_gil = w[i];
		o->gil_runtime_state = g;
		o->gil_locked = w[i + 3];
		o->gil_holder = w[i + 4];
		o->threads_head = w[9]; /* size, id, next, threads_head: stable prefix */
		break;
	}
	if (!o->gil_runtime_state)
		return -EINVAL;
	/* thread_state{size, prev = 0, next = 8, interp = 16, current_frame, thread_id, native} */
	for (j = i + 5; j + 6 < nw && j < i + 16; j++) {
		if (w[j + 1] != 0 || w[j + 2] != TS_NEXT || w[j + 3] != TS_INTERP)
			continue;
		o->ts_next = w[j + 2];
		o->ts_interp = w[j + 3];
		o->ts_thread_id = w[j + 5];
		o->ts_native_thread_id = w[j + 6];
		return 0;
	}
	return -EINVAL;
}

static const struct py_layout *layout_of(__u32 minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

static void set_status(struct gil_py *py, enum gil_py_status s, const char *note)
{
	py->status = s;
	snprintf(py->note, sizeof(py->note), "%s", note);
}

/* 3.13+: everything from _Py_DebugOffsets and the live main interpreter. */
static void inspect_debug_offsets(pid_t pid, const struct mem *m, struct gil_py *py)
{
	struct gil_debug_offsets o;
	__u8 buf[8 * 64];
	__u64 interp, gil, base;
	int ft;

	if (mem_read(m, py->runtime, buf, sizeof(buf)) ||
	    gil_debug_offsets__parse(buf, sizeof(buf), &o)) {
		set_status(py, GIL_PY_UNSUPPORTED, "_Py_DebugOffsets not understood");
		return;
	}
	py->version = (__u32)o.version;
	py->free_threaded = ft = o.free_threaded != 0;
	py->how = "debug_offsets";
	interp = main_interp(m, mem_u64(m, py->runtime + o.interpreters_head), o.interp_next);
	if (!interp) {
		set_status(py, GIL_PY_PENDING, "interpreter not initialised yet");
		return;
	}
	py->initialized = 1;
	gil = mem_u64(m, interp + o.ceval_gil);
	if (!gil) {
		/* Between the main interpreter's creation and _PyEval_InitGIL. */
		set_status(py, GIL_PY_PENDING, "interpreter starting: no GIL yet");
		return;
	}
	if (gil != interp + o.gil_runtime_state) {
		set_status(py, GIL_PY_UNSUPPORTED, "the main interpreter does not own its GIL");
		return;
	}
	py->gil = gil;
	base = gil + (ft ? 8 : 0);
	fill_cfg(py, base);
	if (ft) {
		__s32 enabled = 0;

		mem_read(m, gil, &enabled, sizeof(enabled));
		if (!enabled) {
			set_status(py, GIL_PY_NO_GIL, "free-threaded build: the GIL is disabled");
			return;
		}
	}
	switch (gil_shape(m, base, interp)) {
	case 1:
		break;
	case -EAGAIN:
		set_status(py, GIL_PY_PENDING, "interpreter starting: no GIL holder yet");
		return;
	default:
		set_status(py, GIL_PY_UNSUPPORTED, "the GIL's fields do not look right");
		return;
	}
	py->verified = 1;
	learn_tids(pid, m, py, interp, o.threads_head, (__u32)o.ts_thread_id,
		   (__u32)o.ts_native_thread_id);
	set_status(py, GIL_PY_READY, "");
}

/* 3.8-3.12: the per-version table, checked live; a search when the check fails. */
static void inspect_layout(pid_t pid, const struct mem *m, struct gil_py *py,
			   const struct elf_info *ei)
{
	const struct py_layout *l = layout_of(py->version >> 16 & 0xff);
	__u64 interp, gil, ceval_gil;
	__u8 *buf;
	int shape;

	if (!l) {
		set_status(py, GIL_PY_UNSUPPORTED, "no GIL layout known for this version");
		return;
	}
	py->how = "offsets";
	gil = py->runtime + l->rt_gil;
	interp = mem_u64(m, py->runtime + l->rt_interp_main);
	py->initialized = interp != 0;
	ceval_gil = l->interp_ceval_gil && interp ? mem_u64(m, interp + l->interp_ceval_gil) : gil;
	if (!ceval_gil)
		shape = -EAGAIN; /* 3.12: before _PyEval_InitGIL set interp->ceval.gil */
	else if (ceval_gil != gil)
		shape = 0;
	else
		shape = interp ? gil_shape(m, gil, interp) : -EAGAIN;
	if (shape == -EAGAIN) {
		/* Static memory: usable before the interpreter runs, checked once it does. */
		py->gil = gil;
		fill_cfg(py, gil);
		py->cfg.tid_off = l->ts_native ? l->ts_native : l->ts_thread_id;
		py->cfg.pthread_tid_off = l->ts_native ? 0 : GLIBC_TID_OFF;
		set_status(py, GIL_PY_READY, "not verified yet: interpreter starting");
		return;
	}
	if (shape != 1) {
		gil = 0;
		if (ei->rt_size && ei->rt_size <= (16u << 20) && (buf = malloc(ei->rt_size))) {
			if (!mem_read(m, py->runtime, buf, ei->rt_size))
				gil = gil_search(m, py->runtime, buf, ei->rt_size, interp);
			free(buf);
		}
		if (!gil) {
			set_status(py, GIL_PY_UNSUPPORTED,
				   "unknown _PyRuntime layout (the GIL was not found)");
			return;
		}
		py->how = "search";
	}
	py->gil = gil;
	py->verified = 1;
	fill_cfg(py, gil);
	learn_tids(pid, m, py, interp, l->interp_threads_head, l->ts_thread_id, l->ts_native);
	set_status(py, GIL_PY_READY, py->holder_known ? "" : "holder threads unknown");
}

/* Every file-backed mapping of PID, in address order. Returns how many, or negative errno. */
static int read_maps(pid_t pid, struct mapping **out)
{
	char path[64], line[PATH_MAX + 128];
	struct mapping *v = NULL, *nv;
	int n = 0, cap = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(fp);
				return -ENOMEM;
			}
			v = nv;
		}
		if (!parse_maps_line(line, &v[n]) && v[n].ino && v[n].path[0] == '/')
			n++;
	}
	fclose(fp);
	*out = v;
	return n;
}

/*
 * The file that defines _PyRuntime among PID's executable mappings: the executable itself
 * (python with libpython linked in) or a file named like python (libpython3.X.so). Returns 1
 * when found, 0 when PID is no python, negative errno.
 */
static int find_runtime(struct gil_finder *f, pid_t pid, struct gil_py *py, struct elf_info *out)
{
	char path[64], exe[PATH_MAX];
	struct mapping *maps = NULL, *mp;
	struct elf_info *ei;
	__u64 start;
	int n, i, j, found = 0;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = 0;
	n = read_maps(pid, &maps);
	if (n < 0)
		return n;
	for (i = 0; i < n && !found; i++) {
		const char *base = strrchr(maps[i].path, '/') + 1;

		mp = &maps[i];
		if (!mp->exec || (strcmp(mp->path, exe) && !strstr(base, "python")))
			continue;
		ei = hmap__get(f->elves, (struct hkey){ mp->dev, mp->ino }, 0);
		if (!ei) {
			struct elf_info tmp = { 0 };

			snprintf(py->open_path, sizeof(py->open_path),
				 "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
				 (unsigned long long)mp->end);
			elf_read_info(py->open_path, &tmp);
			tmp.name_minor = name_minor(mp->path, &tmp.name_ft);
			ei = hmap__get(f->elves, (struct hkey){ mp->dev, mp->ino }, 1);
			if (!ei) {
				free(maps);
				return -ENOMEM;
			}
			*ei = tmp;
		}
		if (!ei->has_runtime)
			continue;
		/* The lowest mapping of the file at offset 0 is where its first PT_LOAD went. */
		start = 0;
		for (j = 0; j < n; j++)
			if (maps[j].ino == mp->ino && maps[j].dev == mp->dev && !maps[j].off &&
			    (!start || maps[j].start < start))
				start = maps[j].start;
		if (!start)
			continue;
		*out = *ei;
		snprintf(py->open_path, sizeof(py->open_path), "/proc/%d/map_files/%llx-%llx", pid,
			 (unsigned long long)mp->start, (unsigned long long)mp->end);
		snprintf(py->object, sizeof(py->object), "%s", mp->path);
		py->dev = mp->dev;
		py->ino = mp->ino;
		/* ET_EXEC maps at its link address (bias 0); ET_DYN (PIE, .so) anywhere. */
		py->runtime = start - (ei->load_vaddr & ~0xfffull) + ei->rt_vaddr;
		found = 1;
	}
	free(maps);
	if (!found)
		py->open_path[0] = 0;
	return found;
}

/* Does the ELF file at PATH define _PyRuntime? If not, its libpython (DT_NEEDED) into LIB. */
static int exe_runtime(const char *path, char *lib, size_t len, char *runpath, size_t rlen)
{
	struct elf_info info = { 0 };
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dyn;
	Elf_Data *data;
	const char *name;
	int fd, found = 0;
	size_t i;
	Elf *e;

	if (elf_read_info(path, &info))
		return -ENOEXEC;
	if (info.has_runtime)
		return 1;
	lib[0] = runpath[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			if (!gelf_getdyn(data, i, &dyn))
				continue;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!name)
				continue;
			if (dyn.d_tag == DT_NEEDED && strstr(name, "libpython3.")) {
				snprintf(lib, len, "%s", name);
				found = 1;
			} else if (dyn.d_tag != DT_NEEDED) {
				snprintf(runpath, rlen, "%s", name);
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -ENOENT;
}

/* Try DIR/NAME ($ORIGIN in DIR = ORIGIN): 0 with OUT filled when it defines _PyRuntime. */
static int try_lib(const char *dir, size_t dlen, const char *origin, const char *name, char *out,
		   size_t len)
{
	struct elf_info info = { 0 };
	char d[PATH_MAX];

	if (dlen >= 7 && !strncmp(dir, "$ORIGIN", 7))
		snprintf(d, sizeof(d), "%s%.*s", origin, (int)(dlen - 7), dir + 7);
	else if (dlen >= 9 && !strncmp(dir, "${ORIGIN}", 9))
		snprintf(d, sizeof(d), "%s%.*s", origin, (int)(dlen - 9), dir + 9);
	else
		snprintf(d, sizeof(d), "%.*s", (int)dlen, dir);
	snprintf(out, len, "%s/%s", d, name);
	return !elf_read_info(out, &info) && info.has_runtime ? 0 : -ENOENT;
}

static int search_dirs(const char *list, const char *origin, const char *name, char *out,
		       size_t len)
{
	const char *p = list;
	size_t n;

	while (p && *p) {
		n = strcspn(p, ":");
		if (n && !try_lib(p, n, origin, name, out, len))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

int gil_python__interpreter_file(const char *exe, char *out, size_t len)
{
	static const char *const dirs = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
					"/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:"
					"/lib64:/usr/lib64:/lib:/usr/lib:/usr/local/lib";
	char lib[256], runpath[PATH_MAX], origin[PATH_MAX], *slash;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	err = exe_runtime(exe, lib, sizeof(lib), runpath, sizeof(runpath));
	if (err == 1) {
		snprintf(out, len, "%s", exe);
		return 0;
	}
	if (err)
		return err;
	snprintf(origin, sizeof(origin), "%s", exe);
	slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	/* ld.so's order, near enough: RUNPATH/RPATH, LD_LIBRARY_PATH, the default directories. */
	if (!search_dirs(runpath, origin, lib, out, len) ||
	    !search_dirs(getenv("LD_LIBRARY_PATH"), origin, lib, out, len) ||
	    !search_dirs(dirs, origin, lib, out, len))
		return 0;
	return -ENOENT;
}

int gil_finder__inspect(struct gil_finder *f, pid_t pid, struct gil_py *py)
{
	struct elf_info ei;
	struct mem m;
	char path[64], cookie[8];
	__u32 minor;
	int err;

	memset(py, 0, sizeof(*py));
	err = find_runtime(f, pid, py, &ei);
	if (err <= 0) {
		py->status = GIL_PY_NOT_PYTHON;
		return err;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	m.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m.fd < 0)
		return -errno;
	if (!mem_read(&m, py->runtime, cookie, sizeof(cookie)) && !memcmp(cookie, "xdebugpy", 8)) {
		inspect_debug_offsets(pid, &m, py);
		goto out;
	}
	if (ei.pyver_vaddr)
		mem_read(&m, ei.pyver_vaddr - ei.rt_vaddr + py->runtime, &py->version, 4);
	minor = py->version >> 16 & 0xff;
	if ((py->version >> 24) != 3) {
		minor = ei.name_minor;
		/* No version in the name: the size of _PyRuntime tells 3.8/3.9/3.10 apart. */
		for (size_t i = 0; !minor && i < sizeof(layouts) / sizeof(layouts[0]); i++)
			if (layouts[i].rt_size == ei.rt_size)
				minor = layouts[i].minor;
		py->version = minor ? (3u << 24 | minor << 16) : 0;
	}
	py->free_threaded = ei.name_ft;
	if (!minor)
		set_status(py, GIL_PY_UNSUPPORTED, "unknown CPython version");
	else if (minor < 8)
		set_status(py, GIL_PY_UNSUPPORTED, "CPython before 3.8 is not supported");
	else if (minor >= 13)
		set_status(py, GIL_PY_UNSUPPORTED, "CPython 3.13+ without _Py_DebugOffsets");
	else
		inspect_layout(pid, &m, py, &ei);
out:
	close(m.fd);
	return 0;
}
