// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Launch mode: the hooks in before the script's first line (shim_pyfunc.h,
 * docs/PYFUNC-mechanism.md, "Launch mode: from the first call").
 *
 * The poller looks every 50 ms, and an interpreter is not initialized at its first look: a
 * script that calls its functions at once (a main() called right after its definitions) ran
 * and ended before the second. So the shim arranges a synchronous call at the interpreter's
 * start: launch mode stops a new program once its libraries are mapped, until the recorder
 * has probed them (uprobe_mgr.h, "New code"), so when the preloaded shim's constructor runs
 * the pyfunc semaphore is already up and the spec written. Then, Python not being initialized
 * yet, an audit hook (PEP 578's PySys_AddAuditHook, which CPython 3.8+ takes before
 * Py_Initialize) is added. Its first call once Py_IsInitialized() (an import at the end of
 * the interpreter's start, before `cpython.run_file`) installs everything from that thread,
 * which holds the GIL; every function is then found at its first call (discovery, in
 * shim_pyfunc_resolve.c).
 *
 * An audit hook cannot be removed: after its one job it returns at once (one load), as does
 * any other audit event, which CPython raises at imports, opens, compiles and a few more. It is
 * added only in a process where a recording wanted Python functions at its start: a process
 * of a recording that did not ask for them, or started outside one, gets nothing.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_pyfunc.h"
#include "shim_usdt.h"

extern unsigned short bpfsight_pyfunc_semaphore;
extern struct bs_pyfunc_spec bpfsight_pyfunc_spec;

enum { EARLY_OFF, EARLY_ARMED, EARLY_BUSY, EARLY_DONE };

static _Atomic int early = EARLY_OFF;
static int (*is_initialized)(void);

static int audit_hook(const char *event, PyObject *args, void *data)
{
	int armed = EARLY_ARMED;
	PyObject *saved[3];

	(void)event;
	(void)args;
	(void)data;
	if (atomic_load_explicit(&early, memory_order_relaxed) != EARLY_ARMED || !is_initialized())
		return 0;
	/* Once, on the first thread to see the interpreter up; the events our work raises pass. */
	if (!atomic_compare_exchange_strong(&early, &armed, EARLY_BUSY))
		return 0;
	*(void **)&py.PyErr_Fetch = dlsym(RTLD_DEFAULT, "PyErr_Fetch");
	*(void **)&py.PyErr_Restore = dlsym(RTLD_DEFAULT, "PyErr_Restore");
	if (py.PyErr_Fetch && py.PyErr_Restore) {
		/* An event may be raised while an exception is being handled: it is kept. */
		py.PyErr_Fetch(&saved[0], &saved[1], &saved[2]);
		if (shim_pyfunc__install_early())
			shim_log("pyfunc: not installed at the interpreter's start: the poller "
				 "will");
		py.PyErr_Restore(saved[0], saved[1], saved[2]);
	}
	atomic_store(&early, EARLY_DONE);
	return 0;
}

void shim_pyfunc_early__arm(void)
{
	int (*add)(int (*hook)(const char *, PyObject *, void *), void *);

	/* A recording wants this process's Python functions from its start, spec written. */
	if (SHIM_SEM(pyfunc) == 0 || SHIM_SEM(batch) == 0 ||
	    !atomic_load((_Atomic uint32_t *)&bpfsight_pyfunc_spec.gen))
		return;
	is_initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	*(void **)&add = dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
	/* Not Python (a wrapper: its Python children are armed in their turn), or too late. */
	if (!is_initialized || !add || is_initialized())
		return;
	atomic_store(&early, EARLY_ARMED);
	if (add(audit_hook, NULL)) {
		atomic_store(&early, EARLY_OFF);
		return;
	}
	shim_log("pyfunc: armed: the hooks go in as the interpreter starts");
}

bool shim_pyfunc_early__armed(void)
{
	return atomic_load(&early) == EARLY_ARMED;
}
