// kill -9 during saves, at random moments: the checkpoint on disk is always a whole
// save (never torn), and temporary files of killed writers do not pile up: each save
// removes those of dead processes before making its own, so at most the last victim's
// remains, and a save made after the kills leaves none.
#include <kiln/io/safetensors.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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
    ASSERT_EQ(::posix_spawn(&child, program.c_str(), nullptr, nullptr, argv, environ), 0)
        << program;
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
