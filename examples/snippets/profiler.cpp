// The README's profiler snippet (between the markers), in a program that trains a
// small model for one step around it and checks what it wrote.
#include <filesystem>
#include <iostream>

#include <kiln/kiln.h>

int main() {
  auto model = kiln::nn::Sequential({std::make_shared<kiln::nn::Linear>(20, 32),
                                     std::make_shared<kiln::nn::ReLU>(),
                                     std::make_shared<kiln::nn::Linear>(32, 4)});
  kiln::nn::CrossEntropyLoss criterion;
  kiln::optim::Adam optimizer(model.parameters());
  auto x = kiln::randn({16, 20});
  auto y = kiln::randint(0, 4, {16});
  kiln::Tensor loss;
  // [readme]
namespace prof = kiln::profiler;
prof::Profiler p;                                   // records every op on every thread
{
  auto scope = prof::record_function("forward");    // a named scope around its ops
  loss = criterion(model.forward(x), y);
}
loss.backward();                                    // ops marked as backward
optimizer.step();                                   // ... and as optimizer
p.stop();
p.export_chrome_trace("trace.json");                // open in ui.perfetto.dev or chrome://tracing
std::cout << p.key_averages().table(prof::SortBy::HostSelf, 10);
  // [/readme]
  return std::filesystem::exists("trace.json") && std::filesystem::file_size("trace.json") > 0 ? 0 : 1;
}
