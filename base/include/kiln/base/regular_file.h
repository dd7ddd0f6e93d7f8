// kiln/base/regular_file.h — opening a path that must name a regular file, and
// saying what it names instead.
//
// A FIFO, a terminal or a socket where a checkpoint, a data file or a plugin is
// expected would make open() or read() (and dlopen, which reads the file) wait
// forever. Every path Kiln reads is checked with these first: the type is taken
// with stat, and a file is opened with O_NONBLOCK, so that a FIFO swapped in after
// the check is refused by the fstat of the open descriptor instead of blocking the
// open itself.
#ifndef KILN_BASE_REGULAR_FILE_H
#define KILN_BASE_REGULAR_FILE_H

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace kiln::base {

/// What a file type is, in words: "a folder", "a FIFO (named pipe)", ...
inline const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Why `path` (symbolic links followed) cannot be read as a regular file: "" when
/// it can, else "does not exist", "is a FIFO (named pipe), not a regular file", ...
inline std::string regular_file_problem(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) return "does not exist";
    return "cannot be examined: " + std::system_category().message(error);
  }
  if (S_ISREG(info.st_mode)) return {};
  return std::string("is ") + file_type_name(info.st_mode) + ", not a regular file";
}

/// Opens `path` read-only (close-on-exec) if it is a regular file; the descriptor
/// is then blocking as usual, and `info` holds its fstat. Returns -1 and sets
/// `why` (as regular_file_problem words it) otherwise. Never blocks on a FIFO.
inline int open_regular_file(const std::string& path, std::string& why,
                             struct stat* info = nullptr) {
  why = regular_file_problem(path);
  if (!why.empty()) return -1;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    why = "cannot be opened: " + std::system_category().message(errno);
    return -1;
  }
  struct stat own {};
  if (::fstat(fd, &own) != 0) {
    why = "cannot be examined: " + std::system_category().message(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(own.st_mode)) {  // replaced between the stat and the open
    why = std::string("is ") + file_type_name(own.st_mode) + ", not a regular file";
    ::close(fd);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    why = "cannot be opened: " + std::system_category().message(errno);
    ::close(fd);
    return -1;
  }
  if (info) *info = own;
  return fd;
}

}  // namespace kiln::base

#endif  // KILN_BASE_REGULAR_FILE_H
