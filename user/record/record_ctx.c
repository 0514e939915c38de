// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The services a family calls during a recording: write and intern records, count losses,
 * drain the ring buffer from a stop hook, prepare a BPF object to share the common maps.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mono_clock.h"
#include "family.h"
#include "family_record.h"
#include "shim_records.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "ring_pump.h"
#include "string_pool.h"
#include "msg.h"

void record_ctx__hdr(struct bs_hdr *h, __u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts)
{
	h->type = type;
	h->size = size;
	h->cpu = 0;
	h->pid = pid;
	h->tid = tid;
	h->ts = ts ? ts : mono_now_ns();
}

int record_ctx__write(struct record_ctx *ctx, const void *rec)
{
	int err = ctx->out.write ? ctx->out.write(ctx->out.arg, rec) : 0;

	if (err > 0) { /* an event of a range whose file is closed: counted, as a loss */
		ctx->lost_user[loss__key(loss__block_family(((const struct bs_hdr *)rec)->type),
					 BS_LOSS_CAPTURE_LATE)]++;
		return 0;
	}
	if (err && !ctx->write_err)
		ctx->write_err = err;
	return err;
}

__u32 record_ctx__intern(struct record_ctx *ctx, const char *s)
{
	struct bs_string *r;
	int is_new;
	__u32 id, len, size;

	if (!s || !*s)
		return 0;
	id = string_pool__find(ctx->strings, s);
	if (id)
		return id;
	len = strlen(s);
	/* Names a traced process makes up (generated code, renamed threads) are kept to a bound. */
	if (string_pool__bytes(ctx->strings) + len + 1 > RECORD_STRINGS_MAX_BYTES) {
		record_ctx__lost(ctx, NULL, BS_LOSS_STRINGS_CAPPED, 1);
		return 0;
	}
	id = string_pool__intern(ctx->strings, s, &is_new);
	if (!id || !is_new)
		return id;
	if (len > 60000) /* a record's size is a u16 */
		len = 60000;
	size = (sizeof(*r) + len + 7) & ~7u;
	r = calloc(1, size);
	if (!r)
		return 0;
	record_ctx__hdr(&r->h, BS_REC_STRING, size, 0, 0, 0);
	r->id = id;
	r->len = len;
	memcpy(r + 1, s, len);
	record_ctx__write(ctx, r);
	free(r);
	return id;
}

int record_ctx__own_process(struct record_ctx *ctx, pid_t pid)
{
	__u32 key = BS_CTL_OWN_PID, v = (__u32)pid;

	if (ctx->control_fd < 0)
		return -EBADF;
	return bpf_map_update_elem(ctx->control_fd, &key, &v, BPF_ANY) ? -errno : 0;
}

void record_ctx__lost(struct record_ctx *ctx, const char *family, __u32 cause, __u64 n)
{
	const struct family *f = family ? family__find(family) : loss_cause__owner(cause);

	if (cause < BS_LOSS_MAX)
		ctx->lost_user[loss__key(f, cause)] += n;
}

/*
 * libbpf's ring reads run until the ring is empty, which it never is while producers outrun
 * the reader: the callback ends a read after MAX records by returning an error, after
 * libbpf has moved past the record (libbpf's ringbuf_process_ring), so none is read twice.
 */
int record_ctx__read(struct record_ctx *ctx, int timeout_ms, long max)
{
	long n;

	if (!ctx->pump || max <= 0)
		return 0;
	ctx->rb_left = max;
	n = ring_pump__read(ctx->pump, timeout_ms, max);
	ctx->rb_left = 0;
	return n;
}

int record_ctx__poll(struct record_ctx *ctx, int timeout_ms)
{
	return record_ctx__read(ctx, timeout_ms, RECORD_CTX_BATCH);
}

void record_ctx__stop_producers(struct record_ctx *ctx, __u64 by)
{
	__u32 zero = 0, stopped = BS_CTL_STOPPED | BS_CTL_ENDED;

	ctx->stop_by = by;
	if (ctx->control_fd >= 0)
		bpf_map_update_elem(ctx->control_fd, &zero, &stopped, BPF_ANY);
}

