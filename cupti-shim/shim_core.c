// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The shim's state machine. A light poller thread (started by the first injection entry,
 * never by a constructor) reads the USDT semaphores every 50 ms and turns recording on and
 * off to match; once a tracer has come and gone, it sleeps without a timer until the next
 * one wakes it (shim_wake.c):
 *
 *   attached  = batch semaphore > 0      a new session: STATUS(ATTACH), strings re-sent
 *   NVTX on   = attached && nvtx sem     handlers record (one relaxed load when off)
 *   GPU on    = attached && gpu sem      CUPTI activity kinds enabled (shim_cupti.c)
 *   sync      = attached && sync sem     NVTX BEGIN records, sent at once
 *   modules   = their own semaphores     each polls its own (shim_modules.c: torch's callback)
 *   drain     = rising edge of drain sem flush everything, send open ranges, fire drain(seq)
 *   join      = join sem went up          while attached: a tracer joined the session, which
 *                                        another's attach began: every string, the NVTX
 *                                        names and CUPTI errors again, STATUS(JOIN)
 *
 * and flushes thread buffers about every 250 ms while attached and something is on (attached
 * with nothing on, it sleeps as between recordings: poller()). When the tracer goes, GPU
 * activity is disabled (never cuptiFinalize: crash-prone in a live process), NVTX recording
 * stops and unsent records are dropped (nobody to send them to).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"
#include "shim_clock.h"
#include "shim_usdt.h"

#define POLL_MS	 50
#define FLUSH_MS 250

unsigned short bpfsight_batch_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_gpu_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_nvtx_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_sync_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_drain_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_join_semaphore __attribute__((section(".probes"), used));

_Atomic uint32_t shim_hot;
_Atomic uint32_t shim_session;
uint32_t shim_pid;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool debug;
static _Atomic uint32_t state; /* BS_SHIM_ST_* */
static _Atomic uint64_t dropped;

/* The poller's view, under ctl (the exit handler and fork take it too). */
pthread_mutex_t shim_ctl = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool started; /* a poller runs in this process */
	bool attached;
	bool drain_seen; /* the drain semaphore was set at the previous poll */
	/*
	 * The join semaphore at the previous poll: tracers hold it up for a while after they
	 * attach, so a rise is a newcomer (two that pass each other within a poll are missed).
	 */
	unsigned short join_seen;
	bool exiting;
	bool forked; /* a forked child: CUDA is unusable here, GPU stays off */
	/*
	 * A tracer came and went: until the next one wakes the poller (shim_wake.c), it sleeps
	 * without a timer. Before the first one it polls (a tracer that cannot wake it, as
	 * bpftrace, is seen); a forked child keeps its parent's.
	 */
	bool sleeps_when_idle;
	uint32_t gen;	     /* the last session number handed out */
	uint32_t sent_state; /* state bits in the last STATUS */
	uint64_t last_flush;
} poll_state;

uint64_t shim_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void shim_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	if (!debug)
		return;
	n = snprintf(line, sizeof(line), "bpfsight-shim[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	if (write(STDERR_FILENO, line, strlen(line)) < 0)
		return;
}

void shim_core__set_state(uint32_t set, uint32_t clear)
{
	uint32_t old = atomic_load(&state);

	while (!atomic_compare_exchange_weak(&state, &old, (old & ~clear) | set))
		;
}

uint32_t shim_core__state(void)
{
	return atomic_load(&state);
}

void shim_core__add_dropped(uint64_t n)
{
	atomic_fetch_add_explicit(&dropped, n, memory_order_relaxed);
}

/* A STATUS record of EVENT by thread T, without its detail. */
static void status_fill(struct bs_shim_status *s, struct shim_thread *t, uint32_t event)
{
	memset(s, 0, sizeof(*s));
	shim_hdr(&s->h, BS_REC_SHIM_STATUS, sizeof(*s), shim_thread__tid(t), shim_now());
	s->state = shim_core__state();
	s->event = event;
	s->seq = shim_buf__seq();
	s->cupti_version = shim_cupti__version();
}

