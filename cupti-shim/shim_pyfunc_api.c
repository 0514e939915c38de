// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python's C API as the process has it (shim_pyfunc.h): every function by dlsym in the
 * global scope, so the shim builds without Python's headers and serves every version, the
 * pyenv builds whose libpython exports it and Debian's stripped /usr/bin/python3.11, whose
 * executable exports it in .dynsym. Nothing is used unless an interpreter is initialized.
 *
 * 3.8-3.11's profile function reads a few fields that have no exported accessor (or whose
 * accessor costs a call and a reference per event): each by the layout of its version,
 * checked against that version's headers (PyFrameObject, _PyInterpreterFrame,
 * PyThreadState; docs/PYFUNC-mechanism.md). Py_TRACE_REFS builds of 3.8-3.11 (a larger
 * object header) are refused; 3.12+ reads no layout.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_pyfunc.h"

struct py_api py;

#define OPCODE_YIELD_VALUE_311	86
#define CODE_UNIT		2 /* 3.11's _Py_CODEUNIT: an opcode and its argument */
#define OPCODE_RESUME_QUICK_311 150
#define OPCODE_RESUME_311	151

/* Where each version keeps what the profile function reads (byte offsets). */
struct py_layout {
	int minor;
	uint16_t f_code;      /* PyFrameObject.f_code (3.11: _PyInterpreterFrame.f_code) */
	uint16_t co_name;     /* PyCodeObject.co_name */
	uint16_t f_lasti;     /* PyFrameObject.f_lasti (int); 0: not read */
	uint16_t f_stacktop;  /* 3.8/3.9: PyFrameObject.f_stacktop, set by a yield */
	uint16_t f_state;     /* 3.10: PyFrameObject.f_state (signed char) */
	uint16_t f_frame;     /* 3.11: PyFrameObject.f_frame (the interpreter frame) */
	uint16_t prev_instr;  /* 3.11: _PyInterpreterFrame.prev_instr */
	uint16_t profilefunc; /* PyThreadState.c_profilefunc */
	uint16_t profileobj;  /* PyThreadState.c_profileobj */
	uint16_t use_tracing; /* 3.8: PyThreadState.use_tracing (int) */
	uint16_t tracefunc;   /* 3.8: PyThreadState.c_tracefunc */
	uint16_t thread_id;   /* PyThreadState.thread_id (unsigned long: pthread_self()) */
	uint16_t eval_frame;  /* 3.8: PyInterpreterState.eval_frame (no accessor before 3.9) */
	uint16_t co_code;     /* 3.11: PyCodeObject.co_code_adaptive (its first instruction) */
};

static const struct py_layout layouts[] = {
	{ 8, .f_code = 32, .co_name = 112, .f_lasti = 104, .f_stacktop = 72, .profilefunc = 56,
	  .profileobj = 72, .use_tracing = 48, .tracefunc = 64, .thread_id = 176,
	  .eval_frame = 568 },
	{ 9, .f_code = 32, .co_name = 112, .f_lasti = 104, .f_stacktop = 72, .profilefunc = 56,
	  .profileobj = 72, .thread_id = 176 },
	{ 10, .f_code = 32, .co_name = 112, .f_lasti = 96, .f_state = 108, .profilefunc = 56,
	  .profileobj = 72, .thread_id = 176 },
	{ 11, .f_code = 32, .co_name = 120, .f_frame = 24, .prev_instr = 56, .profilefunc = 64,
	  .profileobj = 80, .thread_id = 152, .co_code = 184 },
};

static const struct py_layout *lay;

#define FIELD(p, off, type) (*(type *)((char *)(p) + (off)))

PyObject *shim_pyfunc_api__frame_code(void *frame)
{
	if (lay->f_frame)
		return FIELD(FIELD(frame, lay->f_frame, void *), lay->f_code, PyObject *);
	return FIELD(frame, lay->f_code, PyObject *);
}

unsigned shim_pyfunc_api__eval_code_offset(void)
{
	return lay ? lay->f_code : 0;
}

PyObject *shim_pyfunc_api__code_name(const PyObject *code)
{
	return FIELD(code, lay->co_name, PyObject *);
}

/* 3.11: the instruction the frame stopped at (a code unit: opcode, then its argument). */
static const uint8_t *prev_instr(void *frame)
{
	return FIELD(FIELD(frame, lay->f_frame, void *), lay->prev_instr, const uint8_t *);
}

static uint8_t prev_opcode(void *frame)
{
	const uint8_t *instr = prev_instr(frame);

	return instr ? instr[0] : 0;
}

/*
 * 3.11 reports a call at the RESUME its frame starts or resumes at: its argument is 0 at
 * the function's start, 1-3 after a yield, a yield from or an await. -1: not at a RESUME.
 */
