/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The torch module of the shim (docs/TORCH.md): a PyTorch RecordFunction global callback,
 * registered while a tracer wants torch ops (the torch semaphore) and removed when none does.
 *
 *   shim_torch_lib.c     finding libtorch_cpu, its version, the layouts verified per version,
 *                        the C++ entry points by their mangled names
 *   shim_torch.c         registering and removing the callback, the trampoline, the handlers
 *   shim_torch_shapes.c  input shapes (--torch-shapes)
 *   shim_torch_concrete.c  the scalar inputs' values (--torch-shapes)
 *
 * PyTorch's API is C++; the shim calls four exported functions from C, with the callback
 * structure laid out by hand, and reads three fields of at::RecordFunction that the header
 * makes inline accessors of. Both layouts change between versions: each version is used only
 * when its layout was verified (table in shim_torch_lib.c), else it is refused with a note.
 */
#ifndef BPFSIGHT_SHIM_TORCH_H
#define BPFSIGHT_SHIM_TORCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * at::RecordFunctionCallback as the versions below lay it out: trivially copyable and 40
 * bytes, so passed by value in memory on the stack (x86-64 SysV: MEMORY class), which a C
 * struct of the same size and alignment is too. The scopes array has one byte per
 * at::RecordScope; the three needs_* flags follow it, so where they are depends on how many
 * scopes the version has (struct torch_layout.num_scopes).
 */
struct torch_rfcb {
	void *start; /* std::unique_ptr<ObserverContext> (*)(const RecordFunction &) */
	void *end;   /* void (*)(const RecordFunction &, ObserverContext *) */
	double sampling_prob;
	uint8_t bytes[16]; /* scopes[num_scopes], needs_inputs, needs_outputs, needs_ids, pad */
};
_Static_assert(sizeof(struct torch_rfcb) == 40, "at::RecordFunctionCallback is 40 bytes");

/* Where a version keeps what the shim reads (byte offsets into at::RecordFunction). */
struct torch_layout {
	const char *version;   /* "1.13": matches 1.13 and 1.13.x */
	const char *verified;  /* how (docs/TORCH.md "Versions") */
	uint8_t num_scopes;    /* at::RecordScope::NUM_SCOPES */
	uint16_t thread_id;    /* step_callbacks_.thread_id_: threadId() */
	uint16_t scope;	       /* step_callbacks_.scope_ (u8): scope() */
	uint16_t needs_inputs; /* step_callbacks_.needs_inputs_ (u8) */
	uint16_t fn_index;     /* fn_'s variant index, low byte: 0 a string, 1 a schema */
	uint16_t seq;	       /* sequence_nr_ (s64): seqNr() */
	uint16_t inputs;       /* inputs_: c10::ArrayRef<const IValue> {data, size} */
	uint16_t fwd_tid;      /* fwd_thread_id_ (u64): forwardThreadId() */
	/* --torch-shapes: c10::TensorImpl's sizes_and_strides_ and numel_ */
	uint16_t impl_sizes, impl_numel;
	/* and the concrete inputs: c10::IValue's tags, c10::detail::ListImpl's std::vector */
	uint8_t tag_double, tag_int, tag_bool, tag_list;
	uint8_t list_vector;
};

struct torch_lib {
	char path[PATH_MAX]; /* libtorch_cpu as loaded */
	char version[64];    /* as found, e.g. "1.13.0" or "2.11.0+cu130" */
	const struct torch_layout *layout;
	uint64_t (*add_global)(struct torch_rfcb cb);
	void (*remove)(uint64_t handle);
	const char *(*name)(const void *rf);
	uint64_t (*current_thread_id)(void);
	const void *undefined; /* c10::UndefinedTensorImpl's singleton: an undefined tensor */
};

/* shim_torch_lib.c */

/* BPFSIGHT_SHIM_TORCH_EMPTY (benchmarks only): registered, the slots left empty. */
extern bool shim_torch_empty;

/* Read the environment once, at the shim's start (a later getenv could race a setenv). */
void shim_torch_lib__init(void);
/*
 * Find libtorch_cpu in the process and fill LIB. 0: usable; -ENOENT: not loaded (yet);
 * another -errno: refused, WHY says why in a sentence for the user.
 */
int shim_torch_lib__find(struct torch_lib *lib, char *why, size_t len);
/* The versions with a verified layout, "1.13, 2.0, ...", for messages. */
const char *shim_torch_lib__verified(void);

/*
 * --torch-shapes: an op's inputs (N c10::IValue of 16 bytes at INPUTS, up to TORCH_MAX_INPUTS)
 * read in its start callback as words, then made texts from those words. The words key each
 * thread's cache of texts (shim_torch.c): repeated shapes and values cost the read and a
 * lookup, not the formatting and interning.
 */
#define TORCH_MAX_INPUTS     32
#define TORCH_MAX_DIMS	     64
#define TORCH_LIST_MAX	     30 /* torch's SCALAR_LIST_LENGTH_LIMIT */
#define TORCH_SHAPES_WORDS   (TORCH_MAX_INPUTS * (1 + TORCH_MAX_DIMS))
#define TORCH_CONCRETE_WORDS (TORCH_MAX_INPUTS * (1 + 2 * TORCH_LIST_MAX))

/* shim_torch_shapes.c */

/*
 * The shapes of the tensors among INPUTS of LIB's torch into W (TORCH_SHAPES_WORDS): per input
 * its number of dimensions (-1: not a tensor, an undefined one, or not read), then its sizes.
 * Returns the words written, -1 when nothing can be read.
 */
long shim_torch_shapes__read(const struct torch_lib *lib, const void *inputs, size_t n,
			     uint64_t *w);
/*
 * The text of NW words of shim_torch_shapes__read into BUF: "[[4, 8], [], [8]]" (what is not a
 * tensor is "[]", as torch.profiler's record_shapes shows it). Returns the length, or 0.
 */
size_t shim_torch_shapes__text(const uint64_t *w, size_t nw, char *buf, size_t len);

/* shim_torch_concrete.c */

/*
 * The scalar inputs among INPUTS into W (TORCH_CONCRETE_WORDS): per input its kind (none, int,
 * double, bool, a list and its length) and its values. Returns the words, -1 when none.
 */
long shim_torch_concrete__read(const struct torch_layout *l, const void *inputs, size_t n,
			       uint64_t *w);
/*
 * The text of NW words of shim_torch_concrete__read as Kineto's "Concrete Inputs" shows them, a
 * JSON list of strings into BUF: ["", "", "[2, 2]", "1"] ("" for a tensor or a value not read).
 * Returns the length, 0 when it does not fit.
 */
size_t shim_torch_concrete__text(const uint64_t *w, size_t nw, char *buf, size_t len);

/* shim_torch.c: the module (shim_modules.c); its shim_hot bit */
#define SHIM_HOT_TORCH 0x8 /* the RecordFunction callback records torch ops */

#endif /* BPFSIGHT_SHIM_TORCH_H */
