#pragma once
// Kernels that work along one dim of a contiguous tensor (softmax, cumsum, sort):
// [outer, D, inner] is outer·inner lines of D elements at stride `inner`, each line
// done by one thread.
#include <algorithm>

#include "elementwise.h"
#include "kiln/sdk/lines.h"

namespace kiln::cpu {

using sdk::Lines;
using sdk::lines_of;

/// Calls fn(first element of the line, stride) for every line, in parallel.
template <class Fn>
void for_each_line(const Lines& l, const Fn& fn) {
  if (l.d == 0 || l.count() == 0) return;
  pool().parallel_for(0, l.count(), std::max<int64_t>(1, kParallelGrain / (4 * l.d)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t line = begin; line < end; ++line) fn(l.base(line), l.inner);
                      });
}

}  // namespace kiln::cpu
