// Collectives over devices of one process: the plugin's "kiln.collectives.v1" table
// when it has one (each rank's call made from its own thread, as the ABI requires),
// else the host-staged path built from ordinary ops on the CPU reference device.

#include "kiln/distributed.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <set>
#include <thread>

#include "core/tensor_impl.h"
#include "dispatch/dispatch.h"
#include "dispatch/fallback.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "runtime/graph_capture.h"
#include "runtime/log.h"
#include "runtime/registry.h"

namespace kiln::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

double default_collective_timeout() {
  constexpr double kDefault = 300;
  const char* env = std::getenv("KILN_COLLECTIVE_TIMEOUT");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  // An error, not a warning and the default: the user asked for a bound, and a
  // different one (300 s for 2 s, or no wait at all for 1e-300) would be silent.
  // NaN fails both comparisons.
  KILN_CHECK(end != env && *end == '\0' && seconds >= kMinCollectiveTimeout &&
                 seconds <= kMaxCollectiveTimeout,
             "KILN_COLLECTIVE_TIMEOUT='", detail::shorten_for_message(env),
             "' is not a number of seconds from ", kMinCollectiveTimeout, " to ",
             kMaxCollectiveTimeout, " (how long a collective waits for the other ranks; ", kDefault,
             " when unset)");
  return seconds;
}

namespace {

// Collectives run when they are called, with other processes or devices: a graph
// replay would skip them and silently train each rank on its own gradients.
constexpr const char* kNoCollectivesInGraphs =
    "collectives are not recorded in a graph (a replay would skip them); capture the "
    "work between collectives instead";

int32_t abi_reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return KILN_REDUCE_SUM;
    case ReduceOp::Avg:
      return KILN_REDUCE_AVG;
    case ReduceOp::Min:
      return KILN_REDUCE_MIN;
    case ReduceOp::Max:
      return KILN_REDUCE_MAX;
  }
  return 0;
}

void* data_of(const Tensor& t) {
  const auto& impl = *t.impl();
  return static_cast<char*>(impl.storage->data) +
         impl.offset * static_cast<int64_t>(impl.itemsize());
}

bool reducible(DType dtype) {
  return is_floating(dtype) || dtype == DType::Int32 || dtype == DType::Int64;
}

// The dtype the host-staged path accumulates in: what the CPU plugin's collectives
// use, so both paths give the same bits.
DType accumulator(DType dtype) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16) return DType::Float32;
  if (dtype == DType::Int32) return DType::Int64;
  return dtype;
}

}  // namespace

struct Communicator::Impl {
  std::vector<Device> devices;
  std::vector<detail::DeviceContext*> contexts;
  std::string name;
  double timeout = 0;
  const kiln_collectives_api* api = nullptr;  // null: host-staged
  std::vector<kiln_comm*> comms;

  int size() const { return static_cast<int>(devices.size()); }

  // Checks what every collective needs: one defined tensor per rank on its device,
  // one dtype, outputs contiguous, and inputs[i].numel() * in_scale ==
  // outputs[i].numel() * out_scale with the same input size on every rank.
  void check(const char* what, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs, int64_t in_scale, int64_t out_scale) const {
    detail::graph::refuse_if_capturing(detail::concat(what, " on ", name), kNoCollectivesInGraphs);
    KILN_CHECK(
        static_cast<int>(inputs.size()) == size() && static_cast<int>(outputs.size()) == size(),
        what, " on ", name, ": expected one input and one output per rank (", size(), "), got ",
        inputs.size(), " and ", outputs.size());
    for (int r = 0; r < size(); ++r) {
      const Tensor& in = inputs[static_cast<size_t>(r)];
      const Tensor& out = outputs[static_cast<size_t>(r)];
      KILN_CHECK(in.defined() && out.defined(), what, " on ", name, ": rank ", r,
                 " has an undefined tensor");
      KILN_CHECK(in.device() == devices[static_cast<size_t>(r)] &&
                     out.device() == devices[static_cast<size_t>(r)],
                 what, " on ", name, ": rank ", r, "'s tensors must be on ",
                 devices[static_cast<size_t>(r)], ", got ", in.device(), " and ", out.device());
      KILN_CHECK(in.dtype() == inputs[0].dtype() && out.dtype() == inputs[0].dtype(), what, " on ",
                 name, ": every tensor must have rank 0's dtype ", inputs[0].dtype(), ", rank ", r,
                 " has ", in.dtype(), " and ", out.dtype());
      KILN_CHECK(in.numel() == inputs[0].numel(), what, " on ", name, ": rank 0 has ",
                 inputs[0].numel(), " elements, rank ", r, " has ", in.numel(), " (shapes ",
                 inputs[0].shape(), " and ", in.shape(), ")");
      KILN_CHECK(in.numel() * in_scale == out.numel() * out_scale, what, " on ", name, ": rank ", r,
                 "'s output has ", out.numel(), " elements, expected ",
                 in.numel() * in_scale / out_scale, " for an input of ", in.numel());
      KILN_CHECK(out.is_contiguous(), what, " on ", name, ": rank ", r,
                 "'s output is not contiguous (write into a contiguous tensor)");
    }
  }

