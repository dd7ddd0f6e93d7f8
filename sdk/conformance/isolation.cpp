// Fork-per-group isolation: a child process per group of checks, results over a pipe.
#include "isolation.h"

#include <fcntl.h>
#include <kiln/error.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace kiln::conformance {

namespace {

// Collects results in this process (--no-fork).
class DirectReporter : public Reporter {
 public:
  explicit DirectReporter(GroupOutcome& out) : out_(out) {}
  void begin(const std::string&) override {}
  void result(const CheckResult& r) override { out_.results.push_back(r); }
  void fact(const std::string& key, const nlohmann::json& value) override {
    out_.facts[key] = value;
  }

 private:
  GroupOutcome& out_;
};

// Writes one JSON line per message to the pipe; every line is written whole, so a
// crash can only lose messages, never corrupt the earlier ones.
class PipeReporter : public Reporter {
 public:
  explicit PipeReporter(int fd) : fd_(fd) {}
  void begin(const std::string& what) override { send({{"kind", "begin"}, {"what", what}}); }
  void result(const CheckResult& r) override { send({{"kind", "result"}, {"result", to_json(r)}}); }
  void fact(const std::string& key, const nlohmann::json& value) override {
    send({{"kind", "fact"}, {"key", key}, {"value", value}});
  }

 private:
  void send(const nlohmann::json& message) {
    const std::string line =
        message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    size_t written = 0;
    while (written < line.size()) {
      ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the parent is gone: nothing useful left to do
      written += static_cast<size_t>(n);
    }
  }
  int fd_;
};

// How much of a child's output GroupOutcome::output keeps (all of it is forwarded).
constexpr size_t kMaxKeptOutput = size_t{4} << 20;

// An exception that reached the group's top. libkiln turns an exception escaping a
// plugin entry into a kiln::Error beginning "ABI violation", and a status the plugin
// returned into any other kiln::Error: the first is the plugin's ABI violation, the
// second a failed check. Any other exception can only have crossed the C ABI out of a
// direct call into the plugin (the ABI checks call its entries themselves).
CheckResult kiln_error(const std::string& group, const std::string& what) {
  CheckResult r;  // the caller sets the section
  r.name = group;
  r.status = Status::Failed;
  // libkiln's "ABI violation: ..." already names the plugin and the entry.
  r.message = what.rfind("ABI violation", 0) == 0 ? what : "stopped on an error: " + what;
  return r;
}

CheckResult escaped(const std::string& group, const std::string& what) {
  CheckResult r;  // the caller sets the section
  r.name = group;
  r.status = Status::Failed;
  r.message = "ABI violation: a C++ exception escaped from the plugin (" + what +
              "); every entry must catch its exceptions and return a kiln_status (the "
              "plugin kit's entries do)";
  return r;
}

void run_body(const std::string& group, const GroupBody& body, Reporter& reporter) {
  try {
    body(reporter);
  } catch (const kiln::Error& e) {
    reporter.result(kiln_error(group, e.what()));
  } catch (const std::exception& e) {
    reporter.result(escaped(group, e.what()));
  } catch (...) {
    reporter.result(escaped(group, "not a std::exception"));
  }
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* description = strsignal(sig);
  return std::string(abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig)) +
         (description ? std::string(" (") + description + ")" : "");
}

void take_line(const std::string& line, GroupOutcome& out, std::string& last_begun) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return;
  const std::string kind = j.value("kind", "");
  if (kind == "begin") {
    last_begun = j.value("what", "");
  } else if (kind == "result" && j.contains("result")) {
    out.results.push_back(check_from_json(j["result"]));
  } else if (kind == "fact" && j.contains("key")) {
    out.facts[j["key"].get<std::string>()] = j.value("value", nlohmann::json());
  }
}

}  // namespace

GroupOutcome run_group(const std::string& group, const GroupBody& body,
                       const IsolationOptions& options) {
  GroupOutcome out;
  if (!options.fork) {
    DirectReporter reporter(out);
    run_body(group, body, reporter);
    return out;
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.results.push_back(
        kiln_error(group, std::string("the runner's pipe: ") + std::strerror(errno)));
    return out;
  }
  // The child's stdout and stderr: forwarded to our stderr as they come, and kept in
  // out.output (what the plugin logged is evidence too, see certify.cpp). Without this
  // second pipe the child writes to stderr directly.
  int output[2] = {-1, -1};
  const bool capture = ::pipe2(output, O_CLOEXEC) == 0;
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {fds[0], fds[1], output[0], output[1]})
      if (fd >= 0) ::close(fd);
    out.results.push_back(
        kiln_error(group, std::string("the runner's fork: ") + std::strerror(errno)));
    return out;
  }
  if (pid == 0) {
    // The child: stdout belongs to the report (--json), so anything the plugin prints
    // goes to stderr.
    ::close(fds[0]);
    if (capture) {
      ::close(output[0]);
      ::dup2(output[1], STDERR_FILENO);
    }
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    PipeReporter reporter(fds[1]);
    run_body(group, body, reporter);
    std::fflush(nullptr);
    // _exit: no static destructors or atexit handlers of the plugin's libraries run
    // (plugins are never unloaded), so they cannot hang or crash the exit.
    ::_exit(0);
  }

  ::close(fds[1]);
  if (capture) ::close(output[1]);
  std::string last_begun, buffer;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  bool timed_out = false;
  char chunk[4096];
  // Reads what the child printed; false at its end (or on an error).
  const auto forward_output = [&] {
    const ssize_t n = ::read(output[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(STDERR_FILENO, chunk + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += w;
    }
    if (out.output.size() < kMaxKeptOutput) out.output.append(chunk, static_cast<size_t>(n));
    return true;
  };
  bool reading_output = capture;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {reading_output ? output[0] : -1, POLLIN, 0}};
    const int ready = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    if (p[1].revents != 0) reading_output = forward_output();
    if (p[0].revents == 0) continue;
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child has finished (or died)
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      take_line(buffer.substr(0, nl), out, last_begun);
      buffer.erase(0, nl + 1);
    }
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (capture) {
    // The rest of what the child printed, without waiting for processes it may have
    // started and that still hold the pipe.
    ::fcntl(output[0], F_SETFL, ::fcntl(output[0], F_GETFL) | O_NONBLOCK);
    while (reading_output && forward_output()) {
    }
    ::close(output[0]);
  }
  const std::string during = last_begun.empty() ? "" : " while running '" + last_begun + "'";
  if (timed_out) {
    out.abnormal = Status::TimedOut;
    out.abnormal_message = "no answer within " + std::to_string(options.timeout_seconds) + " s" +
                           during + " (the process was killed)";
  } else if (WIFSIGNALED(status)) {
    out.abnormal = Status::Crashed;
    out.abnormal_message = "the process died on " + signal_text(WTERMSIG(status)) + during;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    out.abnormal = Status::Crashed;
    out.abnormal_message = "the process ended with exit status " +
                           std::to_string(WEXITSTATUS(status)) + during +
                           " (a plugin must never call exit or abort)";
  }
  return out;
}

}  // namespace kiln::conformance
