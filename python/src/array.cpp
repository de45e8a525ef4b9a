#include "array.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "errors.hpp"
#include "gil.hpp"
#include "vkgmm/convert.hpp"

namespace py = pybind11;

namespace vkgmm_py {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// Context resolution (the default for None, a TypeError for anything but a Context) and dtype resolution
// live in the Python package (vkgmm/_context.py, _dtypes.py), so that every entry point resolves them the
// same way.
ContextRef context_or_default(const py::object& context) {
  return py::module_::import("vkgmm._context").attr("resolve")(context).cast<ContextRef>();
}

vkgmm::DType dtype_named(const std::string& name) { return dtype_of(name, "Array: dtype"); }

// The numpy array .numpy() returns: the element types as float32, float16, and bf16 as uint16 bit
// patterns (numpy has no bfloat16; vkgmm.to_float32 widens them); a block format's raw bytes as uint8
// [experts, n, bytes per row].
py::array host_array_for(const Array& a) {
  std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
  switch (a.dtype) {
    case vkgmm::DType::f32: return py::array(py::dtype("float32"), shape);
    case vkgmm::DType::f16: return py::array(py::dtype("float16"), shape);
    case vkgmm::DType::bf16: return py::array(py::dtype("uint16"), shape);
    default:
      if (!shape.empty()) shape.back() = py::ssize_t(vkgmm::storage_bytes(a.dtype, uint64_t(a.shape.back())));
      return py::array(py::dtype("uint8"), shape);
  }
}

Array array_from(const py::object& given, const py::object& dtype, const py::object& context, const py::object& shape) {
  // Any array-like, made C-contiguous; float64 (numpy's default) becomes float32, as the functions take it.
  const py::array data = py::module_::import("vkgmm._dtypes").attr("host_input")(given, "Array: data");
  const std::string name =
      py::module_::import("vkgmm._dtypes").attr("array_dtype_name")(data, dtype, "Array: data").cast<std::string>();
  const vkgmm::DType t = dtype_named(name);
  std::vector<int64_t> dims;
  if (!shape.is_none()) {
    dims = shape.cast<std::vector<int64_t>>();
  } else if (vkgmm::is_quantized(t)) {
    contract_error(std::string("Array: a ") + vkgmm::dtype_name(t) +
                   " array needs shape=(experts, n, k): the values' shape (data holds their blocks)");
  } else {
    dims.assign(data.shape(), data.shape() + data.ndim());
  }
  Array a = make_array(context_or_default(context), dims, t);
  upload(a, data, "Array: data");
  return a;
}

// Whether a 16-bit type is bf16 (else f16); refuses the other types, naming `what`.
bool is_bf16(vkgmm::DType t, const char* what) {
  if (t != vkgmm::DType::f16 && t != vkgmm::DType::bf16)
    contract_error(std::string(what) + ": '" + vkgmm::dtype_name(t) + "' is not a 16-bit type");
  return t == vkgmm::DType::bf16;
}

// A new array of x's shape holding f(each element of x).
template <typename To, typename Arr, typename F>
py::array_t<To> map_elements(const Arr& x, F f) {
  py::array_t<To> out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  const auto* src = x.data();
  To* dst = out.mutable_data();
  for (py::ssize_t i = 0; i < x.size(); ++i) dst[i] = f(src[i]);
  return out;
}

}  // namespace

uint64_t Array::elements() const {
  uint64_t e = 1;
  for (int64_t d : shape) e *= uint64_t(d);  // make_array refused shapes whose product overflows
  return e;
}

vkgmm::BufferView Array::view() const { return bytes ? buffer.view(0, bytes) : buffer.view(); }

Array make_array(ContextRef ctx, std::vector<int64_t> shape, vkgmm::DType dtype) {
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0) contract_error("Array: shape " + shape_text(shape) + " has a negative dimension");
    // More elements than 2^60 is more bytes than any device has (4 each at most): refused before the
    // product, or its bytes, wraps.
    if (d > 0 && elements > (uint64_t(1) << 60) / uint64_t(d))
      contract_error("Array: shape " + shape_text(shape) + " has more elements than any device can hold");
    elements *= uint64_t(d);
  }
  Array a;
  a.ctx = std::move(ctx);
  a.shape = std::move(shape);
  a.dtype = dtype;
  if (vkgmm::is_quantized(dtype)) {
    if (a.shape.empty())
      contract_error(std::string("Array: a ") + vkgmm::dtype_name(dtype) + " array needs at least one dimension (k)");
    // Each row holds whole blocks: a total that is whole blocks is not enough.
    const int64_t block = int64_t(vkgmm::block_elements(dtype));
    if (a.shape.back() % block != 0)
      contract_error("Array: shape " + shape_text(a.shape) + ": k = " + std::to_string(a.shape.back()) +
                     " (the last dimension) is not a multiple of " + vkgmm::dtype_name(dtype) + "'s block of " +
                     std::to_string(block) + " values");
  }
  a.bytes = vkgmm::storage_bytes(dtype, a.elements());
  a.buffer = a.ctx->create_buffer(std::max<uint64_t>(4, a.bytes));
  return a;
}

