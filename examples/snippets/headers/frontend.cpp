// The examples in the public headers' comments (@code blocks), compiled: the CTest
// docs.header_snippets (cmake/CheckHeaderSnippets.cmake) fails when a header's example
// is not found here line for line. Each sits in a function (or namespace) of its own,
// its parameters standing for what the surrounding program would have. Compiled only,
// never run (an object library): several expect devices or files a test machine lacks.
#include <functional>
#include <iostream>
#include <kiln/kiln.h>
int main() {
  auto x = kiln::randn({2, 3});               // on KILN_BACKEND's device
  std::cout << (x.matmul(x.t()) + 1).relu();
}

#include <kiln/dlpack.h>          // not in kiln.h: it needs libdlpack-dev
#include <kiln/io/atomic_file.h>  // not in kiln.h: atomic writes, for tools

// kiln/amp.h
namespace amp_1 {
void example(const std::shared_ptr<kiln::nn::Module>& model, kiln::data::DataLoader& loader,
             kiln::nn::CrossEntropyLoss& criterion, kiln::optim::Optimizer& opt) {
  kiln::amp::GradScaler scaler;                       // float16 needs it; bfloat16 not
  for (auto& batch : loader) {
    opt.zero_grad();
    kiln::Tensor loss;
    {
      kiln::autocast scope(kiln::default_device().backend(), kiln::float16);
      loss = criterion(model->forward(batch.input), batch.target);  // convs in float16
    }
    scaler.scale(loss).backward();  // backward outside the scope, as in PyTorch
    scaler.step(opt);               // skipped when a gradient is inf or NaN
    scaler.update();
  }
}
}  // namespace amp_1

// kiln/autograd.h
namespace autograd_1 {
void example(const kiln::Tensor& x) {
  auto w = kiln::randn({3, 2}).requires_grad_();
  auto loss = kiln::matmul(x, w).relu().sum();
  loss.backward();                 // w.grad() now holds dloss/dw
  {
    kiln::NoGradGuard no_grad;     // optimizer steps are not recorded
    w.sub_(w.grad() * 0.1);
  }
}
}  // namespace autograd_1

// kiln/autograd.h
namespace autograd_2 {
void example() {
  auto x = kiln::randn({3}).requires_grad_();
  auto y = (x * x).sum();
  auto dx = kiln::autograd::grad({y}, {x})[0];   // 2 * x; x.grad() stays undefined
}
}  // namespace autograd_2

// kiln/autograd.h
namespace autograd_3 {
const kiln::Tensor x;
struct Cube : kiln::autograd::Function<Cube> {
  static kiln::Tensor forward(kiln::autograd::AutogradContext& ctx, const kiln::Tensor& x) {
    ctx.save_for_backward({x});
    return x * x * x;
  }
  static std::vector<kiln::Tensor> backward(kiln::autograd::AutogradContext& ctx,
                                            std::vector<kiln::Tensor> grads) {
    auto x = ctx.saved()[0];
    return {grads[0] * 3 * x * x};     // one gradient per Tensor argument
  }
};
auto y = Cube::apply(x);
}  // namespace autograd_3

// kiln/custom_op.h
namespace custom_op_1 {
void example() {
  kiln::load_plugins("/opt/acme/lib");                     // or the default folders
  auto x = kiln::randn({1024}).to("acme:0");
  auto y = kiln::empty_like(x);
  kiln::call_op("acme.softplus", {x}, {y}, {{"beta", 2.0}});
}
}  // namespace custom_op_1

// kiln/custom_op.h
namespace custom_op_2 {
void example(const kiln::Tensor& x) {
  kiln::VendorOp swish("acme.swish");                  // throws if not declared
  kiln::Tensor y = swish({x}, {{"beta", 1.0}});        // one output
  std::vector<kiln::Tensor> outs = swish.run({x});     // every output
}
}  // namespace custom_op_2

