// The README's single-process multi-device snippet (between the markers): run with
// KILN_CPU_DEVICES=2; checks that the gradients landed and the collective averaged.
#include <iostream>

#include <kiln/kiln.h>

int main() {
  std::shared_ptr<kiln::nn::Module> model = std::make_shared<kiln::nn::Linear>(8, 3);
  auto x = kiln::randn({6, 8});
  auto y = kiln::randint(0, 3, {6});
  std::vector<kiln::Tensor> tensors = {kiln::full({4}, 1.0, kiln::Device("cpu:0")),
                                       kiln::full({4}, 3.0, kiln::Device("cpu:1"))};
  // [readme]
auto dp = std::make_shared<kiln::nn::DataParallel>(model, std::vector<kiln::Device>{"cpu:0", "cpu:1"});
auto loss = kiln::nn::functional::cross_entropy(dp->forward(x), y);
loss.backward();                                  // gradients land on model's parameters

kiln::distributed::Communicator comm({"cpu:0", "cpu:1"});   // collectives across devices
comm.all_reduce(tensors, kiln::distributed::ReduceOp::Avg);
  // [/readme]
  for (const auto& p : model->parameters())
    if (!p.grad().defined()) return 1;
  for (const auto& t : tensors)
    if (t.to_vector<float>() != std::vector<float>(4, 2.0f)) return 1;
  std::cout << "DataParallel gradients and an averaged all_reduce: ok\n";
  return 0;
}
