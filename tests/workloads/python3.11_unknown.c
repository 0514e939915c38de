// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An interpreter bpfsight cannot read: named like CPython 3.11 (python3.11_unknown), with a
 * `_PyRuntime` whose fields are nothing 3.11's layout expects (every word points at
 * _PyRuntime itself, so the main interpreter looks set up and no GIL is where it should be),
 * as a vendor's patched build would look. `-t gil` on it must say that its GIL was not found
 * and, as the only family asked, exit non-zero (tests/e2e/test_gil.py). Prints "pid P", then
 * waits (its two threads take turns on a mutex) until stdin closes.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* 1000 bytes: not one of the layouts' sizes; nothing in it looks like a GIL. */
void *_PyRuntime[125];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *turns(void *arg)
{
	for (;;) {
		pthread_mutex_lock(&lock);
		_PyRuntime[0] = _PyRuntime;
		pthread_mutex_unlock(&lock);
		usleep(1000);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	char c;

	for (int i = 0; i < 125; i++)
		_PyRuntime[i] = _PyRuntime;
	pthread_create(&t, NULL, turns, NULL);
	printf("pid %d\n", getpid());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
