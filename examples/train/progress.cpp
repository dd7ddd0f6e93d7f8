#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kiln::train {

Progress::Progress(int64_t epoch, int64_t epochs, int64_t batches, int64_t batch_size, bool visible)
    : epoch_(epoch),
      epochs_(epochs),
      batches_(batches),
      batch_size_(batch_size),
      visible_(visible),
      tty_(isatty(STDOUT_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t done, double loss) {
  if (!visible_) return;
  // An exponential average keeps the displayed loss readable.
  running_loss_ = done == 1 ? loss : 0.95 * running_loss_ + 0.05 * loss;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ > std::chrono::milliseconds(100) || done == batches_) {
      last_draw_ = now;
      draw(done, false);
    }
  } else if (batches_ >= 10 && done % (batches_ / 10) == 0 && done != last_printed_) {
    last_printed_ = done;
    draw(done, false);
  }
}

void Progress::draw(int64_t done, bool final) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = seconds > 0 ? static_cast<double>(done * batch_size_) / seconds : 0;
  double left =
      done > 0 ? seconds / static_cast<double>(done) * static_cast<double>(batches_ - done) : 0;
  char eta[32];
  std::snprintf(eta, sizeof eta, "%d:%02d", static_cast<int>(left) / 60,
                static_cast<int>(left) % 60);
  if (tty_) {
    constexpr int kWidth = 30;
    int filled = batches_ ? static_cast<int>(kWidth * done / batches_) : kWidth;
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    std::printf("\repoch %lld/%lld [%s] %lld/%lld  loss %.4f  %.0f samples/s  eta %s ",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_), bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(batches_), running_loss_, rate,
                final ? "0:00" : eta);
  } else {
    std::printf("epoch %lld/%lld  batch %lld/%lld  loss %.4f  %.0f samples/s  eta %s\n",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_),
                static_cast<long long>(done), static_cast<long long>(batches_), running_loss_, rate,
                eta);
  }
  std::fflush(stdout);
}

double Progress::finish(const std::string& summary) {
  double seconds = elapsed();
  if (!visible_) return seconds;
  if (tty_) std::printf("\n");
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);
  return seconds;
}

}  // namespace kiln::train