void shim_core__status(uint32_t session, uint32_t event, int32_t result, const char *detail,
		       uint64_t ndropped)
{
	struct shim_thread *t = shim_thread__self();
	struct bs_shim_status s;

	if (!t || !session)
		return;
	shim_thread__lock(t);
	status_fill(&s, t, event);
	s.cupti_result = result;
	s.detail_id = shim_str__use(shim_str__intern_c(detail), session, shim_thread__tid(t));
	s.dropped = ndropped;
	/* Status records are rare and tell the tracer what is going on: send them at once. */
	if (shim_thread__append(t, session, &s, sizeof(s)))
		shim_thread__flush(t);
	shim_thread__unlock(t);
}

static void hot_set(uint32_t bits, bool on)
{
	if (on)
		atomic_fetch_or_explicit(&shim_hot, bits, memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&shim_hot, ~bits, memory_order_relaxed);
}

static void on_attach(uint64_t now)
{
	struct shim_thread *t = shim_thread__self();
	struct bs_shim_status s;
	uint32_t session;

	if (++poll_state.gen == 0)
		++poll_state.gen;
	session = poll_state.gen;
	poll_state.attached = true;
	poll_state.drain_seen = false;
	atomic_store(&dropped, 0); /* nobody listened: counted as unsent, not as dropped */
	poll_state.last_flush = now;
	poll_state.sent_state = shim_core__state();
	if (t) {
		status_fill(&s, t, BS_SHIM_EV_ATTACH);
		shim_buf__begin_session(session, &s, sizeof(s)); /* the session's first record */
	} else {
		atomic_store(&shim_session, session);
	}
	shim_cupti__report_errors(session);
	shim_nvtx__resend_names(session);
	shim_buf__flush_all();
	shim_log("attached: session %u", session);
}

/* A tracer joined the session: what it missed of it, sent again (ctl held). */
static void on_join(uint32_t session)
{
	struct shim_thread *t = shim_thread__self();
	uint32_t n = shim_str__resend_all(session, t ? shim_thread__tid(t) : 0);

	shim_cupti__report_errors(session);
	shim_nvtx__resend_names(session);
	for (const struct shim_module *const *m = shim_modules; *m; m++)
		if ((*m)->join)
			(*m)->join(session);
	poll_state.sent_state = ~0u; /* the state goes again too, after the JOIN */
	shim_core__status(session, BS_SHIM_EV_JOIN, 0, NULL, 0);
	SHIM_PROBE_JOIN(shim_buf__seq());
	shim_log("joined: session %u, %u strings sent again", session, n);
}

static void on_detach(uint64_t now)
{
	shim_cupti__poll(false, now);
	hot_set(SHIM_HOT_NVTX | SHIM_HOT_SYNC, false);
	shim_nvtx__set_on(false);
	shim_core__set_state(0, BS_SHIM_ST_NVTX_ON | BS_SHIM_ST_SYNC | BS_SHIM_ST_CUPTI_BUSY);
	atomic_store(&shim_session, 0);
	shim_buf__drop_all();
	poll_state.attached = false;
	poll_state.sleeps_when_idle = shim_wake__can_sleep();
	shim_log("detached");
}

static void update_nvtx(void)
{
	bool want = SHIM_SEM(nvtx) > 0;
	bool sync = want && SHIM_SEM(sync) > 0;
	uint32_t st = shim_core__state();

	if (want != !!(st & BS_SHIM_ST_NVTX_ON)) {
		/* The epoch changes before the handlers see the flag: stacks start afresh. */
		if (want)
			shim_nvtx__set_on(true);
		hot_set(SHIM_HOT_NVTX, want);
		if (!want)
			shim_nvtx__set_on(false);
		shim_core__set_state(want ? BS_SHIM_ST_NVTX_ON : 0, want ? 0 : BS_SHIM_ST_NVTX_ON);
	}
	if (sync != !!(st & BS_SHIM_ST_SYNC)) {
		hot_set(SHIM_HOT_SYNC, sync);
		shim_core__set_state(sync ? BS_SHIM_ST_SYNC : 0, sync ? 0 : BS_SHIM_ST_SYNC);
		SHIM_PROBE_SYNC();
	}
}

