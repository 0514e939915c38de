// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A uprobe-API family's copy of the generic program, loaded and handed to the manager; with
 * --trigger hang, its per-thread call stacks mapped, to say which calls are in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "family_record.h"
#include "family_attach.h"
#include "mono_clock.h"
#include "proc_meta.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "msg.h"
#include "ucall.skel.h"

#define STALE_CHECK_NS 1000000000ull /* a frame this old is checked against its thread's sp */

struct ucall_family {
	struct ucall_bpf *skel;
	const struct ucall_table *table;
	/* --trigger hang: ucall_slots mapped (read only), and each slot's owner's process. */
	const struct bs_ucall_thread *slots;
	size_t slots_len;
	__u64 owner[BS_UCALL_SLOTS];
	__u32 owner_pid[BS_UCALL_SLOTS];
};

/* Load SKEL (opened, its rodata set) on the shared maps; its thread-exit program attached. */
static int load(struct record_ctx *ctx, const struct ucall_table *table, struct ucall_bpf *skel)
{
	/* ucall.bpf.h's: WRAPPED functions' probes where the kernel has uprobe sessions. */
	struct bpf_program *session = skel->progs.ucall_session;
	int err;

	if (uprobe_multi__supported()) {
		uprobe_multi__prepare(skel->progs.ucall_entry);
		uprobe_multi__prepare(skel->progs.ucall_return);
	}
	/* Sessions are uprobe_multi links: none where those are forced off; none loaded for a
	 * table without WRAPPED functions (nccl), which would only cost its verification. */
	if (table->wrapped_flag && uprobe_multi__supported() && kfeature__has(KF_UPROBE_SESSION))
		uprobe_multi__prepare_session(session);
	else
		bpf_program__set_autoload(session, false);
	err = record_ctx__prepare(ctx, skel->obj);
	if (!err)
		err = ucall_bpf__load(skel);
	if (err)
		return err;
	if (bpf_program__autoload(skel->progs.ucall_exit_btf)) {
		skel->links.ucall_exit_btf = bpf_program__attach(skel->progs.ucall_exit_btf);
		if (!skel->links.ucall_exit_btf) {
			err = -errno;
			pr_err("%s: cannot attach %s: %s\n", table->family,
			       bpf_program__name(skel->progs.ucall_exit_btf), strerror(-err));
			return err;
		}
	}
	return 0;
}

/* --trigger hang reads the slots: BPF_F_MMAPABLE before the load, the mapping after it. */
static int map_slots(struct ucall_family *uf)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	uf->slots_len = (BS_UCALL_SLOTS * sizeof(struct bs_ucall_thread) + page - 1) & ~(page - 1);
	p = mmap(NULL, uf->slots_len, PROT_READ, MAP_SHARED,
		 bpf_map__fd(uf->skel->maps.ucall_slots), 0);
	if (p == MAP_FAILED)
		return -errno;
	uf->slots = p;
	return 0;
}

int ucall_family__attach(const struct family_attach *a, void **state)
{
	const struct ucall_table *table = a->self->api;
	struct record_ctx *ctx = a->ctx;
	/*
	 * The calls in flight: for the hang trigger, at the recording's end (its edge) and at a
	 * flight-recorder dump's cut.
	 */
	int hang = (ctx->opts->flight.window_ns || record_opts__edges(ctx->opts)) &&
		   a->self->record->in_flight;
	struct ucall_family *uf;
	struct ucall_bpf *skel;
	int err;

	if (!table || !a->uprobes)
		return -EINVAL; /* a family without a table, or without FAMILY_UPROBES */
	uf = calloc(1, sizeof(*uf));
	skel = uf ? ucall_bpf__open() : NULL;
	if (!skel) {
		err = uf ? -errno : -ENOMEM;
		free(uf);
		return err;
	}
	uf->skel = skel;
	uf->table = table;
	if (hang)
		bpf_map__set_map_flags(skel->maps.ucall_slots, BPF_F_MMAPABLE);
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx, a->self);
	skel->rodata->ucall_rec_type = table->rec_type;
	skel->rodata->ucall_loss_depth = table->loss_depth;
	skel->rodata->ucall_stack_ns = record_opts__stack_ns(ctx->opts, a->self);
	skel->rodata->ucall_byref = ucall_table__has_byref(table);
	err = load(ctx, table, skel);
	if (!err && hang && (err = map_slots(uf)))
		pr_err("%s: cannot map its call stacks (the calls in flight): %s\n", table->family,
		       strerror(-err));
	if (!err)
		err = uprobe_mgr__add_family(
			a->uprobes, table, skel->progs.ucall_entry, skel->progs.ucall_return,
			bpf_program__autoload(skel->progs.ucall_session) ? skel->progs.ucall_session
									 : NULL);
	if (err) {
		ucall_family__detach(ctx, uf);
		return err;
	}
	*state = uf;
	return 0;
}

