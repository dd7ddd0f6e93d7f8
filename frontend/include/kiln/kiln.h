#pragma once
/// @file kiln.h
/// Everything a Kiln program needs, as <torch/torch.h> is for libtorch: tensors and
/// autograd, nn modules and losses, optimizers and schedulers, datasets and the
/// DataLoader, safetensors checkpoints, the profiler and the runtime.
///
/// @code
///   #include <iostream>
///   #include <kiln/kiln.h>
///   int main() {
///     auto x = kiln::randn({2, 3});               // on KILN_BACKEND's device
///     std::cout << (x.matmul(x.t()) + 1).relu();
///   }
/// @endcode
///
/// kiln/dlpack.h (which needs libdlpack-dev's header) and kiln/distributed/mpi.h
/// (Kiln::mpi) are included separately.

#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/custom_op.h"
#include "kiln/data/dataloader.h"
#include "kiln/data/dataset.h"
#include "kiln/data/mnist.h"
#include "kiln/data/transforms.h"
#include "kiln/device.h"
#include "kiln/diagnostics.h"
#include "kiln/distributed.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/fft.h"
#include "kiln/graph.h"
#include "kiln/indexing.h"
#include "kiln/io/checkpoint.h"
#include "kiln/io/safetensors.h"
#include "kiln/nn.h"
#include "kiln/ops.h"
#include "kiln/optim.h"
#include "kiln/profiler.h"
#include "kiln/random.h"
#include "kiln/runtime.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"
