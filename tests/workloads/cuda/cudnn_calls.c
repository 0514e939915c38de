// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuDNN 9 through the real libcudnn (tests/e2e/test_cudnn.py): the backend API builds a
 * matmul-then-ReLU graph on the host (tensors, the matmul and pointwise descriptors and
 * operations, the operation graph, an engine, its config and a plan: these succeed without a
 * GPU) and executes it; a legacy call; a legacy convolution forward of known shapes; and
 * the same convolution as a backend graph.
 * Without a GPU cudnnCreate fails, so the execute
 * (given that NULL handle) and the legacy call return errors: the probes fire all the same.
 *
 *   cudnn_calls N
 *
 * Runs it N times. The matmul: A 2 x 64 x 128, B 2 x 128 x 32 (batch 2, m 64, k 128, n 32).
 * Output: "pid P", then "done CREATE EXECUTE" (their statuses, the last repetition's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cudnn.h>

typedef cudnnBackendDescriptor_t desc_t;

static desc_t make(cudnnBackendDescriptorType_t type)
{
	desc_t d = NULL;

	cudnnBackendCreateDescriptor(type, &d);
	return d;
}

static void set(desc_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
		const void *v)
{
	cudnnBackendSetAttribute(d, a, t, n, v);
}

static void set_desc(desc_t d, cudnnBackendAttributeName_t a, desc_t v)
{
	set(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

/* A float tensor of NDIMS packed dimensions. */
static desc_t tensor_nd(int64_t id, int ndims, const int64_t *dims)
{
	int64_t strides[4], align = 16;
	cudnnDataType_t dt = CUDNN_DATA_FLOAT;
	desc_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);

	strides[ndims - 1] = 1;
	for (int i = ndims - 2; i >= 0; i--)
		strides[i] = strides[i + 1] * dims[i + 1];
	set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
	set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, ndims, dims);
	set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, ndims, strides);
	set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
	set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
	cudnnBackendFinalize(t);
	return t;
}

static desc_t tensor(int64_t id, int64_t b, int64_t r, int64_t c)
{
	int64_t dims[3] = { b, r, c };

	return tensor_nd(id, 3, dims);
}

/* PLAN, built over graph G (an engine, its config, the plan), executed; then all destroyed. */
static int execute(cudnnHandle_t h, desc_t g, desc_t *all, unsigned n)
{
	desc_t engine, cfg, plan, pack;
	int ret;

	engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
	set_desc(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, g);
	cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
	set_desc(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, engine);
	plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
	set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
	pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
	ret = cudnnBackendExecute(h, plan, pack);
	for (unsigned i = 0; i < n; i++)
		cudnnBackendDestroyDescriptor(all[i]);
	cudnnBackendDestroyDescriptor(engine);
	cudnnBackendDestroyDescriptor(cfg);
	cudnnBackendDestroyDescriptor(plan);
	cudnnBackendDestroyDescriptor(pack);
	return ret;
}

/* A forward convolution graph: x 8x3x32x32, w 16x3x5x5 padded by 2, y 8x16x32x32. */
static int conv_graph(cudnnHandle_t h)
{
	static const int64_t xd[4] = { 8, 3, 32, 32 }, wd[4] = { 16, 3, 5, 5 },
			     yd[4] = { 8, 16, 32, 32 }, ones[2] = { 1, 1 }, pads[2] = { 2, 2 };
	desc_t x = tensor_nd(11, 4, xd), w = tensor_nd(12, 4, wd), y = tensor_nd(13, 4, yd);
	desc_t conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op, g;
	cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
	cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
	int64_t spatial = 2;
	float one = 1, zero = 0;

	set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
	set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
	set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
	set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
	set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
	set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
	set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
	cudnnBackendFinalize(conv);
	op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
	set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
	set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
	set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
	set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
	set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one);
	set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero);
	cudnnBackendFinalize(op);
	g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
	set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
	desc_t all[] = { x, w, y, conv, op, g };
	return execute(h, g, all, sizeof(all) / sizeof(all[0]));
}

static int graph(cudnnHandle_t h)
{
	desc_t a = tensor(1, 2, 64, 128), b = tensor(2, 2, 128, 32), c = tensor(3, 2, 64, 32);
	desc_t y = tensor(4, 2, 64, 32), mm, mm_op, pw, pw_op, g;
	cudnnPointwiseMode_t relu = CUDNN_POINTWISE_RELU_FWD;
	cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
	desc_t ops[2];

	mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
	set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
	cudnnBackendFinalize(mm);
	mm_op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
	set_desc(mm_op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
	set_desc(mm_op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
	set_desc(mm_op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
	set_desc(mm_op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
	cudnnBackendFinalize(mm_op);
	pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
	set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &relu);
	set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32);
	cudnnBackendFinalize(pw);
	pw_op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
	set_desc(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
	set_desc(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, c);
	set_desc(pw_op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
	cudnnBackendFinalize(pw_op);
	g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
	ops[0] = mm_op;
	ops[1] = pw_op;
	set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, ops);
	desc_t all[] = { a, b, c, y, mm, mm_op, pw, pw_op, g };
	return execute(h, g, all, sizeof(all) / sizeof(all[0]));
}

/* A legacy convolution: x 8x3x32x32, a 16x3x5x5 filter padded by 2, y 8x16x32x32. */
static void legacy_conv(cudnnHandle_t h)
{
	cudnnTensorDescriptor_t x = NULL, y = NULL;
	cudnnFilterDescriptor_t w = NULL;
	cudnnConvolutionDescriptor_t conv = NULL;
	float one = 1, zero = 0;
	static float data[16];

	cudnnCreateTensorDescriptor(&x);
	cudnnCreateTensorDescriptor(&y);
	cudnnCreateFilterDescriptor(&w);
	cudnnCreateConvolutionDescriptor(&conv);
	cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 3, 32, 32);
	cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 16, 32, 32);
	cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 16, 3, 5, 5);
	cudnnSetConvolution2dDescriptor(conv, 2, 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
					CUDNN_DATA_FLOAT);
	cudnnConvolutionForward(h, &one, x, data, w, data, conv,
				CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 4096, &zero, y,
				data);
	cudnnDestroyConvolutionDescriptor(conv);
	cudnnDestroyFilterDescriptor(w);
	cudnnDestroyTensorDescriptor(y);
	cudnnDestroyTensorDescriptor(x);
}

int main(int argc, char **argv)
{
	cudnnHandle_t h = NULL;
	int n, created, ret = 0;

	if (argc != 2 || (n = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	created = cudnnCreate(&h);
	if (created != CUDNN_STATUS_SUCCESS)
		h = NULL;
	for (int i = 0; i < n; i++) {
		ret = graph(h);
		cudnnAddTensor(h, NULL, NULL, NULL, NULL, NULL, NULL);
		legacy_conv(h);
		conv_graph(h);
	}
	if (h)
		cudnnDestroy(h);
	printf("done %d %d\n", created, ret);
	return 0;
}
