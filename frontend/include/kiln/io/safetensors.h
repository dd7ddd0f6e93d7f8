#pragma once
/// @file safetensors.h
/// Named tensors to and from files in Hugging Face's safetensors format, so Kiln
/// checkpoints load in PyTorch (`safetensors.torch.load_file`) and back.
///
/// @code
///   kiln::io::StateDict state = {{"fc.weight", w}, {"fc.bias", b}};
///   kiln::io::save_safetensors("model.safetensors", state, {{"epoch", "3"}});
///   auto file = kiln::io::load_safetensors("model.safetensors");
///   kiln::Tensor w2 = file.at("fc.weight");         // same dtype, shape and values
///   std::string epoch = file.metadata.at("epoch");
/// @endcode
///
/// The format (https://github.com/huggingface/safetensors): an 8-byte little-endian
/// unsigned header length N; N bytes of UTF-8 JSON mapping each tensor name to
/// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, plus an optional
/// "__metadata__" object of string values; then the data section, where each
/// tensor's row-major little-endian bytes lie at [begin, end) relative to its start.
/// Kiln writes compact JSON ("__metadata__" first, then the tensors in the given
/// order), pads it with spaces to a multiple of 8 bytes, and lays the tensors out
/// back to back in the same order.
///
/// dtypes: F32, F64, F16, BF16, I32, I64, U8, BOOL (Kiln's eight). Files with other
/// safetensors dtypes (I8, U16, F8_E4M3, ...) are refused with a clear error.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::io {

/// Tensors with names, in order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
/// A model's or optimizer's state: what nn::Module::state_dict() produces.
using StateDict = NamedTensors;
/// Free-form string pairs stored in "__metadata__".
using Metadata = std::map<std::string, std::string>;

/// What load_safetensors returns.
struct SafetensorsFile {
  /// In file order (ascending data offsets).
  NamedTensors tensors;
  Metadata metadata;

  bool contains(std::string_view name) const;
  /// The tensor named `name`; throws kiln::Error listing the names present otherwise.
  const Tensor& at(std::string_view name) const;
};

/// Writes `tensors` and `metadata` to `path`, atomically: the bytes go to a
/// temporary file in the same folder, which is flushed to disk (fsync) and renamed
/// over `path`, and the folder is flushed. If anything fails, `path` keeps its
/// previous contents (or stays absent), the temporary file is removed, and a
/// kiln::Error names the path and the cause (with the system's errno text).
///
/// Tensors may live on any device and have any strides; they are stored
/// contiguous. Throws kiln::Error before touching the disk for an undefined
/// tensor, a duplicate name, the reserved name "__metadata__", or a name or
/// metadata string that is not valid UTF-8.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

/// Same, from a map (written in the map's key order).
template <typename Compare, typename Alloc>
void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, Tensor, Compare, Alloc>& tensors,
                      const Metadata& metadata = {}) {
  save_safetensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

/// Reads a safetensors file, creating the tensors on `device` (default: the
/// default device). The whole file is validated before any tensor is created, and
/// no byte outside the file is ever read. Throws kiln::Error naming the file and
/// the problem for: a file that cannot be opened or is not a regular file; fewer
/// than 8 bytes; a header length beyond the file or over 100 MB; a header that
/// does not start with '{', is not valid JSON / UTF-8, or repeats a key; a
/// "__metadata__" that is not an object of strings; an entry that is not an object
/// or lacks dtype, shape or data_offsets; an unknown or unsupported dtype; a shape
/// that is not a list of non-negative integers or whose element count overflows;
/// data_offsets that are not two non-negative integers, have begin > end, reach
/// past the data section, or do not span numel * element size bytes; tensors that
/// overlap; bytes of the data section that belong to no tensor (holes or trailing
/// data); a BOOL element other than 0 or 1.
SafetensorsFile load_safetensors(const std::filesystem::path& path,
                                 std::optional<Device> device = std::nullopt);

/// "F32", "BF16", ...: the safetensors spelling of a dtype.
std::string_view safetensors_dtype_name(DType dtype);
/// The inverse; throws kiln::Error for a name that is not one of Kiln's eight.
DType dtype_from_safetensors_name(std::string_view name);

}  // namespace kiln::io
