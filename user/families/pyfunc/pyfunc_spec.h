/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --python-functions SPEC: what the pyfunc family traces, read into the canonical text the
 * cupti-shim reads (bpf/pyfunc_records.h: "MODULE\tQUALNAME\tFLAGS\tDOMAIN\n" per entry).
 * SPEC is comma-joined pieces, each one of
 *   module:Qual.name     a function or method ("__main__:train", "pkg.mod:Class.method",
 *                        "pkg.mod:outer.<locals>.inner")
 *   PATH                 a file in nsys's --python-functions-trace JSON format
 *                        (pyfunc_spec_json.c)
 *   pytorch|lightning|dask  a preset (pyfunc_spec.c lists what each traces; docs/PYFUNC.md)
 * An entry named twice is traced once (its flags joined, its first domain kept).
 */
#ifndef BPFSIGHT_PYFUNC_SPEC_H
#define BPFSIGHT_PYFUNC_SPEC_H

#include <stddef.h>

/* The presets' names, for --help and messages: "pytorch, lightning, dask". */
extern const char pyfunc_spec_presets[];

/*
 * Read ARG into OUT (LEN bytes): the canonical text, NUL-terminated. Returns its length (the
 * bytes before the NUL, > 0), or a negative errno after writing into ERR (ERRLEN bytes) what
 * is wrong, naming the piece or entry: -EINVAL a malformed piece, entry or file, -ENOENT a
 * file that cannot be read, -E2BIG a text longer than LEN - 1, -ENOMEM.
 */
int pyfunc_spec__parse(const char *arg, char *out, size_t len, char *err, size_t errlen);

/* ---- between pyfunc_spec.c and pyfunc_spec_json.c ---- */

struct pyfunc_spec_build;

/*
 * Add one entry (checked: WHAT names where it came from in ERR's message). FLAGS "" or
 * letters, DOMAIN "" for none. 0 or a negative errno after writing ERR.
 */
int pyfunc_spec__add(struct pyfunc_spec_build *b, const char *module, const char *qualname,
		     const char *flags, const char *domain, const char *what, char *err,
		     size_t errlen);

/* The entries of the nsys JSON file at PATH, added to B. 0 or a negative errno after ERR. */
int pyfunc_spec__json_file(struct pyfunc_spec_build *b, const char *path, char *err, size_t errlen);

#endif /* BPFSIGHT_PYFUNC_SPEC_H */
