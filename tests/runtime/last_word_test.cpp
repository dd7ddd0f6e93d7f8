// A crash, an exit or a hang inside a plugin's kernel leaves a last word naming the
// kernel and the device (kiln/diagnostics.h), with the misbehaving test plugin
// (misbehave_plugin.cpp) on misbehave:0.
#include <kiln/diagnostics.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "support/kiln_test.h"

namespace kiln::test {
namespace {

Tensor on_misbehave() { return zeros({4}, TensorOptions().device("misbehave:0")); }

// Dead of the signal, or (under ASan, whose handler runs after Kiln's) exited non-zero.
bool died_of_a_signal_or_reported_it(int status) {
  return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

// exit(7), or under AddressSanitizer any failure: its leak check runs at exit too, and
// an exit from inside a kernel may leave what the check reports.
bool exited_with_7(int status) {
#if defined(__SANITIZE_ADDRESS__)
  return died_of_a_signal_or_reported_it(status);
#else
  return WIFEXITED(status) && WEXITSTATUS(status) == 7;
#endif
}

TEST(LastWordDeathTest, AFatalSignalInAKernelNamesTheKernelAndDevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_crash_reporter();
        Tensor x = on_misbehave();
        call_op("misbehave.segv", {x}, {x});
      },
      died_of_a_signal_or_reported_it,
      "kiln: fatal signal SIGSEGV in the kernel misbehave.segv on misbehave:0");
}

TEST(LastWordDeathTest, ASignalOutsideKernelsSaysSo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_crash_reporter();
        ::raise(SIGSEGV);
      },
      died_of_a_signal_or_reported_it, "kiln: fatal signal SIGSEGV outside any plugin kernel");
}

TEST(LastWordDeathTest, ExitInAKernelIsLoggedWithTheKernel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Tensor x = on_misbehave();
        call_op("misbehave.exit", {x}, {x});
      },
      exited_with_7,
      "exit\\(\\) was called inside the kernel misbehave.exit on misbehave:0: the plugin "
      "ended the process");
}

// Polls kernels_in_flight() until `wanted` shows (at most 20 s).
bool shows_up(const std::string& wanted) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& k : kernels_in_flight())
      if (k == wanted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(LastWord, KernelsInFlightNamesWhatEachThreadRuns) {
  EXPECT_TRUE(kernels_in_flight().empty());
  Tensor x = on_misbehave();
  std::thread sleeper([&] { call_op("misbehave.sleep", {}, {x}, {{"ms", 1000}}); });
  EXPECT_TRUE(shows_up("an op outside the catalogue on misbehave:0"));
  sleeper.join();
  // A catalogue op is named: a matmul long enough to be seen on cpu:0.
  Tensor a = randn({1536, 1536}, TensorOptions().device("cpu:0"));
  std::thread multiplier([&] {
    for (int i = 0; i < 4; ++i) matmul(a, a);
  });
  EXPECT_TRUE(shows_up("kiln.matmul on cpu:0"));
  multiplier.join();
  EXPECT_TRUE(kernels_in_flight().empty());
}

}  // namespace
}  // namespace kiln::test
