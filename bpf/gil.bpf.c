// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil: how long CPython threads wait for the GIL, and which thread held it meanwhile.
 *
 * Default mode probes only the contended path, so an uncontended program pays nothing:
 *   - glibc's pthread_cond_timedwait (entry + return): take_gil blocks there, and only there,
 *     while another thread holds the GIL. Every process mapping libc takes the probe, so the
 *     condition variable is compared with the GIL's of the calling process first; other
 *     users pay a filtered probe on a call that blocks anyway.
 *   - glibc's __lll_lock_wait (entry + return), the slow path of pthread_mutex_lock, on the
 *     GIL's mutex: take_gil may block on it before it reaches the condition wait. Attached
 *     per process (it is single-stepped, so other processes must not pay for it).
 * One wait = from the first of these blocks to the return of the condition wait that finds
 * the GIL free (take_gil loops on 5 ms timed waits; a wait spans all of them). At that
 * return the waiter holds the GIL's mutex, so gil->locked and gil->last_holder are stable.
 *
 * Full mode adds take_gil (entry + return) and drop_gil (entry): waits are then timed from
 * take_gil's entry to its return, and every hold from take_gil's return to drop_gil.
 *
 * Waits and holds of at least threshold_ns become records; every one, short or long, is
 * summed in gil_agg per thread (count, total, max, log2 histogram of the short ones) and
 * its time blamed on the holder in gil_blame, so totals stay exact at any rate.
 *
 * --stacks=gil: the holders' code, weighed by time (docs/GIL.md, "Holders by time"). A
 * cpu-clock timer samples the GIL's holder on its CPU while others wait for it (gil_sample);
 * each round of a wait reads the holder's line when it begins, and counts for the part of it
 * no sample covered (the holder off its CPU, holding the GIL through a blocking call).
 */
#include "stack.bpf.h"
#include "task_now.bpf.h"
#include "gil_records.h"

const volatile __u64 threshold_ns = 50000;
/* The holder's Python frames kept per waiter while a round lasts (task storage). */
#define GIL_HOLDER_FRAMES 8
/* --stacks=gil: waits (and rounds of waits) of at least this carry stacks; ~0 = none. */
const volatile __u64 gil_stack_ns = ~0ull;
/* --stacks=gil: the holder sampler's period (cpu-clock ns); 0 = no sampler. */
const volatile __u64 gil_sample_ns = 0;

/* tgid -> where its GIL is (user space fills it when it finds the interpreter). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct bs_gil_cfg);
} gil_procs SEC(".maps");

/*
 * ((u64)pid << 32 | tid) -> totals of every wait and hold of the thread. Not preallocated:
 * only threads that wait take memory; user space deletes a thread's entry once it exited.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct bs_gil_agg_val);
} gil_agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct bs_gil_blame_key);
	__type(value, struct bs_gil_blame_val);
} gil_blame SEC(".maps");

/* Per-thread state; task storage goes away with the thread, so nothing leaks. */
struct gil_thr {
	__u64 wait_start;    /* 0 = not waiting */
	__u64 seg_start;     /* start of the part of the wait blamed on `holder` */
	__u64 mutex_start;   /* inside __lll_lock_wait on the GIL's mutex, outside a wait */
	__u64 take_start;    /* full mode: inside take_gil since */
	__u64 hold_start;    /* full mode: holds the GIL since (take_gil returned) */
	__u64 round_start;   /* the current condition wait's start (--stacks=gil) */
	__u64 round_sampled; /* gil_live's sampled_ns at round_start */
	__u32 hframes;	     /* the holder's innermost Python frames read at round_start */
	__u32 holder_off;    /* the holder was asleep at round_start, or is not known (gil_tasks) */
	__u64 hw[4 * GIL_HOLDER_FRAMES]; /* ... as bs_py_frame words */
	/*
	 * The wait's ended segments by holder, blamed (gil_blame) when the wait ends, so that
	 * the blame and gil_agg hold the same waits at any read (a dump's totals; a segment of a
	 * wait with more holders than these is blamed at once).
	 */
	__u64 pend_ns[BS_GIL_PEND];
	__u32 pend_holder[BS_GIL_PEND];
	__u16 pend_count[BS_GIL_PEND];
	__u32 holder; /* holder tid of the current segment */
	__u32 first_holder;
	__u32 in_cond; /* inside the GIL's condition wait */
	__u16 rounds;
	__u16 flags; /* BS_GIL_WAIT_* */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gil_thr);
} gil_thr SEC(".maps");

