#pragma once
// collectives_check.h — the collectives of a plugin (kiln.collectives.v1), run by
// libkiln's Communicator over all of the plugin's devices: every collective x reduce
// op x dtype x size (0, 1, 1001, 2^20+3) x in/out of place, against a reference
// computed on the host in double precision. The operands are small multiples of 0.5
// (integers for integer dtypes), so every correct reduction order gives the exact
// result and the comparison is exact. A plugin without collectives is checked the
// same way through the host-staged path Kiln uses for it (reported as a fallback).

#include <kiln/distributed.h>

#include <string>

#include "isolation.h"

namespace kiln::conformance {

/// `options` chooses the communicator: the default uses the plugin's collectives when
/// it has them; host_staged(true) checks the host-staged path on its devices instead
/// (what Kiln's own test suite does, tests/distributed).
void collectives_check(const std::string& plugin, Reporter& reporter,
                       distributed::CommunicatorOptions options = {});

}  // namespace kiln::conformance
