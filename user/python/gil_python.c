// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Locating a live CPython's GIL from outside the process; see gil_python.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "elf_syms.h"
#include "gil_python.h"

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

/* struct _gil_runtime_state, the same from 3.8 to 3.15 (after `int enabled` when free-threaded). */
#define GIL_INTERVAL	 0
#define GIL_HOLDER	 8
#define GIL_LOCKED	 16
#define GIL_COND	 32
#define GIL_MUTEX	 80  /* after a 48-byte pthread_cond_t */
#define GIL_SWITCH_MUTEX 168 /* after switch_cond (FORCE_SWITCHING, always on) */
#define GIL_SPAN	 208
#define TS_NEXT		 8 /* PyThreadState: prev, next, interp: the same in every version */
#define TS_INTERP	 16

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

int gil_pyfile__read(const struct elf_syms *syms, const char *shown, struct gil_pyfile *pf)
{
	struct elf_sym sym;

	memset(pf, 0, sizeof(*pf));
	if (elf_syms__find_data(syms, "_PyRuntime", &sym))
		return -ENOENT;
	pf->rt_vaddr = sym.vaddr;
	pf->rt_size = sym.size;
	if (!elf_syms__find_data(syms, "Py_Version", &sym))
		pf->pyver_vaddr = sym.vaddr;
	if (!elf_syms__find_data(syms, "PyCode_Type", &sym))
		pf->code_type_vaddr = sym.vaddr;
	pf->name_minor = name_minor(shown, &pf->name_ft);
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
	struct py_dbg o;
	__u8 buf[PY_DBG_BYTES];
	__u64 interp, gil, base;
	char why[160];
	int ft, err;

	if (mem_read(m, py->runtime, buf, sizeof(buf))) {
		set_status(py, GIL_PY_UNSUPPORTED, "_Py_DebugOffsets not readable");
		return;
	}
	err = py_dbg__parse(buf, sizeof(buf), &o, why, sizeof(why));
	py->version = o.version;
	py->free_threaded = o.free_threaded;
	if (err) {
		set_status(py, GIL_PY_UNSUPPORTED,
			   err == -ENOTSUP ? why : "its _Py_DebugOffsets are cut short");
		return;
	}
	py->dbg = o;
	ft = o.free_threaded;
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
	py->interp = interp;
	py->threads_head_off = (__u32)o.threads_head;
	learn_tids(pid, m, py, interp, o.threads_head, o.ts_thread_id, o.ts_native_thread_id);
	set_status(py, GIL_PY_READY, py->holder_known ? "" : "holder threads unknown");
}

/* 3.8-3.12: the per-version table, checked live; a search when the check fails. */
static void inspect_layout(pid_t pid, const struct mem *m, struct gil_py *py,
			   const struct gil_pyfile *pf)
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
		if (pf->rt_size && pf->rt_size <= (16u << 20) && (buf = malloc(pf->rt_size))) {
			if (!mem_read(m, py->runtime, buf, pf->rt_size))
				gil = gil_search(m, py->runtime, buf, pf->rt_size, interp);
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
	py->interp = interp;
	py->threads_head_off = l->interp_threads_head;
	learn_tids(pid, m, py, interp, l->interp_threads_head, l->ts_thread_id, l->ts_native);
	set_status(py, GIL_PY_READY, py->holder_known ? "" : "holder threads unknown");
}

/*
 * The GIL's fields are read from a running interpreter, which may change them between two
 * reads (a hand-off mid-look): a look that found them wrong is read again before giving up.
 */
#define LOOK_TRIES    5
#define LOOK_RETRY_NS 10000000

static int misread(const struct gil_py *py)
{
	return py->status == GIL_PY_UNSUPPORTED &&
	       (strstr(py->note, "the GIL was not found") || strstr(py->note, "do not look right"));
}

int gil_python__inspect(pid_t pid, const struct gil_pyfile *pf, __u64 runtime, struct gil_py *py)
{
	struct mem m;
	char path[64], cookie[8];
	__u32 minor;

	memset(py, 0, sizeof(*py));
	py->runtime = runtime;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	m.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m.fd < 0)
		return -errno;
	if (!mem_read(&m, py->runtime, cookie, sizeof(cookie)) &&
	    !memcmp(cookie, PY_DBG_COOKIE, 8)) {
		for (int i = 0; i < LOOK_TRIES; i++) {
			inspect_debug_offsets(pid, &m, py);
			if (!misread(py))
				break;
			nanosleep(&(struct timespec){ .tv_nsec = LOOK_RETRY_NS }, NULL);
		}
		goto out;
	}
	if (pf->pyver_vaddr)
		mem_read(&m, pf->pyver_vaddr - pf->rt_vaddr + py->runtime, &py->version, 4);
	minor = py->version >> 16 & 0xff;
	if ((py->version >> 24) != 3) {
		minor = pf->name_minor;
		/* No version in the name: the size of _PyRuntime tells 3.8/3.9/3.10 apart. */
		for (size_t i = 0; !minor && i < sizeof(layouts) / sizeof(layouts[0]); i++)
			if (layouts[i].rt_size == pf->rt_size)
				minor = layouts[i].minor;
		py->version = minor ? (3u << 24 | minor << 16) : 0;
	}
	py->free_threaded = pf->name_ft;
	if (!minor)
		set_status(py, GIL_PY_UNSUPPORTED, "unknown CPython version");
	else if (minor < 8)
		set_status(py, GIL_PY_UNSUPPORTED, "CPython before 3.8 is not supported");
	else if (minor >= 13)
		set_status(
			py, GIL_PY_UNSUPPORTED,
			"its _PyRuntime does not start with _Py_DebugOffsets (no \"" PY_DBG_COOKIE
			"\" cookie)");
	else
		for (int i = 0; i < LOOK_TRIES; i++) {
			inspect_layout(pid, &m, py, pf);
			if (!misread(py))
				break;
			nanosleep(&(struct timespec){ .tv_nsec = LOOK_RETRY_NS }, NULL);
		}
	if (misread(py)) /* after every try: say how often it was read */
		snprintf(py->note + strlen(py->note), sizeof(py->note) - strlen(py->note),
			 " (read %d times, %d ms apart)", LOOK_TRIES, LOOK_RETRY_NS / 1000000);
out:
	close(m.fd);
	return 0;
}

int gil_python__is_interpreter(const char *shown, const char *exe)
{
	const char *base = strrchr(shown, '/');

	return !strcmp(shown, exe) || strstr(base ? base + 1 : shown, "python");
}
