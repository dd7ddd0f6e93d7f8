// The README's many-process snippet (between the markers), under mpirun.
#include <kiln/distributed/mpi.h>
#include <kiln/kiln.h>

int main() {
  std::shared_ptr<kiln::nn::Module> model = std::make_shared<kiln::nn::Linear>(8, 3);
  // [readme]
auto group = kiln::distributed::mpi::init();      // under mpirun
kiln::nn::DistributedDataParallel ddp(model, group);   // buckets all-reduced during backward
{ auto guard = ddp.no_sync(); /* accumulate without reducing */ }
  // [/readme]
  return 0;
}
