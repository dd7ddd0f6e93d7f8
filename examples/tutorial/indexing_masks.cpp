// Tutorial 9: indexing, slicing and masks in libtorch's spelling (kiln/indexing.h).
#include <iostream>

#include <kiln/kiln.h>

int main() {
  using namespace kiln::indexing;
  auto x = kiln::arange(12.0).reshape({3, 4});
  auto row = x.index({1});                                      // a view
  auto block = x.index({Slice(0, 2), Slice(1, 3)});             // a view
  auto last = x.index({Ellipsis, -1});                          // a view
  auto picked = x.index({kiln::from_vector<int64_t>({2, 0})});  // rows 2 and 0, a copy
  auto positive = x.index({x > 8});                             // by a boolean mask, 1-D
  x.index_put_({x < 2}, -1);                                    // write through a mask
  auto [top, where] = x.flatten().topk(3);
  std::cout << row << block << last << picked << positive << x << top << where;
  auto got = kiln::cat({positive, x.index({0}), where.to(kiln::float32)}).to_vector<float>();
  return got == std::vector<float>{9, 10, 11, -1, -1, 2, 3, 11, 10, 9} ? 0 : 1;
}
