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
 *   shim_pyfunc_resolve.c  the spec's entries -> code objects (imports nothing)
 *   shim_pyfunc_mon.c      3.12+: sys.monitoring local events on the named code objects
 *   shim_pyfunc_prof.c     3.8-3.11: a C profile function filtered by code object
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
	PyObject *none;
	PyObject *code_type;
};

extern struct py_api py;

/*
 * Find the API in this process: 0 when an initialized, usable interpreter is there; -ESRCH
 * when the process has no Python at all (yet: a wrapper such as sh, or a program that loads
 * libpython later); -ENOENT when it has one not initialized yet; another -errno with WHY when
 * refused for good (free-threaded, a version outside 3.8-3.14).
 */
int shim_pyfunc_api__find(char *why, size_t len);

/* PyFrameObject *FRAME's code object (borrowed), read as its version lays it out. */
PyObject *shim_pyfunc_api__frame_code(void *frame);
/* A generator's frame at a PyTrace_RETURN with a value: suspended (a yield, an await)? */
bool shim_pyfunc_api__frame_yielded(void *frame);
/* At PyTrace_CALL: the frame resumes a generator or coroutine rather than starting it? */
bool shim_pyfunc_api__frame_resumed(void *frame);
/* Set the C profile function of thread state TSTATE (3.8: its fields, by hand). */
int shim_pyfunc_api__set_profile(void *tstate, void *func);
/* TSTATE's C profile function now. */
void *shim_pyfunc_api__profile_of(void *tstate);

/* ---- shim_pyfunc_resolve.c: the code objects traced ---- */

/* What the records of one code object carry. */
struct pyfunc_code {
	PyObject *code;		 /* a strong reference while it is in the table */
	struct shim_str *func;	 /* "module:Qual.name" */
	struct shim_str *file;	 /* co_filename */
	struct shim_str *domain; /* the entry's domain, NULL: none */
	uint32_t line;		 /* co_firstlineno */
	bool gen;		 /* a generator's, a coroutine's or an async generator's */
};

/* The code table (GIL held): lookups from the callbacks, additions from the poller. */
const struct pyfunc_code *shim_pyfunc_codes__get(const PyObject *code);
uint32_t shim_pyfunc_codes__count(void);
/* Each code in the table, in the order added (FN may call Python). */
void shim_pyfunc_codes__for_each(void (*fn)(const struct pyfunc_code *c, void *arg), void *arg);
/* Drop every code (their references released): GIL held. */
void shim_pyfunc_codes__clear(void);

/*
 * Resolve the spec TEXT (the canonical lines) against the interpreter now (GIL held): every
 * code object found goes into the table and to ADDED (once each). Returns how many entries
 * are still not found; their names go to MISSING ("a, b", cut to LEN).
 */
int shim_pyfunc_resolve(const char *text, void (*added)(const struct pyfunc_code *c), char *missing,
			size_t len);

/* Whether a flag 's' entry's class was found: new classes are then checked (GIL held). */
bool shim_pyfunc_resolve__has_bases(void);
/* A class just created: its overrides of flag 's' entries' methods traced (GIL held). */
void shim_pyfunc_resolve_class(PyObject *cls, void (*added)(const struct pyfunc_code *c));

/* ---- the mechanisms (GIL held) ---- */

struct pyfunc_mech {
	const char *name;
	/* 0 or -errno with WHY said; DESC: a few words on what it is (the tool id) */
	int (*install)(char *why, size_t len, char *desc, size_t dlen);
	void (*add)(const struct pyfunc_code *c); /* a code object newly traced */
	void (*refresh)(void); /* before each resolve: what changed in the job (threading came) */
	void (*remove)(void);  /* everything off */
};

extern const struct pyfunc_mech shim_pyfunc_mon;  /* shim_pyfunc_mon.c, 3.12+ */
extern const struct pyfunc_mech shim_pyfunc_prof; /* shim_pyfunc_prof.c, 3.8-3.11 */

/* ---- shim_pyfunc.c: what the mechanisms call (GIL held) ---- */

/* A named code's piece begins on this thread (RESUMED: at a resume, not a call). */
void shim_pyfunc__begin(const struct pyfunc_code *c, bool resumed);
/* ... and ends (END: BS_PYFUNC_END_*): its record is written. */
void shim_pyfunc__end(const struct pyfunc_code *c, uint8_t end);
/* Recording now (one relaxed load): the callbacks return at once when not. */
bool shim_pyfunc__on(void);

#endif /* BPFSIGHT_SHIM_PYFUNC_H */
