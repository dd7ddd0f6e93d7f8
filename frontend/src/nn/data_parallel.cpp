// DataParallel: scatter the batch, replicate the parameters (through autograd, so
// gradients flow back to the wrapped module), apply the replicas on one thread per
// device, gather the outputs.

#include "kiln/nn/data_parallel.h"

#include <exception>
#include <functional>
#include <thread>

#include "autograd/record.h"
#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "kiln/random.h"

namespace kiln::nn {

namespace {

namespace ag = detail::autograd_impl;

// Makes the module's tensor handle `slot` (shared with the module's field and its
// parameter list) stand for `value`: same data and, when `value` was recorded by
// autograd, the same place in the graph. What torch's replicate() does by assigning
// the broadcast results to the replica's parameters.
void rebind(const Tensor& slot, const Tensor& value) {
  Tensor(slot).set_data(value);  // storage, shape, strides, offset, dtype
  detail::TensorImpl& dst = *slot.impl();
  const detail::TensorImpl& src = *value.impl();
  dst.autograd.reset();
  if (src.autograd) {
    dst.autograd = std::make_unique<detail::AutogradMeta>();
    dst.autograd->requires_grad = src.autograd->requires_grad;
    dst.autograd->grad_fn = src.autograd->grad_fn;
    dst.autograd->output_nr = src.autograd->output_nr;
    dst.autograd->grad_accumulator = src.autograd->grad_accumulator;
  }
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<Module> module, std::vector<Device> devices)
    : Module("DataParallel"), module_(std::move(module)), devices_(std::move(devices)) {
  KILN_CHECK(module_, "DataParallel: no module");
  KILN_CHECK(!devices_.empty(), "DataParallel: needs at least one device");
  for (size_t i = 0; i < devices_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      KILN_CHECK(devices_[i] != devices_[j], "DataParallel: device ", devices_[i],
                 " is listed twice");
  for (const Tensor& p : module_->parameters())
    KILN_CHECK(p.device() == devices_[0],
               "DataParallel: the module's parameters must be on the "
               "first device, ",
               devices_[0], ", but one is on ", p.device(), " (call module->to(", devices_[0],
               ") first)");
  // SyncBatchNorm reduces over a process group from inside forward; replicas on
  // threads would issue those collectives in racing order.
  std::function<void(const Module&)> refuse_sync_bn = [&](const Module& m) {
    KILN_CHECK(m.type_name() != "SyncBatchNorm",
               "DataParallel: the module contains a "
               "SyncBatchNorm, which works with DistributedDataParallel (one process per "
               "device), not with DataParallel; use BatchNorm2d here");
    for (const auto& [name, child] : m.named_children()) refuse_sync_bn(*child);
  };
  refuse_sync_bn(*module_);
  register_module("module", module_);
  // Building the replicas runs their layers' initializers, which draw from the
  // generator; the values are overwritten anyway, so the draws must not shift the
  // random stream the program sees.
  const GeneratorState rng = generator_state();
  try {
    for (size_t i = 1; i < devices_.size(); ++i) {
      auto replica = module_->clone();
      replica->to(devices_[i]);
      replicas_.push_back(std::move(replica));
    }
  } catch (...) {
    set_generator_state(rng);
    throw;
  }
  set_generator_state(rng);
}

Tensor DataParallel::forward(const Tensor& input) {
  KILN_CHECK(input.defined() && input.dim() >= 1,
             "DataParallel: expected a batch (a tensor of at "
             "least 1 dimension) to split along dim 0");
  const int64_t batch = input.size(0);
  const auto devices = static_cast<int64_t>(devices_.size());
  if (devices == 1 || batch <= 1) return module_->forward(input.to(devices_[0]));

  // torch.chunk's split: chunks of ceil(batch / devices); the last may be smaller,
  // and small batches use fewer devices.
  const int64_t chunk = (batch + devices - 1) / devices;
  const int64_t used = (batch + chunk - 1) / chunk;
  const auto primary_params = module_->named_parameters();
  const auto primary_buffers = module_->named_buffers();
  const bool grad_mode = ag::grad_enabled;

  std::vector<Tensor> inputs(static_cast<size_t>(used)), outputs(static_cast<size_t>(used));
  for (int64_t i = 0; i < used; ++i) {
    const int64_t start = i * chunk;
    inputs[static_cast<size_t>(i)] =
        input.narrow(0, start, std::min(chunk, batch - start)).to(devices_[static_cast<size_t>(i)]);
  }
  for (int64_t i = 1; i < used; ++i) {
    Module& replica = *replicas_[static_cast<size_t>(i - 1)];
    const Device& device = devices_[static_cast<size_t>(i)];
    replica.train(module_->is_training());
    const auto params = replica.named_parameters();
    for (size_t k = 0; k < params.size(); ++k)
      if (primary_params[k].second.defined())
        rebind(params[k].second, primary_params[k].second.to(device));
    NoGradGuard no_grad;
    auto buffers = replica.named_buffers();
    for (size_t k = 0; k < buffers.size(); ++k)
      if (primary_buffers[k].second.defined())
        buffers[k].second.set_data(primary_buffers[k].second.to(device));
  }

  std::vector<std::exception_ptr> errors(static_cast<size_t>(used));
  auto apply = [&](int64_t i) {
    const auto k = static_cast<size_t>(i);
    try {
      ag::grad_enabled = grad_mode;  // the mode is per thread; replicas run in the caller's
      Module& m = i == 0 ? *module_ : *replicas_[k - 1];
      outputs[k] = m.forward(inputs[k]);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < used; ++i) threads.emplace_back(apply, i);
    apply(0);
  }
  for (int64_t i = 0; i < used; ++i) {
    if (!errors[static_cast<size_t>(i)]) continue;
    try {
      std::rethrow_exception(errors[static_cast<size_t>(i)]);
    } catch (const std::exception& e) {
      throw Error(detail::concat("DataParallel: the replica on ", devices_[static_cast<size_t>(i)],
                                 " failed: ", e.what()));
    }
  }
  for (auto& out : outputs) out = out.to(devices_[0]);
  return cat(outputs, 0);
}

}  // namespace kiln::nn
