// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unwind tables loaded into the BPF maps the native walk reads (unwind_load.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "array.h"
#include "env.h"
#include "hmap.h"
#include "human.h"
#include "mono_clock.h"
#include "msg.h"
#include "record_ctx.h"
#include "unwind_build.h"
#include "unwind_builder.h"
#include "unwind_load.h"
#include "unwind_store.h"

/* A file's table in unw_rows: loaded (nrows rows from row0), or why not (err < 0). */
struct load_file {
	__u32 row0, nrows;
	__u32 nsegs; /* where its mappings put its code (unwind_seg__bias) */
	struct unwind_seg segs[UNWIND_MAX_SEGS];
	int err;
	int tried;
	int pending; /* with the builder: its mappings wait (struct waiter) */
	int retries; /* builds whose open failed as the process went (it is tried again) */
};

/* A process's mapping of a file whose table is being built: registered once it is. */
struct waiter {
	__u64 dev, ino;
	pid_t pid;
	__u64 start, end, pgoff;
};

/*
 * A build that reads for this long is left behind: its file's stacks stop there
 * (BPFSIGHT_UNWIND_WAIT_S=N seconds, 1 to 3600, instead).
 */
#define STUCK_S	     30
#define MAX_RETRIES  3
#define MAP_STEP     (8u << 20)	   /* unw_rows mapped 8 MiB at a time (map_rows) */
#define SAY_BUSY_NS  1000000000ull /* a build under way at the stop is said past this */
#define WAIT_STEP_NS 100000000ull /* a wait for builds looks for one that does not end this often */

struct unwind_load {
	int rows_fd, procs_fd;
	struct bs_unwind_row *rows; /* unw_rows: its address range, mapped up to MAPPED bytes */
	__u64 mapped, size;
	__u32 used, cap;
	struct hmap *files; /* (dev, ino) -> struct load_file */
	struct hmap *ids;   /* hash of a build id -> struct load_file: a copy of a file shares */
	struct hmap *procs; /* pid -> struct bs_unw_proc, as in unw_procs */
	struct unwind_load_usage use;
	struct unwind_builder *builder; /* NULL: tables built in the caller (synchronous) */
	struct waiter *waiters;
	size_t nwait, capwait;
	__u64 stuck_ns;
	const char *store; /* the tables' store (unwind_store.h), NULL: off */
	char store_buf[PATH_MAX];
	pid_t *dirty; /* processes whose list changed since it was last pushed to unw_procs */
	size_t ndirty, capdirty;
};

static __u64 stuck_ns(void)
{
	const char *v = env__trusted("BPFSIGHT_UNWIND_WAIT_S");
	char *end;
	long n = v ? strtol(v, &end, 10) : 0;

	if (v && (*end || n < 1 || n > 3600)) {
		pr_warn("BPFSIGHT_UNWIND_WAIT_S=%s is not 1 to 3600 seconds: %d used\n", v,
			STUCK_S);
		n = 0;
	}
	return (__u64)(n ?: STUCK_S) * 1000000000ull;
}

static __u64 round_up(__u64 n, __u64 to)
{
	return (n + to - 1) / to * to;
}

int unwind_load__create(int tables, __u64 rows, int *rows_fd, int *procs_fd, int *cache_fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_map_create_opts, no_prealloc, .map_flags = BPF_F_NO_PREALLOC);

	/* Without tables the walk never reads a row: one, not the cap's worth of memory. */
	*rows_fd = bpf_map_create(
		BPF_MAP_TYPE_ARRAY, "unw_rows", sizeof(__u32), sizeof(struct bs_unw_pair),
		!tables ? 1 : rows ? rows / 2 : record_ctx__map_entries("unw_rows") ?: BS_UNW_ROWS / 2,
		tables ? &mmapable : NULL);
	if (*rows_fd < 0)
		return -errno;
	*procs_fd = bpf_map_create(
		BPF_MAP_TYPE_HASH, "unw_procs", sizeof(__u32), sizeof(struct bs_unw_proc),
		record_ctx__map_entries("unw_procs") ?: BS_UNW_PROCS, &no_prealloc);
	if (*procs_fd < 0)
		return -errno;
	*cache_fd =
		bpf_map_create(BPF_MAP_TYPE_ARRAY, "unw_cache", sizeof(__u32),
			       sizeof(struct bs_unw_cache_ent), tables ? BS_UNW_CACHE : 1, NULL);
	return *cache_fd < 0 ? -errno : 0;
}

int unwind_load__has_tables(int rows_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(rows_fd, &info, &len) && (info.map_flags & BPF_F_MMAPABLE);
}