int record_ctx__must_stop(struct record_ctx *ctx)
{
	return ctx->stop_by || (ctx->stop_flag && *ctx->stop_flag) ||
	       (ctx->end_ns && mono_now_ns() >= ctx->end_ns);
}

void record_ctx__attach_failed(struct record_ctx *ctx, const char *family, const char *what,
			       int err)
{
	pr_warn("cannot attach %s: %s\n", what, strerror(-err));
	record_ctx__lost(ctx, family, BS_LOSS_ATTACH, 1);
}

/*
 * BPFSIGHT_MAP_ENTRIES=NAME=N[,NAME=N...]: the cap of the maps named NAME, in every family's
 * object and among the shared maps. The tests shrink a map this way to fill it for real and
 * check that what does not fit is counted (target_map_full, task_map_full); an operator may
 * grow one. 0 when NAME is not named (or N is not a positive number).
 */
__u32 record_ctx__map_entries(const char *name)
{
	const char *env = secure_getenv("BPFSIGHT_MAP_ENTRIES");
	size_t len = strlen(name);

	for (const char *p = env; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		char *end;
		unsigned long n;

		if (strncmp(p, name, len) || p[len] != '=')
			continue;
		n = strtoul(p + len + 1, &end, 10);
		if ((*end == ',' || !*end) && n > 0 && n <= UINT32_MAX)
			return (__u32)n;
	}
	return 0;
}

int record_ctx__prepare(struct record_ctx *ctx, struct bpf_object *obj)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		size_t n = strlen(name);
		int is_btf = n > 4 && !strcmp(name + n - 4, "_btf");
		int is_raw = n > 4 && !strcmp(name + n - 4, "_raw");

		if ((is_btf && !ctx->use_btf) || (is_raw && ctx->use_btf))
			bpf_program__set_autoload(prog, false);
	}
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		int fd = -1;

		if (!strcmp(name, "events"))
			fd = ctx->events_fd;
		else if (!strcmp(name, "targets"))
			fd = ctx->targets_fd;
		else if (!strcmp(name, "excluded"))
			fd = ctx->excluded_fd;
		else if (!strcmp(name, "lost"))
			fd = ctx->lost_fd;
		else if (!strcmp(name, "control"))
			fd = ctx->control_fd;
		else if (!strcmp(name, "py_procs"))
			fd = ctx->py_procs_fd;
		else if (!strcmp(name, "py_codes"))
			fd = ctx->py_codes_fd;
		else if (!strcmp(name, "unw_rows"))
			fd = ctx->unw_rows_fd;
		else if (!strcmp(name, "unw_procs"))
			fd = ctx->unw_procs_fd;
		else if (!strcmp(name, "unw_cache"))
			fd = ctx->unw_cache_fd;
		if (fd < 0) {
			__u32 n = record_ctx__map_entries(name);

			if (n && bpf_map__type(map) != BPF_MAP_TYPE_TASK_STORAGE &&
			    (err = bpf_map__set_max_entries(map, n)))
				return err;
			continue;
		}
		err = bpf_map__reuse_fd(map, fd);
		if (err)
			return err;
	}
	return 0;
}

int record_ctx__pick_task_storage(struct record_ctx *ctx, struct bpf_object *obj,
				  struct bpf_map *task_map, struct bpf_map *hash_map)
{
	struct bpf_program *prog;
	int task_storage, err;

	task_storage = ctx->use_btf && kfeature__has(KF_TASK_STORAGE);
	if (ctx->use_btf && !task_storage) {
		bpf_object__for_each_program(prog, obj) {
			const char *name = bpf_program__name(prog);
			size_t n = strlen(name);
			int raw = n > 4 && !strcmp(name + n - 4, "_raw");

			err = bpf_program__set_autoload(prog, raw);
			if (err)
				return err;
		}
	}
	err = bpf_map__set_autocreate(task_map, task_storage);
	if (!err)
		err = bpf_map__set_autocreate(hash_map, !task_storage);
	return err;
}

