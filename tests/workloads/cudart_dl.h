/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The real libcudart's cudaStreamQuery, dlopen'ed, for the workloads that call it without
 * being linked with the toolkit (ucall_threads.c, ucall_spin.c): no GPU needed, every call
 * fails fast inside the library, past the cuda family's probe.
 */
#ifndef BPFSIGHT_CUDART_DL_H
#define BPFSIGHT_CUDART_DL_H

#include <dlfcn.h>
#include <stdio.h>

typedef int (*stream_query_fn)(void *stream);

/* cudaStreamQuery of the libcudart at PATH, or NULL (said on stderr, as PROG). */
static inline stream_query_fn cudart_stream_query(const char *path, const char *prog)
{
	void *lib = dlopen(path, RTLD_NOW);
	stream_query_fn fn = lib ? (stream_query_fn)dlsym(lib, "cudaStreamQuery") : NULL;

	if (!fn)
		fprintf(stderr, "%s: no cudaStreamQuery in %s: %s\n", prog, path, dlerror());
	return fn;
}

#endif /* BPFSIGHT_CUDART_DL_H */
