// kiln/diagnostics.h: the fatal-signal handler, and the kernels threads are running.
// The handler reads only the crashing thread's own mark (exit_guard.h's ThreadSlot,
// an initial-exec thread-local) and writes with write(2).
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "kiln/diagnostics.h"
#include "runtime/exit_guard.h"

namespace kiln {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction previous[std::size(kSignals)];
// The installing thread's alternate signal stack: static storage, never freed (a
// heap block held only by the kernel would be a leak to LeakSanitizer).
alignas(64) char alternate_stack[64 * 1024];

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "a signal";
  }
}

void say(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  say("kiln: fatal signal ");
  say(signal_name(sig));
  const detail::ThreadSlot* slot = detail::tls_thread_slot;
  const char* op = slot ? slot->own_op.load(std::memory_order_relaxed) : nullptr;
  if (op != nullptr) {
    const char* device = slot->device.load(std::memory_order_relaxed);
    say(" in the kernel ");
    say(op);
    say(" on ");
    say(device ? device : "?");
    say(" (a defect of that device's plugin, or of its operands)\n");
  } else {
    say(" outside any plugin kernel\n");
  }
  // Then whatever the signal did before: the earlier handler, or the default
  // action once this handler returns (the signal is blocked until then).
  size_t i = 0;
  while (kSignals[i] != sig) ++i;
  const struct sigaction& before = previous[i];
  ::sigaction(sig, &before, nullptr);
  if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) {
    before.sa_sigaction(sig, info, context);
  } else if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler != SIG_DFL &&
             before.sa_handler != SIG_IGN) {
    before.sa_handler(sig);
  } else {
    ::raise(sig);
  }
}

}  // namespace

void install_crash_reporter() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A stack of its own for the handler on this thread, so that a stack overflow
    // here still gets its line (other threads report on their own stack, which an
    // overflow leaves no room on). Never freed: it must outlive every signal.
    stack_t alternate{};
    alternate.ss_size = sizeof alternate_stack;
    alternate.ss_sp = alternate_stack;
    ::sigaltstack(&alternate, nullptr);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction action {};
      action.sa_sigaction = &on_fatal_signal;
      action.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&action.sa_mask);
      ::sigaction(kSignals[i], &action, &previous[i]);
    }
  });
}

std::vector<std::string> kernels_in_flight() { return detail::describe_kernels_in_flight(); }

}  // namespace kiln
