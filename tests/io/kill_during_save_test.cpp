// kill -9 during saves, at random moments: the checkpoint on disk is always a whole
// save (never torn), and temporary files of killed writers do not pile up: each save
// removes those of dead processes before making its own, so at most the last victim's
// remains, and a save made after the kills leaves none.
#include <kiln/io/safetensors.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <thread>

#include "io_test_util.h"
#include "kiln_test.h"

extern char** environ;

namespace kiln::test {
namespace {

int temporaries(const TempDir& dir) {
  int n = 0;
  for (const std::string& name : dir.entries()) n += name.rfind(".ckpt.safetensors.tmp-", 0) == 0;
  return n;
}

// Starts kiln_save_loop with its stdout on a pipe and returns 0 once it printed "ready"
// (Kiln loaded: the kill's random delay counts from there, not from a start that a
// sanitizer build on a busy machine makes slow), else an errno or -1 (EOF, 60 s).
int spawn_and_wait_until_ready(const std::string& program, char** argv, pid_t& child) {
  int fds[2];
  if (::pipe(fds) != 0) return errno;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const int spawned = ::posix_spawn(&child, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  int result = spawned;
  if (spawned == 0) {
    pollfd wait_for{fds[0], POLLIN, 0};
    char c = 0;
    result = -1;
    while (::poll(&wait_for, 1, 60000) == 1 && ::read(fds[0], &c, 1) == 1) {
      if (c == '\n') {
        result = 0;
        break;
      }
    }
  }
  ::close(fds[0]);  // the loop's later output (none) has nowhere to go but a closed pipe
  return result;
}

// The file is one whole save: every element of both tensors equals its iteration.
void expect_whole(const std::filesystem::path& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  const double i = std::stod(file.metadata.at("iteration"));
  for (const char* name : {"a", "b"}) {
    const Tensor t = file.at(name);
    ASSERT_EQ(t.numel(), 1 << 20) << name;
    EXPECT_EQ(t.min().item<double>(), i) << name << " of iteration " << i;
    EXPECT_EQ(t.max().item<double>(), i) << name << " of iteration " << i;
  }
}

TEST(KillDuringSave, CheckpointStaysWholeAndTemporariesDoNotPileUp) {
  TempDir dir;
  const std::filesystem::path path = dir / "ckpt.safetensors";
  std::mt19937 random(20261125);
  std::uniform_int_distribution<int> delay_ms(30, 250);
  const int kills = 25;
  int killed_with_a_temporary = 0;
  for (int k = 0; k < kills; ++k) {
    const std::string program = KILN_TEST_SAVE_LOOP, target = path.string();
    char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(target.c_str()), nullptr};
    pid_t child = 0;
    const int ready = spawn_and_wait_until_ready(program, argv, child);
    ASSERT_EQ(ready, 0) << program << " did not start: " << ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "kiln_save_loop ended by itself, status " << status;
    const int left = temporaries(dir);
    killed_with_a_temporary += left > 0;
    EXPECT_LE(left, 1) << "after kill " << k << ": " << testing::PrintToString(dir.entries());
    if (std::filesystem::exists(path)) expect_whole(path);
  }
  // At least some kills landed inside a save (else the test proved nothing).
  EXPECT_GT(killed_with_a_temporary, 0);
  ASSERT_TRUE(std::filesystem::exists(path)) << "no save completed in " << kills << " runs";
  io::save_safetensors(path,
                       io::NamedTensors{{"a", full({1 << 20}, 7.0)}, {"b", full({1 << 20}, 7.0)}},
                       {{"iteration", "7"}});
  expect_whole(path);
  EXPECT_EQ(temporaries(dir), 0) << testing::PrintToString(dir.entries());
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"ckpt.safetensors"}));
}

}  // namespace
}  // namespace kiln::test