// kiln/data/dataloader.h
namespace data_dataloader_1 {
void example(int64_t start_epoch, int64_t epochs, const std::shared_ptr<kiln::nn::Module>& model) {
  kiln::data::DataLoader loader(kiln::data::FashionMNIST(),
                                kiln::data::DataLoaderOptions().batch_size(64)
                                    .shuffle(true).seed(42).workers(2).device("cuda"));
  for (int64_t epoch = start_epoch; epoch < epochs; ++epoch) {
    loader.set_epoch(epoch);                   // optional; needed to resume or for DDP
    for (auto& batch : loader) {               // batch.input [64,1,28,28], batch.target [64]
      auto logits = model->forward(batch.input);
      kiln::nn::functional::cross_entropy(logits, batch.target).backward();  // then a step
    }
  }
}
}  // namespace data_dataloader_1

// kiln/data/dataloader.h
namespace data_dataloader_2 {
using kiln::data::DistributedSampler;
void example(const kiln::data::Dataset& dataset,
             const std::shared_ptr<kiln::distributed::ProcessGroup>& group, int64_t epoch,
             std::vector<int64_t>& seen) {
  DistributedSampler sampler(dataset.size(), group->size(), group->rank(), true, 42);
  sampler.set_epoch(epoch);
  for (int64_t i : sampler.indices()) seen.push_back(i);  // this rank's share, in order
}
}  // namespace data_dataloader_2

// kiln/data/dataset.h
namespace data_dataset_1 {
void example() {
  auto x = kiln::randn({100, 3});
  auto y = kiln::arange(100);
  kiln::data::TensorDataset ds(x, y);
  auto [input, target] = ds.get(7);              // x[7], y[7]
  auto batch = ds.get_batch(std::vector<int64_t>{3, 1, 4});  // x[[3,1,4]], y[[3,1,4]]
}
}  // namespace data_dataset_1

// kiln/data/mnist.h
namespace data_mnist_1 {
void example() {
  kiln::data::FashionMNIST train;                            // 60000 samples
  kiln::data::FashionMNIST test(kiln::data::FashionMNIST::default_root(), false);
  auto [image, label] = train.get(0);   // float32 [1, 28, 28] in [0, 1], int64 []
}
}  // namespace data_mnist_1

// kiln/data/transforms.h
namespace data_transforms_1 {
void example() {
  kiln::data::DataLoader loader(kiln::data::FashionMNIST(), kiln::data::DataLoaderOptions()
      .batch_size(64).shuffle(true).seed(1).workers(2)
      .sample_transform(kiln::data::Compose({
          [](kiln::data::Example s, const kiln::data::SampleInfo&) {
            s.input = s.input * 2 - 1;  // [0, 1] -> [-1, 1]
            return s;
          }}))
      .transform(kiln::data::RandomHorizontalFlip(0.5, /*seed=*/1)));
}
}  // namespace data_transforms_1

// kiln/device.h
namespace device_1 {
void example() {
  kiln::Device d("cuda:1");          // parse
  kiln::Device e("cpu", 0);          // or build
  kiln::default_device();            // KILN_BACKEND, else cpu:0
}
}  // namespace device_1

// kiln/distributed.h
namespace distributed_1 {
void example(const kiln::Tensor& g0, const kiln::Tensor& g1) {
  kiln::distributed::Communicator comm({"cpu:0", "cpu:1"});
  std::vector<kiln::Tensor> grads = {g0, g1};          // g0 on cpu:0, g1 on cpu:1
  comm.all_reduce(grads, kiln::distributed::ReduceOp::Avg);  // both now hold the mean
}
}  // namespace distributed_1

// kiln/dlpack.h
namespace dlpack_1 {
void example(const kiln::Tensor& t, DLManagedTensor* managed) {
  DLManagedTensor* out = kiln::to_dlpack(t);      // hand to torch.utils.dlpack
  kiln::Tensor u = kiln::from_dlpack(managed);     // wrap what another library made
}
}  // namespace dlpack_1

// kiln/error.h
namespace error_1 {
void example(const kiln::Tensor& a) {
  KILN_CHECK(a.dim() == 2, "matmul: expected a 2-D tensor, got ", a.dim(), "-D");
}
}  // namespace error_1