/*
 * tgid -> what the holder sampler needs of a process (with gil_sample_ns only): how many of
 * its threads wait for the GIL now, and the time its holders' samples stood for so far (a
 * round of a wait takes the difference across it). Updated by many threads: atomic adds.
 * Emptied at the process's exec and exit, like gil_procs.
 */
struct gil_live {
	__s64 waiters;
	__u64 sampled_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct gil_live);
} gil_live SEC(".maps");

/*
 * tid -> its task_struct, for a round of a wait to read whether the holder runs (with
 * gil_sample_ns only): written by a thread as it begins a wait or as a holder's sample, so it
 * holds every thread that ever waited for the GIL or held it while others waited; deleted at
 * the thread's exit (LRU: bounded anyway).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} gil_tasks SEC(".maps");

/* Template for a new aggregate (too big for the BPF stack next to everything else). */
static struct bs_gil_agg_val zero_agg;

static __always_inline struct bs_gil_cfg *proc_cfg(__u32 pid)
{
	if (!bs_is_target(pid))
		return NULL;
	return bpf_map_lookup_elem(&gil_procs, &pid);
}

static __always_inline struct gil_thr *thr_get(int create)
{
	struct gil_thr *st;

	st = bpf_task_storage_get(&gil_thr, bpf_get_current_task_btf(), NULL,
				  create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!st && create)
		bs_count_loss(BS_LOSS_TASK_MAP);
	return st;
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* The OS thread id of a PyThreadState (0 = unknown). */
static __always_inline __u32 tstate_tid(const struct bs_gil_cfg *c, __u64 tstate)
{
	__u32 tid = 0;
	__u64 v;

	if (!tstate || !c->tid_off)
		return 0;
	v = read_u64(tstate + c->tid_off);
	if (!c->pthread_tid_off)
		return (__u32)v; /* native_thread_id (3.11+) */
	/* thread_id is the pthread_t: glibc's struct pthread, which keeps the tid. */
	if (v)
		bpf_probe_read_user(&tid, sizeof(tid), (const void *)(v + c->pthread_tid_off));
	return tid;
}

static __always_inline __u32 holder_tid(const struct bs_gil_cfg *c)
{
	return tstate_tid(c, read_u64(c->holder));
}

/* gil->locked; an unreadable one counts as free, so a wait ends rather than runs on. */
static __always_inline int gil_locked(const struct bs_gil_cfg *c)
{
	int v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)c->locked);
	return v > 0;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* MAP's value of KEY, made from INIT when missing (a full map is counted, NULL). */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		bs_count_loss(BS_LOSS_AGG_MAP);
	return v;
}

static __always_inline struct bs_gil_agg_val *agg_get(__u32 pid, __u32 tid)
{
	__u64 key = (__u64)pid << 32 | tid;

	return lookup_or_init(&gil_agg, &key, &zero_agg);
}

/* Only the thread itself updates its keys, so plain adds are race-free. */
static __always_inline void blame_n(__u32 pid, __u32 waiter, __u32 holder, __u64 dur, __u64 n)
{
	struct bs_gil_blame_key key = { .pid = pid, .waiter = waiter, .holder = holder };
	struct bs_gil_blame_val *v, init = { .count = n, .total_ns = dur };

	v = bpf_map_lookup_elem(&gil_blame, &key);
	if (v) {
		v->count += n;
		v->total_ns += dur;
		return;
	}
	if (bpf_map_update_elem(&gil_blame, &key, &init, BPF_NOEXIST))
		bs_count_loss(BS_LOSS_AGG_MAP);
}

