// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Itanium C++ demangling through libstdc++'s __cxa_demangle (linked statically into
 * bpfsight; see elf_syms.h for the contract).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf_syms.h"

/* libstdc++'s demangler, declared here so that C code can call it. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

void demangle(const char *name, char *buf, size_t len)
{
	char *d = NULL;
	int status = -1;

	if (!buf || !len)
		return;
	if (!name)
		name = "";
	/* Only "_Z..." names: __cxa_demangle would also read "i" as the type name "int". */
	if (!strncmp(name, "_Z", 2))
		d = __cxa_demangle(name, NULL, NULL, &status);
	snprintf(buf, len, "%s", status == 0 && d ? d : name);
	free(d);
}