// kiln/fft.h
namespace fft_1 {
void example(const kiln::Tensor& signal, const kiln::Tensor& keep, const kiln::Tensor& image) {
  auto spectrum = kiln::fft::rfft(signal);                    // [..., n/2 + 1] complex
  auto cleaned = kiln::fft::irfft(spectrum * keep, signal.size(-1));
  auto image_f = kiln::fft::fft2(image);                      // over the last two dims
}
}  // namespace fft_1

// kiln/graph.h
namespace graph_1 {
void example(const std::function<kiln::Tensor(const kiln::Tensor&, const kiln::Tensor&)>& train_step,
             kiln::optim::Optimizer& optimizer,
             const std::vector<std::pair<kiln::Tensor, kiln::Tensor>>& batches) {
  kiln::Tensor x = kiln::zeros({64, 784}), y = kiln::zeros({64}, kiln::DType::Int64);
  for (int i = 0; i < 3; ++i) train_step(x, y);      // warm-up, eager
  optimizer.zero_grad();                              // grads come from the pool
  kiln::Graph graph;
  kiln::Tensor loss;
  {
    kiln::GraphCapture capture(graph, x.device());
    loss = train_step(x, y);                          // recorded, not run
  }
  for (auto& [images, labels] : batches) {
    x.copy_(images);
    y.copy_(labels);
    graph.replay();                                   // loss holds this step's loss
  }
}
}  // namespace graph_1

// kiln/io/atomic_file.h
namespace io_atomic_file_1 {
void example(const std::string& text) {
  kiln::io::AtomicFileWriter out("run/metrics.json");
  out.write(text.data(), text.size());
  out.commit();      // now run/metrics.json holds `text`
}
}  // namespace io_atomic_file_1

// kiln/io/checkpoint.h
namespace io_checkpoint_1 {
void example() {
  auto model = std::make_shared<kiln::nn::Linear>(784, 10);
  kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
  kiln::optim::CosineAnnealingLR sched(opt, 100);
  kiln::amp::GradScaler scaler;
  int64_t epoch = 3;
  kiln::save({{"model", model}, {"optimizer", opt}, {"scheduler", sched},
              {"scaler", scaler}, {"rng", kiln::global_generator}, {"epoch", epoch}},
             "ckpt.safetensors");
  kiln::load({{"model", model}, {"optimizer", opt}, {"scheduler", sched},
              {"scaler", scaler}, {"rng", kiln::global_generator}, {"epoch", epoch}},
             "ckpt.safetensors");   // all restored, or none and a kiln::Error
}
}  // namespace io_checkpoint_1

// kiln/indexing.h
namespace indexing_1 {
void example(kiln::Tensor x) {
  using namespace kiln::indexing;
  auto row = x.index({0});                          // x[0]            (a view)
  auto block = x.index({Slice(1, 3), Slice()});     // x[1:3, :]       (a view)
  auto last = x.index({Ellipsis, -1});              // x[..., -1]      (a view)
  auto grown = x.index({None, Slice()});            // x[None, :]      (a view)
  auto picked = x.index({kiln::from_vector<int64_t>({2, 0})});  // x[[2, 0]] (a copy)
  auto positive = x.index({x > 0});                 // x[x > 0]        (a copy, 1-D)
  x.index_put_({x < 0}, 0.0);                       // x[x < 0] = 0
}
}  // namespace indexing_1

// kiln/io/safetensors.h
namespace io_safetensors_1 {
void example(const kiln::Tensor& w, const kiln::Tensor& b) {
  kiln::io::StateDict state = {{"fc.weight", w}, {"fc.bias", b}};
  kiln::io::save_safetensors("model.safetensors", state, {{"epoch", "3"}});
  auto file = kiln::io::load_safetensors("model.safetensors");
  kiln::Tensor w2 = file.at("fc.weight");         // same dtype, shape and values
  std::string epoch = file.metadata.at("epoch");
}
}  // namespace io_safetensors_1