  // Makes each rank's call on its own thread (rank 0 on the caller's) and turns the
  // ranks' failures into one kiln::Error.
  template <class Call>
  void run_ranks(const char* what, Call&& call) const {
    std::vector<std::string> errors(devices.size());
    auto body = [&](int rank) {
      try {
        kiln_status* status = call(rank);
        if (status) {
          int32_t code = status->code;
          std::string message = detail::consume_status(status);
          if (code != KILN_STATUS_OK) errors[static_cast<size_t>(rank)] = message;
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(rank)] = e.what();
      }
    };
    {
      // jthread: should starting a thread fail, the ones started are still joined.
      std::vector<std::jthread> threads;
      for (int r = 1; r < size(); ++r) threads.emplace_back(body, r);
      body(0);
    }
    std::string combined;
    std::set<std::string> seen;
    for (int r = 0; r < size(); ++r) {
      const std::string& e = errors[static_cast<size_t>(r)];
      if (e.empty() || !seen.insert(e).second) continue;
      combined += detail::concat(combined.empty() ? "" : "; ",
                                 devices[static_cast<size_t>(r)].str(), ": ", e);
    }
    if (!combined.empty()) throw Error(detail::concat(what, " on ", name, ": ", combined));
  }

  // The plugin's collective `call(comm, send, recv, input elements, dtype)` on every
  // rank, each from its own thread, with contiguous inputs.
  template <class Call>
  void run_native(const char* what, const std::vector<Tensor>& inputs,
                  const std::vector<Tensor>& outputs, Call&& call) const {
    std::vector<Tensor> in;
    for (const Tensor& t : inputs) in.push_back(t.contiguous());
    run_ranks(what, [&](int r) {
      const auto i = static_cast<size_t>(r);
      return call(comms[i], data_of(in[i]), data_of(outputs[i]), static_cast<size_t>(in[i].numel()),
                  static_cast<int32_t>(in[i].dtype()));
    });
  }

  // Runs `body` as the host-staged fallback of `op`, counted in the fallback report.
  template <class Body>
  void host_fallback(const char* op, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs, Body&& body) const {
    detail::check_fallback_allowed(
        detail::concat(op, " on ", name, ": the plugin '", devices[0].backend(),
                       "' has no collectives; it would have reduced through host copies"));
    const auto start = std::chrono::steady_clock::now();
    body();
    record(op, start, inputs, outputs);
  }

  // The host-staged path: copies of every rank's input on the CPU reference device.
  std::vector<Tensor> to_host(const std::vector<Tensor>& inputs) const {
    const Device cpu = detail::Registry::get().cpu()->device();
    std::vector<Tensor> host;
    for (const Tensor& t : inputs) host.push_back(t.detach().to(cpu).flatten());
    return host;
  }

