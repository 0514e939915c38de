// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/pep523_step.py's extension: what a frame-evaluation hook (PEP 523) would cost the
 * untraced calls of a Python-heavy step on CPython 3.8-3.12, against the C profile function
 * the cupti-shim installs on 3.8-3.11 today (issue 66). Built against each interpreter's own
 * headers (a benchmark, not the shim: the shim finds the C API with dlsym).
 *
 *   eval_hook(codes)  every frame evaluation passes through a C function that probes CODES
 *                     (a tuple of code objects) and counts the hits, then runs the default
 *                     evaluator: what a per-code-object hook does to every other call
 *   profile(codes)    a C profile function doing the same probe at each call and return
 *   off()             neither
 *   hits()            calls of CODES counted
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#endif
#if PY_VERSION_HEX < 0x03090000
#define Py_BUILD_CORE 1
#include <internal/pycore_pystate.h>
#undef Py_BUILD_CORE
#endif

#define SLOTS 64 /* open addressing by pointer: the named code objects are few */
static PyObject *table[SLOTS];
static unsigned long long nhits;

static int named(PyObject *code)
{
	size_t i = ((size_t)code >> 4) & (SLOTS - 1);

	while (table[i]) {
		if (table[i] == code)
			return 1;
		i = (i + 1) & (SLOTS - 1);
	}
	return 0;
}

static int fill(PyObject *codes)
{
	memset(table, 0, sizeof(table));
	nhits = 0;
	if (!PyTuple_Check(codes) || PyTuple_GET_SIZE(codes) > SLOTS / 2) {
		PyErr_SetString(PyExc_TypeError, "a tuple of at most 32 code objects");
		return -1;
	}
	for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(codes); k++) {
		PyObject *c = PyTuple_GET_ITEM(codes, k);
		size_t i = ((size_t)c >> 4) & (SLOTS - 1);

		while (table[i])
			i = (i + 1) & (SLOTS - 1);
		table[i] = c;
	}
	return 0;
}

#if PY_VERSION_HEX >= 0x030B0000
static PyObject *hook(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
	if (named((PyObject *)f->f_code))
		nhits++;
	return _PyEval_EvalFrameDefault(ts, f, throwflag);
}
#elif PY_VERSION_HEX >= 0x03090000
static PyObject *hook(PyThreadState *ts, PyFrameObject *f, int throwflag)
{
	if (named((PyObject *)f->f_code))
		nhits++;
	return _PyEval_EvalFrameDefault(ts, f, throwflag);
}
#else
static PyObject *hook(PyFrameObject *f, int throwflag)
{
	if (named((PyObject *)f->f_code))
		nhits++;
	return _PyEval_EvalFrameDefault(f, throwflag);
}
#endif

static void set_eval(int on)
{
	PyInterpreterState *interp = PyThreadState_GET()->interp;

#if PY_VERSION_HEX >= 0x03090000
	_PyInterpreterState_SetEvalFrameFunc(interp, on ? hook : _PyEval_EvalFrameDefault);
#else
	interp->eval_frame = on ? hook : _PyEval_EvalFrameDefault;
#endif
}

static int prof(PyObject *obj, PyFrameObject *f, int what, PyObject *arg)
{
	(void)obj;
	(void)arg;
	if (what == PyTrace_CALL) {
#if PY_VERSION_HEX >= 0x03090000
		PyCodeObject *code = PyFrame_GetCode(f);

		if (named((PyObject *)code))
			nhits++;
		Py_DECREF(code);
#else
		if (named((PyObject *)f->f_code))
			nhits++;
#endif
	}
	return 0;
}

static PyObject *eval_hook(PyObject *self, PyObject *codes)
{
	if (fill(codes))
		return NULL;
	PyEval_SetProfile(NULL, NULL);
	set_eval(1);
	Py_RETURN_NONE;
}

static PyObject *profile(PyObject *self, PyObject *codes)
{
	if (fill(codes))
		return NULL;
	set_eval(0);
	PyEval_SetProfile(prof, NULL);
	Py_RETURN_NONE;
}

static PyObject *off(PyObject *self, PyObject *unused)
{
	set_eval(0);
	PyEval_SetProfile(NULL, NULL);
	Py_RETURN_NONE;
}

static PyObject *hits(PyObject *self, PyObject *unused)
{
	return PyLong_FromUnsignedLongLong(nhits);
}

static PyMethodDef methods[] = {
	{ "eval_hook", eval_hook, METH_O, "a PEP 523 hook probing CODES" },
	{ "profile", profile, METH_O, "a C profile function probing CODES" },
	{ "off", off, METH_NOARGS, "neither" },
	{ "hits", hits, METH_NOARGS, "calls of CODES counted" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "pep523_hook", NULL, -1, methods };

PyMODINIT_FUNC PyInit_pep523_hook(void)
{
	return PyModule_Create(&module);
}
