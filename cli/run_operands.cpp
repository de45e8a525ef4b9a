#include "run_operands.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "gguf.hpp"
#include "usage_error.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"

// .npy data is little-endian and is uploaded as-is.
static_assert(std::endian::native == std::endian::little, "vkgmm run assumes a little-endian host");

using vkgmm::DType;

namespace {

std::vector<float> f32_values(const npy::Array& arr) {
  std::vector<float> v(arr.data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), arr.data.data(), arr.data.size());
  return v;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

npy::Array load(const Args& a, const std::string& flag) {
  try {
    return npy::read(*a.get(flag));
  } catch (const std::runtime_error& e) {
    throw UsageError("--" + flag + ": " + e.what());
  }
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

void expect_rank(const npy::Array& arr, const std::string& flag, size_t rank, const char* layout) {
  if (arr.shape.size() != rank)
    throw UsageError("--" + flag + ": expected rank " + std::to_string(rank) + " " + layout + ", got shape " +
                     shape_str(arr.shape));
}

std::vector<float> Operand::values() const {
  // Block-format weights as the floats they hold (the CPU reference of --check reads them so).
  if (vkgmm::is_quantized(type))
    return vkgmm::quant::dequantize(type, bytes, bytes.size() / vkgmm::block_bytes(type) * vkgmm::block_elements(type));
  if (type == DType::f32) {
    std::vector<float> v(bytes.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  return vkgmm::decode(type, bytes.data(), bytes.size() / 2);
}

Operand input_operand(npy::Array&& arr, const std::string& flag, bool to_bf16) {
  if (arr.descr == "<f2") return {DType::f16, std::move(arr.data)};
  if (arr.descr != "<f4")
    throw UsageError("--" + flag + ": expected dtype <f4 or <f2, got " + arr.descr +
                     (arr.descr == "|u1" && flag == "rhs" ? " (raw quantized blocks need --rhs-format)" : ""));
  if (to_bf16) return {DType::bf16, vkgmm::encode(DType::bf16, f32_values(arr))};
  return {DType::f32, std::move(arr.data)};
}

void expect_something_to_round(bool to_bf16, bool lhs_f32, bool rhs_f32, const std::string& lhs_type,
                               const std::string& rhs_type) {
  // Silently doing nothing would leave the user believing the run was bf16.
  if (to_bf16 && !lhs_f32 && !rhs_f32)
    throw UsageError("--input-dtype bf16 rounds f32 lhs and rhs values only, and here --lhs is " + lhs_type +
                     " and --rhs is " + rhs_type + ": nothing would be rounded (drop the flag, or give <f4 files)");
}

std::optional<std::pair<std::string, std::string>> gguf_reference(const std::string& rhs) {
  // The last ':' ends the file name (the contract's rule): a ':' in a directory or file name is kept, and
  // a tensor name cannot hold one (GGUF's names, "blk.N.ffn_up_exps.weight", never do).
  std::string lower = rhs;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto gguf_file = [&](size_t end) { return end >= 5 && lower.compare(end - 5, 5, ".gguf") == 0; };
  if (const size_t colon = lower.rfind(':'); colon != std::string::npos && gguf_file(colon)) {
    if (colon + 1 == rhs.size()) throw UsageError("--rhs: '" + rhs + "' names no tensor: expected FILE.gguf:TENSOR");
    return std::make_pair(rhs.substr(0, colon), rhs.substr(colon + 1));
  }
  if (lower.find(".gguf:") != std::string::npos)
    throw UsageError("--rhs: '" + rhs + "' splits at its last ':' into a file that is no .gguf: expected "
                     "FILE.gguf:TENSOR, whose tensor name holds no ':'");
  if (gguf_file(lower.size()))
    throw UsageError("--rhs: a GGUF rhs needs a tensor name: expected FILE.gguf:TENSOR, got '" + rhs + "'");
  return std::nullopt;
}

namespace {

std::string dims_text(int64_t a, int64_t b, int64_t c) {
  std::string s = "[";
  s += std::to_string(a);
  s += ", ";
  s += std::to_string(b);
  s += ", ";
  s += std::to_string(c);
  return s + "]";
}

GmmRhs gguf_rhs(const Job& j, const std::string& path, const std::string& tensor) {
  gguf::ExpertTensor t;
  try {
    t = gguf::load_expert_tensor(gguf::read(path), tensor);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--rhs: ") + e.what());
  }
  if (j.rhs_format && *j.rhs_format != t.dtype)
    throw UsageError(std::string("--rhs-format ") + vkgmm::dtype_name(*j.rhs_format) + " does not match GGUF tensor '" +
                     tensor + "' of " + path + ", which is " + vkgmm::dtype_name(t.dtype));
  GmmRhs r;
  r.g_local = t.E;
  r.n = t.n;
  r.k = t.k;
  r.transposed = true;  // memory [E, n, k]
  r.desc = "GGUF tensor '" + tensor + "' with dims [k, n, E] = " + dims_text(t.k, t.n, t.E);
  if (t.dtype == DType::f32 && j.to_bf16) {  // a float rhs: --input-dtype bf16 rounds it, as an <f4 .npy
    std::vector<float> v(t.bytes.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    r.op = {DType::bf16, vkgmm::encode(DType::bf16, v)};
    r.rounded = true;
  } else {
    r.op = {t.dtype, std::move(t.bytes)};  // as stored: never rounded when quantized or already 16-bit
  }
  return r;
}

}  // namespace

GmmRhs gmm_rhs(const Job& j) {
  const Args& a = j.args;
  if (auto ref = gguf_reference(*a.get("rhs"))) return gguf_rhs(j, ref->first, ref->second);
  npy::Array rhs = load(a, "rhs");
  GmmRhs r;
  r.desc = "shape " + shape_str(rhs.shape);
  if (j.rhs_format) {
    const DType f = *j.rhs_format;
    const int64_t B = static_cast<int64_t>(vkgmm::block_elements(f)), S = static_cast<int64_t>(vkgmm::block_bytes(f));
    const std::string fmt = vkgmm::dtype_name(f);
    if (rhs.descr != "|u1")
      throw UsageError("--rhs: with --rhs-format " + fmt + " the rhs is |u1 raw blocks, got dtype " + rhs.descr);
    expect_rank(rhs, "rhs", 3, "[G_local, n, (k/B)*S] of raw blocks");
    if (rhs.shape[2] % S != 0)
      throw UsageError("--rhs: shape " + shape_str(rhs.shape) + ": the last dimension is not whole " + fmt +
                       " blocks of " + std::to_string(S) + " bytes");
    // A file of no elements may claim any length; k, its values, must still be an int64.
    if (rhs.shape[2] / S > std::numeric_limits<int64_t>::max() / B)
      throw UsageError("--rhs: shape " + shape_str(rhs.shape) + ": the last dimension holds more than 2^63 - 1 " + fmt +
                       " values (k)");
    r.g_local = rhs.shape[0];
    r.n = rhs.shape[1];
    r.k = rhs.shape[2] / S * B;
    r.transposed = true;
    r.desc += " (" + fmt + " blocks: k = " + std::to_string(r.k) + ")";
    r.op = {f, std::move(rhs.data)};
    return r;
  }
  expect_rank(rhs, "rhs", 3, a.transpose_rhs ? "[G_local, n, k]" : "[G_local, k, n]");
  r.g_local = rhs.shape[0];
  r.transposed = a.transpose_rhs;
  r.k = a.transpose_rhs ? rhs.shape[2] : rhs.shape[1];
  r.n = a.transpose_rhs ? rhs.shape[1] : rhs.shape[2];
  r.rounded = j.to_bf16 && rhs.descr == "<f4";
  r.op = input_operand(std::move(rhs), "rhs", j.to_bf16);
  return r;
}

Operand existing_operand(npy::Array&& arr, DType out_type) {
  if (arr.descr != "<f4" && arr.descr != "<f2")
    throw UsageError("--existing-out: expected dtype <f4 or <f2, got " + arr.descr);
  const DType from = arr.descr == "<f4" ? DType::f32 : DType::f16;
  if (from == out_type) return {out_type, std::move(arr.data)};
  const std::vector<float> v =
      from == DType::f32 ? f32_values(arr) : vkgmm::decode(DType::f16, arr.data.data(), arr.data.size() / 2);
  return {out_type, out_type == DType::f32 ? f32_bytes(v) : vkgmm::encode(out_type, v)};
}

namespace {

// The values of an integer file (<i4, or <i8 range-checked to int32), in order; UsageError naming `flag`.
std::vector<int32_t> int32_values(const npy::Array& arr, const std::string& flag) {
  if (arr.descr != "<i4" && arr.descr != "<i8")
    throw UsageError("--" + flag + ": expected dtype <i4 or <i8, got " + arr.descr);
  std::vector<int32_t> v(static_cast<size_t>(arr.element_count()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (arr.descr == "<i4") {
      std::memcpy(&v[i], arr.data.data() + 4 * i, 4);
      continue;
    }
    int64_t x;
    std::memcpy(&x, arr.data.data() + 8 * i, 8);
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      throw UsageError("--" + flag + ": value " + std::to_string(x) + " at index " + std::to_string(i) +
                       " does not fit int32");
    v[i] = static_cast<int32_t>(x);
  }
  return v;
}

}  // namespace

std::vector<int32_t> group_sizes_of(const npy::Array& arr) {
  expect_rank(arr, "group-sizes", 1, "[G]");
  return int32_values(arr, "group-sizes");
}

std::vector<int32_t> ids_of(const npy::Array& arr, int64_t num_experts) {
  expect_rank(arr, "ids", 2, "[T, top_k]");
  if (arr.shape[1] < 1)
    throw UsageError("--ids: shape " + shape_str(arr.shape) + " has top_k = 0; each token needs a slot or more");
  const std::vector<int32_t> ids = int32_values(arr, "ids");
  const int64_t top_k = arr.shape[1];
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    const std::string at = " at [" + std::to_string(int64_t(i) / top_k) + ", " + std::to_string(int64_t(i) % top_k) + "]";
    if (id < -1) throw UsageError("--ids: id " + std::to_string(id) + at + " is below -1 (-1: no expert)");
    if (num_experts > 0 && id >= num_experts)
      throw UsageError("--ids: id " + std::to_string(id) + at + " is not below --num-experts " +
                       std::to_string(num_experts));
  }
  return ids;
}

Operand f32_operand(npy::Array&& arr, const std::string& flag, const std::vector<int64_t>& shape, const char* layout) {
  if (arr.descr != "<f4") throw UsageError("--" + flag + ": expected dtype <f4, got " + arr.descr);
  if (arr.shape != shape)
    throw UsageError("--" + flag + ": expected shape " + shape_str(shape) + " " + layout + ", got " + shape_str(arr.shape));
  return {DType::f32, std::move(arr.data)};
}

vkgmm::Buffer upload(vkgmm::Context& ctx, const Operand& op, VkDeviceSize needed, const char* flag) {
  if (op.bytes.size() < needed)
    throw vkgmm::Error(vkgmm::Status::internal, std::string("--") + flag + ": holds " +
                                                    std::to_string(op.bytes.size()) + " bytes, the plan needs " +
                                                    std::to_string(needed));
  // Exactly the operand's bytes (vkgmm pads its own buffers to whole words, whatever the element count);
  // never a zero-size buffer: an empty operand still gets a (unread) 4-byte buffer.
  vkgmm::Buffer buf = ctx.create_buffer(std::max<VkDeviceSize>(4, op.bytes.size()));
  if (!op.bytes.empty()) buf.upload(op.bytes.data(), op.bytes.size());
  return buf;
}

npy::Array output_array(DType type, const std::vector<uint8_t>& bytes, std::vector<int64_t> shape) {
  if (type == DType::f32) return {"<f4", std::move(shape), bytes};
  if (type == DType::f16) return {"<f2", std::move(shape), bytes};
  return {"<f4", std::move(shape), f32_bytes(vkgmm::decode(DType::bf16, bytes.data(), bytes.size() / 2))};
}