// kiln/nn/containers.h
namespace nn_containers_1 {
struct Block : kiln::nn::Linear {
  explicit Block(int64_t width) : kiln::nn::Linear(width, width) {}
};
struct Transformer : kiln::nn::Module {
  Transformer() {
    blocks = register_module<kiln::nn::ModuleList>("blocks");
    for (int i = 0; i < 4; ++i) blocks->push_back<Block>(64);
  }
  kiln::Tensor forward(const kiln::Tensor& x) override {
    kiln::Tensor h = x;
    for (const auto& block : *blocks) h = block->forward(h);
    return h;
  }
  std::shared_ptr<kiln::nn::ModuleList> blocks;
};
}  // namespace nn_containers_1

// kiln/nn/data_parallel.h
namespace nn_data_parallel_1 {
void example(const kiln::Tensor& x, const kiln::Tensor& y) {
  auto model = std::make_shared<kiln::nn::Linear>(784, 10);     // on cpu:0
  auto dp = std::make_shared<kiln::nn::DataParallel>(
      model, std::vector<kiln::Device>{"cpu:0", "cpu:1"});
  kiln::optim::Adam opt(dp->parameters(), kiln::optim::AdamOptions(1e-3));  // the model's
  auto loss = kiln::nn::functional::cross_entropy(dp->forward(x), y);
  loss.backward();                                               // grads on cpu:0's model
  opt.step();
}
}  // namespace nn_data_parallel_1

// kiln/nn/functional.h
namespace nn_functional_1 {
void example(const kiln::Tensor& x, const kiln::Tensor& w, const kiln::Tensor& b, const kiln::Tensor& w2, const kiln::Tensor& b2, const kiln::Tensor& labels) {
  namespace F = kiln::nn::functional;
  auto h = F::max_pool2d(F::conv2d(x, w, b, /*stride=*/1, /*padding=*/1).relu(), 2);
  auto loss = F::cross_entropy(F::linear(h.flatten(1), w2, b2), labels);
}
}  // namespace nn_functional_1

// kiln/nn/loss.h
namespace nn_loss_1 {
void example(kiln::nn::Linear& model, const kiln::Tensor& x, const kiln::Tensor& y) {
  kiln::nn::CrossEntropyLoss criterion(
      kiln::nn::CrossEntropyLossOptions().label_smoothing(0.1));
  auto loss = criterion(model(x), y);
}
}  // namespace nn_loss_1

// kiln/nn/module.h
namespace nn_module_1 {
struct Net : kiln::nn::Module {
  Net() {
    fc1 = register_module<kiln::nn::Linear>("fc1", 784, 128);
    fc2 = register_module<kiln::nn::Linear>("fc2", 128, 10);
  }
  kiln::Tensor forward(const kiln::Tensor& x) override {
    return fc2->forward(fc1->forward(x.flatten(1)).relu());
  }
  std::shared_ptr<kiln::nn::Linear> fc1, fc2;
};
}  // namespace nn_module_1

// kiln/nn/module.h
namespace nn_module_2 {
using kiln::nn::Module;
struct Net : Module {
std::shared_ptr<Module> clone() const override {
  return copy_state_into(std::make_shared<Net>(/* same options */));
}
};
}  // namespace nn_module_2

// kiln/nn/module.h
namespace nn_module_3 {
void example(const std::shared_ptr<kiln::nn::Embedding>& wte,
             const std::shared_ptr<kiln::nn::Linear>& lm_head) {
  lm_head->weight = wte->weight;  // lm_head's registered "weight" is now wte's
}
}  // namespace nn_module_3

// kiln/nn/module.h
namespace nn_module_4 {
namespace nn = kiln::nn;
void example(nn::Module& model) {
  model.apply([](nn::Module& m) {
    if (auto* linear = m.as<nn::Linear>()) nn::init::normal_(linear->weight, 0, 0.02);
  });
}
}  // namespace nn_module_4

// kiln/nn/modules.h
namespace nn_modules_1 {
void example() {
  auto net = std::make_shared<kiln::nn::Sequential>();
  net->push_back<kiln::nn::Conv2d>(1, 32, 3, kiln::nn::Conv2dOptions().padding(1));
  net->push_back<kiln::nn::ReLU>();
}
}  // namespace nn_modules_1

