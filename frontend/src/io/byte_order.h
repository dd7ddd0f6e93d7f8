#pragma once
// safetensors stores elements little-endian; Kiln tensors hold them in the host's
// native order. On little-endian hosts (x86-64, AArch64 Linux) these are no-ops.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace kiln::io::detail {

/// Reverses the bytes of each `element_size`-byte element in place when the host is
/// big-endian (the conversion is its own inverse: native <-> little-endian).
inline void native_to_little_endian(unsigned char* data, size_t bytes, size_t element_size) {
  if constexpr (std::endian::native == std::endian::big) {
    if (element_size > 1)
      for (size_t i = 0; i + element_size <= bytes; i += element_size)
        std::reverse(data + i, data + i + element_size);
  } else {
    (void)data, (void)bytes, (void)element_size;
  }
}

inline void store_u64_le(unsigned char* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
}

inline uint64_t load_u64_le(const unsigned char* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

}  // namespace kiln::io::detail
