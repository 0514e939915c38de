/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* pyfunc family (issue #41): the skeleton of the reading side's branch (pyfunc-shim's at merge). */
#ifndef BPFSIGHT_PYFUNC_H
#define BPFSIGHT_PYFUNC_H

#include "family.h"

extern const struct family family_pyfunc; /* pyfunc.c */

#endif /* BPFSIGHT_PYFUNC_H */
