// Tutorial 6: retain_graph, detach and no_grad.
#include <iostream>

#include <kiln/kiln.h>

int main() {
  auto x = kiln::from_vector<double>({1, 2, 3}, {3}).requires_grad_();
  auto y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);  // keep the graph for a second pass
  y.backward();                           // gradients accumulate: 2 * 2x
  bool accumulated = x.grad().to_vector<double>() == std::vector<double>{4, 8, 12};
  auto d = x.detach();  // the same data, no history
  bool detached = !d.requires_grad() && !(d * 2).requires_grad();
  bool recorded;
  {
    kiln::NoGradGuard no_grad;  // nothing is recorded in this scope
    recorded = (x * 2).requires_grad();
  }
  std::cout << std::boolalpha << accumulated << " " << detached << " " << !recorded << "\n";
  return accumulated && detached && !recorded ? 0 : 1;
}