  Tensor host_reduce(const std::vector<Tensor>& host, ReduceOp op) const {
    const DType dtype = host[0].dtype();
    const DType acc_type = accumulator(dtype);
    Tensor acc = host[0].to(acc_type);
    for (size_t r = 1; r < host.size(); ++r) {
      Tensor v = host[r].to(acc_type);
      switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Avg:
          acc = acc + v;
          break;
        case ReduceOp::Min:
          acc = minimum(acc, v);
          break;
        case ReduceOp::Max:
          acc = maximum(acc, v);
          break;
      }
    }
    if (op == ReduceOp::Avg) {
      // Integers truncate toward zero, as the ABI says (exact below 2^53).
      acc = is_floating(acc_type)
                ? acc / static_cast<double>(size())
                : (acc.to(DType::Float64) / static_cast<double>(size())).to(acc_type);
    }
    return acc.to(dtype);
  }

  void record(const char* op, std::chrono::steady_clock::time_point start,
              const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const {
    uint64_t bytes = 0;
    for (const Tensor& t : inputs)
      bytes += static_cast<uint64_t>(t.numel()) * element_size(t.dtype());
    for (const Tensor& t : outputs)
      bytes += static_cast<uint64_t>(t.numel()) * element_size(t.dtype());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    detail::record_fallback(op, name, seconds, bytes);
  }
};

Communicator::Communicator(std::vector<Device> devices, CommunicatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  KILN_CHECK(!devices.empty(), "Communicator: needs at least one device");
  m.devices = std::move(devices);
  m.name = "[";
  for (size_t i = 0; i < m.devices.size(); ++i) m.name += (i ? ", " : "") + m.devices[i].str();
  m.name += "]";
  m.timeout = options.timeout_ ? *options.timeout_ : default_collective_timeout();
  KILN_CHECK(m.timeout >= kMinCollectiveTimeout && m.timeout <= kMaxCollectiveTimeout,
             "Communicator ", m.name, ": the timeout must be from ", kMinCollectiveTimeout, " to ",
             kMaxCollectiveTimeout, " seconds, got ", m.timeout);
  std::set<detail::DeviceContext*> seen;
  for (const Device& d : m.devices) {
    detail::DeviceContext* ctx = detail::Registry::get().resolve(d);
    KILN_CHECK(seen.insert(ctx).second, "Communicator ", m.name, ": ", d,
               " appears twice (a device holds one rank)");
    KILN_CHECK(ctx->plugin() == detail::Registry::get().resolve(m.devices[0])->plugin(),
               "Communicator ", m.name, ": every device must belong to one plugin (",
               m.devices[0].backend(), "), got ", d);
    m.contexts.push_back(ctx);
  }
  const kiln_collectives_api* api = m.contexts[0]->plugin()->collectives;
  if (options.host_staged_ || !api || !api->comm_init_group) return;
  std::vector<kiln_device*> handles;
  for (auto* ctx : m.contexts) handles.push_back(ctx->handle());
  m.comms.assign(handles.size(), nullptr);
  m.contexts[0]->check(
      api->comm_init_group(m.contexts[0]->plugin()->api->context, handles.data(),
                           static_cast<int32_t>(handles.size()), m.timeout, m.comms.data()),
      ("comm_init_group for " + m.name).c_str());
  m.api = api;
}

Communicator::~Communicator() {
  if (!impl_ || !impl_->api) return;
  for (kiln_comm* comm : impl_->comms)
    if (kiln_status* s = impl_->api->comm_destroy(comm))
      detail::log(KILN_LOG_ERROR, "distributed",
                  detail::concat("comm_destroy on ", impl_->name, ": ", detail::consume_status(s)));
}

int Communicator::size() const { return impl_->size(); }
const std::vector<Device>& Communicator::devices() const { return impl_->devices; }
bool Communicator::native() const { return impl_->api != nullptr; }
double Communicator::timeout_seconds() const { return impl_->timeout; }
std::string Communicator::str() const { return impl_->name; }