static __always_inline void blame(__u32 pid, __u32 waiter, __u32 holder, __u64 dur)
{
	blame_n(pid, waiter, holder, dur, 1);
}

/* A segment of the wait ended (the holder changed): kept by holder until the wait ends. */
static __always_inline void blame_later(struct gil_thr *st, __u32 pid, __u32 tid, __u32 holder,
					__u64 dur)
{
	for (int i = 0; i < BS_GIL_PEND; i++) {
		if (st->pend_count[i] && st->pend_holder[i] != holder)
			continue;
		st->pend_holder[i] = holder;
		st->pend_ns[i] += dur;
		st->pend_count[i]++;
		return;
	}
	blame(pid, tid, holder, dur);
}

/* The wait ended: its segments kept so far to the blame. */
static __always_inline void blame_pending(struct gil_thr *st, __u32 pid, __u32 tid)
{
	for (int i = 0; i < BS_GIL_PEND; i++)
		if (st->pend_count[i])
			blame_n(pid, tid, st->pend_holder[i], st->pend_ns[i], st->pend_count[i]);
}

static __always_inline struct gil_live *live_get(__u32 pid, int create)
{
	struct gil_live init = {};

	return create ? lookup_or_init(&gil_live, &pid, &init)
		      : bpf_map_lookup_elem(&gil_live, &pid);
}

/* The process's count of threads waiting for the GIL (the holder sampler's weight). */
static __always_inline void live_waiters(__u32 pid, __s64 delta)
{
	struct gil_live *l;

	if (!gil_sample_ns)
		return;
	l = live_get(pid, delta > 0);
	if (l)
		__sync_fetch_and_add(&l->waiters, delta);
}

/* The current thread (ID: pid_tgid) into gil_tasks, if not there yet. */
static __always_inline void task_known(__u64 id)
{
	__u32 tid = (__u32)id;
	__u64 t;

	if (bpf_map_lookup_elem(&gil_tasks, &tid))
		return;
	t = (__u64)bpf_get_current_task();
	bpf_map_update_elem(&gil_tasks, &tid, &t, BPF_ANY);
}

/*
 * Whether holder TID is asleep (a blocking call with the GIL held: no timer sample can read
 * its line) or not known; 0 when it is on a CPU or waiting for one (its samples say where).
 */
static __always_inline __u32 holder_asleep(__u32 tid)
{
	__u64 *t = tid ? bpf_map_lookup_elem(&gil_tasks, &tid) : NULL;

	return !t || task_state_now((struct task_struct *)*t) != 0;
}

/* The thread's wait (if any) is over or forgotten. */
static __always_inline void wait_clear(struct gil_thr *st, __u32 pid)
{
	if (!st->wait_start)
		return;
	st->wait_start = 0;
	/* A wait forgotten (its thread torn down) is in neither the totals nor the blame. */
	for (int i = 0; i < BS_GIL_PEND; i++) {
		st->pend_ns[i] = 0;
		st->pend_count[i] = 0;
	}
	live_waiters(pid, -1);
}

static __always_inline void wait_begin(struct gil_thr *st, const struct bs_gil_cfg *c, __u32 pid,
				       __u64 start, __u32 holder, __u16 flags)
{
	/* In full mode the wait is the whole take_gil call. */
	if (st->take_start && (c->flags & BS_GIL_CFG_FULL))
		start = st->take_start;
	if (!st->wait_start)
		live_waiters(pid, 1);
	if (gil_sample_ns && gil_stack_ns != ~0ull)
		task_known(bpf_get_current_pid_tgid());
	st->wait_start = start;
	st->seg_start = start;
	st->holder = holder;
	st->first_holder = holder;
	st->rounds = 0;
	st->flags = flags;
}

