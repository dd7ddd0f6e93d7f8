// Autocast scopes (kiln/amp.h): per-thread state, the policy lookup and the cast cache.
#include "dispatch/autocast.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor_impl.h"
#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/runtime.h"
#include "op_autocast.h"
#include "runtime/graph_capture.h"

namespace kiln {

namespace detail {

thread_local bool autocast_on = false;

namespace {

// A cached cast of one parameter: the source (kept alive so its address is not
// reused), the version it was cast at, and the cast.
struct CachedCast {
  Tensor source;
  uint64_t version;
  Tensor cast;
};

// One backend's setting: what its innermost open scope said.
struct BackendSetting {
  std::string backend;
  DType dtype = DType::BFloat16;
  bool enabled = false;
};

struct AutocastState {
  // Every backend a scope on this thread named (few: a vector beats a map).
  std::vector<BackendSetting> backends;
  int depth = 0;      // scopes open, enabled or not: the cache lives until the last ends
  int suspended = 0;  // AutocastSuspend guards open
  std::unordered_map<const TensorImpl*, CachedCast> cache;

  BackendSetting* find(std::string_view backend) {
    for (auto& b : backends)
      if (b.backend == backend) return &b;
    return nullptr;
  }
  BackendSetting& at(std::string_view backend) {
    if (BackendSetting* b = find(backend)) return *b;
    return backends.emplace_back(BackendSetting{std::string(backend)});
  }
  void refresh() {
    bool any = false;
    for (const auto& b : backends) any = any || b.enabled;
    autocast_on = suspended == 0 && any;
  }
};

AutocastState& state() {
  thread_local AutocastState s;
  return s;
}

constexpr AutocastPolicy kPolicies[] = {
#define KILN_AUTOCAST_POLICY(op, policy) AutocastPolicy::policy,
    KILN_OP_AUTOCAST(KILN_AUTOCAST_POLICY)
#undef KILN_AUTOCAST_POLICY
};
static_assert(sizeof kPolicies / sizeof kPolicies[0] == kNumOps);

}  // namespace

AutocastPolicy autocast_policy(OpId op) { return kPolicies[static_cast<size_t>(op)]; }

Tensor autocast_slow(OpId op, const Tensor& x) {
  const AutocastPolicy policy = autocast_policy(op);
  if (policy == AutocastPolicy::None || !x.defined()) return x;
  const DType from = x.dtype();
  if (!is_floating(from) || from == DType::Float64) return x;
  AutocastState& s = state();
  const BackendSetting* scope = s.find(x.device().backend());
  if (scope == nullptr || !scope->enabled) return x;
  const DType to = policy == AutocastPolicy::Lower ? scope->dtype : DType::Float32;
  if (from == to) return x;
  // A parameter under grad mode: cast once per outermost scope (again only if it
  // changed in place). Casts made under no_grad record no node: never cached. Nor are
  // casts during a graph capture, as in PyTorch: a cast cached before the capture would
  // be stale at a replay, and one made in it is only filled by replays.
  if (!(x.is_leaf() && x.requires_grad() && is_grad_enabled()) || graph::active() != nullptr)
    return x.to(to);
  const TensorImpl* key = x.impl().get();
  auto it = s.cache.find(key);
  if (it != s.cache.end() && it->second.version == key->storage->version &&
      it->second.cast.dtype() == to)
    return it->second.cast;
  Tensor cast = x.to(to);
  s.cache[key] = CachedCast{x, key->storage->version, cast};
  return cast;
}

bool autocast_inputs(OpId op, std::initializer_list<Tensor*> inputs) {
  bool changed = false;
  for (Tensor* t : inputs) {
    Tensor cast = autocast_slow(op, *t);
    if (cast.impl() != t->impl()) {
      *t = std::move(cast);
      changed = true;
    }
  }
  return changed;
}

AutocastSuspend::AutocastSuspend() {
  ++state().suspended;
  state().refresh();
}

AutocastSuspend::~AutocastSuspend() {
  --state().suspended;
  state().refresh();
}

}  // namespace detail

autocast::autocast(std::string device_type, DType dtype, bool enabled)
    : device_type_(std::move(device_type)) {
  KILN_CHECK(dtype == DType::BFloat16 || dtype == DType::Float16,
             "autocast: the dtype must be float16 or bfloat16, got ", dtype);
  KILN_CHECK(!device_type_.empty(), "autocast: expected a backend name (\"cpu\", \"cuda\", ...)");
  // As torch.autocast: a name no backend answers to (a typo) is refused, not silently a
  // scope that lowers nothing. Kiln's own "cpu" and "cuda" are accepted where their
  // plugin did not load (a CUDA program on a machine without a GPU), and then do nothing.
  KILN_CHECK(device_type_ == "cpu" || device_type_ == "cuda" || device_count(device_type_) > 0,
             "autocast: no loaded backend is named '", device_type_,
             "' (kiln-info lists the loaded plugins)");
  auto& s = detail::state();
  detail::BackendSetting& b = s.at(device_type_);
  previous_enabled_ = b.enabled;
  previous_dtype_ = b.dtype;
  b.dtype = dtype;
  b.enabled = enabled;
  ++s.depth;
  s.refresh();
}

autocast::~autocast() {
  auto& s = detail::state();
  detail::BackendSetting& b = s.at(device_type_);
  b.dtype = previous_dtype_;
  b.enabled = previous_enabled_;
  if (--s.depth == 0) s.cache.clear();
  s.refresh();
}

bool is_autocast_enabled(std::string_view device_type) {
  const detail::BackendSetting* b = detail::state().find(device_type);
  return b != nullptr && b->enabled;
}

DType get_autocast_dtype(std::string_view device_type) {
  const detail::BackendSetting* b = detail::state().find(device_type);
  return b ? b->dtype : DType::BFloat16;
}

void clear_autocast_cache() { detail::state().cache.clear(); }

}  // namespace kiln