void ucall_family__detach(struct record_ctx *ctx, void *state)
{
	struct ucall_family *uf = state;

	if (!uf)
		return;
	if (uf->slots)
		munmap((void *)uf->slots, uf->slots_len);
	ucall_bpf__destroy(uf->skel);
	free(uf);
}

/*
 * Whether a frame at SP of thread TID may be a call that returned unseen (its return probe
 * missed): a thread asleep in a system call with its stack pointer above where the call's
 * return address sat has left the call. Running threads cannot be told: kept.
 */
static int left_unseen(__u32 pid, __u32 tid, __u64 sp)
{
	char path[64], buf[256];
	unsigned long long v[9];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "NR ARG1..ARG6 SP PC" (hex but NR), or "running" */
	if (sscanf(buf, "%llu %llx %llx %llx %llx %llx %llx %llx %llx", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7], &v[8]) != 9)
		return 0;
	return v[7] > sp;
}

/* The process of the thread owning slot I (read once per owner). */
static __u32 slot_pid(struct ucall_family *uf, __u32 i, __u64 owner)
{
	pid_t pid;

	if (uf->owner[i] == owner)
		return uf->owner_pid[i];
	pid = proc_meta__tgid((pid_t)owner);
	uf->owner[i] = owner;
	uf->owner_pid[i] = pid > 0 ? (__u32)pid : 0;
	return uf->owner_pid[i];
}

void ucall_family__in_flight(struct record_ctx *ctx, void *state, family_in_flight_fn fn, void *arg)
{
	struct ucall_family *uf = state;
	__u64 now = mono_now_ns();

	for (__u32 i = 0; uf && uf->slots && i < BS_UCALL_SLOTS; i++) {
		const volatile struct bs_ucall_thread *t = &uf->slots[i];
		__u64 owner = t->owner;
		__u32 depth = t->depth, pid, n;
		struct bs_ucall_frame f;
		struct bs_ucall r;

		if (!owner || !(pid = slot_pid(uf, i, owner)))
			continue;
		n = depth < BS_UCALL_MAX_DEPTH ? depth : BS_UCALL_MAX_DEPTH;
		if (!n)
			fn(arg, pid, (__u32)owner, NULL);
		for (__u32 k = 0; k < n; k++) {
			/* The owner writes its frames as it runs: a copy is kept if nothing moved. */
			memcpy(&f, (const void *)&t->f[k], sizeof(f));
			if (t->owner != owner || t->depth <= k || t->f[k].ts != f.ts || !f.ts ||
			    f.ts > now)
				break;
			if (now - f.ts >= STALE_CHECK_NS && left_unseen(pid, (__u32)owner, f.sp))
				break;
			memset(&r, 0, sizeof(r));
			record_ctx__hdr(&r.h, uf->table->rec_type, sizeof(r), pid, (__u32)owner,
					f.ts);
			r.dur = now - f.ts;
			r.fn = BS_UCOOKIE_FN(f.cookie);
			r.depth = (__u16)(k | BS_UCALL_OPEN);
			memcpy(r.args, f.args, sizeof(r.args));
			fn(arg, pid, (__u32)owner, &r.h);
		}
	}
}