static __always_inline void wait_end(void *ctx, struct gil_thr *st, __u32 pid, __u32 tid, __u64 end)
{
	__u64 start = st->wait_start, dur = end - start;
	struct bs_gil_agg_val *a;
	struct bs_gil_wait *r;

	blame_pending(st, pid, tid);
	wait_clear(st, pid);
	blame(pid, tid, st->holder, end - st->seg_start);
	a = agg_get(pid, tid);
	if (a) {
		a->wait_count++;
		a->wait_total_ns += dur;
		if (dur > a->wait_max_ns)
			a->wait_max_ns = dur;
		if (dur < threshold_ns)
			a->short_hist[log2_u64(dur) & (BS_GIL_HIST - 1)]++;
	}
	if (dur < threshold_ns)
		return;
	/* The waiter's own stack, before its record (STACK_REF). */
	if (gil_stack_ns != ~0ull && dur >= gil_stack_ns)
		stack_emit(BS_REC_GIL_WAIT, pid, tid, start, 0);
	r = bs_reserve(BS_REC_GIL_WAIT, sizeof(*r), pid, tid, start);
	if (!r)
		return;
	r->dur = dur;
	r->holder_tid = st->first_holder;
	r->rounds = st->rounds;
	r->flags = st->flags;
	bs_submit(r);
}

/*
 * A round begins: the holder's innermost Python frames, read now from its thread state (it
 * is running the code that keeps the GIL), kept until the round ends.
 */
static __always_inline void holder_read(const struct bs_gil_cfg *c, struct gil_thr *st, __u32 pid)
{
	struct stack_scratch *s = stack_scratch_take();
	__u32 k;

	st->hframes = 0;
	if (!s)
		return;
	k = stack_read_python(pid, read_u64(c->holder), s, GIL_HOLDER_FRAMES);
	if (k > GIL_HOLDER_FRAMES)
		k = GIL_HOLDER_FRAMES;
	__builtin_memcpy(st->hw, s->w, sizeof(st->hw));
	st->hframes = k;
	stack_scratch_put(s);
}

/* A round of a wait (round_start..NOW) and the holder's Python frames (bs_gil_holder). */
static __always_inline void holder_round(const struct bs_gil_cfg *c, struct gil_thr *st, __u32 pid,
					 __u32 tid, __u64 now)
{
	struct stack_scratch *s = st->hframes ? stack_scratch_take() : NULL;
	struct gil_live *l = gil_sample_ns ? live_get(pid, 0) : NULL;
	__u64 dur = now - st->round_start, covered = l ? l->sampled_ns - st->round_sampled : 0;
	struct bs_gil_holder *r;

	/*
	 * A holder that ran (or waited for a CPU) as the round began is where its samples say,
	 * all the round: its line then is where it took the GIL, beside a call that released it.
	 * So is one sampled through most of the round. Else it slept with the GIL that long.
	 */
	if (l && (!st->holder_off || 2 * covered >= dur))
		covered = dur;
	covered /= 1000;

	if (s) {
		__builtin_memcpy(s->w, st->hw, sizeof(st->hw));
		stack_emit_python(s, st->hframes, BS_REC_GIL_HOLDER, pid, tid, st->round_start);
		stack_scratch_put(s);
	}
	r = bs_reserve(BS_REC_GIL_HOLDER, sizeof(*r), pid, tid, st->round_start);
	if (!r)
		return;
	r->dur = dur;
	r->holder_tid = st->holder;
	r->covered_us = covered > 0xffffffff ? 0xffffffff : covered;
	bs_submit(r);
}

