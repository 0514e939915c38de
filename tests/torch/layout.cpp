// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The layout test built from a torch release's real installed headers (Debian's
 * libtorch-dev, a libtorch archive's include/, a wheel's torch/include/): prints, as one
 * line of JSON, the offsets, sizes and tags cupti-shim/shim_torch_lib.c's table keeps for
 * that release, computed by the compiler from the headers the release was built with
 * (generated ones included). tests/torch/check_torch_versions.py compiles it against each
 * release's headers and compares the output with the table's row (parsed from the source):
 * a mismatch fails. Linked with unresolved symbols allowed: main calls nothing of torch's,
 * but inline functions the headers define refer to libc10's.
 *
 * The fields are private: the standard headers are included first, then the torch headers
 * with private and protected made public (the layout does not change with access).
 */
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#define private public
#define protected public
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/TensorImpl.h>
#undef private
#undef protected

#define OFF(t, f) ((unsigned)offsetof(t, f))

int main()
{
	using RF = at::RecordFunction;
	using SC = at::StepCallbacks;
	using Tag = c10::IValue::Tag;
	unsigned step = OFF(RF, step_callbacks_);

	printf("{\"num_scopes\": %u, \"thread_id\": %u, \"scope\": %u, \"needs_inputs\": %u, "
	       "\"fn_index\": %u, \"seq\": %u, \"inputs\": %u, \"fwd_tid\": %u, "
	       "\"impl_sizes\": %u, \"impl_numel\": %u, "
	       "\"rfcb_size\": %u, \"rfcb_scopes\": %u, \"rfcb_needs_inputs\": %u, "
	       "\"ivalue_size\": %u, \"tag_tensor\": %u, \"tag_double\": %u, \"tag_int\": %u, "
	       "\"tag_bool\": %u, \"tag_list\": %u, \"list_vector\": %u}\n",
	       (unsigned)at::RecordScope::NUM_SCOPES, step + OFF(SC, thread_id_),
	       step + OFF(SC, scope_), step + OFF(SC, needs_inputs_),
	       /* std::variant<std::string, schema_ref_t>: its index follows the string (libstdc++) */
	       OFF(RF, fn_) + (unsigned)sizeof(std::string),
	       OFF(RF, sequence_nr_), OFF(RF, inputs_), OFF(RF, fwd_thread_id_),
	       OFF(c10::TensorImpl, sizes_and_strides_), OFF(c10::TensorImpl, numel_),
	       (unsigned)sizeof(at::RecordFunctionCallback),
	       OFF(at::RecordFunctionCallback, scopes_),
	       OFF(at::RecordFunctionCallback, needs_inputs_),
	       (unsigned)sizeof(c10::IValue), (unsigned)Tag::Tensor, (unsigned)Tag::Double,
	       (unsigned)Tag::Int, (unsigned)Tag::Bool, (unsigned)Tag::GenericList,
	       OFF(c10::detail::ListImpl, list));
	return 0;
}
