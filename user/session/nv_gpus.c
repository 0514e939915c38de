// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The NVIDIA GPUs procfs lists (nv_gpus.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nv_gpus.h"

#define NV_GPUS_MAX 64 /* the driver's NV_MAX_DEVICES is 32 */

/* The value of "KEY:" in TEXT (after the tabs and spaces the driver aligns it with). */
static int field(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key), n;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p += !!p) {
		if (strncmp(p, key, klen) || p[klen] != ':')
			continue;
		p += klen + 1;
		p += strspn(p, " \t");
		n = strcspn(p, "\n");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
			n--;
		if (!n)
			return -EINVAL;
		snprintf(out, len, "%.*s", (int)n, p);
		return 0;
	}
	return -EINVAL;
}

int nv_gpus__parse(const char *text, char *model, size_t model_len, char *bus, size_t bus_len)
{
	if (field(text, "Model", model, model_len) || field(text, "Bus Location", bus, bus_len))
		return -EINVAL;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* GPU NAME's line into LINE: its information file's bus and model. */
static int read_one(const char *dir, const char *name, char *line, size_t len)
{
	char path[512], text[4096], model[128], bus[32];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/information", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	if (nv_gpus__parse(text, model, sizeof(model), bus, sizeof(bus)))
		return -EINVAL;
	snprintf(line, len, "%s %s", bus, model);
	return 0;
}

int nv_gpus__read(const char *dir, char *buf, size_t len)
{
	char *names[NV_GPUS_MAX], line[192];
	int n = 0, written = 0;
	size_t used = 0;
	struct dirent *e;
	DIR *d;

	if (len)
		buf[0] = 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < NV_GPUS_MAX)
		if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
			n++;
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	for (int i = 0; i < n; i++) {
		if (!read_one(dir, names[i], line, sizeof(line)) &&
		    used + strlen(line) + 2 <= len) {
			used += snprintf(buf + used, len - used, "%s%s", used ? "\n" : "", line);
			written++;
		}
		free(names[i]);
	}
	return written;
}