SEC("uprobe")
int BPF_KPROBE(gil_cond_enter, void *cond)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct bs_gil_cfg *c;
	struct gil_thr *st;

	c = proc_cfg(id >> 32);
	if (!c || (__u64)cond != c->cond)
		return 0;
	st = thr_get(1);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	/* A condition wait that never returned (the thread was torn down): forget it. */
	if (st->in_cond)
		wait_clear(st, id >> 32);
	/* The caller holds the mutex here: the holder cannot change under us. */
	if (!st->wait_start)
		wait_begin(st, c, id >> 32, now, holder_tid(c), 0);
	st->in_cond = 1;
	st->round_start = now;
	if (gil_stack_ns != ~0ull) {
		struct gil_live *l = gil_sample_ns ? live_get(id >> 32, 0) : NULL;

		st->round_sampled = l ? l->sampled_ns : 0;
		st->holder_off = l ? holder_asleep(st->holder) : 1;
		holder_read(c, st, id >> 32);
	}
	if (st->rounds < 0xffff)
		st->rounds++;
	return 0;
}

/*
 * The condition wait returned: 1 when the wait for the GIL ended at *NOW, the GIL taken.
 * Called for the returns of gil_exit below, as are the two after it.
 */
static __always_inline int cond_return(struct gil_thr *st, __u32 pid, __u32 tid, __u64 *now)
{
	struct bs_gil_cfg *c;
	__u32 h;

	if (!st->in_cond)
		return 0;
	st->in_cond = 0;
	c = bpf_map_lookup_elem(&gil_procs, &pid);
	if (!c || !st->wait_start)
		return 0;
	*now = bpf_ktime_get_ns();
	/*
	 * --stacks=gil: a long round is blamed on the holder's code, read from its thread state
	 * now (the GIL's last holder, still running it, or just having let go of it).
	 */
	if (gil_stack_ns != ~0ull && st->round_start && *now - st->round_start >= gil_stack_ns)
		holder_round(c, st, pid, tid, *now);
	/* Back with the mutex held: still locked means take_gil waits another round. */
	if (gil_locked(c)) {
		h = holder_tid(c);
		if (h != st->holder) {
			blame_later(st, pid, tid, st->holder, *now - st->seg_start);
			st->seg_start = *now;
			st->holder = h;
			st->flags |= BS_GIL_WAIT_HANDOFF;
		}
		return 0;
	}
	/* The GIL is ours. Full mode ends the wait where take_gil returns. */
	return !(st->take_start && (c->flags & BS_GIL_CFG_FULL));
}

SEC("uprobe")
int BPF_KPROBE(gil_mutex_enter, void *futex)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct bs_gil_cfg *c;
	struct gil_thr *st;

	c = proc_cfg(id >> 32);
	if (!c || !(c->flags & BS_GIL_CFG_MUTEX) || (__u64)futex != c->mutex)
		return 0;
	st = thr_get(1);
	/* Inside a wait (the condition wait re-locking the mutex): already timed. */
	if (!st || st->in_cond || st->wait_start)
		return 0;
	st->mutex_start = bpf_ktime_get_ns();
	return 0;
}

/* The GIL's mutex was locked after a wait: 1 when that was the whole wait for the GIL. */
static __always_inline int mutex_return(struct gil_thr *st, __u32 pid, __u32 tid, __u64 *now)
{
	struct bs_gil_cfg *c;
	__u64 start;
	__u32 h;
	int locked;

	if (!st->mutex_start)
		return 0;
	start = st->mutex_start;
	st->mutex_start = 0;
	c = bpf_map_lookup_elem(&gil_procs, &pid);
	if (!c)
		return 0;
	*now = bpf_ktime_get_ns();
	/* The mutex is ours now, so both reads are stable. */
	locked = gil_locked(c);
	h = holder_tid(c);
	/* drop_gil locks it too, as the holder: that is no wait for the GIL. */
	if (locked && (h == tid || !h))
		return 0;
	wait_begin(st, c, pid, start, h, BS_GIL_WAIT_MUTEX);
	/* Locked: take_gil goes on to the condition wait, which continues this wait. */
	return !(locked || (st->take_start && (c->flags & BS_GIL_CFG_FULL)));
}