/* A state change: STATUS(STATE), and the probes a tracer can watch. */
static void report_state(uint32_t session)
{
	uint32_t st = shim_core__state();

	if (st == poll_state.sent_state)
		return;
	poll_state.sent_state = st;
	shim_core__status(session, BS_SHIM_EV_STATE, 0, NULL, 0);
	SHIM_PROBE_GPU(st);
	SHIM_PROBE_NVTX(st);
	for (const struct shim_module *const *m = shim_modules; *m; m++)
		if ((*m)->state)
			(*m)->state(st);
	shim_log("state 0x%x", st);
}

/* Everything out now: CUPTI's buffers, every thread's batch, the ranges still open. */
static void drain(uint32_t session, uint32_t event, uint64_t now)
{
	shim_cupti__flush(true);
	shim_buf__flush_all();
	shim_nvtx__send_open(session, now);
	for (const struct shim_module *const *m = shim_modules; *m; m++)
		if ((*m)->drain)
			(*m)->drain(session, now);
	shim_buf__flush_all();
	shim_core__status(session, event, 0, NULL, 0);
}

static void report_dropped(uint32_t session)
{
	uint64_t n = atomic_exchange_explicit(&dropped, 0, memory_order_relaxed);

	if (n)
		shim_core__status(session, BS_SHIM_EV_DROPPED, 0, NULL, n);
}

/*
 * BPFSIGHT_SHIM_DEBUG: every change of the semaphores, as read. All six compared whole, join
 * too: a 16-bit count packed into fewer bits spills into its neighbour's, and a change of two
 * of them can then look like none.
 */
static void log_semaphores(void)
{
	static unsigned short last[6];
	unsigned short now[6] = { SHIM_SEM(batch), SHIM_SEM(gpu),   SHIM_SEM(nvtx),
				  SHIM_SEM(sync),  SHIM_SEM(drain), SHIM_SEM(join) };

	if (!memcmp(now, last, sizeof(now)))
		return;
	memcpy(last, now, sizeof(now));
	shim_log("semaphores: batch %u gpu %u nvtx %u sync %u drain %u join %u", now[0], now[1],
		 now[2], now[3], now[4], now[5]);
}

/* Python's PyGILState_Check, once a tracer is attached and one is loaded (for _exit). */
static int (*_Atomic gil_check)(void);

