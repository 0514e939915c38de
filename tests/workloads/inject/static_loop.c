// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Linked statically, without dlopen: record --inject must refuse it (nothing can load a
 * library into it) and leave it untouched. Prints "ready", then echoes each stdin line
 * back ("echo LINE") until EOF; exit 0.
 */
#include <stdio.h>

int main(void)
{
	char line[256];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		printf("echo %s", line);
		fflush(stdout);
	}
	return 0;
}