SEC("uprobe")
int BPF_KPROBE(gil_take_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct bs_gil_cfg *c;
	struct gil_thr *st;

	c = proc_cfg(id >> 32);
	if (!c || !(c->flags & BS_GIL_CFG_FULL))
		return 0;
	st = thr_get(1);
	if (!st)
		return 0;
	st->take_start = bpf_ktime_get_ns();
	wait_clear(st, id >> 32);
	st->in_cond = 0;
	return 0;
}

/* take_gil returned (full mode): the thread holds the GIL from *NOW; 1 when it waited. */
static __always_inline int take_return(struct gil_thr *st, __u64 *now)
{
	int waited = st->wait_start != 0;

	if (!st->take_start)
		return 0;
	*now = bpf_ktime_get_ns();
	if (waited)
		st->flags |= BS_GIL_WAIT_TAKE_GIL;
	st->take_start = 0;
	st->hold_start = *now;
	return waited;
}

/* The returns of the three functions above (the probe's cookie says which, BS_GIL_EXIT_*). */
SEC("uretprobe")
int BPF_KRETPROBE(gil_exit)
{
	__u64 id = bpf_get_current_pid_tgid(), now = 0, kind = bpf_get_attach_cookie(ctx);
	__u32 pid = id >> 32, tid = (__u32)id;
	struct gil_thr *st = thr_get(0);
	int ended;

	if (!st)
		return 0;
	if (kind == BS_GIL_EXIT_COND)
		ended = cond_return(st, pid, tid, &now);
	else if (kind == BS_GIL_EXIT_MUTEX)
		ended = mutex_return(st, pid, tid, &now);
	else
		ended = take_return(st, &now);
	/* One call: each inlined copy of its stack walk is verified on its own. */
	if (ended)
		wait_end(ctx, st, pid, tid, now);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(gil_drop_enter)
{
	__u64 id = bpf_get_current_pid_tgid(), now, start, dur;
	__u32 pid = id >> 32, tid = (__u32)id;
	struct bs_gil_agg_val *a;
	struct bs_gil_hold *r;
	struct gil_thr *st;

	st = thr_get(0);
	if (!st || !st->hold_start)
		return 0;
	now = bpf_ktime_get_ns();
	start = st->hold_start;
	st->hold_start = 0;
	dur = now - start;
	a = agg_get(pid, tid);
	if (a) {
		a->hold_count++;
		a->hold_total_ns += dur;
		if (dur > a->hold_max_ns)
			a->hold_max_ns = dur;
	}
	if (dur < threshold_ns)
		return 0;
	r = bs_reserve(BS_REC_GIL_HOLD, sizeof(*r), pid, tid, start);
	if (!r)
		return 0;
	r->dur = dur;
	bs_submit(r);
	return 0;
}

/*
 * --stacks=gil: the holder's timer sample, every gil_sample_ns on every CPU (a cpu-clock perf
 * event each). When it interrupts the thread that holds its process's GIL while others of
 * the process wait for it, the holder's innermost Python frames go out with the waiting that
 * period stands for: the holders' code weighed by the time it kept others waiting, wherever
 * it is, not read only where the GIL changes hands (beside a call that releases it).
 */
SEC("perf_event")
int gil_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, now;
	__u32 pid = id >> 32, tid = (__u32)id, k;
	struct stack_scratch *s;
	struct bs_gil_sample *r;
	struct bs_gil_cfg *c;
	struct gil_live *l;
	__s64 waiters;

	if (gil_stack_ns == ~0ull || !gil_sample_ns || !tid)
		return 0;
	c = proc_cfg(pid);
	l = c ? live_get(pid, 0) : NULL;
	if (!l)
		return 0;
	waiters = l->waiters;
	if (waiters <= 0 || !gil_locked(c))
		return 0;
	ts = read_u64(c->holder);
	if (tstate_tid(c, ts) != tid)
		return 0;
	__sync_fetch_and_add(&l->sampled_ns, gil_sample_ns);
	task_known(id);
	now = bpf_ktime_get_ns();
	s = stack_scratch_take();
	if (s) {
		k = stack_read_python(pid, ts, s, GIL_HOLDER_FRAMES);
		stack_emit_python(s, k > GIL_HOLDER_FRAMES ? GIL_HOLDER_FRAMES : k,
				  BS_REC_GIL_SAMPLE, pid, tid, now);
		stack_scratch_put(s);
	}
	r = bs_reserve(BS_REC_GIL_SAMPLE, sizeof(*r), pid, tid, now);
	if (!r)
		return 0;
	r->dur = gil_sample_ns * waiters;
	r->waiters = waiters;
	r->period_us = gil_sample_ns / 1000;
	bs_submit(r);
	return 0;
}

