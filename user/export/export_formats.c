// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The formats every trace has, in the order `bpfsight export --format` offers them (a family's
 * own follow: struct family.exporters). Adding one is its file, export_NAME.c defining
 * `const struct exporter export_NAME` (export.h), and its line here (docs/ARCHITECTURE.md,
 * "Adding an export format").
 */
#include <stddef.h>
#include "export.h"

#define EXPORT_FORMATS(X)                                                                          \
	X(perfetto)                                                                                \
	X(chrome)                                                                                  \
	X(sqlite)                                                                                  \
	X(clickhouse)                                                                              \
	X(folded)                                                                                  \
	X(pprof)                                                                                   \
	X(svg)                                                                                     \
	X(folded_offcpu)

#define EXPORT_DECLARE(name) extern const struct exporter export_##name;
#define EXPORT_LIST(name)    &export_##name,

EXPORT_FORMATS(EXPORT_DECLARE)

const struct exporter *const export_formats[] = { EXPORT_FORMATS(EXPORT_LIST) NULL };
