// kiln::einsum: Einstein summation made of catalogue ops. "..." is first replaced by
// letters the equation does not use, one per broadcast dim (right-aligned across the
// operands, size-1 dims expanded, as PyTorch broadcasts them); a label's size-1 dim where
// the label is larger in another operand is squeezed out, as PyTorch does. Each operand
// then takes its repeated labels' diagonals (index_select over the merged pair) and sums
// the labels no one else needs; operands are then joined left to right, each pair as one
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
    KILN_CHECK(c != '.', "einsum: a '.' outside '...' in '", equation, "'");
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

// Sums (or keeps) labels so that only `needed` ones remain; takes diagonals first (a
// repeated label's sizes were checked equal when the operands were read).
Term reduce_term(Term term, const std::string& needed) {
  for (size_t i = 0; i < term.labels.size(); ++i) {
    for (size_t j = term.labels.size(); j-- > i + 1;) {
      if (term.labels[j] != term.labels[i]) continue;
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

std::vector<std::string> split_inputs(const std::string& lhs) {
  std::vector<std::string> inputs;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) return inputs;
    start = comma + 1;
  }
}

// The equation with every "..." spelt out in fresh letters and an explicit output, and
// the operands with their "..." dims expanded to the broadcast sizes.
std::string spell_out_ellipsis(const std::string& equation, std::vector<Tensor>& operands) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> inputs = split_inputs(equation.substr(0, arrow));
  if (equation.find("...") == std::string::npos) return equation;
  KILN_CHECK(inputs.size() == operands.size(), "einsum: '", equation, "' names ", inputs.size(),
             " operands but ", operands.size(), " were given");
  std::string fresh;
  for (char c = 'A'; c <= 'z'; ++c)
    if (is_label(c) && equation.find(c) == std::string::npos) fresh.push_back(c);
  // How many dims each operand's "..." stands for, and their broadcast sizes.
  std::vector<int64_t> dims(inputs.size(), 0);
  std::vector<int64_t> sizes;  // right-aligned: sizes[0] is the first of the longest
  for (size_t k = 0; k < inputs.size(); ++k) {
    const size_t at = inputs[k].find("...");
    if (at == std::string::npos) continue;
    KILN_CHECK(inputs[k].find("...", at + 3) == std::string::npos, "einsum: operand ", k, " of '",
               equation, "' has two '...'");
    int64_t named = 0;
    for (char c : inputs[k]) named += is_label(c) ? 1 : 0;
    dims[k] = operands[k].dim() - named;
    KILN_CHECK(dims[k] >= 0, "einsum: operand ", k, " of '", equation, "' has ", named,
               " labels besides '...' for shape ", operands[k].shape());
  }
  const int64_t most = *std::max_element(dims.begin(), dims.end());
  KILN_CHECK(most <= static_cast<int64_t>(fresh.size()), "einsum: '", equation,
             "' leaves too few unused letters for its '...' dims");
  sizes.assign(static_cast<size_t>(most), 1);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t first = static_cast<int64_t>(inputs[k].find("..."));
    if (dims[k] == 0) continue;
    int64_t before = 0;  // the operand's dims named before its "..."
    for (int64_t i = 0; i < first; ++i) before += is_label(inputs[k][i]) ? 1 : 0;
    for (int64_t j = 0; j < dims[k]; ++j) {
      const int64_t n = operands[k].size(before + j);
      int64_t& size = sizes[static_cast<size_t>(most - dims[k] + j)];
      KILN_CHECK(n == size || n == 1 || size == 1, "einsum: the '...' dims of '", equation,
                 "' do not broadcast: ", operands[k].shape(), " has ", n, " where another has ",
                 size);
      if (size == 1) size = n;  // 0 broadcasts against 1 too
    }
  }
  const std::string all = fresh.substr(0, static_cast<size_t>(most));
  std::string lhs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const size_t at = inputs[k].find("...");
    if (at != std::string::npos) {
      const std::string mine = all.substr(static_cast<size_t>(most - dims[k]));
      std::vector<int64_t> shape = operands[k].shape().vec();
      int64_t before = 0;
      for (size_t i = 0; i < at; ++i) before += is_label(inputs[k][i]) ? 1 : 0;
      for (int64_t j = 0; j < dims[k]; ++j)
        shape[static_cast<size_t>(before + j)] = sizes[static_cast<size_t>(most - dims[k] + j)];
      operands[k] = operands[k].expand(shape);
      inputs[k].replace(at, 3, mine);
    }
    lhs += (k ? "," : "") + inputs[k];
  }
  std::string rhs;
  if (arrow != std::string::npos) {
    rhs = equation.substr(arrow + 2);
    const size_t at = rhs.find("...");
    if (at != std::string::npos) rhs.replace(at, 3, all);  // else the "..." dims are summed
  } else {  // implicit: the "..." dims, then the letters used once, in order
    std::map<char, int> count;
    for (const std::string& in : split_inputs(equation))
      for (char c : in) count[c] += is_label(c) ? 1 : 0;
    rhs = all;
    for (const auto& [c, n] : count)
      if (n == 1) rhs.push_back(c);
  }
  return lhs + "->" + rhs;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& given_operands) {
  KILN_CHECK(!given_operands.empty(), "einsum: expects at least one operand for '", equation, "'");
  for (const Tensor& t : given_operands) detail::impl_of(t, "einsum");
  std::vector<Tensor> operands = given_operands;
  // Parsed in its spelt-out form; messages quote the equation as given.
  const std::string spelt = spell_out_ellipsis(equation, operands);
  const size_t arrow = spelt.find("->");
  std::vector<std::string> inputs = split_inputs(spelt.substr(0, arrow));
  for (std::string& in : inputs) in = parse_labels(in, equation);
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
    output = parse_labels(spelt.substr(arrow + 2), equation);
    for (size_t i = 0; i < output.size(); ++i) {
      KILN_CHECK(count.count(output[i]), "einsum: output label '", std::string(1, output[i]),
                 "' of '", equation, "' is in no operand");
      KILN_CHECK(output.find(output[i], i + 1) == std::string::npos, "einsum: output label '",
                 std::string(1, output[i]), "' appears twice in '", equation, "'");
    }
  }
  for (size_t k = 0; k < operands.size(); ++k) {
    if (k > 0) detail::check_same_device("einsum", {&operands[0], &operands[k]});
    KILN_CHECK(static_cast<int64_t>(inputs[k].size()) == operands[k].dim(), "einsum: operand ", k,
               " of '", equation, "' has ", inputs[k].size(), " labels for shape ",
               operands[k].shape());
    for (size_t i = 0; i < inputs[k].size(); ++i) {
      const size_t j = inputs[k].find(inputs[k][i], i + 1);
      KILN_CHECK(j == std::string::npos || operands[k].size(static_cast<int64_t>(i)) ==
                                               operands[k].size(static_cast<int64_t>(j)),
                 "einsum: label '", std::string(1, inputs[k][i]), "' in '", equation,
                 "' names dimensions of sizes ", operands[k].size(static_cast<int64_t>(i)), " and ",
                 operands[k].size(static_cast<int64_t>(j)), " of operand ", k);
    }
  }
  // A label's sizes across operands broadcast as PyTorch's do: equal, or 1 (a size-1 dim
  // is expanded to the others' size, 0 included).
  std::map<char, int64_t> label_size;
  for (size_t k = 0; k < operands.size(); ++k) {
    for (size_t i = 0; i < inputs[k].size(); ++i) {
      const int64_t n = operands[k].size(static_cast<int64_t>(i));
      auto [it, fresh] = label_size.emplace(inputs[k][i], n);
      if (fresh || n == it->second || n == 1) continue;
      KILN_CHECK(it->second == 1, "einsum: label '", std::string(1, inputs[k][i]), "' in '",
                 equation, "' has sizes ", it->second, " and ", n,
                 " in two operands (they must be equal, or one of them 1)");
      it->second = n;
    }
  }
  // A size-1 dim of a label that is larger elsewhere is squeezed out of its operand, as
  // PyTorch does: the label then lives in the other operands only (summed there first
  // when nothing else needs it), without materialising the broadcast.
  std::vector<Term> terms;
  for (size_t k = 0; k < operands.size(); ++k) {
    Term term{operands[k], inputs[k]};
    for (size_t i = term.labels.size(); i-- > 0;) {
      if (term.t.size(static_cast<int64_t>(i)) != 1 || label_size[term.labels[i]] == 1) continue;
      term.t = term.t.squeeze(static_cast<int64_t>(i));
      term.labels.erase(i, 1);
    }
    terms.push_back(std::move(term));
  }
  // What each step still needs: the output's labels and those of the later operands.
  auto needed_after = [&](size_t k) {
    std::string needed = output;
    for (size_t j = k + 1; j < terms.size(); ++j) needed += terms[j].labels;
    return needed;
  };
  Term acc = reduce_term(terms[0], needed_after(0));
  for (size_t k = 1; k < terms.size(); ++k) {
    Term next = reduce_term(terms[k], needed_after(k) + acc.labels);
    acc = join(acc, next, needed_after(k), equation);
  }
  acc = reduce_term(acc, output);
  std::vector<int64_t> perm;
  for (char c : output) perm.push_back(static_cast<int64_t>(acc.labels.find(c)));
  return perm.empty() ? acc.t : acc.t.permute(perm);
}

}  // namespace kiln
