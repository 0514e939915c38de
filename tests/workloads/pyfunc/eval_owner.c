// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/e2e/test_pyfunc_eval.py's extension: a frame-evaluation hook (PEP 523) of the job's
 * own, held as TorchDynamo holds it (torch/csrc/dynamo/eval_frame.c: enable_eval_frame_shim
 * saves the interpreter's evaluator and puts its own, which hands the frames it does not
 * compile to the saved one; enable_eval_frame_default puts the saved one back). Built by the
 * test against the interpreter's own headers (3.9-3.11).
 *
 *   take()       save the evaluator now in the slot, put this module's hook there
 *   give_back()  put the saved one back
 *   frames()     frames this hook was handed
 *   slot()       "own", "default" or "other": what the slot holds now
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static _PyFrameEvalFunction saved;
static unsigned long long nframes;

#if PY_VERSION_HEX >= 0x030B0000
static PyObject *own(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
#else
static PyObject *own(PyThreadState *ts, PyFrameObject *f, int throwflag)
#endif
{
	nframes++;
	return saved(ts, f, throwflag);
}

static PyInterpreterState *interp(void)
{
	return PyThreadState_GET()->interp;
}

static PyObject *take(PyObject *self, PyObject *unused)
{
	if (_PyInterpreterState_GetEvalFrameFunc(interp()) != own) {
		saved = _PyInterpreterState_GetEvalFrameFunc(interp());
		_PyInterpreterState_SetEvalFrameFunc(interp(), own);
	}
	Py_RETURN_NONE;
}

static PyObject *give_back(PyObject *self, PyObject *unused)
{
	if (_PyInterpreterState_GetEvalFrameFunc(interp()) == own)
		_PyInterpreterState_SetEvalFrameFunc(interp(), saved);
	Py_RETURN_NONE;
}

static PyObject *frames(PyObject *self, PyObject *unused)
{
	return PyLong_FromUnsignedLongLong(nframes);
}

static PyObject *slot(PyObject *self, PyObject *unused)
{
	_PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp());

	return PyUnicode_FromString(cur == own			      ? "own"
				    : cur == _PyEval_EvalFrameDefault ? "default"
								      : "other");
}

static PyMethodDef methods[] = {
	{ "take", take, METH_NOARGS, "this module's hook in the slot, the one there saved" },
	{ "give_back", give_back, METH_NOARGS, "the saved evaluator back" },
	{ "frames", frames, METH_NOARGS, "frames handed to this hook" },
	{ "slot", slot, METH_NOARGS, "own, default or other" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "eval_owner", NULL, -1, methods };

PyMODINIT_FUNC PyInit_eval_owner(void)
{
	return PyModule_Create(&module);
}
