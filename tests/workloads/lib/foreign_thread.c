// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test library (ctypes): foreign_calls(cb, n) calls cb(0..n-1) from a thread of its own, made
 * here, not by Python. ctypes' callback glue takes the GIL with PyGILState_Ensure and gives
 * it back with PyGILState_Release at each call, so that one OS thread gets a new Python
 * thread state at every call and the last one is freed: what a C library's worker thread
 * calling into Python does (a stack reader must not keep using a freed thread state).
 */
#include <pthread.h>

struct job {
	void (*cb)(int);
	int n;
};

static void *run(void *arg)
{
	struct job *j = arg;

	for (int i = 0; i < j->n; i++)
		j->cb(i);
	return NULL;
}

/* 0 once the N calls are made, -1 when no thread could be made. */
int foreign_calls(void (*cb)(int), int n)
{
	struct job j = { cb, n };
	pthread_t t;

	if (pthread_create(&t, NULL, run, &j))
		return -1;
	pthread_join(t, NULL);
	return 0;
}