struct unwind_load *unwind_load__new(int rows_fd, int procs_fd, int async, int *err)
{
	struct unwind_load *u = calloc(1, sizeof(*u));
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *rows;

	*err = -ENOMEM;
	if (!u)
		return NULL;
	u->rows_fd = rows_fd;
	u->procs_fd = procs_fd;
	u->files = hmap__new(sizeof(struct load_file));
	u->ids = hmap__new(sizeof(struct load_file));
	u->procs = hmap__new(sizeof(struct bs_unw_proc));
	if (!u->files || !u->ids || !u->procs)
		goto fail;
	*err = bpf_obj_get_info_by_fd(rows_fd, &info, &len) ? -errno : 0;
	if (*err)
		goto fail;
	/* Only reserved: mapping the whole array at once would map its every page now. */
	u->size = round_up((__u64)info.max_entries * sizeof(struct bs_unw_pair),
			   sysconf(_SC_PAGESIZE));
	rows = mmap(NULL, u->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rows == MAP_FAILED) {
		*err = -errno;
		goto fail;
	}
	u->rows = rows;
	u->cap = info.max_entries * 2;
	/* Without a thread, tables are built in the caller as before. */
	if (async)
		u->builder = unwind_builder__new();
	u->stuck_ns = stuck_ns();
	u->store = unwind_store__dir(u->store_buf, sizeof(u->store_buf));
	return u;
fail:
	unwind_load__free(u);
	return NULL;
}

void unwind_load__free(struct unwind_load *u)
{
	const char *shown;

	if (!u)
		return;
	if (u->builder) {
		__u64 dev, ino,
			ns = unwind_builder__busy(u->builder, mono_now_ns(), &dev, &ino, &shown);

		/* Cut stacks for a moment are a build's usual wait; a read this long is not. */
		if (ns >= SAY_BUSY_NS)
			pr_warn("unwind tables: reading %s had not ended after %.1f s as the "
				"recording stopped (a file system that does not answer?): its "
				"stacks stopped there\n",
				shown, ns / 1e9);
		unwind_builder__free(u->builder);
	}
	free(u->waiters);
	free(u->dirty);
	if (u->rows)
		munmap(u->rows, u->size);
	hmap__free(u->files);
	hmap__free(u->ids);
	hmap__free(u->procs);
	free(u);
}

static __u64 id_hash(const char *id)
{
	__u64 h = 1469598103934665603ull;

	for (; *id; id++)
		h = (h ^ (__u8)*id) * 1099511628211ull;
	return h;
}

/*
 * unw_rows mapped into the reserved range up to END bytes at least, a step at a time: a
 * recording maps (and unmaps) the pages its tables fill, not the whole cap.
 */
static int map_rows(struct unwind_load *u, __u64 end)
{
	__u64 to = round_up(end, MAP_STEP);
	void *p;

	if (end <= u->mapped)
		return 0;
	if (to > u->size)
		to = u->size;
	p = mmap((char *)u->rows + u->mapped, to - u->mapped, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, u->rows_fd, u->mapped);
	if (p == MAP_FAILED)
		return -errno;
	u->mapped = to;
	return 0;
}

/* The rows' map is the cap on the tables' memory: reaching it is said, once. */
static int no_room(struct unwind_load *u, const char *shown, __u32 n)
{
	char size[32];

	if (!u->use.full++)
		pr_warn("unwind tables: %s's %u rows do not fit in the %u left of %u (%s): "
			"its stacks stop there as without a table "
			"(record --unwind=tables:SIZE gives them more: 12 bytes a row)\n",
			shown, n, u->cap - u->used, u->cap,
			human__bytes((double)u->cap * sizeof(struct bs_unwind_row), size,
				     sizeof(size)));
	return -ENOSPC;
}

/*
 * How the table of file SHOWN was had (enum unwind_store_how, WHY: a refused entry's reason)
 * and in how long (its stats.build_ns), counted apart: read from the store, or built.
 */
static void count_how(struct unwind_load *u, const char *shown, const struct unwind_table *t,
		      int err, int how, const char *why)
{
	if (how == UNWIND_STORE_READ) {
		u->use.cached++;
		u->use.cache_ns += t->stats.build_ns;
		return;
	}
	u->use.build_ns += t->stats.build_ns;
	u->use.built += !err;
	if (how == UNWIND_STORE_REFUSED) {
		u->use.refused++;
		pr_warn("unwind tables: the stored table of %s was refused (%s): built again "
			"(unwind tables' store: %s)\n",
			shown, why, u->store ? u->store : "off");
	}
}

