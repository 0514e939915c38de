// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --python-functions' argument (user/families/pyfunc/pyfunc_spec.c): the canonical text each
 * form gives (a list, nsys's JSON file, a preset, mixed), entries named twice, and the exact
 * error of every malformed piece, entry and file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pyfunc_records.h"
#include "pyfunc_spec.h"
#include "unit.h"

static char out[sizeof(((struct bs_pyfunc_spec *)0)->text)], err[512], dir[64];

/* ASSERT_STREQ's message would truncate the spec's text: the text goes to stderr instead. */
#define TEXT_EQ(got, want, what)                                                                   \
	do {                                                                                       \
		if (!ASSERT_TRUE(!strcmp(got, want), what))                                        \
			fprintf(stderr, "%s: got \"%s\", want \"%s\"\n", what, got, want);         \
	} while (0)

static int parse(const char *arg)
{
	return pyfunc_spec__parse(arg, out, sizeof(out), err, sizeof(err));
}

/* A file NAME in the test's directory holding TEXT; its path (static, one at a time). */
static const char *file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static void test_list(void)
{
	const char *want = "__main__\ttrain\t\t\n"
			   "pkg.mod\tModel.forward\t\t\n"
			   "pkg.mod\touter.<locals>.inner\t\t\n";

	ASSERT_EQ(parse("__main__:train,pkg.mod:Model.forward,pkg.mod:outer.<locals>.inner"),
		  strlen(want), "length");
	TEXT_EQ(out, want, "canonical text");
	/* named twice: once */
	ASSERT_EQ(parse("m:f,m:g,m:f"), strlen("m\tf\t\t\nm\tg\t\t\n"), "twice");
	TEXT_EQ(out, "m\tf\t\t\nm\tg\t\t\n", "once each");
	/* non-ASCII identifiers are Python's */
	ASSERT_TRUE(parse("mod:caf\xc3\xa9") > 0, "UTF-8 identifier");
}

static void test_presets(void)
{
	ASSERT_TRUE(parse("pytorch") > 0, "pytorch");
	ASSERT_TRUE(strstr(out, "torch.nn.modules.module\tModule.forward\tsp\tPyTorch\n") == out,
		    "forward by class first");
	ASSERT_TRUE(strstr(out, "torch.optim.optimizer\tOptimizer.step\tsp\tPyTorch\n") != NULL,
		    "every optimizer's step");
	ASSERT_TRUE(strstr(out, "torch._tensor\tTensor.backward\tp\tPyTorch\n") != NULL,
		    "Tensor.backward");
	ASSERT_TRUE(strstr(out, "torch.utils.data.dataloader\t_BaseDataLoaderIter.__next__\tsp\t"
				"PyTorch\n") != NULL,
		    "DataLoader's next");
	ASSERT_TRUE(parse("lightning") > 0, "lightning");
	ASSERT_TRUE(strstr(out, "lightning.pytorch.core.module\tLightningModule.training_step\tsp\t"
				"Lightning\n") != NULL,
		    "lightning.pytorch");
	ASSERT_TRUE(strstr(out, "pytorch_lightning.core.module\tLightningModule.training_step\tsp\t"
				"Lightning\n") != NULL,
		    "pytorch_lightning");
	ASSERT_TRUE(parse("dask") > 0, "dask");
	ASSERT_TRUE(strstr(out, "dask.local\texecute_task\tp\tDask\n") != NULL, "a task");
	/* a preset's entry the user names too is the user's: said when never found */
	ASSERT_TRUE(parse("dask,dask.local:execute_task") > 0, "preset, then named");
	ASSERT_TRUE(strstr(out, "dask.local\texecute_task\t\tDask\n") != NULL, "not a preset's");
}

/* The example of nsys's documentation (a CuPy annotations file), as given there. */
static const char nsys_doc_example[] =
	"[\n"
	"    {\n"
	"        \"_comment\": \"CuPy Annotations\",\n"
	"        \"module\": \"cupy\",\n"
	"        \"color\": \"black\",\n"
	"        \"functions\": [\"random.random\", \"dot\", \"sort\"]\n"
	"    }\n"
	"]\n";

static void test_nsys_file(void)
{
	const char *path = file("cupy.json", nsys_doc_example);

	ASSERT_EQ(parse(path), 44, "the docs' example");
	TEXT_EQ(out, "cupy\trandom.random\t\t\ncupy\tdot\t\t\ncupy\tsort\t\t\n", "entries");
	path = file("bom.json", "\xef\xbb\xbf[{\"module\": \"m\", \"functions\": [\"f\"]}]");
	ASSERT_EQ(parse(path), 6, "a byte order mark first");
	{
		/* a file named like a preset: the preset; ./NAME the file */
		char cwd[256], arg[300];

		if (getcwd(cwd, sizeof(cwd)) && !chdir(dir)) {
			file("dask", "[{\"module\": \"mine\", \"functions\": [\"f\"]}]");
			ASSERT_TRUE(parse("dask") > 0 && strstr(out, "dask.local\t"), "the preset");
			snprintf(arg, sizeof(arg), "./dask");
			ASSERT_EQ(parse(arg), 9, "./dask: the file");
			ASSERT_TRUE(!chdir(cwd), "back");
		}
	}
	path = file("domains.json",
		    "[{\"domain\": \"PyTorch\", \"color\": \"E8B795\", \"module\": \"torch.amp\",\n"
		    "  \"functions\": [\"GradScaler.scale\", {\"function\": \"GradScaler.step\","
		    " \"color\": 255}], \"future\": {\"a\": [1, 2.5e3, true, null]}},\n"
		    " {\"module\": \"m\\u00e9\", \"functions\": []},\n"
		    " {\"module\": \"x\", \"domain\": \"D\\tE\", \"functions\": []}]");
	ASSERT_TRUE(parse(path) > 0, "domains, objects, unknown keys");
	TEXT_EQ(out,
		"torch.amp\tGradScaler.scale\t\tPyTorch\n"
		"torch.amp\tGradScaler.step\t\tPyTorch\n",
		"domain kept, function objects, empty lists");
	/* mixed with a preset and a list; an entry named twice keeps its first domain, joins
	 * flags */
	path = file("mix.json", "[{\"module\": \"torch.optim.optimizer\", \"domain\": \"Mine\","
				"\"functions\": [\"Optimizer.step\"]}]");
	{
		char arg[256];

		snprintf(arg, sizeof(arg), "%s,pytorch,__main__:main", path);
		ASSERT_TRUE(parse(arg) > 0, "mixed");
	}
	ASSERT_TRUE(strstr(out, "torch.optim.optimizer\tOptimizer.step\t") == out, "file first");
	ASSERT_TRUE(strstr(out, "torch.optim.optimizer\tOptimizer.step\ts\tMine\n") == out,
		    "first domain, flags joined");
	ASSERT_TRUE(strstr(out, "\n__main__\tmain\t\t\n") != NULL, "the list's entry last");
}

#define ASSERT_ERR(arg, code, text)                                                                \
	do {                                                                                       \
		ASSERT_EQ(parse(arg), code, arg);                                                  \
		TEXT_EQ(err, text, arg);                                                           \
	} while (0)

static void test_errors(void)
{
	char want[512], arg[256];
	const char *p;

	ASSERT_ERR("", -EINVAL, "an empty entry (two commas, or one at an end)");
	ASSERT_ERR("m:f,,m:g", -EINVAL, "an empty entry (two commas, or one at an end)");
	ASSERT_ERR("torch", -EINVAL,
		   "\"torch\": a function is named with its module: __main__:torch (the script "
		   "run) or MODULE:torch (a module it imports); else a preset (pytorch, lightning, "
		   "dask) or a file that exists");
	ASSERT_ERR("train.step", -EINVAL,
		   "\"train.step\": a function is named with its module, a colon between: "
		   "train:step (or, for a method, MODULE:train.step)");
	ASSERT_ERR("no such", -EINVAL,
		   "\"no such\": neither module:function, a preset (pytorch, lightning, dask) nor "
		   "a file that exists");
	ASSERT_ERR("/no/such.json", -ENOENT,
		   "\"/no/such.json\": neither module:function, a preset (pytorch, lightning, "
		   "dask) nor a file that exists");
	ASSERT_ERR("m:f,1mod:f", -EINVAL,
		   "\"1mod:f\": \"1mod\" is not a module name (dotted Python identifiers)");
	ASSERT_ERR("m:Class..f", -EINVAL,
		   "\"m:Class..f\": \"Class..f\" is not a function's qualified name (\"f\", "
		   "\"Class.method\", \"outer.<locals>.inner\")");
	ASSERT_ERR("m:", -EINVAL,
		   "\"m:\": \"\" is not a function's qualified name (\"f\", \"Class.method\", "
		   "\"outer.<locals>.inner\")");
	ASSERT_ERR("m:f g", -EINVAL,
		   "\"m:f g\": \"f g\" is not a function's qualified name (\"f\", "
		   "\"Class.method\", \"outer.<locals>.inner\")");

	p = file("bad1.json", "[{\"module\": \"m\",\n \"functions\": [\"f\" \"g\"]}]");
	snprintf(want, sizeof(want), "%s:2:20: ',' or ']' expected", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad2.json", "[{\"functions\": [\"f\"]}]");
	snprintf(want, sizeof(want), "%s:1:2: an entry without \"module\"", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad3.json", "{\"module\": \"m\", \"functions\": [\"f\"]}");
	snprintf(want, sizeof(want),
		 "%s:1:1: nsys's format is a list of {\"module\", \"functions\"} objects", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad4.json", "[{\"module\": \"m\", \"functions\": [\"a.b-c\"]}]");
	snprintf(want, sizeof(want),
		 "%s: module \"m\": \"a.b-c\" is not a function's qualified name (\"f\", "
		 "\"Class.method\", \"outer.<locals>.inner\")",
		 p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad5.json",
		 "[{\"module\": \"m\", \"domain\": \"a\\nb\", \"functions\": [\"f\"]}]");
	snprintf(want, sizeof(want),
		 "%s: module \"m\": the domain \"a\nb\" holds a control character", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad6.json", "[{\"module\": \"m\", \"functions\": [\"f\\u0000\"]}]");
	snprintf(want, sizeof(want), "%s:1:40: a malformed string", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("bad7.json", "[] x");
	snprintf(want, sizeof(want), "%s:1:4: text after the list", p);
	ASSERT_ERR(p, -EINVAL, want);
	p = file("empty.json", "[]");
	ASSERT_ERR(p, -EINVAL, "no function named");
	/* a file among other pieces names itself too */
	p = file("bad8.json", "[{\"module\": \"m\", \"functions\": [{\"color\": 1}]}]");
	snprintf(arg, sizeof(arg), "pytorch,%s", p);
	snprintf(want, sizeof(want), "%s:1:44: a function object without \"function\"", p);
	ASSERT_ERR(arg, -EINVAL, want);
}

static void test_too_big(void)
{
	static char arg[BS_PYFUNC_SPEC_MAX * 2];
	size_t used = 0;
	int i;

	for (i = 0; used < sizeof(arg) - 64; i++)
		used += snprintf(arg + used, sizeof(arg) - used, "%smodule_%05d:f", i ? "," : "",
				 i);
	ASSERT_EQ(parse(arg), -E2BIG, "too big");
	ASSERT_TRUE(strstr(err, "more than the 65519 the cupti-shim takes") != NULL, "-E2BIG said");
	/* the same entries in a buffer that holds them: exact fit */
	ASSERT_EQ(pyfunc_spec__parse("m:f", out, 7, err, sizeof(err)), 6, "fits");
	ASSERT_EQ(pyfunc_spec__parse("m:f", out, 6, err, sizeof(err)), -E2BIG, "one byte short");
}

#define BIG_NAMES 10000
#define FILE_BIG  (4u << 20)   /* the most pyfunc_spec_json.c reads */
#define BIG_ROOM  (64ul << 20) /* the file, the entries and malloc's slack, many times over */

/* The address space in use now, in bytes (/proc/self/statm's first field), or 0. */
static unsigned long vm_size(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages * sysconf(_SC_PAGESIZE);
}

/*
 * An nsys file of 10,000 names padded to near the 4 MiB a spec may be, read by a child whose
 * address space may grow by BIG_ROOM only: every name must come out. Each string once took the
 * rest of the file, which the names kept: gigabytes, so the child ran out of room.
 */
static void test_big_file(void)
{
	size_t cap = FILE_BIG, used = 0, wused = 0, wcap = BIG_NAMES * 16 + 1;
	char *text = malloc(cap), *want = malloc(wcap), *got = malloc(wcap), pad[361];
	const char *path;
	struct rlimit rl;
	int status = -1;
	pid_t child;

	if (!ASSERT_TRUE(text && want && got, "buffers"))
		goto cleanup;
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = 0;
	used += snprintf(text, cap, "[{\"module\": \"m\", \"functions\": [\n");
	for (int i = 0; i < BIG_NAMES; i++) {
		used += snprintf(text + used, cap - used,
				 "%s{\"function\": \"f%05d\", \"_comment\": \"%s\"}\n",
				 i ? "," : "", i, pad);
		wused += snprintf(want + wused, wcap - wused, "m\tf%05d\t\t\n", i);
	}
	used += snprintf(text + used, cap - used, "]}]\n");
	if (!ASSERT_TRUE(used > (3u << 20) && used < cap, "a file of 3 to 4 MiB"))
		goto cleanup;
	path = file("big.json", text);
	child = fork();
	if (!ASSERT_TRUE(child >= 0, "fork"))
		goto cleanup;
	if (!child) {
		rl.rlim_cur = rl.rlim_max = vm_size() + BIG_ROOM;
		if (rl.rlim_cur == BIG_ROOM || setrlimit(RLIMIT_AS, &rl))
			_exit(4);
		int ret = pyfunc_spec__parse(path, got, wcap, err, sizeof(err));

		_exit(ret == -ENOMEM ? 2 : ret != (int)wused ? 5 : strcmp(got, want) ? 3 : 0);
	}
	if (waitpid(child, &status, 0) != child)
		status = -1;
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 4, "RLIMIT_AS set");
	ASSERT_TRUE(!WIFEXITED(status) || WEXITSTATUS(status) != 2,
		    "parsed within the room (not -ENOMEM)");
	ASSERT_EQ(status, 0, "every name, in order");
cleanup:
	free(text);
	free(want);
	free(got);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_pyfunc_spec.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_list);
	RUN_TEST(test_presets);
	RUN_TEST(test_nsys_file);
	RUN_TEST(test_errors);
	RUN_TEST(test_too_big);
	RUN_TEST(test_big_file);
	{
		char cmd[96];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "%s failed\n", cmd);
	}
	return UNIT_EXIT();
}
