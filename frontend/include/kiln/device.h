#pragma once
/// @file device.h
/// kiln::Device names where a tensor lives: a backend (a plugin's name) and an
/// index, written "cpu", "cpu:1", "cuda:0", "acme:3".
///
/// @code
///   kiln::Device d("cuda:1");          // parse
///   kiln::Device e("cpu", 0);          // or build
///   kiln::default_device();            // KILN_BACKEND, else cpu:0
/// @endcode
///
/// A Device is only a name: it is checked against the loaded plugins when it is
/// first used to create or move a tensor, and an unknown backend or an index out
/// of range then throws a kiln::Error listing what is available.

#include <iosfwd>
#include <string>
#include <string_view>

namespace kiln {

class Device {
 public:
  /// cpu:0.
  Device() : backend_("cpu"), index_(0) {}
  /// Parses "name" (index 0) or "name:index"; throws kiln::Error on bad syntax.
  Device(std::string_view spec);  // NOLINT: implicit, like torch::Device("cuda")
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  Device(std::string backend, int index);

  const std::string& backend() const { return backend_; }
  int index() const { return index_; }
  /// "cuda:1"; a device with index 0 is still written with its index.
  std::string str() const;

  friend bool operator==(const Device& a, const Device& b) = default;

 private:
  std::string backend_;
  int index_;
};

std::ostream& operator<<(std::ostream& out, const Device& device);

/// The device new tensors go to when none is named: set_default_device() if it was
/// called, else KILN_BACKEND, else "cpu". Throws kiln::Error when KILN_BACKEND names
/// a backend that is not loaded or an index out of range.
Device default_device();
/// Overrides KILN_BACKEND for this process; the device is validated now.
void set_default_device(const Device& device);

/// Waits for all work enqueued on `device` and reports any asynchronous error.
void synchronize(const Device& device);

}  // namespace kiln
