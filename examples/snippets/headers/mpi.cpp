// The examples in the public headers' comments (@code blocks), compiled: the CTest
// docs.header_snippets (cmake/CheckHeaderSnippets.cmake) fails when a header's example
// is not found here line for line. Each sits in a function (or namespace) of its own,
// its parameters standing for what the surrounding program would have. Compiled only,
// never run (an object library): several expect devices or files a test machine lacks.
#include <kiln/distributed/mpi.h>
#include <kiln/kiln.h>

// kiln/distributed/mpi.h
namespace distributed_mpi_1 {
void example(const std::shared_ptr<kiln::nn::Module>& model) {
  // mpirun -np 4 ./train
  auto group = kiln::distributed::mpi::init();      // rank and size from the launcher
  kiln::nn::DistributedDataParallel ddp(model, group);
}
}  // namespace distributed_mpi_1

// kiln/nn/distributed_data_parallel.h
namespace nn_distributed_data_parallel_1 {
namespace F = kiln::nn::functional;
void example(const std::shared_ptr<kiln::nn::Module>& model, kiln::data::DataLoader& loader) {
  auto group = kiln::distributed::mpi::init();            // mpirun -np 4 ./train
  auto ddp = std::make_shared<kiln::nn::DistributedDataParallel>(model, group);
  kiln::optim::SGD opt(ddp->parameters(), kiln::optim::SGDOptions(0.1));
  for (auto& batch : loader) {                             // each rank its own shard
    opt.zero_grad();
    F::cross_entropy(ddp->forward(batch.input), batch.target).backward();
    opt.step();                                            // same update on every rank
  }
}
}  // namespace nn_distributed_data_parallel_1
