#pragma once
/// @file data_parallel.h
/// kiln::nn::DataParallel: one module, several devices of one process, as
/// torch.nn.DataParallel.
///
/// @code
///   auto model = std::make_shared<kiln::nn::Linear>(784, 10);     // on cpu:0
///   auto dp = std::make_shared<kiln::nn::DataParallel>(
///       model, std::vector<kiln::Device>{"cpu:0", "cpu:1"});
///   kiln::optim::Adam opt(dp->parameters(), kiln::optim::AdamOptions(1e-3));  // the model's
///   auto loss = kiln::nn::functional::cross_entropy(dp->forward(x), y);
///   loss.backward();                                               // grads on cpu:0's model
///   opt.step();
/// @endcode
///
/// Each forward splits the batch along dim 0 into one chunk per device (chunks of
/// ceil(N / devices), fewer devices when the batch is small), copies the chunks and
/// the module's current parameters and buffers to the devices (device to device),
/// runs the replicas concurrently, one thread per device, and concatenates their
/// outputs on the first device. The copies are recorded by autograd, so backward
/// sends each replica's parameter gradients back to the wrapped module's parameters,
/// where they are summed: after loss.backward() the gradients are those of one
/// device running the whole batch (up to float rounding), and an optimizer over
/// dp->parameters() works unchanged.
///
/// The wrapped module must live on devices[0] and implement Module::clone() (every
/// built-in layer does). BatchNorm in a replica normalizes with its own chunk's
/// statistics, as in PyTorch; only the first device's replica (the wrapped module
/// itself) updates the running statistics. Ops in the replicas draw random numbers
/// from the one generator in whatever order the threads reach it, so dropout masks
/// are not reproducible run to run with more than one device.

#include <memory>
#include <vector>

#include "kiln/device.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

class DataParallel : public Module {
 public:
  /// Replicates `module` on devices[1..]; devices must be distinct, of any plugins,
  /// and devices[0] must be where `module`'s parameters are. One device: forward
  /// simply calls the module.
  DataParallel(std::shared_ptr<Module> module, std::vector<Device> devices);

  /// Scatter, replicate, parallel apply, gather (see the file comment).
  Tensor forward(const Tensor& input) override;

  /// The wrapped module (registered as the child "module", as in PyTorch, so state
  /// dict keys read "module.0.weight").
  const std::shared_ptr<Module>& module() const { return module_; }
  const std::vector<Device>& devices() const { return devices_; }

 private:
  std::shared_ptr<Module> module_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<Module>> replicas_;  // replicas_[i] on devices_[i + 1]
};

}  // namespace kiln::nn