void Communicator::all_reduce(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                              ReduceOp op) {
  Impl& m = *impl_;
  m.check("all_reduce", inputs, outputs, 1, 1);
  KILN_CHECK(reducible(inputs[0].dtype()), "all_reduce on ", m.name, ": cannot reduce ",
             inputs[0].dtype(), " (float dtypes, int32 and int64 can be reduced)");
  if (!m.api)
    return m.host_fallback("kiln.all_reduce", inputs, outputs, [&] {
      Tensor result = m.host_reduce(m.to_host(inputs), op);
      for (const Tensor& out : outputs) Tensor(out).copy_(result.reshape(out.shape()));
    });
  m.run_native("all_reduce", inputs, outputs,
               [&](kiln_comm* c, const void* send, void* recv, size_t n, int32_t dtype) {
                 return m.api->all_reduce(c, nullptr, send, recv, n, dtype, abi_reduce_op(op));
               });
}

void Communicator::broadcast(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             int root) {
  Impl& m = *impl_;
  KILN_CHECK(root >= 0 && root < m.size(), "broadcast on ", m.name, ": root ", root,
             " is not a rank (0..", m.size() - 1, ")");
  m.check("broadcast", inputs, outputs, 1, 1);
  if (!m.api)
    return m.host_fallback("kiln.broadcast", {inputs[static_cast<size_t>(root)]}, outputs, [&] {
      Tensor source = inputs[static_cast<size_t>(root)].detach().contiguous();
      for (const Tensor& out : outputs)
        Tensor(out).copy_(source.to(out.device()).reshape(out.shape()));
    });
  m.run_native("broadcast", inputs, outputs,
               [&](kiln_comm* c, const void* send, void* recv, size_t n, int32_t dtype) {
                 return m.api->broadcast(c, nullptr, send, recv, n, dtype, root);
               });
}

void Communicator::all_gather(const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs) {
  Impl& m = *impl_;
  m.check("all_gather", inputs, outputs, m.size(), 1);
  if (!m.api)
    return m.host_fallback("kiln.all_gather", inputs, outputs, [&] {
      Tensor all = cat(m.to_host(inputs), 0);
      for (const Tensor& out : outputs) Tensor(out).copy_(all.reshape(out.shape()));
    });
  m.run_native("all_gather", inputs, outputs,
               [&](kiln_comm* c, const void* send, void* recv, size_t n, int32_t dtype) {
                 return m.api->all_gather(c, nullptr, send, recv, n, dtype);
               });
}

void Communicator::reduce_scatter(const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs, ReduceOp op) {
  Impl& m = *impl_;
  m.check("reduce_scatter", inputs, outputs, 1, m.size());
  KILN_CHECK(reducible(inputs[0].dtype()), "reduce_scatter on ", m.name, ": cannot reduce ",
             inputs[0].dtype(), " (float dtypes, int32 and int64 can be reduced)");
  if (!m.api)
    return m.host_fallback("kiln.reduce_scatter", inputs, outputs, [&] {
      Tensor result = m.host_reduce(m.to_host(inputs), op);
      for (int r = 0; r < m.size(); ++r) {
        const Tensor& out = outputs[static_cast<size_t>(r)];
        Tensor(out).copy_(result.narrow(0, r * out.numel(), out.numel()).reshape(out.shape()));
      }
    });
  const auto ranks = static_cast<size_t>(m.size());
  m.run_native("reduce_scatter", inputs, outputs,
               [&](kiln_comm* c, const void* send, void* recv, size_t n, int32_t dtype) {
                 return m.api->reduce_scatter(c, nullptr, send, recv, n / ranks, dtype,
                                              abi_reduce_op(op));
               });
}

void Communicator::barrier() {
  Impl& m = *impl_;
  detail::graph::refuse_if_capturing(detail::concat("barrier on ", m.name), kNoCollectivesInGraphs);
  if (!m.api) {
    for (auto* ctx : m.contexts) ctx->synchronize();
    return;
  }
  m.run_ranks("barrier", [&](int r) {
    const auto i = static_cast<size_t>(r);
    kiln_status* s = m.api->barrier(m.comms[i], nullptr);
    if (!s) m.contexts[i]->synchronize();
    return s;
  });
}

}  // namespace kiln::distributed
