#include "engine/launch.h"

#include <cuda.h>  // CUtensorMapDataType's enumerators (types and constants only: nothing of libcuda is linked)

#include <cmath>

#include "engine/error.h"
#include "engine/expr.h"

namespace evo {
namespace {

// Evaluates `text`; unless the value is an integer within [lo, hi], the message's tail
// "'<text>' = <value>: must be an integer <range>" for the caller to put its field before.
std::string integer_within(const std::string& text, const Vars& v, double lo, double hi, const std::string& range,
                           double* x) {
  *x = eval_expr(text, v);
  if (std::isfinite(*x) && *x == std::floor(*x) && *x >= lo && *x <= hi) return {};
  return "'" + text + "' = " + number_text(*x) + ": must be an integer " + range;
}

std::int64_t integral(const std::string& what, const std::string& text, const Vars& v, std::int64_t min) {
  double x;
  const std::string bad = integer_within(text, v, static_cast<double>(min), HUGE_VAL, ">= " + std::to_string(min), &x);
  if (!bad.empty()) throw UserError(what + " " + bad);
  return static_cast<std::int64_t>(x);
}

}  // namespace

LaunchGeometry launch_geometry(const KernelSpec& k, const Problem& p, const Config& c) {
  const Vars v = expression_vars(k, p, c);
  LaunchGeometry g;
  for (int i = 0; i < 3; ++i) {
    g.grid[i] = static_cast<std::uint32_t>(integral("launch.grid", k.launch.grid[i], v, 1));
    g.block[i] = static_cast<std::uint32_t>(integral("launch.block", k.launch.block[i], v, 1));
  }
  g.shared_bytes = integral("launch.shared_bytes", k.launch.shared_bytes, v, 0);
  return g;
}

std::int64_t buffer_elements(const BufferSpec& b, const KernelSpec& k, const Problem& p, const Config& c) {
  const Vars v = expression_vars(k, p, c);
  std::int64_t n = 1;
  for (const auto& e : b.shape) n *= integral("buffers." + b.name + ".shape", e, v, 1);
  return n;
}

TensorMapDataType tensor_map_data_type(DType t) {
#define EVO_MAP_TYPE(e) TensorMapDataType{#e, e}  // one token for both: the name cannot drift from the value
  switch (t) {
    case DType::F16: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    case DType::BF16: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    case DType::F32: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    case DType::I32: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_INT32);
    case DType::FP8_E4M3: case DType::FP8_E5M2: case DType::U8: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_UINT8);
    case DType::U16: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_UINT16);
    case DType::U32: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_UINT32);
    case DType::I64: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_INT64);
    case DType::U64: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_UINT64);
    case DType::F64: return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_FLOAT64);
    case DType::I8: case DType::I16: break;  // TMA has no signed 8- or 16-bit type: the caller says so
  }
  return EVO_MAP_TYPE(CU_TENSOR_MAP_DATA_TYPE_UINT8);
#undef EVO_MAP_TYPE
}

TensorMapLayout tensor_map_layout(const TensorMapSpec& m, const Profile& p, const Problem& problem, const Config& c) {
  std::size_t index = 0;
  while (index < p.tensor_maps.size() && p.tensor_maps[index].name != m.name) ++index;
  const std::string at = "tensor_maps[" + std::to_string(index) + "]";
  auto fail = [&](const std::string& field, const std::string& msg) {
    throw UserError(at + "." + field + ": " + msg + " (map " + m.name + ", problem " + problem.name + ")");
  };
  const BufferSpec* b = p.find_buffer(m.buffer);
  if (!b) fail("buffer", "no buffer '" + m.buffer + "'");
  if (b->dtype == DType::I8 || b->dtype == DType::I16)
    fail("buffer", "buffer " + b->name + " is " + dtype_name(b->dtype) + ": a tensor map has no signed 8- or 16-bit type");
  const int rank = static_cast<int>(m.dims.size());
  if (rank < 1 || rank > 5) fail("dims", std::to_string(rank) + " dims: a tensor map has 1 to 5");
  if (m.box.size() != m.dims.size()) fail("box", std::to_string(m.box.size()) + " entries for " + std::to_string(rank) + " dims");

  TensorMapLayout L;
  L.name = m.name;
  L.dtype = b->dtype;
  L.rank = rank;
  L.swizzle_bytes = m.swizzle_bytes;
  L.l2_promotion_bytes = m.l2_promotion_bytes;
  const std::uint64_t esize = dtype_bytes(b->dtype);
  const Vars v = expression_vars(p.kernel, problem, c);
  auto bounded = [&](const std::string& field, const std::string& text, double lo, double hi, const char* range) {
    double x;
    const std::string bad = integer_within(text, v, lo, hi, std::string("from ") + range, &x);
    if (!bad.empty()) fail(field, bad);
    return static_cast<std::uint64_t>(x);
  };
  for (int i = 0; i < rank; ++i) {
    L.dims[i] = bounded("dims[" + std::to_string(i) + "]", m.dims[i], 1, 4294967296.0, "1 to 2^32");
    L.box[i] = static_cast<std::uint32_t>(bounded("box[" + std::to_string(i) + "]", m.box[i], 1, 256, "1 to 256"));
  }

  // The tensor is the buffer, packed: the dims must cover exactly its elements.
  std::uint64_t elements = 1;
  bool overflow = false;
  std::string dims_text;
  for (int i = 0; i < rank; ++i) {
    overflow |= __builtin_mul_overflow(elements, L.dims[i], &elements);
    dims_text += (i ? " x " : "") + std::to_string(L.dims[i]);
  }
  const std::int64_t buffer_n = buffer_elements(*b, p.kernel, problem, c);
  if (overflow || elements != static_cast<std::uint64_t>(buffer_n))
    fail("dims", dims_text + " = " + (overflow ? std::string("more than 2^64") : std::to_string(elements)) +
                     " elements, buffer " + m.buffer + " has " + std::to_string(buffer_n) +
                     " (the dims of a packed tensor multiply to its size)");

  // Byte stride of dims[i] (i >= 1): everything inside it. Below 2^40 because the buffer is smaller.
  std::uint64_t stride = esize;
  for (int i = 1; i < rank; ++i) {
    stride *= L.dims[i - 1];
    L.strides_bytes[i - 1] = stride;
    if (stride % 16 != 0 || stride >= (std::uint64_t(1) << 40))
      fail("dims[" + std::to_string(i - 1) + "]",
           "the byte stride of dims[" + std::to_string(i) + "] is " + std::to_string(stride) + " (" +
               std::to_string(stride / esize) + " x " + dtype_name(b->dtype) + "): must be a multiple of 16 below 2^40");
  }

  const std::uint64_t inner_bytes = L.box[0] * esize;
  const std::string inner = std::to_string(L.box[0]) + " x " + dtype_name(b->dtype) + " = " + std::to_string(inner_bytes) + " bytes";
  if (inner_bytes % 16 != 0) fail("box[0]", inner + ": the inner box must be a multiple of 16 bytes");
  if (m.swizzle_bytes > 0 && inner_bytes > static_cast<std::uint64_t>(m.swizzle_bytes))
    fail("box[0]", inner + ": more than the " + std::to_string(m.swizzle_bytes) +
                       "-byte swizzle span (with a swizzle the inner box must fit in it)");
  return L;
}

}  // namespace evo
