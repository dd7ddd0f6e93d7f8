#pragma once
/// @file atomic_file.h
/// AtomicFileWriter: replace a file so that readers, and a machine that crashes
/// mid-save, see either the old contents or the new ones, never a mix.
///
/// @code
///   kiln::io::AtomicFileWriter out("run/metrics.json");
///   out.write(text.data(), text.size());
///   out.commit();      // now run/metrics.json holds `text`
/// @endcode
///
/// The writer creates a temporary file beside the target (".<name>.tmp-<pid>-<n>"),
/// and commit() fsyncs it, renames it over the target and fsyncs the folder. A
/// writer destroyed without commit() (an exception on the way, for example)
/// removes the temporary file and leaves the target as it was. A process killed
/// mid-save cannot clean up, so each new writer removes the temporary files of the
/// same target whose process (the <pid> in the name) no longer exists.

#include <cstddef>
#include <filesystem>

namespace kiln::io {

class AtomicFileWriter {
 public:
  /// Creates the temporary file; throws kiln::Error naming `target` and the errno
  /// text when it cannot (missing or unwritable folder, ...).
  explicit AtomicFileWriter(std::filesystem::path target);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends `bytes` bytes; throws kiln::Error (e.g. disk full) and removes the
  /// temporary file.
  void write(const void* data, size_t bytes);
  /// Makes the new contents durable and puts them at the target path; throws
  /// kiln::Error (and removes the temporary file) on failure. Call once.
  void commit();

  const std::filesystem::path& target() const { return target_; }
  /// The temporary file being written (empty after commit() or a failure).
  const std::filesystem::path& temporary() const { return temporary_; }

 private:
  [[noreturn]] void fail(const char* what, int error_number);
  void discard() noexcept;

  std::filesystem::path target_;
  std::filesystem::path temporary_;
  int fd_ = -1;
};

}  // namespace kiln::io
