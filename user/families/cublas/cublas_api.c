// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cublas family's API table: which libcublas and libcublasLt functions are probed, and for
 * each its argument spec (args): what the BPF side captures and how the decoder reads the
 * arguments. An entry's index is bs_ucall.fn in trace files: APPEND ONLY, never reorder or
 * remove.
 *
 * Traced: handles and streams, every GEMM entry point of cuBLAS 13 (the _v2 and _64
 * variants, Batched, StridedBatched, Ex, 3m, GroupedBatched), and the cuBLASLt functions that
 * make a cublasLtMatmul readable (its handle, layouts and matmul descriptors). The GEMMs take
 * 14 to 23 arguments, most on the stack: the spec copies the stack-argument area at return
 * (-!N, the 192 bytes of ucall.bpf.h's copy: words 7 to 30) and reads each stack argument at
 * its offset, (argument - 7) x 8. The _64 variants take int64_t sizes: the same offsets, read
 * as u64. Types a function implies (cublasSgemm_v2: CUDA_R_32F and CUBLAS_COMPUTE_32F) are
 * constants of its spec, so that every GEMM shows its types alike. GroupedBatched calls pass
 * their shapes in arrays: the group count and the types only.
 *
 * args, in cublas_keys: handle stream transa transb m n k lda ldb ldc batch atype btype ctype
 *   compute algo groups mode bytes layout desc adesc bdesc cdesc ddesc type rows cols ld
 *   scale attr value size. Sizes are C ints (s32), int64_t in the _64 variants (u64).
 * Every spec is compiled and checked when bpfsight is built (tools/check_specs.c);
 * tests/e2e/test_cublas.py calls each GEMM form through the real libraries.
 */
#include <errno.h>
#include <stdio.h>
#include "cublas_decode.h"

/* The specs of the GEMM forms; T: "" (int sizes) or ":u64" (the _64 variants). */
#define MNK(T)	   "handle transa transb m" T " n" T " k" T
#define GEMM(T)	   MNK(T) " -!8 lda" T "@16 ldb" T "@32 ldc" T "@56"
#define BATCHED(T) MNK(T) " -!9 lda" T "@16 ldb" T "@32 ldc" T "@56 batch" T "@64"
#define STRIDED(T) MNK(T) " -!12 lda" T "@16 ldb" T "@40 ldc" T "@72 batch" T "@88"
#define EXT(T)	   MNK(T) " -!11 atype@16 lda" T "@24 btype@40 ldb" T "@48 ctype@72 ldc" T "@80"
#define GEMMEX(T)  EXT(T) " compute@88 algo@96"
#define BATCHEX(T)                                                                                 \
	MNK(T)                                                                                     \
	" -!14 atype@16 lda" T "@24 btype@40 ldb" T "@48 ctype@72 ldc" T "@80 batch" T             \
	"@88 compute@96 algo@104"
#define STRIDEX(T)                                                                                 \
	MNK(T)                                                                                     \
	" -!17 atype@16 lda" T "@24 btype@48 ldb" T "@56 ctype@88 ldc" T "@96 batch" T             \
	"@112 compute@120 algo@128"
#define GROUPED(T)   "handle - - - - - -!10 groups" T "@64"
#define GROUPEDEX(T) "handle - - - - - -!14 atype@16 btype@40 ctype@72 groups" T "@88 compute@104"

/* The types a function's name implies. */
#define TYPES(t, c) " atype=" t " btype=" t " ctype=" t " compute=" c
#define S	    TYPES("CUDA_R_32F", "CUBLAS_COMPUTE_32F")
#define D	    TYPES("CUDA_R_64F", "CUBLAS_COMPUTE_64F")
#define C	    TYPES("CUDA_C_32F", "CUBLAS_COMPUTE_32F")
#define Z	    TYPES("CUDA_C_64F", "CUBLAS_COMPUTE_64F")
#define H	    TYPES("CUDA_R_16F", "CUBLAS_COMPUTE_16F")
#define C32	    " compute=CUBLAS_COMPUTE_32F"

/* The table is aligned by hand: one function a line, its spec beside it. */
// clang-format off
#define A(n, grp, fl, a) { .name = n, .group = grp, .flags = (fl), .args = a }
#define G(n, a) A(n, CUBLAS_GRP_GEMM, 0, a)

static const struct ucall_api cublas_apis[] = {
	/* Handles: the stream a handle's calls go to is the last cublasSetStream's. */
	A("cublasCreate_v2", CUBLAS_GRP_HANDLE, 0, "*handle"),
	A("cublasDestroy_v2", CUBLAS_GRP_HANDLE, 0, "handle"),
	A("cublasSetStream_v2", CUBLAS_GRP_HANDLE, CUBLAS_F_SET_STREAM, "handle stream"),
	A("cublasGetStream_v2", CUBLAS_GRP_HANDLE, 0, "handle *stream"),
	A("cublasSetMathMode", CUBLAS_GRP_HANDLE, 0, "handle mode"),
	A("cublasSetWorkspace_v2", CUBLAS_GRP_HANDLE, 0, "handle - bytes"),
	/* GEMMs. */
	G("cublasSgemm_v2", GEMM("") S), G("cublasSgemm_v2_64", GEMM(":u64") S),
	G("cublasDgemm_v2", GEMM("") D), G("cublasDgemm_v2_64", GEMM(":u64") D),
	G("cublasCgemm_v2", GEMM("") C), G("cublasCgemm_v2_64", GEMM(":u64") C),
	G("cublasZgemm_v2", GEMM("") Z), G("cublasZgemm_v2_64", GEMM(":u64") Z),
	G("cublasHgemm", GEMM("") H), G("cublasHgemm_64", GEMM(":u64") H),
	G("cublasCgemm3m", GEMM("") C), G("cublasCgemm3m_64", GEMM(":u64") C),
	G("cublasZgemm3m", GEMM("") Z), G("cublasZgemm3m_64", GEMM(":u64") Z),
	G("cublasSgemmBatched", BATCHED("") S), G("cublasSgemmBatched_64", BATCHED(":u64") S),
	G("cublasDgemmBatched", BATCHED("") D), G("cublasDgemmBatched_64", BATCHED(":u64") D),
	G("cublasCgemmBatched", BATCHED("") C), G("cublasCgemmBatched_64", BATCHED(":u64") C),
	G("cublasZgemmBatched", BATCHED("") Z), G("cublasZgemmBatched_64", BATCHED(":u64") Z),
	G("cublasHgemmBatched", BATCHED("") H), G("cublasHgemmBatched_64", BATCHED(":u64") H),
	G("cublasCgemm3mBatched", BATCHED("") C), G("cublasCgemm3mBatched_64", BATCHED(":u64") C),
	G("cublasSgemmStridedBatched", STRIDED("") S),
	G("cublasSgemmStridedBatched_64", STRIDED(":u64") S),
	G("cublasDgemmStridedBatched", STRIDED("") D),
	G("cublasDgemmStridedBatched_64", STRIDED(":u64") D),
	G("cublasCgemmStridedBatched", STRIDED("") C),
	G("cublasCgemmStridedBatched_64", STRIDED(":u64") C),
	G("cublasZgemmStridedBatched", STRIDED("") Z),
	G("cublasZgemmStridedBatched_64", STRIDED(":u64") Z),
	G("cublasHgemmStridedBatched", STRIDED("") H),
	G("cublasHgemmStridedBatched_64", STRIDED(":u64") H),
	G("cublasCgemm3mStridedBatched", STRIDED("") C),
	G("cublasCgemm3mStridedBatched_64", STRIDED(":u64") C),
	G("cublasSgemmEx", EXT("") C32), G("cublasSgemmEx_64", EXT(":u64") C32),
	G("cublasCgemmEx", EXT("") C32), G("cublasCgemmEx_64", EXT(":u64") C32),
	G("cublasCgemm3mEx", EXT("") C32), G("cublasCgemm3mEx_64", EXT(":u64") C32),
	G("cublasGemmEx", GEMMEX("")), G("cublasGemmEx_64", GEMMEX(":u64")),
	G("cublasGemmBatchedEx", BATCHEX("")), G("cublasGemmBatchedEx_64", BATCHEX(":u64")),
	G("cublasGemmStridedBatchedEx", STRIDEX("")),
	G("cublasGemmStridedBatchedEx_64", STRIDEX(":u64")),
	A("cublasSgemmGroupedBatched", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPED("") S),
	A("cublasSgemmGroupedBatched_64", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPED(":u64") S),
	A("cublasDgemmGroupedBatched", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPED("") D),
	A("cublasDgemmGroupedBatched_64", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPED(":u64") D),
	A("cublasGemmGroupedBatchedEx", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPEDEX("")),
	A("cublasGemmGroupedBatchedEx_64", CUBLAS_GRP_GEMM, CUBLAS_F_GROUPED, GROUPEDEX(":u64")),
	/* cuBLASLt: a matmul's shape and types are in the descriptors it is given. */
	A("cublasLtCreate", CUBLAS_GRP_HANDLE, 0, "*handle"),
	A("cublasLtDestroy", CUBLAS_GRP_HANDLE, 0, "handle"),
	A("cublasLtMatrixLayoutCreate", CUBLAS_GRP_LT_DESC, CUBLAS_F_LAYOUT_CREATE,
	  "*layout type rows cols ld"),
	A("cublasLtMatrixLayoutInit_internal", CUBLAS_GRP_LT_DESC, CUBLAS_F_LAYOUT_CREATE,
	  "layout - type rows cols ld"),
	A("cublasLtMatrixLayoutSetAttribute", CUBLAS_GRP_LT_DESC, CUBLAS_F_LAYOUT_SET,
	  "layout attr &- size value@0"),
	A("cublasLtMatrixLayoutDestroy", CUBLAS_GRP_LT_DESC, CUBLAS_F_LAYOUT_DESTROY, "layout"),
	A("cublasLtMatmulDescCreate", CUBLAS_GRP_LT_DESC, CUBLAS_F_DESC_CREATE,
	  "*desc compute scale"),
	A("cublasLtMatmulDescInit_internal", CUBLAS_GRP_LT_DESC, CUBLAS_F_DESC_CREATE,
	  "desc - compute scale"),
	A("cublasLtMatmulDescSetAttribute", CUBLAS_GRP_LT_DESC, CUBLAS_F_DESC_SET,
	  "desc attr &- size value@0"),
	A("cublasLtMatmulDescDestroy", CUBLAS_GRP_LT_DESC, CUBLAS_F_DESC_DESTROY, "desc"),
	/* Arguments 7 on are on the stack: Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
	 * its size, stream. */
	A("cublasLtMatmul", CUBLAS_GRP_LT_MATMUL, 0,
	  "handle desc - - adesc - -!10 bdesc@0 cdesc@24 ddesc@40 bytes@64 stream@72"),
	A("cublasLtMatmulAlgoGetHeuristic", CUBLAS_GRP_OTHER, 0, "handle desc adesc bdesc cdesc ddesc"),
};
// clang-format on

/* cudaDataType_t, by value (library_types.h): dense from 0 to 33. */
static const char *const type_names[] = {
	"CUDA_R_32F",	   "CUDA_R_64F",     "CUDA_R_16F",     "CUDA_R_8I",	 "CUDA_C_32F",
	"CUDA_C_64F",	   "CUDA_C_16F",     "CUDA_C_8I",      "CUDA_R_8U",	 "CUDA_C_8U",
	"CUDA_R_32I",	   "CUDA_C_32I",     "CUDA_R_32U",     "CUDA_C_32U",	 "CUDA_R_16BF",
	"CUDA_C_16BF",	   "CUDA_R_4I",	     "CUDA_C_4I",      "CUDA_R_4U",	 "CUDA_C_4U",
	"CUDA_R_16I",	   "CUDA_C_16I",     "CUDA_R_16U",     "CUDA_C_16U",	 "CUDA_R_64I",
	"CUDA_C_64I",	   "CUDA_R_64U",     "CUDA_C_64U",     "CUDA_R_8F_E4M3", "CUDA_R_8F_E5M2",
	"CUDA_R_8F_UE8M0", "CUDA_R_6F_E2M3", "CUDA_R_6F_E3M2", "CUDA_R_4F_E2M1",
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

/*
 * cublasComputeType_t (cublas_api.h) from 64 on; below, the cudaDataType_t an old caller of
 * cublasGemmEx passes as its compute type. "" where neither defines a value.
 */
static const char *const compute_names[] = {
	[0 ... 63] = "",
	[64] = "CUBLAS_COMPUTE_16F",
	[65] = "CUBLAS_COMPUTE_16F_PEDANTIC",
	[66 ... 67] = "",
	[68] = "CUBLAS_COMPUTE_32F",
	[69] = "CUBLAS_COMPUTE_32F_PEDANTIC",
	[70] = "CUBLAS_COMPUTE_64F",
	[71] = "CUBLAS_COMPUTE_64F_PEDANTIC",
	[72] = "CUBLAS_COMPUTE_32I",
	[73] = "CUBLAS_COMPUTE_32I_PEDANTIC",
	[74] = "CUBLAS_COMPUTE_32F_FAST_16F",
	[75] = "CUBLAS_COMPUTE_32F_FAST_16BF",
	[76] = "",
	[77] = "CUBLAS_COMPUTE_32F_FAST_TF32",
	[78] = "CUBLAS_COMPUTE_32F_EMULATED_16BFX9",
	[79] = "CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT",
};
#define NCOMPUTES (sizeof(compute_names) / sizeof(compute_names[0]))

const char *cublas__type_name(__s32 t)
{
	return t >= 0 && (__u32)t < NTYPES ? type_names[t] : NULL;
}

const char *cublas__compute_name(__s32 t)
{
	if (t >= 0 && (__u32)t < NTYPES)
		return type_names[t];
	return t >= 0 && (__u32)t < NCOMPUTES && compute_names[t][0] ? compute_names[t] : NULL;
}

#define U64    1u << UCALL_T_U64, UCALL_T_U64
#define INT    1u << UCALL_T_S32, UCALL_T_S32
#define SIZE   1u << UCALL_T_S32 | 1u << UCALL_T_U64, UCALL_T_S32 /* int, int64_t in _64 */
#define TYPE   INT, 0, type_names, NTYPES
#define COMPUT INT, 0, compute_names, NCOMPUTES
/* What cublas specs may name, each with the type its C parameter has. */
const struct ucall_key cublas_keys[K_NR] = {
	[K_HANDLE] = { "handle", U64 },
	[K_STREAM] = { "stream", U64 },
	[K_TRANSA] = { "transa", INT },
	[K_TRANSB] = { "transb", INT },
	[K_M] = { "m", SIZE },
	[K_N] = { "n", SIZE },
	[K_K] = { "k", SIZE },
	[K_LDA] = { "lda", SIZE },
	[K_LDB] = { "ldb", SIZE },
	[K_LDC] = { "ldc", SIZE },
	[K_BATCH] = { "batch", SIZE },
	[K_ATYPE] = { "atype", TYPE },
	[K_BTYPE] = { "btype", TYPE },
	[K_CTYPE] = { "ctype", TYPE },
	[K_COMPUTE] = { "compute", COMPUT },
	[K_ALGO] = { "algo", INT },
	[K_GROUPS] = { "groups", SIZE },
	[K_MODE] = { "mode", INT },
	[K_BYTES] = { "bytes", U64 }, /* size_t */
	[K_LAYOUT] = { "layout", U64 },
	[K_DESC] = { "desc", U64 },
	[K_ADESC] = { "adesc", U64 },
	[K_BDESC] = { "bdesc", U64 },
	[K_CDESC] = { "cdesc", U64 },
	[K_DDESC] = { "ddesc", U64 },
	[K_TYPE] = { "type", TYPE },
	[K_ROWS] = { "rows", U64 }, /* uint64_t */
	[K_COLS] = { "cols", U64 },
	[K_LD] = { "ld", U64 }, /* int64_t */
	[K_SCALE] = { "scale", TYPE },
	[K_ATTR] = { "attr", INT },
	[K_VALUE] = { "value", U64 }, /* the attribute's first 8 bytes: SIZE says how many count */
	[K_SIZE] = { "size", U64 },
};

/* What the decoder and the walk rely on beyond the grammar, per entry. */
static int cublas_api__check(const struct ucall_api *a, const struct ucall_spec *s, char *err,
			     size_t len)
{
	static const int gemm_keys[] = { K_HANDLE, K_ATYPE, K_BTYPE, K_CTYPE, K_COMPUTE };
	static const int shape_keys[] = { K_TRANSA, K_TRANSB, K_M, K_N, K_K };

	if (a->group != CUBLAS_GRP_GEMM)
		return 0;
	for (unsigned i = 0; i < sizeof(gemm_keys) / sizeof(gemm_keys[0]); i++)
		if (!ucall_spec__has(s, gemm_keys[i]))
			return snprintf(err, len, "a GEMM needs %s",
					cublas_keys[gemm_keys[i]].name),
			       -EINVAL;
	for (unsigned i = 0; i < sizeof(shape_keys) / sizeof(shape_keys[0]); i++)
		if (!(a->flags & CUBLAS_F_GROUPED) && !ucall_spec__has(s, shape_keys[i]))
			return snprintf(err, len, "a GEMM needs %s",
					cublas_keys[shape_keys[i]].name),
			       -EINVAL;
	return 0;
}

static struct ucall_spec *cublas_compiled;

const struct ucall_table cublas_table = {
	.family = "cublas",
	.rec_type = BS_REC_CUBLAS_CALL,
	.apis = cublas_apis,
	.napis = sizeof(cublas_apis) / sizeof(cublas_apis[0]),
	.keys = cublas_keys,
	.nkeys = K_NR,
	.check = cublas_api__check,
	.compiled = &cublas_compiled,
};
