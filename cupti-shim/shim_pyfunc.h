/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pyfunc module of the shim (docs/PYFUNC-mechanism.md): every call of the Python
 * functions a recording names, timed inside the job's interpreter while the bpfsight:pyfunc
 * semaphore is up, and nothing left behind when it falls.
 *
 *   shim_pyfunc.c          the module: the spec buffer, the poller's install and removal,
 *                          the per-thread stacks of open calls and the records
 *   shim_pyfunc_api.c      Python's C API, found with dlsym in the process (no headers: one
 *                          shim serves every version), and the few layouts read by hand
 *   shim_pyfunc_resolve.c  the spec's entries -> code objects (imports nothing), also at a
 *                          code object's first call (discover)
 *   shim_pyfunc_codes.c    the table of code objects traced
 *   shim_pyfunc_why.c      why an entry is not found, in words (with the closest names)
 *   shim_pyfunc_seed.c     calls already running when tracing began
 *   shim_pyfunc_early.c    launch mode: installed as the interpreter starts (an audit hook)
 *   shim_pyfunc_mon.c      3.12+: sys.monitoring local events on the named code objects
 *   shim_pyfunc_eval.c     3.8-3.11: a frame-evaluation hook (PEP 523) filtered by code object
 *   shim_pyfunc_prof.c     3.8-3.11: a C profile function, where the hook cannot be (the slot
 *                          another's: torch.compile) and for calls running when it went in
 *   shim_pyfunc_swap.c     3.11: each traced function's own calls (a function type of the
 *                          shim's), so the hook can leave the slot (3.11 inlines calls then)
 *
 * Every Python object is touched with the GIL held: the poller takes it (PyGILState_Ensure)
 * to install and remove, the callbacks run under it. Free-threaded builds are refused.
 */
#ifndef BPFSIGHT_SHIM_PYFUNC_H
#define BPFSIGHT_SHIM_PYFUNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct py_object PyObject;
struct shim_str;

/* PyMethodDef's layout and the calling conventions used, the same in every version taken. */
struct py_method_def {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
};
#define METH_VARARGS_KEYWORDS 0x3  /* METH_VARARGS | METH_KEYWORDS */
#define METH_FASTCALL	      0x80 /* vectorcall-style (args, nargs): 3.7+ */

/* ---- shim_pyfunc_api.c ---- */

/* The C API functions used, by the names Python exports them under. */
struct py_api {
	int minor; /* 3.MINOR */
	int (*Py_IsInitialized)(void);
	int (*IsFinalizing)(void); /* _Py_IsFinalizing, or Py_IsFinalizing (3.13+) */
	const char *(*Py_GetVersion)(void);
	int (*PyGILState_Ensure)(void);
	void (*PyGILState_Release)(int);
	void *(*PyGILState_GetThisThreadState)(void);
	void (*Py_IncRef)(PyObject *);
	void (*Py_DecRef)(PyObject *);
	PyObject *(*PySys_GetObject)(const char *);
	PyObject *(*PyObject_GetAttrString)(PyObject *, const char *);
	int (*PyObject_HasAttrString)(PyObject *, const char *);
	PyObject *(*PyObject_CallFunction)(PyObject *, const char *, ...);
	PyObject *(*PyObject_CallMethod)(PyObject *, const char *, const char *, ...);
	PyObject *(*PyObject_Type)(PyObject *);
	int (*PyObject_IsSubclass)(PyObject *, PyObject *);
	int (*PyObject_SetAttrString)(PyObject *, const char *, PyObject *);
	PyObject *(*PyObject_Call)(PyObject *, PyObject *, PyObject *);
	int (*PyObject_IsTrue)(PyObject *);
	PyObject *(*PyDict_GetItemString)(PyObject *, const char *);
	PyObject *(*PyDict_Values)(PyObject *);
	PyObject *(*PyDict_Keys)(PyObject *);
	PyObject *(*PyDict_Items)(PyObject *);
	PyObject *(*PyObject_Dir)(PyObject *);
	PyObject *(*PyUnicode_InternFromString)(const char *);
	PyObject *(*PyImport_ImportModule)(const char *);
	long (*PyObject_Size)(PyObject *);
	PyObject *(*PySequence_GetItem)(PyObject *, long);
	const char *(*PyUnicode_AsUTF8)(PyObject *);
	long (*PyLong_AsLong)(PyObject *);
	PyObject *(*PyLong_FromLong)(long);
	PyObject *(*PyCFunction_NewEx)(struct py_method_def *def, PyObject *self, PyObject *module);
	PyObject *(*PyErr_Occurred)(void);
	void (*PyErr_Clear)(void);
	void (*PyErr_Fetch)(PyObject **, PyObject **, PyObject **);
	void (*PyErr_Restore)(PyObject *, PyObject *, PyObject *);
	void *(*PyInterpreterState_Main)(void);
	void *(*PyInterpreterState_ThreadHead)(void *);
	void *(*PyThreadState_Next)(void *);
	/* 3.8-3.11's profile function */
	int (*PyEval_SetProfile)(void *func, PyObject *obj);		    /* void in fact */
	int (*_PyEval_SetProfile)(void *tstate, void *func, PyObject *obj); /* 3.9+ */
	PyObject *(*PyFrame_GetCode)(void *frame);			    /* 3.9+ */
	/* 3.8-3.11's frame-evaluation hook (PEP 523): each may be missing (then not used) */
	void *(*PyThreadState_Get)(void);
	void *_PyEval_EvalFrameDefault; /* 3.8: (frame, throwflag); 3.9+: (tstate, frame, ...) */
	void *(*GetEvalFrameFunc)(void *interp);	  /* 3.9+ */
	void (*SetEvalFrameFunc)(void *interp, void *fn); /* 3.9+ */
	PyObject *none;
	PyObject *code_type;
};

extern struct py_api py;

/*
 * Find the API in this process: 0 when an initialized, usable interpreter is there; -ESRCH
 * when the process has no Python at all (yet: a wrapper such as sh, or a program that loads
 * libpython later); -ENOENT when it has one not initialized yet; another -errno with WHY when
 * refused for good (free-threaded, a version before 3.8).
 */
int shim_pyfunc_api__find(char *why, size_t len);

/* PyFrameObject *FRAME's code object (borrowed), read as its version lays it out. */
PyObject *shim_pyfunc_api__frame_code(void *frame);
/* A generator's frame at a PyTrace_RETURN with a value: suspended (a yield, an await)? */
bool shim_pyfunc_api__frame_yielded(void *frame);
/* At PyTrace_CALL: the frame resumes a generator or coroutine rather than starting it? */
bool shim_pyfunc_api__frame_resumed(void *frame);
/* CODE's co_name (borrowed), read as 3.8-3.11 lay it out: interned, so compared by address. */
PyObject *shim_pyfunc_api__code_name(const PyObject *code);
/* Where a frame the evaluation hook is handed stands (shim_pyfunc_eval.c). */
enum pyfunc_eval_at {
	PYFUNC_EVAL_START,  /* a call begins (or a generator's first run) */
	PYFUNC_EVAL_RESUME, /* a generator or coroutine resumes after a yield */
	PYFUNC_EVAL_CREATE, /* 3.11: a generator function's call creating it: not a piece */
};
/* Where the frame the hook is handed keeps its code object (bytes; 0: no layout). */
unsigned shim_pyfunc_api__eval_code_offset(void);
enum pyfunc_eval_at shim_pyfunc_api__eval_at(void *frame, bool gen);
/* After the evaluation returned a value: the generator's frame is suspended (a yield)? */
bool shim_pyfunc_api__eval_yielded(void *frame);
/* TSTATE's thread_id: the pthread_self() of its thread (threading's ident). */
unsigned long shim_pyfunc_api__thread_id(void *tstate);
/* 3.8: the address of the interpreter's eval_frame field; NULL on 3.9+ (accessors). */
void **shim_pyfunc_api__eval_slot_38(void *interp);
/* Set the C profile function of thread state TSTATE (3.8: its fields, by hand). */
int shim_pyfunc_api__set_profile(void *tstate, void *func);
/* TSTATE's C profile function now. */
void *shim_pyfunc_api__profile_of(void *tstate);

/* ---- shim_pyfunc_codes.c: the code objects traced ---- */

/*
 * What the records of one code object carry. Each is allocated once and never moved nor
 * freed (a cleared one is reused): an open call points at its own, and the drain reads it
 * without the GIL.
 */
struct pyfunc_code {
	PyObject *code;		 /* a strong reference while it is in the table */
	struct shim_str *func;	 /* "module:Qual.name" */
	struct shim_str *file;	 /* co_filename */
	struct shim_str *domain; /* the entry's domain, NULL: none */
	uint32_t line;		 /* co_firstlineno */
	uint32_t index;		 /* its place in the table, in the order added */
	bool gen;		 /* a generator's, a coroutine's or an async generator's */
};

/*
 * The code table (GIL held): lookups from the callbacks, additions from the poller. The
 * lookup is inlined: the frame-evaluation hook makes one at every frame of the job.
 */
extern struct pyfunc_code **shim_pyfunc_codes_slots; /* open addressing by address */
extern uint32_t shim_pyfunc_codes_nslots;	     /* a power of two; 0: empty */

static inline uint32_t shim_pyfunc_codes__slot(const PyObject *code, uint32_t nslots)
{
	uintptr_t h = (uintptr_t)code >> 4;

	h ^= h >> 17;
	h *= 0x9e3779b1u;
	return (uint32_t)h & (nslots - 1);
}

static inline const struct pyfunc_code *shim_pyfunc_codes__get(const PyObject *code)
{
	uint32_t n = shim_pyfunc_codes_nslots, i;
	struct pyfunc_code *const *slots = shim_pyfunc_codes_slots;

	if (!n)
		return NULL;
	for (i = shim_pyfunc_codes__slot(code, n); slots[i]; i = (i + 1) & (n - 1))
		if (slots[i]->code == code)
			return slots[i];
	return NULL;
}
uint32_t shim_pyfunc_codes__count(void);
/* A new code object into the table (a reference taken); NULL when known or out of memory. */
const struct pyfunc_code *shim_pyfunc_codes__add(PyObject *code, const char *name,
						 const char *domain);
/* Each code in the table, in the order added (FN may call Python). */
void shim_pyfunc_codes__for_each(void (*fn)(const struct pyfunc_code *c, void *arg), void *arg);
/* Drop every code (their references released): GIL held. */
void shim_pyfunc_codes__clear(void);

/* ---- shim_pyfunc_resolve.c: the spec's entries -> code objects ---- */

#define PYFUNC_WHY_LEN 240

/* One line of the spec. */
struct pyfunc_entry {
	char module[256], qual[1024], flags[16], domain[256];
	PyObject *last;		  /* the qualname's last part, interned (a reference) */
	bool found;		  /* something is traced for it */
	char why[PYFUNC_WHY_LEN]; /* not found: why, in words (shim_pyfunc_why.c) */
};

/* Parse TEXT (the canonical lines) into the entries: 0 or -ENOMEM. GIL held. */
int shim_pyfunc_resolve__load(const char *text);
/* Drop the entries (GIL held). */
void shim_pyfunc_resolve__unload(void);

/* How a code object found gets to the mechanism: MAY_HAVE_RUN when it may have run before. */
typedef void (*pyfunc_added_fn)(const struct pyfunc_code *c, bool may_have_run);

/*
 * Resolve every entry against the interpreter now (GIL held): every code object found goes
 * into the table and to ADDED (once each). Returns how many entries are still not found;
 * their names and why go to MISSING ("a (why), b (why)", cut to LEN).
 */
int shim_pyfunc_resolve(pyfunc_added_fn added, char *missing, size_t len);

/* Why each entry not found is not, worked out again (the interpreter exits): GIL held. */
void shim_pyfunc_resolve__why_all(void);
/*
 * Entries not found (but a preset's) as "never found" lines, one per call of FN, under the
 * entries' lock: the drain's, without the GIL.
 */
void shim_pyfunc_resolve__each_never_found(void (*fn)(const char *text, void *arg), void *arg);

/* Whether an entry is still looked for at first calls (discover): GIL held. */
bool shim_pyfunc_resolve__scanning(void);
/* NAME (an interned co_name) is the last part of an entry still looked for. */
bool shim_pyfunc_resolve__candidate(const PyObject *name);
/*
 * CODE starts and is not traced: when its NAME is an entry's still looked for, that entry is
 * resolved now (ADDED as by shim_pyfunc_resolve), and CODE's table entry returned if it is one
 * of them. NULL: not (yet) one; *CANDIDATE says whether its name was one. GIL held.
 */
const struct pyfunc_code *shim_pyfunc_resolve__discover(PyObject *code, PyObject *name,
							pyfunc_added_fn added, bool *candidate);

/* Whether a flag 's' entry's class was found: new classes are then checked (GIL held). */
bool shim_pyfunc_resolve__has_bases(void);
/* A class just created: its overrides of flag 's' entries' methods traced (GIL held). */
void shim_pyfunc_resolve_class(PyObject *cls, pyfunc_added_fn added);
/* Within ADDED from the class hook: the function object found in the new class (borrowed),
 * else NULL. */
PyObject *shim_pyfunc_resolve__adding_fn(void);

/* shim_pyfunc_resolve.c's helpers, shared with shim_pyfunc_why.c and shim_pyfunc_seed.c */
PyObject *shim_pyfunc_attr(PyObject *o, const char *name); /* new ref or NULL, no error */
long shim_pyfunc_attr_long(PyObject *o, const char *name);
const char *shim_pyfunc_attr_str(PyObject *o, const char *name, char *buf, size_t len);

/* ---- shim_pyfunc_why.c ---- */

/*
 * Why MODULE:QUAL is not found, in words a user can act on, into WHY (LEN bytes): its module
 * never imported (with the imported modules' closest names), an attribute it lacks (with the
 * closest it has: "did you mean train_step?"), or an object that is not a Python function.
 * GIL held (Python code may run: dir()).
 */
void shim_pyfunc_why(PyObject *modules, const char *module, const char *qual, char *why,
		     size_t len);

/* ---- shim_pyfunc_seed.c: calls already running when tracing began ---- */

struct open_call {
	const PyObject *code;
	const struct pyfunc_code *c; /* its table entry (stable) */
	uint64_t ts;
	bool resumed;
	bool before; /* began before tracing did: ts is when tracing began */
};

/*
 * Code objects added from index FIRST on (the table's order) that are running now on some
 * thread, found in sys._current_frames(): each a call begun before tracing, kept for its
 * thread to take (GIL held). SKIP: a code whose call begins now (its start is seen). NOW:
 * when tracing began, on the shim's clock.
 */
void shim_pyfunc_seed__scan(uint32_t first, const PyObject *skip, uint64_t now);
/* Forget every call kept (a new install, or removal): GIL held. */
void shim_pyfunc_seed__clear(void);
/* How many calls were kept since the last clear (one load: the callbacks' check). */
uint32_t shim_pyfunc_seed__count(void);
/* The epoch of the seeds: a new one at each clear. */
uint32_t shim_pyfunc_seed__epoch(void);
/*
 * The calling thread's calls among seeds [*SEEN, count) into STACK (DEPTH open, MAX room),
 * each where it nests; *SEEN moved to the count. GIL held.
 */
void shim_pyfunc_seed__take(struct open_call *stack, uint32_t *depth, uint32_t max, uint32_t *seen);
/* A call kept for the thread whose pthread_self() is IDENT that it has not taken yet. */
bool shim_pyfunc_seed__untaken_for(unsigned long ident);
/* Each call kept that no thread took, with its thread's tid (0: unknown): the drain's. */
void shim_pyfunc_seed__each_untaken(void (*fn)(const struct open_call *o, uint32_t tid,
					       uint32_t depth, void *arg),
				    void *arg);

/* ---- shim_pyfunc_early.c: launch mode ---- */

/*
 * At the shim's start (its constructor, before main): when a recording already wants this
 * process's Python functions (the pyfunc semaphore is up: launch mode stops a new program
 * until its probes are in) and the interpreter is not initialized yet, an audit hook (PEP 578)
 * is added, which installs the hooks at the interpreter's first event once it is initialized,
 * before the first line of the script runs.
 */
void shim_pyfunc_early__arm(void);
/* Armed and not yet run: the interpreter's start will install. */
bool shim_pyfunc_early__armed(void);

/* ---- the mechanisms (GIL held) ---- */

struct pyfunc_mech {
	const char *name;
	/* 0 or -errno with WHY said; DESC: a few words on what it is (the tool id) */
	int (*install)(char *why, size_t len, char *desc, size_t dlen);
	/* a code object newly traced (MAY_HAVE_RUN: found by a walk, not at its call); NULL:
	 * the mechanism reads the table at each event */
	void (*add)(const struct pyfunc_code *c, bool may_have_run);
	void (*refresh)(void); /* before each resolve: what changed in the job (threading came) */
	/* after each resolve: whether entries are still looked for at first calls */
	void (*scan)(bool on);
	/* calls found running were kept (shim_pyfunc_seed.c): their ends must be seen */
	void (*seeded)(void);
	/* the poller, without the GIL: the mechanism lost its hook (another took its place) */
	bool (*lost)(void);
	/* GIL held, after lost(): fall back on another, said in DESC */
	void (*recover)(char *desc, size_t dlen);
	/* whether a resolve is wanted soon though every entry is found */
	bool (*pending)(void);
	/* the poller, without the GIL: what the mechanism counts moved; then, GIL held, look:
	 * true when its description changed; LATE: something to say once */
	bool (*stale)(void);
	bool (*look)(char *late, size_t llen);
	void (*remove)(void); /* everything off */
};

extern const struct pyfunc_mech shim_pyfunc_mon;  /* shim_pyfunc_mon.c, 3.12+ */
extern const struct pyfunc_mech shim_pyfunc_prof; /* shim_pyfunc_prof.c, 3.8-3.11 */
extern const struct pyfunc_mech shim_pyfunc_eval; /* shim_pyfunc_eval.c, 3.8-3.11 */

/*
 * A forked child (its one thread, in the shim's atfork handler): the hook's next frame starts
 * the child's poller (no thread can start here), which removes the parent's hook and installs
 * the child's own when the recording follows it (a DataLoader worker's calls).
 */
void shim_pyfunc_eval__forked(void);

/* The calling thread has the profile function (kept for a seed, or the fallback): it records. */
bool shim_pyfunc_eval__profiled(void);

/* ---- shim_pyfunc_swap.c: 3.11, each traced function's own calls (GIL held) ---- */

/*
 * Every function object of every code object in the table swapped to the shim's type (its
 * calls recorded by its vectorcall), and those calls recorded from now on: false, with WHY,
 * where that cannot be exact (a generator's code, a nested one's, one with no function yet).
 */
bool shim_pyfunc_swap__enter(char *why, size_t len);
bool shim_pyfunc_swap__active(void);
/* Its calls no longer recorded by the vectorcall (the hook records them): GIL held. */
void shim_pyfunc_swap__leave(void);
/* A code object added while active; FN: the function the class hook found, or NULL. False:
 * not swapped now (a walk is needed). */
bool shim_pyfunc_swap__added(const struct pyfunc_code *c, PyObject *fn);
/* Without the GIL: a swapped code object's reference count moved (a function made since?). */
bool shim_pyfunc_swap__stale(void);
/* GIL held, after stale(): counted again, new functions swapped (LATE says one, once);
 * false with WHY when one cannot be. */
bool shim_pyfunc_swap__look_again(char *why, size_t len, char *late, size_t llen);
/* How many function objects are swapped now. */
uint32_t shim_pyfunc_swap__count(void);
/* Every function back to PyFunction_Type and _PyFunction_Vectorcall (GIL held, or a forked
 * child's one thread). */
void shim_pyfunc_swap__restore(void);

/* shim_pyfunc_prof.c for shim_pyfunc_eval.c: the profile function kept on a few threads */
void *shim_pyfunc_prof__fn(void);
/* The profile function on TSTATE until its calls begun before tracing end (GIL held). */
void shim_pyfunc_prof__keep(void *tstate);
/* Off every thread that has it (GIL held). */
void shim_pyfunc_prof__unkeep_all(void);

/* ---- shim_pyfunc.c: what the mechanisms call (GIL held) ---- */

/*
 * CODE starts, and is not in the table: the entries still looked for are tried against it
 * (shim_pyfunc_resolve__discover); its table entry when it is now one, else NULL with
 * *CANDIDATE whether its name was an entry's. NAME: its co_name. GIL held.
 */
const struct pyfunc_code *shim_pyfunc__discover(PyObject *code, PyObject *name, bool *candidate);
/* Install now, from the thread that holds the GIL (shim_pyfunc_early.c): 0 or -errno. */
int shim_pyfunc__install_early(void);
/* The interpreter is exiting (an atexit function): why each entry not found is not. */
void shim_pyfunc__exiting(void);
/* A named code's piece begins on this thread (RESUMED: at a resume, not a call). */
void shim_pyfunc__begin(const struct pyfunc_code *c, bool resumed);
/* ... and ends (END: BS_PYFUNC_END_*): its record is written. */
void shim_pyfunc__end(const struct pyfunc_code *c, uint8_t end);
/* ... or was no call after all (its arguments did not bind): no record. */
void shim_pyfunc__cancel(const struct pyfunc_code *c);
/* The calling thread has a call begun before tracing open (or one kept for it to take). */
bool shim_pyfunc__kept_open(void);
/* Recording now (one relaxed load): the callbacks return at once when not. */
bool shim_pyfunc__on(void);

#endif /* BPFSIGHT_SHIM_PYFUNC_H */
