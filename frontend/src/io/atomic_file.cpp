#include "kiln/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <system_error>

#include "kiln/base/regular_file.h"
#include "kiln/error.h"

namespace kiln::io {

namespace {

std::string errno_text(int error_number) { return std::system_category().message(error_number); }

std::filesystem::path folder_of(const std::filesystem::path& target) {
  std::filesystem::path folder = target.parent_path();
  return folder.empty() ? std::filesystem::path(".") : folder;
}

// Removes temporary files an earlier process left beside `target` when it died
// mid-save (kill -9, power loss): only names of the writer's own pattern,
// ".<name>.tmp-<pid>-<n>", whose <pid> is another process that no longer exists —
// a live writer's file is never touched. Best effort: errors are ignored.
void remove_stale_temporaries(const std::filesystem::path& target) {
  const std::string prefix = "." + target.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_of(target), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-<n>"
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash + 1 == rest.size() ||
        rest.find_first_not_of("0123456789-") != std::string::npos ||
        rest.find('-', dash + 1) != std::string::npos || dash > 9)
      continue;
    const long pid = std::stol(rest.substr(0, dash));
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;  // alive, or not ours to judge
    std::error_code ignored;
    if (entry.is_regular_file(ignored)) std::filesystem::remove(entry.path(), ignored);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target) : target_(std::move(target)) {
  KILN_CHECK(!target_.empty() && target_.has_filename(), "cannot save to '", target_.string(),
             "': the path names no file");
  // A FIFO, device or socket in the target's place would be swapped for a regular
  // file by the rename, unnoticed by whoever reads from it. (A folder there makes
  // the rename itself fail, with its own message.)
  struct stat existing {};
  if (::stat(target_.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) &&
      !S_ISDIR(existing.st_mode))
    KILN_FAIL("cannot save to '", target_.string(), "': it is ",
              base::file_type_name(existing.st_mode),
              ", not a regular file, and a save would replace it");
  static std::atomic<uint64_t> counter{0};
  // Before making ours: a writer killed between the two steps then leaves only its
  // own temporary behind, never the previous victim's too.
  remove_stale_temporaries(target_);
  // O_EXCL with a name unique to this process and call; mode 0666 lets the umask
  // decide the permissions, as for any file the program creates.
  for (int attempt = 0; attempt < 100; ++attempt) {
    // Built with append: GCC 12's -Wrestrict misfires on chained operator+ at -O3.
    std::string name = ".";
    name.append(target_.filename().string())
        .append(".tmp-")
        .append(std::to_string(::getpid()))
        .append("-")
        .append(std::to_string(counter++));
    std::filesystem::path candidate = folder_of(target_) / name;
    int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      fd_ = fd;
      temporary_ = std::move(candidate);
      return;
    }
    if (errno != EEXIST)
      KILN_FAIL("cannot save to '", target_.string(), "': creating the temporary file '",
                candidate.string(), "' failed: ", errno_text(errno));
  }
  KILN_FAIL("cannot save to '", target_.string(),
            "': no free temporary file name in its folder after 100 attempts");
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
}

void AtomicFileWriter::fail(const char* what, int error_number) {
  std::string temporary = temporary_.string();
  discard();
  KILN_FAIL(
      "cannot save to '", target_.string(), "': ", what, " failed: ", errno_text(error_number),
      " (the previous file, if any, is unchanged; the temporary '", temporary, "' was removed)");
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  KILN_CHECK(fd_ >= 0, "AtomicFileWriter: write to '", target_.string(),
             "' after commit() or a failure");
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (n == 0) fail("writing", EIO);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  KILN_CHECK(fd_ >= 0, "AtomicFileWriter: commit of '", target_.string(),
             "' after commit() or a failure");
  if (::fsync(fd_) != 0) fail("flushing the data to disk (fsync)", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int error = errno;
    if (error != EINTR) fail("closing the temporary file", error);
  }
  if (::rename(temporary_.c_str(), target_.c_str()) != 0)
    fail("renaming the temporary file", errno);
  temporary_.clear();

  // The rename is durable only once the folder's entry is on disk. Some
  // filesystems cannot fsync a folder (EINVAL); there is nothing more to do there.
  std::filesystem::path folder = folder_of(target_);
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    KILN_FAIL("saved '", target_.string(),
              "', but opening its folder to flush it failed: ", errno_text(errno));
  int result = ::fsync(dir);
  int error = errno;
  ::close(dir);
  if (result != 0 && error != EINVAL && error != ENOTSUP)
    KILN_FAIL("saved '", target_.string(),
              "', but flushing its folder (fsync) failed: ", errno_text(error),
              "; the new file may not survive a crash");
}

}  // namespace kiln::io