void upload(Array& a, const py::array& data, const char* what) {
  // The numpy dtype must be one that holds a.dtype (float32 for f32, uint16 or bfloat16 for bf16, ...).
  py::module_::import("vkgmm._dtypes").attr("array_dtype_name")(data, vkgmm::dtype_name(a.dtype), what);
  if (!(data.flags() & py::array::c_style))
    contract_error(std::string(what) + ": must be C-contiguous (np.ascontiguousarray)");
  if (uint64_t(data.nbytes()) != a.bytes)
    contract_error(std::string(what) + ": " + std::to_string(data.nbytes()) + " bytes for a " +
                   vkgmm::dtype_name(a.dtype) + " array of shape " + shape_text(a.shape) + ", which holds " +
                   std::to_string(a.bytes));
  if (a.bytes == 0) return;
  const void* src = data.data();
  ReleaseGil unlocked;  // `data` stays referenced by the caller meanwhile
  a.buffer.upload(src, a.bytes);
}

void bind_array(py::module_& m) {
  // Element-type conversions, the library's (round to nearest even): float32 -> the 16-bit bit patterns
  // of f16 or bf16 as uint16, and back.
  m.def("_encode16", [](const py::array_t<float, py::array::c_style | py::array::forcecast>& x, const std::string& t) {
    const bool bf16 = is_bf16(dtype_named(t), "encode");
    return map_elements<uint16_t>(x, [bf16](float v) { return bf16 ? vkgmm::f32_to_bf16(v) : vkgmm::f32_to_f16(v); });
  });
  m.def("_decode16", [](const py::array_t<uint16_t, py::array::c_style>& x, const std::string& t) {
    const bool bf16 = is_bf16(dtype_named(t), "decode");
    return map_elements<float>(x, [bf16](uint16_t v) { return bf16 ? vkgmm::bf16_to_f32(v) : vkgmm::f16_to_f32(v); });
  });
  py::class_<Array>(m, "Array")
      .def(py::init(&array_from), py::arg("data"), py::arg("dtype") = py::none(), py::kw_only(),
           py::arg("context") = py::none(), py::arg("shape") = py::none())
      .def_static(
          "empty",
          [](std::vector<int64_t> shape, const py::object& dtype, const py::object& context) {
            const std::string name = py::module_::import("vkgmm._dtypes").attr("dtype_name")(dtype).cast<std::string>();
            return make_array(context_or_default(context), std::move(shape), dtype_named(name));
          },
          py::arg("shape"), py::arg("dtype") = "f32", py::kw_only(), py::arg("context") = py::none())
      .def_property_readonly("shape", [](const Array& a) { return py::tuple(py::cast(a.shape)); })
      .def_property_readonly("dtype", [](const Array& a) { return std::string(vkgmm::dtype_name(a.dtype)); })
      .def_property_readonly("nbytes", [](const Array& a) { return a.bytes; })
      .def_property_readonly("context", [](const Array& a) { return a.ctx; })
      .def("numpy", [](const Array& a) {
        py::array out = host_array_for(a);
        if (a.bytes == 0) return out;
        void* dst = out.mutable_data();
        {
          ReleaseGil unlocked;
          a.buffer.download(dst, a.bytes);
        }
        return out;
      })
      .def(
          "upload",
          [](Array& a, const py::object& data) {
            const char* what = "Array.upload: data";
            const py::array values = py::module_::import("vkgmm._dtypes").attr("host_input")(data, what);
            // Values of another shape but as many bytes would land in the wrong places; a block format's
            // bytes have a shape of their own (numpy()'s), so only their count is checked.
            const std::vector<int64_t> given(values.shape(), values.shape() + values.ndim());
            if (!vkgmm::is_quantized(a.dtype) && given != a.shape)
              contract_error(std::string(what) + ": shape " + shape_text(given) + " where the Array's is " +
                             shape_text(a.shape));
            upload(a, values, what);
          },
          py::arg("data"))
      .def("__repr__", [](const Array& a) {
        return "vkgmm.Array(shape=" + shape_text(a.shape) + ", dtype=" + vkgmm::dtype_name(a.dtype) + ")";
      });
}

}  // namespace vkgmm_py