static int prev_resume_arg(void *frame)
{
	const uint8_t *instr = prev_instr(frame);

	if (!instr || (instr[0] != OPCODE_RESUME_311 && instr[0] != OPCODE_RESUME_QUICK_311))
		return -1;
	return instr[1];
}

bool shim_pyfunc_api__frame_yielded(void *frame)
{
	if (lay->f_stacktop)
		return FIELD(frame, lay->f_stacktop, void *) != NULL;
	if (lay->f_state)
		return FIELD(frame, lay->f_state, signed char) == -1; /* FRAME_SUSPENDED */
	return prev_opcode(frame) == OPCODE_YIELD_VALUE_311;
}

bool shim_pyfunc_api__frame_resumed(void *frame)
{
	if (lay->f_lasti)
		return FIELD(frame, lay->f_lasti, int) >= 0; /* -1 until it first ran */
	return prev_resume_arg(frame) > 0;
}

/*
 * The frame-evaluation hook's frame (3.8-3.10: the PyFrameObject; 3.11: the interpreter
 * frame, whose f_code is at the same offset) as it is about to run: 3.11 runs a generator's
 * or coroutine's function once to create it (RETURN_GENERATOR, its frame not yet past its
 * first instruction), then at each resume; 3.8-3.10 create it without running it.
 */
enum pyfunc_eval_at shim_pyfunc_api__eval_at(void *frame, bool gen)
{
	const uint8_t *instr, *first;

	if (!lay->prev_instr)
		return gen && FIELD(frame, lay->f_lasti, int) >= 0 ? PYFUNC_EVAL_RESUME
								   : PYFUNC_EVAL_START;
	if (!gen)
		return PYFUNC_EVAL_START;
	instr = FIELD(frame, lay->prev_instr, const uint8_t *);
	first = (const uint8_t *)FIELD(frame, lay->f_code, PyObject *) + lay->co_code;
	if (instr == first - CODE_UNIT)
		return PYFUNC_EVAL_CREATE;
	return instr && instr[0] == OPCODE_YIELD_VALUE_311 ? PYFUNC_EVAL_RESUME : PYFUNC_EVAL_START;
}

bool shim_pyfunc_api__eval_yielded(void *frame)
{
	const uint8_t *instr;

	if (!lay->prev_instr)
		return shim_pyfunc_api__frame_yielded(frame);
	instr = FIELD(frame, lay->prev_instr, const uint8_t *);
	return instr && instr[0] == OPCODE_YIELD_VALUE_311;
}

unsigned long shim_pyfunc_api__thread_id(void *tstate)
{
	return FIELD(tstate, lay->thread_id, unsigned long);
}

void **shim_pyfunc_api__eval_slot_38(void *interp)
{
	return lay->eval_frame ? &FIELD(interp, lay->eval_frame, void *) : NULL;
}

void *shim_pyfunc_api__profile_of(void *tstate)
{
	return FIELD(tstate, lay->profilefunc, void *);
}

/* 3.8 has no _PyEval_SetProfile: its PyEval_SetProfile on another thread's state. */
static void set_profile_38(void *tstate, void *func)
{
	PyObject *old = FIELD(tstate, lay->profileobj, PyObject *);

	FIELD(tstate, lay->profilefunc, void *) = NULL;
	FIELD(tstate, lay->profileobj, PyObject *) = NULL;
	FIELD(tstate, lay->use_tracing, int) = FIELD(tstate, lay->tracefunc, void *) != NULL;
	if (old)
		py.Py_DecRef(old);
	FIELD(tstate, lay->profilefunc, void *) = func;
	FIELD(tstate, lay->use_tracing, int) =
		func || FIELD(tstate, lay->tracefunc, void *) != NULL;
}

int shim_pyfunc_api__set_profile(void *tstate, void *func)
{
	if (py._PyEval_SetProfile)
		return py._PyEval_SetProfile(tstate, func, NULL);
	set_profile_38(tstate, func);
	return 0;
}

