#pragma once
// training_check.h — trains a tiny model a few steps on the device under test and on
// the CPU reference and compares the loss curves.

#include <kiln/device.h>

#include "isolation.h"

namespace kiln::conformance {

void training_check(const Device& device, Reporter& reporter);

}  // namespace kiln::conformance
