// Loading is two passes: the header is parsed and every entry checked against the
// file's actual size (offsets, sizes, overlaps, holes) before a single tensor byte
// is read; then each tensor is read with pread at an offset already proven to lie
// inside the file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <set>
#include <system_error>
#include <vector>

#include "io/byte_order.h"
#include "kiln/base/regular_file.h"
#include "kiln/error.h"
#include "kiln/io/safetensors.h"

namespace kiln::io {

namespace {

// std::map objects: nlohmann's ordered_json finds a key by a linear search, which
// made a header of n tensors take O(n^2) to parse. The header's order (which
// decides ties between zero-size tensors) is kept by parse_header instead.
using Json = nlohmann::json;

// The reference implementation's limit: a longer header is a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// The message is cut to a readable length: a hostile file's tensor names and strings
// (which the details may quote, as nlohmann's parse errors do) can be megabytes long.
template <typename... Args>
[[noreturn]] void refuse(const std::filesystem::path& path, Args&&... args) {
  constexpr size_t kMaxDetail = 600;
  std::string detail = kiln::detail::concat(std::forward<Args>(args)...);
  if (detail.size() > kMaxDetail)
    detail = kiln::detail::concat(detail.substr(0, kMaxDetail), "... (", detail.size() - kMaxDetail,
                                  " more characters)");
  throw Error(kiln::detail::concat("load_safetensors: '", path.string(), "': ", detail));
}

std::string excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

class File {
 public:
  explicit File(const std::filesystem::path& path) : path_(path) {
    struct stat info {};
    std::string why;
    fd_ = base::open_regular_file(path.string(), why, &info);
    if (fd_ < 0) refuse(path, "the path ", why);
    size_ = static_cast<uint64_t>(info.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint64_t size() const { return size_; }

  // Reads exactly [offset, offset + n), which the caller has checked lies within size().
  void read_at(uint64_t offset, void* data, size_t n) const {
    auto* out = static_cast<char*>(data);
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) refuse(path_, "read failed: ", std::system_category().message(errno));
      if (got == 0) refuse(path_, "the file became shorter while it was being read");
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

struct DuplicateKey {
  std::string key;
  bool top_level;
};

// A safetensors header nests three levels ({name: {"shape": [..]}}); anything far
// deeper is hostile, and is refused as it is parsed, before a deep tree exists that
// building it, printing it or destroying it would recurse through.
constexpr int kMaxHeaderDepth = 16;
struct TooDeep {};

struct Header {
  Json json;
  std::vector<std::string> order;  ///< the top-level keys as the file lists them
};

// One pass over the header's parse events, before any tree exists: refuses nesting
// deeper than kMaxHeaderDepth and a key repeated within an object (nlohmann keeps the
// last of repeated keys silently, and a repeated tensor name would make the file mean
// two things), and records the order of the top-level keys. A SAX handler rather than
// a parse callback: nlohmann's callback parser rescans the enclosing object at the end
// of every entry, which is quadratic in the number of tensors.
class HeaderScan final : public nlohmann::json_sax<Json> {
 public:
  explicit HeaderScan(std::vector<std::string>& order) : order_(order) {}

  bool start_object(std::size_t) override {
    enter();
    objects_.emplace_back();
    return true;
  }
  bool end_object() override {
    objects_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    enter();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& key) override {
    if (!objects_.back().insert(key).second) throw DuplicateKey{key, objects_.size() == 1};
    if (objects_.size() == 1) order_.push_back(key);
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw e;  // a Json::exception with nlohmann's message
  }

 private:
  void enter() {
    if (++depth_ > kMaxHeaderDepth) throw TooDeep{};
  }

  std::vector<std::string>& order_;
  std::vector<std::set<std::string>> objects_;
  int depth_ = 0;
};

Header parse_header(const std::filesystem::path& path, const std::string& text) {
  Header header;
  HeaderScan scan(header.order);
  try {
    Json::sax_parse(text, &scan);
    header.json = Json::parse(text);
    return header;
  } catch (const TooDeep&) {
    refuse(path, "the header nests deeper than ", kMaxHeaderDepth,
           " levels (a safetensors header has 3): refused as malformed");
  } catch (const DuplicateKey& duplicate) {
    if (duplicate.top_level) refuse(path, "the header lists '", duplicate.key, "' twice");
    refuse(path, "the header repeats the key '", duplicate.key, "' inside an entry");
  } catch (const Json::exception& e) {
    refuse(path, "the header is not valid JSON: ", e.what());
  }
}

bool as_count(const Json& value, uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

Entry parse_entry(const std::filesystem::path& path, const std::string& name, const Json& value,
                  uint64_t data_size) {
  auto bad = [&](auto&&... args) { refuse(path, "tensor '", name, "': ", args...); };
  if (!value.is_object()) bad("the entry is not a JSON object but ", excerpt(value));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) bad("the entry has no \"", field, "\"");
  Entry entry;
  entry.name = name;

  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) bad("\"dtype\" is not a string but ", excerpt(dtype));
  try {
    entry.dtype = dtype_from_safetensors_name(dtype.get<std::string>());
  } catch (const Error& e) {
    bad(e.what());
  }

  const Json& shape = value["shape"];
  if (!shape.is_array()) bad("\"shape\" is not a list but ", excerpt(shape));
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& dim : shape) {
    uint64_t size = 0;
    if (!as_count(dim, size)) {
      if (dim.is_number_integer()) bad("\"shape\" ", excerpt(shape), " has a negative dimension");
      bad("\"shape\" ", excerpt(shape), " holds ", excerpt(dim), ", not a non-negative integer");
    }
    overflow = overflow || size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    overflow = overflow || __builtin_mul_overflow(numel, size, &numel);
    entry.shape.push_back(static_cast<int64_t>(size));
  }
  const uint64_t item = element_size(entry.dtype);
  uint64_t bytes = 0;
  overflow = overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
             __builtin_mul_overflow(numel, item, &bytes);
  if (overflow) bad("the element count of shape ", excerpt(shape), " overflows 64 bits");

  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !as_count(offsets[0], entry.begin) ||
      !as_count(offsets[1], entry.end))
    bad("\"data_offsets\" must be two non-negative integers [begin, end], got ", excerpt(offsets));
  if (entry.begin > entry.end)
    bad("\"data_offsets\" [", entry.begin, ", ", entry.end, "] has begin > end");
  if (entry.end > data_size)
    bad("\"data_offsets\" [", entry.begin, ", ", entry.end,
        "] reach past the end of the data section (", data_size, " bytes)");
  if (entry.end - entry.begin != bytes)
    bad("\"data_offsets\" [", entry.begin, ", ", entry.end, "] span ", entry.end - entry.begin,
        " bytes, but shape ", excerpt(shape), " of ", dtype.get<std::string>(), " needs ", numel,
        " x ", item, " = ", bytes);
  return entry;
}

Metadata parse_metadata(const std::filesystem::path& path, const Json& value) {
  if (!value.is_object())
    refuse(path, "\"__metadata__\" is not a JSON object but ", excerpt(value));
  Metadata metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      refuse(path, "\"__metadata__\" value of '", key, "' is not a string but ", excerpt(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// The format requires the entries to tile the data section exactly: sorted by
// offset, each begins where the previous ended, and the last ends at its end.
void check_layout(const std::filesystem::path& path, std::vector<Entry>& entries,
                  uint64_t data_size) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      refuse(path, "tensors '", previous->name, "' [", previous->begin, ", ", previous->end,
             ") and '", e.name, "' [", e.begin, ", ", e.end, ") overlap in the data section");
    if (e.begin > covered)
      refuse(path, "bytes [", covered, ", ", e.begin,
             ") of the data section belong to no tensor (a hole before '", e.name, "')");
    covered = e.end;
    if (e.end > e.begin || !previous) previous = &e;
  }
  if (covered != data_size)
    refuse(path, "the data section holds ", data_size, " bytes but the tensors cover only ",
           covered, " (", data_size - covered, " bytes of trailing data)");
}

}  // namespace

SafetensorsFile load_safetensors(const std::filesystem::path& path, std::optional<Device> device) {
  File file(path);
  if (file.size() < 8)
    refuse(path, "the file is ", file.size(),
           " bytes, shorter than the 8-byte header length that starts a safetensors file");
  unsigned char prefix[8];
  file.read_at(0, prefix, sizeof prefix);
  const uint64_t header_size = detail::load_u64_le(prefix);
  if (header_size > kMaxHeaderBytes)
    refuse(path, "the header length field says ", header_size, " bytes, over the ", kMaxHeaderBytes,
           "-byte limit (not a safetensors file, or a corrupt one)");
  if (header_size > file.size() - 8)
    refuse(path, "the header length field says ", header_size, " bytes, but only ", file.size() - 8,
           " follow it (truncated file?)");

  std::string text(static_cast<size_t>(header_size), '\0');
  file.read_at(8, text.data(), text.size());
  if (text.empty() || text.front() != '{')
    refuse(path, "the header does not start with '{' (not a safetensors file?)");
  const Header header = parse_header(path, text);
  if (!header.json.is_object()) refuse(path, "the header is not a JSON object");

  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = file.size() - data_start;
  SafetensorsFile result;
  std::vector<Entry> entries;
  entries.reserve(header.order.size());
  for (const std::string& name : header.order) {
    const Json& value = header.json.find(name).value();
    if (name == "__metadata__")
      result.metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, name, value, data_size));
  }
  check_layout(path, entries, data_size);

  TensorOptions options;
  if (device) options.device(*device);
  std::vector<unsigned char> buffer;
  result.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    const size_t bytes = static_cast<size_t>(e.end - e.begin);
    buffer.resize(bytes);
    if (bytes > 0) file.read_at(data_start + e.begin, buffer.data(), bytes);
    if (e.dtype == DType::Bool) {
      auto bad = std::find_if(buffer.begin(), buffer.end(), [](unsigned char b) { return b > 1; });
      if (bad != buffer.end())
        refuse(path, "tensor '", e.name, "': BOOL element ", bad - buffer.begin(), " holds ",
               int{*bad}, ", not 0 or 1");
    }
    detail::native_to_little_endian(buffer.data(), bytes, element_size(e.dtype));
    result.tensors.emplace_back(e.name, copy_from_blob(buffer.data(), e.shape, e.dtype, options));
  }
  return result;
}

}  // namespace kiln::io