/*
 * T, the table of file SHOWN (or ERR: none), into unw_rows unless a file with its build id
 * has one, or it was built with frame pointers (no rows: its mappings say the walk takes
 * them, nrows 0); F says where, or why not. The vDSO's (GIVEN: built by the caller) keeps
 * its rows: its clock_gettime helpers are where samples land, and what their frame pointers
 * miss there is what its table was made for.
 */
static void install(struct unwind_load *u, const char *shown, const struct unwind_table *t, int err,
		    int given, struct load_file *f)
{
	struct load_file *same = NULL;

	f->nsegs = t->nsegs;
	memcpy(f->segs, t->segs, sizeof(f->segs));
	f->err = err;
	if (err) {
		u->use.failed++;
		return;
	}
	if (!given && unwind_table__frame_pointers(t)) {
		f->row0 = f->nrows = 0;
		u->use.fp++;
		return;
	}
	if (t->n > BS_UNW_MAX_ROWS) {
		f->err = -EFBIG;
		u->use.failed++;
		return;
	}
	if (t->build_id[0])
		same = hmap__get(u->ids, (struct hkey){ id_hash(t->build_id), 0 }, 1);
	if (same && same->nrows) {
		f->row0 = same->row0;
		f->nrows = same->nrows;
	} else if (t->n > u->cap - u->used) {
		f->err = no_room(u, shown, t->n);
		u->use.failed++;
	} else if ((f->err = map_rows(u, (__u64)(u->used + t->n) * sizeof(*u->rows)))) {
		pr_warn("unwind tables: cannot map the rows of %s: %s: its stacks stop at the first "
			"frame without a frame pointer\n",
			shown, strerror(-f->err));
		u->use.failed++;
	} else {
		memcpy(u->rows + u->used, t->rows, unwind_table__bytes(t));
		f->row0 = u->used;
		f->nrows = t->n;
		u->used += t->n;
		u->use.files++;
		if (same)
			*same = *f;
	}
}

/* M's file's table, had now (the vDSO's is built already), into unw_rows. */
static void load(struct unwind_load *u, const struct unwind_mapping *m, struct load_file *f)
{
	struct unwind_table built = {};
	int err = 0, how;
	char why[96];

	if (!m->table) {
		err = unwind_store__table(u->store, m->open_path, m->root, &built, &how, why,
					  sizeof(why));
		count_how(u, m->shown, &built, err, how, why);
	}
	install(u, m->shown, m->table ?: &built, err, !!m->table, f);
	unwind_table__free(&built);
}

/* PID's mapping W waits for its file's table. 0 or -ENOMEM. */
static int wait_for(struct unwind_load *u, const struct waiter *w)
{
	for (size_t i = 0; i < u->nwait; i++)
		if (u->waiters[i].pid == w->pid && u->waiters[i].start == w->start)
			return 0;
	if (array__grow((void **)&u->waiters, u->nwait, &u->capwait, sizeof(*w)))
		return -ENOMEM;
	u->waiters[u->nwait++] = *w;
	return 0;
}

int unwind_load__tried(struct unwind_load *u, const struct unwind_mapping *m)
{
	struct load_file *f = hmap__get(u->files, (struct hkey){ m->dev, m->ino }, 0);

	return f && f->tried;
}

/* PID's mappings as user space has them, into unw_procs: one update, so BPF sees the old list
 * or the new one, never half of it. */
static int push(struct unwind_load *u, pid_t pid)
{
	struct bs_unw_proc *p = hmap__get(u->procs, (struct hkey){ (__u64)pid, 0 }, 0);
	__u32 key = pid;

	if (!p)
		return 0;
	return bpf_map_update_elem(u->procs_fd, &key, p, BPF_ANY) ? -errno : 0;
}

/* PID's list changed: pushed at the next flush. */
static void mark(struct unwind_load *u, pid_t pid)
{
	for (size_t i = 0; i < u->ndirty; i++)
		if (u->dirty[i] == pid)
			return;
	if (array__grow((void **)&u->dirty, u->ndirty, &u->capdirty, sizeof(*u->dirty)))
		push(u, pid); /* no room to remember it: now */
	else
		u->dirty[u->ndirty++] = pid;
}

/* Every list changed since, into unw_procs. */
static void flush(struct unwind_load *u)
{
	for (size_t i = 0; i < u->ndirty; i++)
		push(u, u->dirty[i]);
	u->ndirty = 0;
}

/* PID's mapping [START, END) of file F from offset PGOFF joins PID's (unw_procs at the next
 * flush): 1 when it is new, 0 when it was there, or -errno. */
