// A process that returns from main (or calls exit) while detached threads are still
// running Kiln ops must exit cleanly: static destructors run while the threads go on,
// so nothing they use (the registry, the plugins, the CPU plugin's thread pool, the
// allocator) may be torn down under them.
//
//   exit_with_running_threads            runs the scenario 60 times in child processes,
//                                        one per core at a time,
//                                        and fails if any child did not exit with 0
//   exit_with_running_threads child      one run (what each child does)
#include <kiln/kiln.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

extern char** environ;

namespace {

int child(bool call_exit) {
  // The plugins are loaded first, as in any program that has used Kiln before it
  // exits. (An exit that begins while another thread is still loading them is not
  // covered: CUDA's runtime registers its own exit handler as it initializes, and that
  // handler runs first; see docs/design-decisions.md.)
  const int cpu_devices = kiln::device_count("cpu");
  for (int k = 0; k < 3; ++k) {
    std::thread([k, cpu_devices] {
      const kiln::Device device("cpu", k % cpu_devices);
      for (;;) {
        auto x = kiln::randn({128, 128}, kiln::TensorOptions().device(device));
        auto y = x.matmul(x).relu().sum();
        auto z = kiln::rand({4096}) * 2;
        (void)y;
        (void)z;
      }
    }).detach();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
  if (call_exit) std::exit(0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "child") == 0) return child(argc > 2);
  // The children run a few at a time (one per core): each spends most of its life
  // starting up and loading the plugins, about a second under ThreadSanitizer.
  const int runs = 60;
  const int at_once = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  std::map<pid_t, int> running;  // pid -> run number
  int started = 0, failures = 0;
  while (started < runs || !running.empty()) {
    if (started < runs && static_cast<int>(running.size()) < at_once) {
      const int i = started++;
      std::string self = argv[0], mode = "child", how = "exit";
      char* args[] = {self.data(), mode.data(), i % 2 ? how.data() : nullptr, nullptr};
      pid_t pid = 0;
      if (posix_spawn(&pid, argv[0], nullptr, nullptr, args, environ) != 0) {
        std::perror("posix_spawn");
        return 2;
      }
      running[pid] = i;
      continue;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      std::perror("waitpid");
      return 2;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int i = it->second;
    running.erase(it);
    if (WIFSIGNALED(status)) {
      std::printf("run %d (%s): killed by signal %d (%s)\n", i, i % 2 ? "exit()" : "return",
                  WTERMSIG(status), strsignal(WTERMSIG(status)));
      ++failures;
    } else if (WEXITSTATUS(status) != 0) {
      std::printf("run %d (%s): exit status %d\n", i, i % 2 ? "exit()" : "return",
                  WEXITSTATUS(status));
      ++failures;
    }
  }
  std::printf("%d of %d runs exited cleanly while 3 threads were running ops\n", runs - failures,
              runs);
  return failures == 0 ? 0 : 1;
}