// kiln/nn/transformer.h
namespace nn_transformer_1 {
void example() {
  auto layer = std::make_shared<kiln::nn::TransformerEncoderLayer>(
      kiln::nn::TransformerEncoderLayerOptions(128, 4).batch_first(true).norm_first(true));
  kiln::nn::TransformerEncoder encoder(layer, 6);
  kiln::Tensor y = encoder.forward(kiln::randn({8, 64, 128}), {}, {}, /*is_causal=*/true);
}
}  // namespace nn_transformer_1

// kiln/ops.h
namespace ops_1 {
void example(const kiln::Tensor& x, const kiln::Tensor& a, const kiln::Tensor& b) {
  auto y = kiln::where(x > 0, x, 0.1 * x);                 // leaky relu
  auto p = kiln::matmul(a, b.transpose(-1, -2));           // batched, broadcast
  auto z = kiln::cat({x, y}, /*dim=*/1);
}
}  // namespace ops_1

// kiln/optim/optimizer.h
namespace optim_optimizer_1 {
void example(const std::shared_ptr<kiln::nn::Module>& model, kiln::data::DataLoader& loader,
             kiln::nn::CrossEntropyLoss& criterion) {
  kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
  for (auto& batch : loader) {
    opt.zero_grad();
    auto loss = criterion(model->forward(batch.input), batch.target);
    loss.backward();
    opt.step();
  }
}
}  // namespace optim_optimizer_1

// kiln/profiler.h
namespace profiler_1 {
void example(kiln::nn::Linear& model, const kiln::Tensor& x, kiln::Tensor& loss) {
  namespace prof = kiln::profiler;
  {
    prof::Profiler p;                          // starts recording
    {
      auto scope = prof::record_function("forward");
      loss = model.forward(x);
    }
    loss.backward();
    p.stop();
    p.export_chrome_trace("trace.json");        // Perfetto UI, chrome://tracing
    std::cout << p.key_averages().table(prof::SortBy::HostSelf, 10);
  }
}
}  // namespace profiler_1

// kiln/random.h
namespace random_1 {
void example() {
  kiln::manual_seed(42);
  auto a = kiln::randn({3});          // same values on cpu and cuda
  auto b = kiln::rand({2, 2}, kiln::TensorOptions().device("cuda"));
}
}  // namespace random_1
namespace random_2 {
void example(const kiln::Tensor& logits) {
  auto probs = kiln::nn::functional::softmax(logits / 0.8, -1);  // temperature 0.8
  auto next = kiln::multinomial(probs, 1);                         // one token per row
}
}  // namespace random_2

// kiln/runtime.h
namespace runtime_1 {
void example() {
  kiln::load_plugins("/opt/acme/lib/kiln");  // then kiln::ones({2}, kiln::Device("acme"))
}
}  // namespace runtime_1

// kiln/tensor.h
namespace tensor_1 {
void example() {
  auto x = kiln::randn({64, 784});                       // default device
  auto w = kiln::zeros({784, 10}, kiln::TensorOptions().device("cuda"));
  auto y = kiln::matmul(x.to(w.device()), w).relu();     // runs on cuda:0
  std::cout << y.sum().item<float>() << "\n";            // host read: syncs
}
}  // namespace tensor_1

// kiln/tensor.h
namespace tensor_2 {
void example() {
  kiln::zeros({3}, kiln::TensorOptions().dtype(kiln::int64).device("cpu:1"));
}
}  // namespace tensor_2

// kiln/tensor.h
namespace tensor_3 {
void example() {
  kiln::arange(5);               // int64 [0, 1, 2, 3, 4]
  kiln::arange(0.0, 1.0, 0.25);  // float32 [0, 0.25, 0.5, 0.75]
}
}  // namespace tensor_3

// kiln/tensor.h
namespace tensor_4 {
void example() {
  auto m = kiln::from_vector<float>({1, 2, 3, 4}, {2, 2});  // [[1, 2], [3, 4]]
}
}  // namespace tensor_4
