// kiln::einsum: Einstein summation made of catalogue ops. Each operand first takes
// its repeated labels' diagonals (index_select over the merged pair) and sums the
// labels no one else needs; operands are then joined left to right, each pair as one
// batched matmul: [batch, left, contracted] x [batch, contracted, right]. Gradients
// come from those ops.

#include <algorithm>
#include <map>
#include <string>

#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

namespace {

struct Term {
  Tensor t;
  std::string labels;  // one letter per dimension of t, each letter once
};

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string parse_labels(const std::string& text, const std::string& equation) {
  std::string out;
  for (char c : text) {
    if (c == ' ') continue;
    KILN_CHECK(c != '.', "einsum: '...' (ellipsis) is not supported in '", equation,
               "'; name every dimension");
    KILN_CHECK(is_label(c), "einsum: '", std::string(1, c), "' in '", equation,
               "' is not a letter");
    out.push_back(c);
  }
  return out;
}

// The diagonal over dims a < b of equal size: b removed, a kept.
Tensor diagonal(const Tensor& t, int64_t a, int64_t b) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != a && d != b) perm.push_back(d);
  perm.push_back(a);
  perm.push_back(b);
  const int64_t n = t.size(a);
  std::vector<int64_t> shape;
  for (size_t i = 0; i + 2 < perm.size(); ++i) shape.push_back(t.size(perm[i]));
  shape.push_back(n * n);
  Tensor merged = t.permute(perm).reshape(shape);
  Tensor picked = index_select(
      merged, -1, arange(0, n * n, n + 1, TensorOptions(DType::Int64).device(t.device())));
  // Move the kept diagonal back to position a.
  std::vector<int64_t> back;
  const int64_t last = picked.dim() - 1;
  for (int64_t d = 0, k = 0; d < picked.dim(); ++d) back.push_back(d == a ? last : k++);
  return picked.permute(back);
}

// Sums (or keeps) labels so that only `needed` ones remain; takes diagonals first.
Term reduce_term(Term term, const std::string& needed, const std::string& equation) {
  for (size_t i = 0; i < term.labels.size(); ++i) {
    for (size_t j = term.labels.size(); j-- > i + 1;) {
      if (term.labels[j] != term.labels[i]) continue;
      KILN_CHECK(term.t.size(static_cast<int64_t>(i)) == term.t.size(static_cast<int64_t>(j)),
                 "einsum: label '", std::string(1, term.labels[i]), "' in '", equation,
                 "' names dimensions of sizes ", term.t.size(static_cast<int64_t>(i)), " and ",
                 term.t.size(static_cast<int64_t>(j)));
      term.t = diagonal(term.t, static_cast<int64_t>(i), static_cast<int64_t>(j));
      term.labels.erase(j, 1);
    }
  }
  std::vector<int64_t> unused;
  std::string kept;
  for (size_t i = 0; i < term.labels.size(); ++i) {
    if (needed.find(term.labels[i]) == std::string::npos)
      unused.push_back(static_cast<int64_t>(i));
    else
      kept.push_back(term.labels[i]);
  }
  if (!unused.empty()) term.t = sum(term.t, unused);
  term.labels = kept;
  return term;
}

int64_t product(const Tensor& t, const std::string& labels, const std::string& which) {
  int64_t n = 1;
  for (char c : which) n *= t.size(static_cast<int64_t>(labels.find(c)));
  return n;
}

// a and b joined into one term whose labels are those `needed` later.
Term join(const Term& a, const Term& b, const std::string& needed, const std::string& equation) {
  std::string batch, contract, left, right;
  for (char c : a.labels) {
    const bool in_b = b.labels.find(c) != std::string::npos;
    const bool kept = needed.find(c) != std::string::npos;
    if (in_b) {
      const int64_t sa = a.t.size(static_cast<int64_t>(a.labels.find(c)));
      const int64_t sb = b.t.size(static_cast<int64_t>(b.labels.find(c)));
      KILN_CHECK(sa == sb, "einsum: label '", std::string(1, c), "' in '", equation, "' has sizes ",
                 sa, " and ", sb, " in two operands");
      (kept ? batch : contract).push_back(c);
    } else {
      left.push_back(c);
    }
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos) right.push_back(c);
  auto order = [](const Term& t, const std::string& labels) {
    std::vector<int64_t> perm;
    for (char c : labels) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
    return t.t.permute(perm);
  };
  const int64_t nb = product(a.t, a.labels, batch), nc = product(a.t, a.labels, contract);
  const int64_t nl = product(a.t, a.labels, left), nr = product(b.t, b.labels, right);
  Tensor am = order(a, batch + left + contract).reshape({nb, nl, nc});
  Tensor bm = order(b, batch + contract + right).reshape({nb, nc, nr});
  std::vector<int64_t> shape;
  for (char c : batch + left) shape.push_back(a.t.size(static_cast<int64_t>(a.labels.find(c))));
  for (char c : right) shape.push_back(b.t.size(static_cast<int64_t>(b.labels.find(c))));
  return {matmul(am, bm).reshape(shape), batch + left + right};
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  KILN_CHECK(!operands.empty(), "einsum: expects at least one operand for '", equation, "'");
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> inputs;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    inputs.push_back(parse_labels(lhs.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(inputs.size() == operands.size(), "einsum: '", equation, "' names ", inputs.size(),
             " operands but ", operands.size(), " were given");
  std::map<char, int> count;
  for (const std::string& in : inputs)
    for (char c : in) ++count[c];
  std::string output;
  if (arrow == std::string::npos) {  // implicit: the labels used once, in order
    for (const auto& [c, n] : count)
      if (n == 1) output.push_back(c);
  } else {
    output = parse_labels(equation.substr(arrow + 2), equation);
    for (size_t i = 0; i < output.size(); ++i) {
      KILN_CHECK(count.count(output[i]), "einsum: output label '", std::string(1, output[i]),
                 "' of '", equation, "' is in no operand");
      KILN_CHECK(output.find(output[i], i + 1) == std::string::npos, "einsum: output label '",
                 std::string(1, output[i]), "' appears twice in '", equation, "'");
    }
  }
  std::vector<Term> terms;
  for (size_t k = 0; k < operands.size(); ++k) {
    detail::impl_of(operands[k], "einsum");
    if (k > 0) detail::check_same_device("einsum", {&operands[0], &operands[k]});
    KILN_CHECK(static_cast<int64_t>(inputs[k].size()) == operands[k].dim(), "einsum: operand ", k,
               " of '", equation, "' has ", inputs[k].size(), " labels for shape ",
               operands[k].shape());
    terms.push_back({operands[k], inputs[k]});
  }
  // What each step still needs: the output's labels and those of the later operands.
  auto needed_after = [&](size_t k) {
    std::string needed = output;
    for (size_t j = k + 1; j < terms.size(); ++j) needed += inputs[j];
    return needed;
  };
  Term acc = reduce_term(terms[0], needed_after(0), equation);
  for (size_t k = 1; k < terms.size(); ++k) {
    Term next = reduce_term(terms[k], needed_after(k) + acc.labels, equation);
    acc = join(acc, next, needed_after(k), equation);
  }
  acc = reduce_term(acc, output, equation);
  std::vector<int64_t> perm;
  for (char c : output) perm.push_back(static_cast<int64_t>(acc.labels.find(c)));
  return perm.empty() ? acc.t : acc.t.permute(perm);
}

}  // namespace kiln
