// The CPU backend's entry point: the plugin kit (kiln/sdk/plugin.h) makes the C ABI
// out of cpu::Backend and its Devices (device.h), as it does for any vendor's backend.
// This plugin is the worked example the plugin guide points at.
#include "device.h"

KILN_SDK_PLUGIN(kiln::cpu::Backend, "cpu", "0.1.0")
