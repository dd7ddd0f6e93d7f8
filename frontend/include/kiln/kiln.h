#pragma once
/// @file kiln.h
/// Everything a Kiln program needs:
///
///   #include <kiln/kiln.h>
///   int main() {
///     auto x = kiln::randn({2, 3});               // on KILN_BACKEND's device
///     std::cout << (x.matmul(x.t()) + 1).relu();
///   }

#include "kiln/autograd.h"
#include "kiln/device.h"
#include "kiln/distributed.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "kiln/random.h"
#include "kiln/runtime.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"
