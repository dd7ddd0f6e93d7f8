#include "staged.h"

#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

// The one list: every kernel and extension that is built but has not run on a GPU, and
// the gpu-labelled test (ctest name: gtest filter) that covers it. An entry leaves the
// list in the commit that records its passing device check (docs/design-decisions.md).
struct Entry {
  const char* name;
  const char* kind;
  const char* test;
  const char* summary;
};

constexpr Entry kEntries[] = {
    {kStagedIntegerPow, "kernel", "cuda.staged: CudaStaged.IntegerPowIsExact",
     "pow of integer tensors, exact by squaring (sdk::integer_pow); off: the CPU fallback"},
    {kStagedSoftmaxShift, "kernel", "cuda.staged: CudaStaged.SoftmaxShiftsByAnInfiniteMax",
     "softmax/log_softmax shift by the row maximum even when it is infinite (a row holding "
     "+inf is NaN, as PyTorch); off: the verified kernel shifts such rows by 0"},
    {kStagedMaxPoolLastNaN, "kernel", "cuda.staged: CudaStaged.MaxPoolTakesTheLastNaN",
     "max pooling gives the value and index to the last NaN of a window, as PyTorch; off: "
     "the verified kernel takes the first"},
    {kStagedHalfNorm, "kernel", "cuda.staged: CudaStaged.HalfNormsMatchTheCpu",
     "batch_norm, layer_norm and their backward kernels for float16 and bfloat16 (float64 "
     "sums, rounded through float32 as the CPU's widened kernels); off: the CPU fallback"},
    {kStagedHalfOptim, "kernel", "cuda.staged: CudaStaged.HalfOptimizerStepsMatchTheCpu",
     "sgd_step and adam_step on float16 and bfloat16 parameters and state, computed in "
     "float32 and rounded once; off: the CPU fallback"},
    {kStagedUnscale, "kernel", "cuda.staged: CudaStaged.UnscaleMatchesTheCpu",
     "non_finite_check_and_unscale (GradScaler's check) reading inv_scale from device memory; "
     "off: the CPU fallback"},
    {kStagedLog1p, "kernel", "cuda.staged: CudaStaged.Log1pMatchesTheCpu",
     "log1p on the catalogue's Log1p functor (math::log1p, CUDA's log1p) for the float "
     "types; off: the CPU fallback"},
    {kStagedAttention, "kernel", "cuda.staged: CudaStaged.AttentionMatchesTheCpu",
     "scaled_dot_product_attention and its backward op (a warp per query and per key row, "
     "online softmax, head dims up to 256, the float types, Philox dropout); off: not "
     "registered, so the frontend composes attention from matmul and softmax on the GPU"},
    {kStagedGraphs, "extension", "cuda.staged: CudaStaged.GraphReplaysLaunchCudaGraphs",
     "kiln.graphs.v1 on CUDA graphs: kiln::Graph replays runs of unpatched calls as "
     "cudaGraphExec launches (graphs.h); off: not offered, every call is relaunched"},
};

const Entry* find(const std::string& name) {
  for (const Entry& e : kEntries)
    if (name == e.name) return &e;
  return nullptr;
}

std::string all_names() {
  std::string out;
  for (const Entry& e : kEntries) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out.empty() ? "none" : out;
}

// KILN_CUDA_STAGED parsed: everything, or a set of names (each checked against the list).
struct Switch {
  bool all = false;
  std::set<std::string> names;
  std::string error;  // non-empty: the value names something that is not staged
};

Switch parse_switch() {
  Switch s;
  const char* raw = std::getenv("KILN_CUDA_STAGED");
  if (!raw || !*raw || std::strcmp(raw, "0") == 0) return s;
  if (std::strcmp(raw, "1") == 0 || std::strcmp(raw, "all") == 0) {
    s.all = true;
    return s;
  }
  std::stringstream in(raw);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (!find(name)) {
      std::string shown = name.size() > 60 ? name.substr(0, 60) + "..." : name;
      s.error = "KILN_CUDA_STAGED names '" + shown +
                "', which is not staged (staged: " + all_names() + "; or 1 / all for every one)";
      return s;
    }
    s.names.insert(name);
  }
  return s;
}

const Switch& the_switch() {
  static const Switch s = parse_switch();
  return s;
}

}  // namespace

bool staged_on(const char* name) {
  if (!find(name))
    throw sdk::Error(KILN_STATUS_INTERNAL, std::string("staged code asks about '") + name +
                                               "', which is not in plugins/cuda/staged.cpp's list");
  const Switch& s = the_switch();
  return s.error.empty() && (s.all || s.names.count(name) > 0);
}

void check_staged_switch() {
  const Switch& s = the_switch();
  if (!s.error.empty()) throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT, s.error);
}

const kiln_staged_api* staged_api() {
  // Built once, kept for the process (the ABI's rule for extension tables).
  static const kiln_staged_api* const table = [] {
    auto* entries = new std::vector<kiln_staged_entry>();
    for (const Entry& e : kEntries)
      entries->push_back({sizeof(kiln_staged_entry), e.name, e.kind, e.test, e.summary,
                          staged_on(e.name) ? 1 : 0});
    auto* pointers = new std::vector<const kiln_staged_entry*>();
    for (const kiln_staged_entry& e : *entries) pointers->push_back(&e);
    return new kiln_staged_api{sizeof(kiln_staged_api), pointers->size(), pointers->data()};
  }();
  return table;
}

}  // namespace kiln::cuda