/*
 * A forked child has the parent's memory, so its GIL is at the same address: it is measured
 * from its first instruction, before user space hears of it. Only traced parents count.
 */
static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid);
	struct bs_gil_cfg *c;

	if (cpid == ppid)
		return 0; /* a new thread */
	c = proc_cfg(ppid);
	if (c)
		bpf_map_update_elem(&gil_procs, &cpid, c, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(gil_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(gil_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

/* A new image has no GIL where the old one had (user space looks again). */
static __always_inline int on_exec(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	bpf_map_delete_elem(&gil_procs, &pid);
	bpf_map_delete_elem(&gil_live, &pid);
	bpf_task_storage_delete(&gil_thr, bpf_get_current_task_btf());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(gil_exec_btf, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(gil_exec_raw, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p);
}

/*
 * A recycled pid must not inherit the configuration. A thread that exits inside a wait (an
 * interpreter's finalization ends the threads that still ask for the GIL) waits no more.
 */
static __always_inline int on_exit(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	struct gil_thr *st;

	st = bpf_task_storage_get(&gil_thr, bpf_get_current_task_btf(), NULL, 0);
	if (st)
		wait_clear(st, pid);
	bpf_map_delete_elem(&gil_tasks, &tid);
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		bpf_map_delete_elem(&gil_procs, &pid);
		bpf_map_delete_elem(&gil_live, &pid);
	}
	return 0;
}

/* A flight-recorder dump's cut, for gil_open_iter (user space sets it before each run). */
__u64 gil_cut_ns = 0;

/*
 * A dump's cut: each wait still going then, as a record of its time so far (bs_gil_wait_open),
 * written to the iterator's reader, not to the ring: the wait goes on and is recorded again
 * when it ends (docs/FLIGHT.md, "What a dump holds").
 */
SEC("iter/task")
int gil_open_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct bs_gil_wait_open r = {};
	struct gil_thr *st;
	__u64 cut = gil_cut_ns;

	if (!t)
		return 0;
	st = bpf_task_storage_get(&gil_thr, t, NULL, 0);
	if (!st || !st->wait_start || cut <= st->wait_start || !proc_cfg(t->tgid))
		return 0;
	r.w.h.type = BS_REC_GIL_WAIT;
	r.w.h.size = sizeof(r);
	r.w.h.pid = t->tgid;
	r.w.h.tid = t->pid;
	r.w.h.ts = st->wait_start;
	r.w.dur = cut - st->wait_start;
	r.w.holder_tid = st->first_holder;
	r.w.rounds = st->rounds;
	r.w.flags = st->flags | BS_GIL_WAIT_OPEN;
	r.seg_start = st->seg_start < cut ? st->seg_start : cut;
	r.seg_holder = st->holder;
	for (int i = 0; i < BS_GIL_PEND; i++) {
		r.pend_ns[i] = st->pend_ns[i];
		r.pend_holder[i] = st->pend_holder[i];
		r.pend_count[i] = st->pend_count[i];
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gil_exit_btf, struct task_struct *p)
{
	return on_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(gil_exit_raw, struct task_struct *p)
{
	return on_exit(p);
}
