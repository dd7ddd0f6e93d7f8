#include <nlohmann/json.hpp>

#include <set>
#include <string_view>
#include <vector>

#include "io/byte_order.h"
#include "kiln/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/io/safetensors.h"

namespace kiln::io {

namespace {

using Json = nlohmann::ordered_json;  // keeps the order tensors are given in

void check_tensors(const std::filesystem::path& path, const NamedTensors& tensors) {
  std::set<std::string_view> names;
  for (const auto& [name, tensor] : tensors) {
    KILN_CHECK(name != "__metadata__", "save_safetensors: '", path.string(),
               "': \"__metadata__\" is reserved and cannot name a tensor");
    KILN_CHECK(names.insert(name).second, "save_safetensors: '", path.string(),
               "': two tensors are named '", name, "'");
    KILN_CHECK(tensor.defined(), "save_safetensors: '", path.string(), "': tensor '", name,
               "' is undefined");
  }
}

// The JSON header, padded with spaces to a multiple of 8 bytes so the data section
// starts aligned (as the reference implementation does).
std::string make_header(const std::filesystem::path& path, const NamedTensors& tensors,
                        const Metadata& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * tensor.element_size();
    Json shape = Json::array();
    for (int64_t d : tensor.shape()) shape.push_back(static_cast<uint64_t>(d));
    Json entry = Json::object();
    entry["dtype"] = safetensors_dtype_name(tensor.dtype());
    entry["shape"] = std::move(shape);
    entry["data_offsets"] = Json::array({offset, offset + bytes});
    header[name] = std::move(entry);
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::type_error& e) {
    KILN_FAIL("save_safetensors: '", path.string(),
              "': a tensor name or metadata string is not valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  // Readers (this one and the reference implementation) refuse longer headers.
  KILN_CHECK(text.size() <= 100'000'000, "save_safetensors: '", path.string(), "': the header of ",
             tensors.size(), " tensors would take ", text.size(),
             " bytes, over the 100000000 bytes safetensors readers accept");
  return text;
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  check_tensors(path, tensors);
  const std::string header = make_header(path, tensors, metadata);

  AtomicFileWriter out(path);
  unsigned char length[8];
  detail::store_u64_le(length, header.size());
  out.write(length, sizeof length);
  out.write(header.data(), header.size());
  std::vector<unsigned char> buffer;
  for (const auto& [name, tensor] : tensors) {
    const size_t bytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
    if (bytes == 0) continue;
    buffer.resize(bytes);
    tensor.copy_to_host(buffer.data(), bytes);
    detail::native_to_little_endian(buffer.data(), bytes, tensor.element_size());
    out.write(buffer.data(), bytes);
  }
  out.commit();
}

}  // namespace kiln::io
