// Saves are atomic: a failed save leaves the previous file byte-for-byte intact and
// no temporary file behind; a successful one replaces the file by rename.
#include <kiln/io/atomic_file.h>
#include <kiln/io/safetensors.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_test_util.h"
#include "kiln_test.h"

namespace kiln::test {
namespace {

using io::load_safetensors;
using io::NamedTensors;
using io::save_safetensors;

NamedTensors small_state() { return {{"w", from_vector<float>({1, 2, 3})}}; }

ino_t inode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0);
  return info.st_ino;
}

TEST(AtomicSave, MissingFolderFailsWithThePathAndErrno) {
  TempDir dir;
  auto path = dir / "no/such/folder/model.safetensors";
  EXPECT_KILN_ERROR(save_safetensors(path, small_state()), path.string(),
                    "No such file or directory");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicSave, SuccessfulSaveReplacesTheFileByRename) {
  TempDir dir;
  auto path = dir / "model.safetensors";
  save_safetensors(path, small_state());
  const ino_t before = inode_of(path);
  save_safetensors(path, NamedTensors{{"w", from_vector<float>({9, 8})}});
  // A new inode: the old file was never opened for writing, it was swapped out.
  EXPECT_NE(inode_of(path), before);
  EXPECT_EQ(load_safetensors(path).at("w").to_vector<float>(), (std::vector<float>{9, 8}));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}));
}

TEST(AtomicSave, RelativePathInTheWorkingFolder) {
  TempDir dir;
  struct WorkingFolder {
    std::filesystem::path previous = std::filesystem::current_path();
    explicit WorkingFolder(const std::filesystem::path& p) { std::filesystem::current_path(p); }
    ~WorkingFolder() { std::filesystem::current_path(previous); }
  };
  {
    WorkingFolder in(dir.path());
    save_safetensors("relative.safetensors", small_state());
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"relative.safetensors"}));
}

// The file-size limit makes write(2) fail with EFBIG part-way through the data, as a
// full disk would with ENOSPC: a real mid-write failure, with no hook in the code.
TEST(AtomicSave, FailedWriteLeavesThePreviousFileIntact) {
  TempDir dir;
  auto path = dir / "model.safetensors";
  save_safetensors(path, small_state());
  const std::string good = read_bytes(path);

  NamedTensors big = {{"w", zeros({256, 1024})}};  // 1 MiB of data
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous_handler = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string message = kiln_error_message([&] { save_safetensors(path, big); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous_handler);

  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(read_bytes(path), good) << "the previous checkpoint was modified";
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}))
      << "the temporary file was left behind";
  EXPECT_EQ(load_safetensors(path).at("w").to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

// rename(2) over a non-empty folder fails (EISDIR): the last step of a save fails
// after all the data was written.
TEST(AtomicSave, FailedRenameRemovesTheTemporary) {
  TempDir dir;
  auto target = dir / "model.safetensors";
  std::filesystem::create_directory(target);
  write_bytes(target / "keep", "precious");
  std::string message = kiln_error_message([&] { save_safetensors(target, small_state()); });
  EXPECT_NE(message.find(target.string()), std::string::npos) << message;
  EXPECT_NE(message.find("renaming"), std::string::npos) << message;
  EXPECT_NE(message.find("Is a directory"), std::string::npos) << message;
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}));
  EXPECT_EQ(read_bytes(target / "keep"), "precious");
}

TEST(AtomicSave, AFifoOrDeviceInTheTargetsPlaceIsNotReplaced) {
  TempDir dir;
  auto fifo = dir / "metrics.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_KILN_ERROR(io::AtomicFileWriter{fifo}, fifo.string(), "is a FIFO (named pipe)",
                    "not a regular file");
  EXPECT_KILN_ERROR(save_safetensors(fifo, small_state()), "is a FIFO (named pipe)");
  struct stat info {};
  ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"metrics.json"}));
  auto link = dir / "to-null";
  std::filesystem::create_symlink("/dev/null", link);
  EXPECT_KILN_ERROR(save_safetensors(link, small_state()), "is a character device");
}

// A writer abandoned half-way, as when an exception unwinds a save, leaves the
// previous file as it was.
TEST(AtomicSave, AbandonedWriteKeepsThePreviousFile) {
  TempDir dir;
  auto path = dir / "model.safetensors";
  save_safetensors(path, small_state());
  const std::string good = read_bytes(path);
  {
    io::AtomicFileWriter writer(path);
    writer.write("partial", 7);
    EXPECT_TRUE(std::filesystem::exists(writer.temporary()));
    EXPECT_EQ(writer.temporary().parent_path(), dir.path());  // same folder: rename is atomic
    // destroyed without commit(), as when an exception unwinds a save
  }
  EXPECT_EQ(read_bytes(path), good);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}));
}

TEST(AtomicSave, TemporariesOfDeadProcessesAreRemovedByTheNextSave) {
  TempDir dir;
  const auto target = dir / "run.safetensors";
  // A process that has exited: its pid names no process any more.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = ".run.safetensors.tmp-" + std::to_string(child) + "-0";
  const std::string live = ".run.safetensors.tmp-1-7";  // pid 1 is alive
  const std::string other = ".other.safetensors.tmp-" + std::to_string(child) + "-0";
  const std::string unlike = ".run.safetensors.tmp-notapid";
  for (const auto& name : {dead, live, other, unlike}) write_bytes(dir / name, "partial");
  save_safetensors(target, NamedTensors{{"w", ones({2})}});
  const auto left = dir.entries();
  auto has = [&](const std::string& n) {
    return std::find(left.begin(), left.end(), n) != left.end();
  };
  EXPECT_FALSE(has(dead)) << "a dead writer's temporary file was left";
  EXPECT_TRUE(has(live)) << "a live process's temporary file was removed";
  EXPECT_TRUE(has(other)) << "another target's temporary file was removed";
  EXPECT_TRUE(has(unlike)) << "a file of another naming pattern was removed";
  EXPECT_TRUE(has("run.safetensors"));
}

TEST(AtomicSave, WriterCommitsOnlyOnce) {
  TempDir dir;
  io::AtomicFileWriter writer(dir / "x.bin");
  writer.write("abc", 3);
  writer.commit();
  EXPECT_EQ(read_bytes(dir / "x.bin"), "abc");
  EXPECT_TRUE(writer.temporary().empty());
  EXPECT_KILN_ERROR(writer.commit(), "after commit()");
  EXPECT_KILN_ERROR(writer.write("d", 1), "after commit()");
  EXPECT_EQ(read_bytes(dir / "x.bin"), "abc");
}

}  // namespace
}  // namespace kiln::test
