// Start-up: a whole Kiln process, `kiln-info` (loads every plugin it finds, prints what it
// found, exits), with every plugin of this build beside it, against the same program
// allowed only the CPU plugin (KILN_PLUGINS=cpu). Without a GPU the CUDA plugin must cost
// next to nothing: target <= 1.2x the CPU-only time (issue 13; and <= +30 MB resident,
// which this cannot measure: a spawned child's ru_maxrss includes the parent's at the
// exec, so it is taken with `/usr/bin/time -f %M`, see bench/README.md).
//
// kiln-info is the one beside kiln-bench (build/bin or the installed bin/).

#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ratio.h"

extern char** environ;

namespace {

std::string kiln_info_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : (self.parent_path() / "kiln-info").string();
}

// The environment with KILN_PLUGINS set to `allow` (removed when empty).
std::vector<std::string> environment(const std::string& allow) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("KILN_PLUGINS=", 0) != 0) env.emplace_back(*e);
  if (!allow.empty()) env.push_back("KILN_PLUGINS=" + allow);
  return env;
}

void BM_StartupKilnInfo(benchmark::State& state, const char* allow) {
  const std::string program = kiln_info_path();
  if (program.empty() || access(program.c_str(), X_OK) != 0) {
    state.SkipWithError(("no kiln-info beside kiln-bench: " + program).c_str());
    return;
  }
  std::vector<std::string> env_strings = environment(allow);
  std::vector<char*> env;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string arg0 = program;
  char* argv[] = {arg0.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  for (auto _ : state) {
    pid_t pid = 0;
    if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, env.data()) != 0) {
      state.SkipWithError("posix_spawn of kiln-info failed");
      break;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("kiln-info failed");
      break;
    }
  }
  posix_spawn_file_actions_destroy(&actions);
}
BENCHMARK_CAPTURE(BM_StartupKilnInfo, all_plugins, "")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_StartupKilnInfo, cpu_only, "cpu")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

kiln::bench::RegisterRatio ratio("kiln-info start-up, every plugin vs KILN_PLUGINS=cpu",
                                 "BM_StartupKilnInfo/all_plugins/repeats:5/real_time",
                                 "BM_StartupKilnInfo/cpu_only/repeats:5/real_time", 1 / 1.2);

}  // namespace