static int add_mapping(struct unwind_load *u, pid_t pid, __u64 start, __u64 end, __u64 pgoff,
		       const struct load_file *f)
{
	struct bs_unw_proc *p;
	__u64 bias;
	__u32 i;

	if (unwind_seg__bias(f->segs, f->nsegs, start, end, pgoff, &bias))
		return -ENOENT; /* none of its code: not a mapping a frame can be in */
	p = hmap__get(u->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	if (!p)
		return -ENOMEM;
	for (i = 0; i < p->n && p->m[i].start < start; i++)
		;
	if (i < p->n && p->m[i].start < end)
		return 0; /* there already (or overlapping one that is: the maps are rescanned) */
	if (i && p->m[i - 1].end > start)
		return 0;
	if (p->n >= BS_UNW_MAPS_USED)
		return -E2BIG;
	memmove(&p->m[i + 1], &p->m[i], (p->n - i) * sizeof(p->m[0]));
	p->m[i] = (struct bs_unw_map){
		.start = start, .end = end, .bias = bias, .row0 = f->row0, .nrows = f->nrows
	};
	p->n++;
	return 1;
}

int unwind_load__add(struct unwind_load *u, pid_t pid, const struct unwind_mapping *m)
{
	struct load_file *f = hmap__get(u->files, (struct hkey){ m->dev, m->ino }, 1);
	int err;

	if (!f)
		return -ENOMEM;
	if (!f->tried) {
		f->tried = 1;
		if (!m->table && u->builder &&
		    !unwind_builder__queue(u->builder, m->dev, m->ino, m->open_path, m->root,
					   m->shown, u->store))
			f->pending = 1;
		else
			load(u, m, f);
	}
	if (f->pending)
		return wait_for(
			u, &(struct waiter){ m->dev, m->ino, pid, m->start, m->end, m->pgoff });
	if (f->err)
		return f->err;
	err = add_mapping(u, pid, m->start, m->end, m->pgoff, f);
	if (err > 0)
		mark(u, pid);
	return err < 0 ? err : 0;
}

void unwind_load__flush(struct unwind_load *u)
{
	flush(u);
}

/* File (DEV, INO) is done with (F: loaded, or not): its waiting mappings registered or let go. */
static void settle(struct unwind_load *u, __u64 dev, __u64 ino, const struct load_file *f)
{
	size_t k = 0;

	for (size_t i = 0; i < u->nwait; i++) {
		const struct waiter *w = &u->waiters[i];

		if (w->dev != dev || w->ino != ino)
			u->waiters[k++] = *w;
		else if (f && !f->err && add_mapping(u, w->pid, w->start, w->end, w->pgoff, f) > 0)
			mark(u, w->pid);
	}
	u->nwait = k;
}

/* A finished build: its table installed, its waiting mappings registered. */
static void finished(struct unwind_load *u, struct unwind_build_job *j)
{
	struct load_file *f = hmap__get(u->files, (struct hkey){ j->dev, j->ino }, 0);

	count_how(u, j->shown, &j->t, j->err, j->how, j->why);
	if (!f || !f->pending)
		return; /* left behind as stuck, then it came back: decided already */
	f->pending = 0;
	/*
	 * The open failed because the process that mapped it went (its /proc/PID/map_files
	 * entry with it) while the build waited its turn: the next process with the file tries
	 * again rather than leave the file without a table for the whole recording.
	 */
	if ((j->err == -ENOENT || j->err == -ESRCH) && j->open_path &&
	    !strncmp(j->open_path, "/proc/", 6) && ++f->retries < MAX_RETRIES) {
		f->tried = 0;
		settle(u, j->dev, j->ino, NULL);
		return;
	}
	install(u, j->shown, &j->t, j->err, 0, f);
	settle(u, j->dev, j->ino, f);
}

void unwind_load__poll(struct unwind_load *u)
{
	struct unwind_build_job *j;
	struct unwind_builder *nb;
	struct load_file *f;
	const char *shown;
	__u64 dev, ino;

	if (!u->builder)
		return;
	while ((j = unwind_builder__done(u->builder))) {
		finished(u, j);
		unwind_build_job__free(j);
	}
	flush(u);
	if (unwind_builder__busy(u->builder, mono_now_ns(), &dev, &ino, &shown) < u->stuck_ns)
		return;
	f = hmap__get(u->files, (struct hkey){ dev, ino }, 0);
	if (f && f->pending) {
		pr_warn("unwind tables: reading %s has not ended in %llu s (a file system that "
			"does not answer?): left behind, its stacks stop there as without a "
			"table (BPFSIGHT_UNWIND_WAIT_S)\n",
			shown, (unsigned long long)(u->stuck_ns / 1000000000ull));
		f->pending = 0;
		f->err = -ETIMEDOUT;
		u->use.failed++;
		settle(u, dev, ino, NULL);
		flush(u);
	}
	nb = unwind_builder__replace(u->builder);
	if (nb)
		u->builder = nb;
}

/* Mappings of PID (any process: PID 0) still waiting for their file's table. */
static size_t waiting(const struct unwind_load *u, pid_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < u->nwait; i++)
		n += !pid || u->waiters[i].pid == pid;
	return n;
}

