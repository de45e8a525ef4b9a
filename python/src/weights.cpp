#include "weights.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "errors.hpp"
#include "gil.hpp"
#include "gguf.hpp"
#include "vkgmm/quant.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;

vkgmm::DType block_format(const std::string& name, const char* what) {
  const std::optional<vkgmm::DType> t = vkgmm::parse_dtype(name);
  if (!t || !vkgmm::is_quantized(*t))
    contract_error(std::string(what) + ": unknown block format '" + name + "' (expected one of " +
                   vkgmm::block_format_names() + ")");
  return *t;
}

// [E, n, k] or [n, k] floats -> uint8 blocks [..., n, (k / B) * S], GGUF's layout for expert tensors.
py::array quantize(const F32& w, const std::string& format) {
  const vkgmm::DType t = block_format(format, "quantize: format");
  if (w.ndim() != 2 && w.ndim() != 3)
    contract_error("quantize: w: expected [experts, n, k] or [n, k], got " + std::to_string(w.ndim()) + " dimensions");
  const int64_t k = w.shape(w.ndim() - 1);
  if (k % int64_t(vkgmm::block_elements(t)) != 0)
    contract_error("quantize: w: k = " + std::to_string(k) + " is not a multiple of " + vkgmm::dtype_name(t) +
                   "'s block of " + std::to_string(vkgmm::block_elements(t)) + " values");
  std::vector<py::ssize_t> shape(w.shape(), w.shape() + w.ndim());
  shape.back() = py::ssize_t(vkgmm::storage_bytes(t, uint64_t(k)));
  py::array_t<uint8_t> out(shape);
  const float* src = w.data();
  const uint64_t count = uint64_t(w.size());
  std::vector<uint8_t> blocks;
  {
    ReleaseGil unlocked;
    blocks = vkgmm::quant::quantize(t, src, count);
  }
  std::copy(blocks.begin(), blocks.end(), out.mutable_data());
  return out;
}

// uint8 blocks [..., n, bytes per row] of `format` -> float32 [..., n, k], exactly the values the kernel reads.
py::array dequantize(const py::array_t<uint8_t, py::array::c_style>& blocks, const std::string& format) {
  const vkgmm::DType t = block_format(format, "dequantize: format");
  if (blocks.ndim() < 1) contract_error("dequantize: blocks: expected at least one dimension");
  const int64_t row_bytes = blocks.shape(blocks.ndim() - 1);
  if (row_bytes % int64_t(vkgmm::block_bytes(t)) != 0)
    contract_error("dequantize: blocks: rows of " + std::to_string(row_bytes) + " bytes are not whole " +
                   vkgmm::dtype_name(t) + " blocks of " + std::to_string(vkgmm::block_bytes(t)) + " bytes");
  std::vector<py::ssize_t> shape(blocks.shape(), blocks.shape() + blocks.ndim());
  const int64_t row_blocks = row_bytes / int64_t(vkgmm::block_bytes(t)), per = int64_t(vkgmm::block_elements(t));
  if (row_blocks > (int64_t(1) << 60) / per)
    contract_error("dequantize: blocks: rows of " + std::to_string(row_bytes) + " bytes hold more values than an array can");
  shape.back() = py::ssize_t(row_blocks * per);
  py::array_t<float> out(shape);
  const uint64_t count = uint64_t(out.size());
  vkgmm::quant::dequantize(t, blocks.data(), count, out.mutable_data());
  return out;
}

// (format, (E, n, k), uint8 blocks [E, n, bytes per row]) of an expert tensor of a GGUF file. Float
// tensors come back as their element type's name and their values' bytes.
py::tuple read_gguf_tensor(const std::string& path, const std::string& name) {
  gguf::ExpertTensor t;
  try {
    const gguf::File f = gguf::read(path);
    t = gguf::load_expert_tensor(f, name);
  } catch (const vkgmm::Error&) {
    throw;
  } catch (const std::runtime_error& e) {  // the reader's one-line refusals name the file and tensor
    contract_error(std::string("read_gguf: ") + e.what());
  }
  const py::ssize_t row = py::ssize_t(vkgmm::storage_bytes(t.dtype, uint64_t(t.k)));
  py::array_t<uint8_t> bytes({py::ssize_t(t.E), py::ssize_t(t.n), row});
  std::copy(t.bytes.begin(), t.bytes.end(), bytes.mutable_data());
  return py::make_tuple(std::string(vkgmm::dtype_name(t.dtype)), py::make_tuple(t.E, t.n, t.k), bytes);
}

}  // namespace

void bind_weights(py::module_& m) {
  // The block formats' names, in the type list's order (what _dtypes.py accepts).
  m.def("_block_format_names", [] { return std::string(vkgmm::block_format_names()); });
  m.def("_quantize", &quantize, py::arg("w"), py::arg("format"));
  m.def("_dequantize", &dequantize, py::arg("blocks"), py::arg("format"));
  m.def("_read_gguf_tensor", &read_gguf_tensor, py::arg("path"), py::arg("name"));
}

}  // namespace vkgmm_py
