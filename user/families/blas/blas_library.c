// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which BLAS did the work: the file the recorder found the GEMMs in (a LIBRARY symbol,
 * records.h), and what its name says it is. The reference BLAS (netlib's Fortran, Debian's
 * libblas3 in .../blas/) runs a GEMM an order of magnitude slower than OpenBLAS, BLIS or MKL
 * on the same CPU, and is what a distribution's torch or numpy gets when nothing better is
 * installed: a user reading 4 GFLOP/s should be told which one ran.
 */
#include <string.h>
#include <strings.h>
#include "blas.h"
#include "trace_model.h"

const char *blas__library(const struct trace_model *m, __u32 pid)
{
	return trace_model__symbol(m, pid, BS_REC_BLAS_CALL);
}

/* NAME contains WHAT, in either case. */
static int has(const char *name, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = name; *p; p++)
		if (!strncasecmp(p, what, n))
			return 1;
	return 0;
}

const char *blas__impl(const char *path)
{
	const char *base;

	if (!path || !*path)
		return "";
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (has(base, "openblas"))
		return "OpenBLAS";
	if (has(base, "mkl"))
		return "MKL";
	if (has(base, "blis"))
		return "BLIS";
	if (has(base, "atlas") || has(path, "/atlas/"))
		return "ATLAS";
	if (has(path, "/openblas"))
		return "OpenBLAS"; /* Debian's alternative: .../openblas-pthread/libblas.so.3 */
	if (has(path, "/blis"))
		return "BLIS";
	if (has(base, "accelerate") || has(base, "armpl") || has(base, "aocl") ||
	    has(base, "flame"))
		return "vendor BLAS";
	if (!strncmp(base, "libblas.so", 10) || !strncmp(base, "libcblas.so", 11))
		return "reference"; /* netlib's, under the name every BLAS is installed as */
	return "";
}

int blas__is_reference(const char *path)
{
	return !strcmp(blas__impl(path), "reference");
}