static void poll_once(void)
{
	uint64_t now = shim_now();
	bool attached = SHIM_SEM(batch) > 0, began = false;
	unsigned short join = SHIM_SEM(join);
	uint32_t session;
	bool drain_set;

	if (debug)
		log_semaphores();
	if (attached && !poll_state.attached)
		on_attach(now), began = true;
	else if (!attached && poll_state.attached)
		on_detach(now);
	/* A join seen with the attach is that attach's: everything goes to the session anyway. */
	if (join > poll_state.join_seen && poll_state.attached && !began)
		on_join(atomic_load(&shim_session));
	poll_state.join_seen = join;
	if (!poll_state.attached)
		return;
	/* For _exit: whether its caller holds a Python GIL (Python's os._exit). */
	if (!atomic_load(&gil_check))
		atomic_store(&gil_check, (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check"));
	session = atomic_load(&shim_session);
	update_nvtx();
	shim_ptrace__poll(SHIM_SEM(gpu) > 0 && !poll_state.forked);
	shim_cupti__poll(SHIM_SEM(gpu) > 0 && !poll_state.forked, now);
	report_state(session);
	report_dropped(session);
	drain_set = SHIM_SEM(drain) > 0;
	if (drain_set && !poll_state.drain_seen) {
		drain(session, BS_SHIM_EV_DRAINED, shim_now());
		SHIM_PROBE_DRAIN(shim_buf__seq());
		poll_state.last_flush = now;
	}
	poll_state.drain_seen = drain_set;
	if (now - poll_state.last_flush >= FLUSH_MS * SHIM_NS_PER_MS) {
		shim_buf__flush_all();
		poll_state.last_flush = now;
	}
}

/*
 * ctl held, attached: nothing this process can give is on or asked for. No GPU activity (not
 * wanted, or no CUPTI here: a CPU job's shim under a system-wide gpu recording, monitor -a or
 * top), no NVTX, no CUPTI client to wait out. The modules are asked after their poll.
 */
static bool attached_idle(void)
{
	if (shim_core__state() & (BS_SHIM_ST_GPU_ON | BS_SHIM_ST_NVTX_ON | BS_SHIM_ST_CUPTI_BUSY))
		return false;
	if (SHIM_SEM(nvtx) > 0)
		return false; /* NVTX records to flush, late NVTX instances to find */
	return SHIM_SEM(gpu) == 0 || poll_state.forked || !shim_cupti__usable();
}

static bool modules_idle(void)
{
	for (const struct shim_module *const *m = shim_modules; *m; m++)
		if (!(*m)->idle || !(*m)->idle())
			return false;
	return true;
}

/*
 * Once a tracer has come and gone (sleeps_when_idle), the poller sleeps without a timer
 * whenever it has nothing to do: detached, or attached with nothing on. A tracer wakes it when
 * it changes what it wants (its attach and join, its drain, its detach) and when a process
 * with a shim maps libcuda (user/shim_channel/shim_link.c); an injection entry pokes it
 * (shim_core__poll_now). A recording of another job, or a system-wide one whose families this
 * process cannot feed, so costs the job no wakeup.
 */
static void *poller(void *arg)
{
	const struct timespec period = { 0, POLL_MS * SHIM_NS_PER_MS };
	bool idle, attached;
	uint32_t seen;

	for (;;) {
		/* Read before the semaphores: a wake after this makes the sleep return at once. */
		seen = shim_wake__seen();
		pthread_mutex_lock(&shim_ctl);
		if (poll_state.exiting) {
			pthread_mutex_unlock(&shim_ctl);
			break;
		}
		poll_once();
		attached = poll_state.attached;
		idle = poll_state.sleeps_when_idle && (!attached || attached_idle());
		pthread_mutex_unlock(&shim_ctl);
		shim_ptrace__nvtx();
		for (const struct shim_module *const *m = shim_modules; *m; m++)
			if ((*m)->poll)
				(*m)->poll();
		if (idle && attached && modules_idle()) {
			pthread_mutex_lock(&shim_ctl);
			shim_buf__flush_all(); /* what the modules' poll said (a note) goes now */
			pthread_mutex_unlock(&shim_ctl);
			shim_log("attached, nothing on: sleeping until a tracer wakes the shim");
			shim_wake__sleep(seen);
		} else if (idle && !attached) {
			shim_log("idle: sleeping until a tracer wakes the shim");
			shim_wake__sleep(seen);
		} else {
			nanosleep(&period, NULL);
		}
	}
	return NULL;
}

/* ctl held. The poller takes no signal meant for the application. */
static void start_poller(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int err;

	if (poll_state.started || poll_state.exiting)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&th, &attr, poller, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		shim_log("no poller thread: %s (nothing will be recorded)", strerror(err));
		return;
	}
	pthread_setname_np(th, BS_SHIM_THREAD_NAME);
	poll_state.started = true;
}

/* The process is exiting: a final drain while a tracer listens, then nothing more. */
static void at_exit(void)
{
	pthread_mutex_lock(&shim_ctl);
	if (poll_state.attached && !poll_state.exiting)
		drain(atomic_load(&shim_session), BS_SHIM_EV_EXIT, shim_now());
	poll_state.exiting = true;
	pthread_mutex_unlock(&shim_ctl);
}

/*
 * os._exit skips atexit, and every multiprocessing child ends so (each DataLoader worker):
 * what the shim holds since its last flush (250 ms) would be lost without a word. Where the
 * shim is preloaded (launch mode) this _exit comes before libc's: the same final drain as
 * at_exit, then glibc's own way out, the exit_group system call. Only where it is Python's
 * os._exit: the caller holds the GIL (PyGILState_Check, found by the poller while a tracer is
 * attached: never looked up here), so never a C program's signal handler, which may have
 * interrupted the shim inside one of its locks; in a process the shim knows (a vfork or clone
 * child that ran no atfork handler shares or copies locks held by threads it does not have:
 * its pid is not shim_pid); not inside the calling thread's own buffer lock; waiting at most
 * 200 ms for ctl.
 */
static bool exit_may_drain(void)
{
	int (*held)(void) = atomic_load(&gil_check);

	return held && (uint32_t)syscall(SYS_getpid) == shim_pid && !shim_thread__self_busy() &&
	       held();
}

SHIM_EXPORT void _exit(int status)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 200 * SHIM_NS_PER_MS;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (exit_may_drain() && !pthread_mutex_timedlock(&shim_ctl, &until)) {
		if (poll_state.attached && !poll_state.exiting)
			drain(atomic_load(&shim_session), BS_SHIM_EV_EXIT, shim_now());
		poll_state.exiting = true;
		pthread_mutex_unlock(&shim_ctl);
	}
	for (;;)
		syscall(SYS_exit_group, status);
}

