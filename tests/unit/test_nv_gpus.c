// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nv_gpus: the GPUs a recording's header names, read from the NVIDIA driver's procfs. The
 * fixture tests/fixtures/nvidia-gpus/ is two H100s' directories in the layout the driver's
 * nv-procfs.c writes (580: "Model: \t\t NAME", "Bus Location: \t 0000:18:00.0", then
 * "GPU Firmware" and "GPU Excluded"); the live /proc/driver/nvidia/gpus is read only on a GPU
 * machine (tests/gpu/check_gemm.py compares it with nvidia-smi).
 */
#include <errno.h>
#include <string.h>
#include "nv_gpus.h"
#include "trace_meta.h"
#include "unit.h"

#define H100 "NVIDIA H100 80GB HBM3"

static void test_parse(void)
{
	char model[64], bus[32];

	ASSERT_EQ(nv_gpus__parse("Model: \t\t " H100 "\nIRQ:   \t\t 139\nBus Location: \t "
				 "0000:18:00.0\nDevice Minor: \t 0\n",
				 model, sizeof(model), bus, sizeof(bus)),
		  0, "the driver's layout");
	ASSERT_STREQ(model, H100, "the model, without the tabs that align it");
	ASSERT_STREQ(bus, "0000:18:00.0", "the bus location");
	ASSERT_EQ(nv_gpus__parse("IRQ:   \t\t 139\nBus Location: \t 0000:18:00.0\n", model,
				 sizeof(model), bus, sizeof(bus)),
		  -EINVAL, "no Model line");
	ASSERT_EQ(nv_gpus__parse("Model: \t\t \nBus Location: \t 0000:18:00.0\n", model,
				 sizeof(model), bus, sizeof(bus)),
		  -EINVAL, "an empty Model");
}

static void test_read_fixture(void)
{
	char buf[160];

	ASSERT_EQ(nv_gpus__read("tests/fixtures/nvidia-gpus", buf, sizeof(buf)), 2, "two GPUs");
	ASSERT_STREQ(buf, "0000:18:00.0 " H100 "\n0000:2a:00.0 " H100, "a line each, by bus");
	ASSERT_EQ(nv_gpus__read("tests/fixtures/nvidia-gpus", buf, 40), 1,
		  "what fits: the first line");
	ASSERT_STREQ(buf, "0000:18:00.0 " H100, "the first GPU");
	ASSERT_EQ(nv_gpus__read("tests/fixtures/no-such-dir", buf, sizeof(buf)), 0,
		  "no driver: no GPUs");
	ASSERT_STREQ(buf, "", "nothing written");
}

static void test_model(void)
{
	char m[64];

	ASSERT_STREQ(
		trace_meta__gpu_model("0000:18:00.0 " H100 "\n0000:2a:00.0 " H100, m, sizeof(m)),
		H100, "every GPU the same model");
	ASSERT_TRUE(!trace_meta__gpu_model("0000:18:00.0 " H100 "\n0000:2a:00.0 NVIDIA L4", m,
					   sizeof(m)),
		    "two models: none");
	ASSERT_TRUE(!trace_meta__gpu_model("", m, sizeof(m)), "no GPU");
	ASSERT_TRUE(!trace_meta__gpu_model(NULL, m, sizeof(m)), "not recorded");
}

int main(void)
{
	RUN_TEST(test_parse);
	RUN_TEST(test_read_fixture);
	RUN_TEST(test_model);
	return UNIT_EXIT();
}
