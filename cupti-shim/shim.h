/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libbpfsight-shim internals: the CUDA and NVTX injection library that writes GPU activity
 * and NVTX ranges into batches handed to BPF through USDT (bpf/records.h, "cupti-shim
 * channel"). docs/GPU.md describes it for users.
 *
 * Modules:
 *   shim_core.c    state machine, poller thread, fork and exit, STATUS records
 *   shim_buf.c     per-thread batch buffers and the bpfsight:batch probe
 *   shim_str.c     string interning and the STRING records that precede their users
 *   shim_nvtx.c    the NVTX injection (InitializeInjectionNvtx2) and its handlers
 *   shim_cupti.c   CUPTI loading, enable/disable, buffer callbacks (InitializeInjection)
 *   shim_find.c    where libcupti is
 *   shim_cbid.c    the runtime/driver calls that put work on the GPU, and their names
 *   shim_decode.c  CUPTI activity record -> bs_gpu_* record (the one decode path)
 *   shim_graph.c   CUDA graph nodes made and copied: what a replayed op's capture was
 *   shim_ptrace.c  loaded by record --inject: the constructor is the entry, CUPTI comes later
 *   shim_nvtx_late.c  NVTX instances an injected shim can still reach (.symtab)
 *   shim_modules.c the modules of families beyond GPU activity and NVTX, one line each
 *   shim_torch*.c  PyTorch's ops through a RecordFunction callback (shim_torch.h)
 *   shim_pyfunc*.c named Python functions' calls, sys.monitoring or a C profile function
 *                  (shim_pyfunc.h)
 *   shim_clock.c   the TSC mapped onto CLOCK_MONOTONIC, for the torch ops' timestamps
 *
 * Nothing here may harm the application: every failure is reported in a STATUS record (or
 * counted as dropped) and the shim carries on doing less.
 */
#ifndef BPFSIGHT_SHIM_H
#define BPFSIGHT_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "gpu_records.h"
#include "nvtx_records.h"
#include "shim_records.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

#define SHIM_NS_PER_MS 1000000ull

/* ---- shim_core.c ---- */

/*
 * Bits of shim_hot: what a handler must do beyond keeping its depth (0: nothing). A module
 * (shim_modules.c) takes the next free bit for its own (torch's: 0x8).
 */
#define SHIM_HOT_NVTX	 0x1 /* record NVTX calls */
#define SHIM_HOT_SYNC	 0x2 /* also send BEGIN records and flush at once */
#define SHIM_HOT_RESTART 0x4 /* a forked child: the poller must be started again */

extern _Atomic uint32_t shim_hot;
/* Non-zero while a tracer is attached; a new value for every attach (a "session"). */
extern _Atomic uint32_t shim_session;
extern uint32_t shim_pid;

uint64_t shim_now(void); /* CLOCK_MONOTONIC ns, the clock of every record */
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An injection entry point ran: initialize once, (re)start the poller, set the state bit. */
void shim_core__enter(uint32_t injected_bit);
/* An injection entry point is done: act on the semaphores now. */
void shim_core__poll_now(void);
/* The slow path of a handler that saw SHIM_HOT_RESTART. */
void shim_core__restart(void);
void shim_core__set_state(uint32_t set, uint32_t clear);
uint32_t shim_core__state(void);
/* Write a STATUS record from the calling thread and send it at once. */
void shim_core__status(uint32_t session, uint32_t event, int32_t result, const char *detail,
		       uint64_t dropped);
/* Records lost inside the shim or CUPTI: reported by the poller as EV_DROPPED. */
void shim_core__add_dropped(uint64_t n);

/* The poller's sleep between recordings (shim_wake.c). */
void shim_wake__init(void);
bool shim_wake__can_sleep(void);
uint32_t shim_wake__seen(void);	      /* read before the semaphores are */
void shim_wake__sleep(uint32_t seen); /* until a tracer wakes it (or at once) */
void shim_wake__poke(void);	      /* wake the poller from within the process */

/* ---- shim_buf.c ---- */

struct shim_thread;

void shim_buf__init(void);
/* The calling thread's buffer, created on first use (NULL when out of memory: counted). */
struct shim_thread *shim_thread__self(void);
/* The calling thread is inside its own buffer's lock (a signal handler interrupted it). */
bool shim_thread__self_busy(void);
void shim_thread__lock(struct shim_thread *t);
void shim_thread__unlock(struct shim_thread *t);
uint32_t shim_thread__tid(const struct shim_thread *t);
/* The NVTX module's per-thread state (accessed with t locked). */
void **shim_thread__nvtx(struct shim_thread *t);
/* Module SLOT's per-thread state (shim_module__slot; only its thread touches it). */
void **shim_thread__module(struct shim_thread *t, int slot);
/*
 * Copy one record into t's batch (t locked), sending the batch first when the record does
 * not fit. False when SESSION is over: the record is discarded.
 */
bool shim_thread__append(struct shim_thread *t, uint32_t session, const void *rec, uint32_t size);
/* Room for a record of SIZE bytes in t's batch, to be filled in place (t locked); NULL as
 * shim_thread__append's false. */
void *shim_thread__reserve(struct shim_thread *t, uint32_t session, uint32_t size);
void shim_thread__flush(struct shim_thread *t); /* t locked */
void shim_buf__flush_all(void);
void shim_buf__drop_all(void);
/* FN(t, ARG) for every thread buffer, t locked (the list is locked meanwhile). */
void shim_buf__for_each(void (*fn)(struct shim_thread *t, void *arg), void *arg);
uint64_t shim_buf__seq(void); /* the sequence number of the last batch sent */
/* The pending-strings batch, sent before any other batch (see shim_str.c). */
void shim_buf__send_lock(void);
void shim_buf__send_unlock(void);
void *shim_buf__reserve_string(uint32_t session, uint32_t size); /* send lock held */
void shim_buf__begin_session(uint32_t session, const void *rec, uint32_t size);
void shim_buf__atfork_child(void);

void shim_hdr(struct bs_hdr *h, uint16_t type, uint16_t size, uint32_t tid, uint64_t ts);

/* ---- shim_str.c ---- */

#define SHIM_STR_MAX_LEN 4096 /* longer strings are cut (kernel names can be huge) */

struct shim_str;

/* The interned string for TEXT (stable for the process's life); never NULL. */
struct shim_str *shim_str__intern(const char *text, size_t len);
struct shim_str *shim_str__intern_c(const char *text); /* NULL text: NULL */
struct shim_str *shim_str__intern_wide(const wchar_t *text);
/* S's id, its STRING record queued to go before any later batch of SESSION. 0 for NULL. */
uint32_t shim_str__use(struct shim_str *s, uint32_t session, uint32_t tid);
/* Every string interned so far queued again for SESSION (a tracer joined it): how many. */
uint32_t shim_str__resend_all(uint32_t session, uint32_t tid);

/* ---- shim_nvtx.c ---- */

void shim_nvtx__set_on(bool on);
/* Thread and category names given before the attach, sent again for the new session (a
 * forked child's go with its first record instead: shim_nvtx.c). */
void shim_nvtx__resend_names(uint32_t session);
/* Ranges open now, as RANGE records with BS_NVTX_OPEN (they stay open in the shim). */
void shim_nvtx__send_open(uint32_t session, uint64_t now);
void shim_nvtx__thread_gone(void *state);
void shim_nvtx__atfork_child(void);

/* ---- shim_cupti.c ---- */

void shim_cupti__init(void);	    /* InitializeInjection */
int shim_cupti__load(void);	    /* find and bind libcupti once; 0 or -errno */
uint32_t shim_cupti__version(void); /* 0 = not loaded */
/* Poller: GPU activity wanted or not; periodic flush. */
void shim_cupti__poll(bool want, uint64_t now);
void shim_cupti__flush(bool forced);
/* CUPTI is loaded and initialized: GPU activity can be turned on in this process. */
bool shim_cupti__usable(void);
void shim_cupti__report_errors(uint32_t session);
/* Decode every record of a CUPTI buffer into the calling thread's batch. */
int shim_cupti__consume(uint8_t *buf, size_t valid);
/* Report a failed CUPTI call (once per distinct failure and session). */
void shim_cupti__fail(const char *what, int result);
/* cuptiGetCallbackName's answer, NULL when CUPTI has none. */
const char *shim_cupti__callback_name(uint32_t domain, uint32_t cbid);

/* ---- shim_graph.c ---- */

/* cuptiGetGraphNodeId and cuptiGetGraphId, or NULL (then no node is recorded). */
void shim_graph__bind(void *node_id, void *graph_id);
/* A resource callback of CUPTI_CB_DOMAIN_RESOURCE: a graph node made or copied. */
void shim_graph__callback(uint32_t cbid, const void *cbdata);
/* One GRAPH_NODE record from the calling thread, sent at once (the test hook's path too). */
void shim_graph__emit(uint64_t node_id, uint64_t orig_node_id, uint32_t graph_id,
		      uint32_t orig_graph_id, uint32_t node_type, uint64_t ts);

/* ---- shim_ptrace.c ---- */

/* Poller (ctl held): an injected shim loads CUPTI once GPU activity is wanted and possible. */
void shim_ptrace__poll(bool gpu_wanted);
/* Poller, ctl not held: an injected shim's late NVTX (shim_nvtx_late.c), once wanted. */
void shim_ptrace__nvtx(void);

/* ---- shim_modules.c ---- */

/*
 * A module: what a bpfsight family whose records the shim writes needs in the application
 * beyond GPU activity and NVTX (the torch family's RecordFunction callback). Its files and one
 * line in shim_modules.c; its USDT control sites (semaphores) are its own, defined in its
 * files, as bpfsight's side of the family says (struct family_shim.sites).
 */
struct shim_module {
	const char *name;
	void (*init)(void);		  /* once, at the shim's start (the environment) */
	void (*poll)(void);		  /* the poller, every 50 ms, ctl not held */
	void (*state)(uint32_t state);	  /* a state change was reported: its USDT probes */
	void (*thread_gone)(void *state); /* a thread's state, its thread (or copy) gone */
	/* A drain (a tracer's, the exit), ctl held: what it holds open, as records now. */
	void (*drain)(uint32_t session, uint64_t now);
	uint32_t fork_clear;	  /* its STATUS state bits, cleared in a forked child */
	void (*fork_child)(void); /* in a forked child, its one thread, before anything else */
	/* A tracer joined session SESSION, already on (ctl held): what it said goes again. */
	void (*join)(uint32_t session);
	/*
	 * Optional: nothing of the module's is on or asked for, so the poller may sleep while
	 * a tracer is attached (shim_core.c). Without it the module keeps the 50 ms poll.
	 */
	bool (*idle)(void);
};

#define SHIM_MAX_MODULES 4

/* The modules, NULL-terminated (shim_modules.c). */
extern const struct shim_module *const shim_modules[];
/* M's slot in every thread's module states (shim_thread__module). */
int shim_module__slot(const struct shim_module *m);

/* ---- shim_fork.c ---- */

/*
 * The shim's locks, each defined by the file whose state it guards, listed in shim_fork.c in
 * the order they nest: fork takes them all, so a forked child inherits none held.
 */
extern pthread_mutex_t shim_ctl, shim_pyfunc_noted_lock, shim_pyfunc_entries_lock,
	shim_cupti_load_lock, shim_cupti_err_lock, shim_nvtx_chain_lock, shim_nvtx_lock,
	shim_str_lock, shim_buf_list_lock, shim_buf_send_lock;
void shim_fork__lock_all(void);
void shim_fork__unlock_all(void); /* by the thread that took them: parent and child */

/* ---- shim_find.c ---- */

/* dlopen() libcupti from the places CUDA installs put it; NULL when not found. */
void *shim_find__cupti(void);

/* ---- shim_cbid.c ---- */

struct shim_cbid {
	uint32_t cbid;
	const char *name; /* as in cupti_*_cbid.h */
};

extern const struct shim_cbid shim_cbid_runtime[];
extern const size_t shim_cbid_runtime_nr;
extern const struct shim_cbid shim_cbid_driver[];
extern const size_t shim_cbid_driver_nr;

/* The API's name for records: CUPTI's, without the "_v3020" version tag; interned once. */
struct shim_str *shim_cbid__name(uint32_t domain, uint32_t cbid);

/* ---- shim_decode.c ---- */

/* One CUPTI activity record into t's batch (t locked); 1 if written, 0 if not a kind we use. */
int shim_decode__record(struct shim_thread *t, uint32_t session, const void *rec);

#endif /* BPFSIGHT_SHIM_H */