#define NEED(field, name)                                                                          \
	do {                                                                                       \
		if (!(*(void **)&py.field = dlsym(RTLD_DEFAULT, name))) {                          \
			missing = name;                                                            \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)
#define MAYBE(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

static int bind(char *why, size_t len)
{
	const char *missing;

	NEED(Py_GetVersion, "Py_GetVersion");
	NEED(PyGILState_Ensure, "PyGILState_Ensure");
	NEED(PyGILState_Release, "PyGILState_Release");
	NEED(PyGILState_GetThisThreadState, "PyGILState_GetThisThreadState");
	NEED(Py_IncRef, "Py_IncRef");
	NEED(Py_DecRef, "Py_DecRef");
	NEED(PySys_GetObject, "PySys_GetObject");
	NEED(PyObject_GetAttrString, "PyObject_GetAttrString");
	NEED(PyObject_HasAttrString, "PyObject_HasAttrString");
	NEED(PyObject_CallFunction, "PyObject_CallFunction");
	NEED(PyObject_CallMethod, "PyObject_CallMethod");
	NEED(PyObject_Type, "PyObject_Type");
	NEED(PyObject_IsSubclass, "PyObject_IsSubclass");
	NEED(PyObject_SetAttrString, "PyObject_SetAttrString");
	NEED(PyObject_Call, "PyObject_Call");
	NEED(PyObject_IsTrue, "PyObject_IsTrue");
	NEED(PyDict_GetItemString, "PyDict_GetItemString");
	NEED(PyDict_Values, "PyDict_Values");
	NEED(PyDict_Keys, "PyDict_Keys");
	NEED(PyDict_Items, "PyDict_Items");
	NEED(PyObject_Dir, "PyObject_Dir");
	NEED(PyUnicode_InternFromString, "PyUnicode_InternFromString");
	NEED(PyImport_ImportModule, "PyImport_ImportModule");
	NEED(PyObject_Size, "PyObject_Size");
	NEED(PySequence_GetItem, "PySequence_GetItem");
	NEED(PyUnicode_AsUTF8, "PyUnicode_AsUTF8");
	NEED(PyLong_AsLong, "PyLong_AsLong");
	NEED(PyLong_FromLong, "PyLong_FromLong");
	NEED(PyCFunction_NewEx, "PyCFunction_NewEx");
	NEED(PyErr_Occurred, "PyErr_Occurred");
	NEED(PyErr_Clear, "PyErr_Clear");
	NEED(PyErr_Fetch, "PyErr_Fetch");
	NEED(PyErr_Restore, "PyErr_Restore");
	NEED(PyInterpreterState_Main, "PyInterpreterState_Main");
	NEED(PyInterpreterState_ThreadHead, "PyInterpreterState_ThreadHead");
	NEED(PyThreadState_Next, "PyThreadState_Next");
	NEED(PyEval_SetProfile, "PyEval_SetProfile");
	NEED(none, "_Py_NoneStruct");
	NEED(code_type, "PyCode_Type");
	MAYBE(_PyEval_SetProfile, "_PyEval_SetProfile");
	MAYBE(PyFrame_GetCode, "PyFrame_GetCode");
	MAYBE(PyThreadState_Get, "PyThreadState_Get");
	MAYBE(_PyEval_EvalFrameDefault, "_PyEval_EvalFrameDefault");
	MAYBE(GetEvalFrameFunc, "_PyInterpreterState_GetEvalFrameFunc");
	MAYBE(SetEvalFrameFunc, "_PyInterpreterState_SetEvalFrameFunc");
	if (!MAYBE(IsFinalizing, "Py_IsFinalizing"))
		NEED(IsFinalizing, "_Py_IsFinalizing");
	return 0;
fail:
	snprintf(why, len, "Python functions not traced: this interpreter does not export %s",
		 missing);
	return -ENOSYS;
}

int shim_pyfunc_api__find(char *why, size_t len)
{
	static int err = -ENOENT; /* refused for good once another */
	const char *v;
	int major = 0, minor = 0;

	if (err != -ENOENT)
		return err;
	if (!MAYBE(Py_IsInitialized, "Py_IsInitialized"))
		return -ESRCH; /* no Python here (yet): a wrapper, or a program that loads it later */
	if (!py.Py_IsInitialized())
		return -ENOENT; /* not yet: an embedding program may start one later */
	err = bind(why, len);
	if (err)
		return err;
	v = py.Py_GetVersion();
	/* 3.12 on reads no layout (sys.monitoring's C API): a release after 3.15 is served. */
	if (sscanf(v, "%d.%d", &major, &minor) != 2 || major != 3 || minor < 8) {
		snprintf(why, len,
			 "Python functions not traced: Python %.40s is not supported "
			 "(3.8 on are)",
			 v);
		return err = -ENOTSUP;
	}
	py.minor = minor;
	/* The free-threaded build says so in its version ("free-threading build"). */
	if (strstr(v, "free-threading")) {
		snprintf(why, len,
			 "Python functions not traced: Python %d.%d free-threaded builds are "
			 "not supported yet (the shim's tables assume the GIL)",
			 major, minor);
		return err = -ENOTSUP;
	}
	if (minor < 12) {
		for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
			if (layouts[i].minor == minor)
				lay = &layouts[i];
		/* Py_TRACE_REFS puts two more pointers in every object's header: no layout fits. */
		if (dlsym(RTLD_DEFAULT, "_Py_PrintReferenceAddresses")) {
			snprintf(
				why, len,
				"Python functions not traced: a Py_TRACE_REFS build of Python 3.%d "
				"(its objects are not laid out as the release build's)",
				minor);
			return err = -ENOTSUP;
		}
	}
	return 0;
}