int record_ctx__run_iter(struct bpf_link *link, const char *what)
{
	char buf[64];
	ssize_t n;
	int fd, err = 0;

	if (!link)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot %s: %s\n", what, strerror(-err));
		return err;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0) {
		err = -errno;
		pr_warn("cannot %s: %s\n", what, strerror(-err));
	}
	close(fd);
	return err;
}

int record_ctx__iter_records(struct bpf_program *prog, size_t size, const char *what,
			     void (*fn)(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec),
			     void *arg)
{
	struct bpf_link *link;
	char *buf;
	size_t have = 0;
	ssize_t n;
	int fd, err = 0;

	if (!prog || !bpf_program__autoload(prog) || bpf_program__fd(prog) < 0)
		return 0;
	buf = malloc(size * 64);
	link = bpf_program__attach_iter(prog, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	if (!buf || fd < 0) {
		err = buf ? -errno : -ENOMEM;
		goto out;
	}
	/* A record may be split across reads: whole ones are handed on, the rest kept. */
	while ((n = read(fd, buf + have, size * 64 - have)) > 0) {
		size_t whole = (have + (size_t)n) / size * size;

		for (size_t off = 0; off < whole; off += size) {
			const struct bs_hdr *h = (const void *)(buf + off);

			fn(arg, h->pid, h->tid, h);
		}
		have = have + (size_t)n - whole;
		memmove(buf, buf + whole, have);
	}
	if (n < 0)
		err = -errno;
out:
	if (err)
		pr_warn("cannot %s: %s\n", what, strerror(-err));
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	free(buf);
	return err;
}

int record_opts__excludes(const struct record_opts *o)
{
	return o->system_wide && (o->nexclude_pids || o->nexclude_comms);
}

int record_opts__wants_stacks(const struct record_opts *o)
{
	for_each_family_slot(it, o->stack_ns)
		if (((it.f->flags & FAMILY_STACKS) || *it.slot != RECORD_STACKS_OFF) &&
		    (o->families & (1ull << it.i)))
			return 1;
	return 0;
}

int record_opts__edges(const struct record_opts *o)
{
	return !o->dry_run && o->output && !o->flight.window_ns && !o->no_edges;
}

int record_opts__writes_targets(const struct record_opts *o)
{
	for_each_family(it)
		if ((it.f->flags & FAMILY_WRITES_TARGETS) && (o->families & (1ull << it.i)))
			return 1;
	return 0;
}

__u64 record_opts__stack_ns(const struct record_opts *o, const struct family *f)
{
	for_each_family_slot(it, o->stack_ns)
		if (it.f == f)
			return *it.slot;
	return RECORD_STACKS_OFF;
}

void *record_opts__family(const struct record_opts *o, const struct family *f)
{
	for_each_family(it)
		if (it.f == f)
			return o->family_opts[it.i];
	return NULL;
}

int record_opts__captures(const struct record_opts *o, const struct family *f)
{
	return o->capture == f;
}

__u32 record_opts__capture_files(const struct record_opts *o)
{
	const struct family_capture *c = o->capture ? o->capture->record->capture : NULL;

	return c && c->files ? c->files(o->capture_arg) : 0;
}

__u64 record_ctx__record_room(const struct record_ctx *ctx)
{
	__u64 ring = ctx->opts->ringbuf_bytes, keep;
	int shim = 0;

	for_each_family(it)
		if (it.f->record->shim && (ctx->opts->families & (1ull << it.i)))
			shim = 1;
	/*
	 * A sixteenth of the ring (process life records, and the cupti-shim's batches: then at
	 * least four whole batches), but never half of it.
	 */
	keep = ring / 16;
	if (shim && keep < 4 * (sizeof(struct bs_shim_batch) + sizeof(struct bs_shim_batch_hdr) +
				BS_SHIM_BATCH_MAX))
		keep = 4 * (sizeof(struct bs_shim_batch) + sizeof(struct bs_shim_batch_hdr) +
			    BS_SHIM_BATCH_MAX);
	if (keep > ring / 2)
		keep = ring / 2;
	return ring - keep;
}