size_t unwind_load__wait(struct unwind_load *u, pid_t pid, __u64 deadline)
{
	struct unwind_builder *urged = NULL;
	__u64 now;

	for (;;) {
		/* A build that does not end is left behind here too, at its time. */
		unwind_load__poll(u);
		now = mono_now_ns();
		if (!waiting(u, pid) || !u->builder || now >= deadline)
			break;
		if (urged != u->builder)
			unwind_builder__urgent(urged = u->builder, 1);
		unwind_builder__wait(u->builder,
				     deadline - now > WAIT_STEP_NS ? now + WAIT_STEP_NS : deadline);
	}
	if (urged && urged == u->builder)
		unwind_builder__urgent(urged, 0);
	return waiting(u, pid);
}

__u32 unwind_load__pending(struct unwind_load *u)
{
	return u->builder ? unwind_builder__pending(u->builder) : 0;
}

/* PID's mappings still waiting for their tables, dropped. */
static void drop_waiters(struct unwind_load *u, pid_t pid)
{
	size_t k = 0;

	for (size_t i = 0; i < u->nwait; i++)
		if (u->waiters[i].pid != pid)
			u->waiters[k++] = u->waiters[i];
	u->nwait = k;
}

void unwind_load__copy(struct unwind_load *u, pid_t parent, pid_t child)
{
	struct bs_unw_proc *p = hmap__get(u->procs, (struct hkey){ (__u64)parent, 0 }, 0), *c;

	/* The parent's mappings still waiting for their tables wait for the child too. */
	for (size_t i = 0, n = u->nwait; i < n; i++)
		if (u->waiters[i].pid == parent) {
			struct waiter w = u->waiters[i];

			w.pid = child;
			wait_for(u, &w);
		}
	if (!p || !(c = hmap__get(u->procs, (struct hkey){ (__u64)child, 0 }, 1)))
		return;
	/* hmap__get may have moved P: looked up again. BPF copied it at the fork itself. */
	p = hmap__get(u->procs, (struct hkey){ (__u64)parent, 0 }, 0);
	*c = *p;
}

void unwind_load__reset(struct unwind_load *u, pid_t pid)
{
	struct bs_unw_proc *p = hmap__get(u->procs, (struct hkey){ (__u64)pid, 0 }, 0);

	drop_waiters(u, pid);
	if (p && p->n) {
		p->n = 0;
		mark(u, pid);
	}
}

void unwind_load__forget(struct unwind_load *u, pid_t pid)
{
	__u32 key = pid;

	drop_waiters(u, pid);
	if (!hmap__get(u->procs, (struct hkey){ (__u64)pid, 0 }, 0))
		return;
	hmap__del(u->procs, (struct hkey){ (__u64)pid, 0 });
	bpf_map_delete_elem(u->procs_fd, &key);
}

const struct bs_unwind_row *unwind_load__row(struct unwind_load *u, pid_t pid, __u64 addr,
					     int exact, const struct bs_unw_map **map)
{
	const struct bs_unw_proc *p = hmap__get(u->procs, (struct hkey){ (__u64)pid, 0 }, 0);
	const struct bs_unw_map *m = NULL;
	__u64 at = addr - !exact, pc;
	__u32 lo, hi;

	for (__u32 i = 0; p && i < p->n && !m; i++)
		if (at >= p->m[i].start && at < p->m[i].end)
			m = &p->m[i];
	*map = m;
	if (!m || (pc = at - m->bias) >> 32)
		return NULL;
	/* The last row with pc <= PC, as the BPF walk finds it. */
	lo = m->row0;
	hi = m->row0 + m->nrows;
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (u->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > m->row0 ? &u->rows[lo - 1] : NULL;
}

void unwind_load__usage(const struct unwind_load *u, struct unwind_load_usage *out)
{
	*out = u->use;
	/* Files still being built needed a table and have none (yet): their stacks stop. */
	out->failed += unwind_load__pending((struct unwind_load *)u);
	out->procs = hmap__count(u->procs);
	out->rows = u->used;
	out->cap = u->cap;
	out->cap_bytes = (__u64)u->cap * sizeof(struct bs_unwind_row);
	out->bytes = (__u64)u->used * sizeof(struct bs_unwind_row);
}