/* Every lock of the shim's, in its order (shim_fork.c), so the child inherits none held. */
static void fork_prepare(void)
{
	shim_fork__lock_all();
}

static void fork_parent(void)
{
	shim_fork__unlock_all();
}

/*
 * The child has no poller and a copy of the parent's session: it starts over as a new
 * process (new session, every string re-sent) once its next NVTX call restarts the poller.
 */
static void fork_child(void)
{
	uint32_t clear =
		BS_SHIM_ST_GPU_ON | BS_SHIM_ST_NVTX_ON | BS_SHIM_ST_SYNC | BS_SHIM_ST_CUPTI_BUSY;

	shim_fork__unlock_all(); /* held since fork_prepare, by this thread */
	shim_buf__atfork_child();
	shim_nvtx__atfork_child();
	shim_pid = (uint32_t)getpid();
	poll_state.started = false;
	poll_state.attached = false;
	poll_state.forked = true;
	atomic_store(&shim_session, 0);
	atomic_store(&shim_hot, SHIM_HOT_RESTART);
	for (const struct shim_module *const *m = shim_modules; *m; m++) {
		clear |= (*m)->fork_clear;
		if ((*m)->fork_child)
			(*m)->fork_child();
	}
	shim_core__set_state(0, clear);
}

static void init_once(void)
{
	const char *d = secure_getenv("BPFSIGHT_SHIM_DEBUG");

	debug = d && *d && strcmp(d, "0");
	shim_pid = (uint32_t)getpid();
	for (const struct shim_module *const *m = shim_modules; *m; m++)
		if ((*m)->init)
			(*m)->init();
	shim_clock__init();
	shim_buf__init();
	shim_wake__init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* atexit, not a destructor: it runs before the libraries (libcupti) are torn down. */
	atexit(at_exit);
	shim_log("loaded");
}

void shim_core__enter(uint32_t injected_bit)
{
	pthread_once(&once, init_once);
	shim_core__set_state(injected_bit, 0);
	pthread_mutex_lock(&shim_ctl);
	start_poller();
	pthread_mutex_unlock(&shim_ctl);
}

/*
 * An injection entry point finished: poll at once rather than at the next tick, so that a
 * tracer already attached (a process started under bpfsight) sees the first kernels and
 * ranges too; InitializeInjection is also where CUPTI wants activity enabled.
 */
void shim_core__poll_now(void)
{
	pthread_mutex_lock(&shim_ctl);
	if (!poll_state.exiting)
		poll_once();
	pthread_mutex_unlock(&shim_ctl);
	shim_wake__poke(); /* a poller asleep with nothing on: something may be on now */
}

void shim_core__restart(void)
{
	atomic_fetch_and(&shim_hot, ~(uint32_t)SHIM_HOT_RESTART);
	pthread_mutex_lock(&shim_ctl);
	start_poller();
	pthread_mutex_unlock(&shim_ctl);
}
