#include "collectives_check.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

namespace kiln::conformance {

namespace {

using distributed::Communicator;
using distributed::ReduceOp;

// Rank r's value at element i (see the header).
double value(int rank, int64_t i, DType dtype) {
  const int64_t k = ((i * 7 + rank * 13 + (i / 5) * 3) % 32) - 16;
  return is_floating(dtype) ? static_cast<double>(k) * 0.5 : static_cast<double>(k);
}

Tensor rank_tensor(int rank, int64_t n, DType dtype, const Device& device, int64_t offset = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(rank, i + offset, dtype);
  return from_vector<double>(v, {n}).to(dtype).to(device);
}

double reduce_ref(ReduceOp op, int ranks, int64_t i, DType dtype, int64_t offset = 0) {
  double acc = value(0, i + offset, dtype);
  for (int r = 1; r < ranks; ++r) {
    const double v = value(r, i + offset, dtype);
    if (op == ReduceOp::Sum || op == ReduceOp::Avg) acc += v;
    if (op == ReduceOp::Min) acc = std::min(acc, v);
    if (op == ReduceOp::Max) acc = std::max(acc, v);
  }
  if (op == ReduceOp::Avg) acc = is_floating(dtype) ? acc / ranks : std::trunc(acc / ranks);
  return acc;
}

// "" when t holds expected(i) for i in [0, n), else the first difference.
std::string compare(const Tensor& t, int64_t n, const std::function<double(int64_t)>& expected) {
  if (t.numel() != n) return "wrong element count " + std::to_string(t.numel());
  const std::vector<double> got = t.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected(i);
    if (got[static_cast<size_t>(i)] != e) {
      std::ostringstream out;
      out << "element " << i << " is " << got[static_cast<size_t>(i)] << ", expected " << e;
      return out.str();
    }
  }
  return "";
}

const DType kDtypes[] = {DType::Float32,  DType::Float64, DType::Float16,
                         DType::BFloat16, DType::Int32,   DType::Int64};
const int64_t kSizes[] = {0, 1, 1001, (int64_t{1} << 20) + 3};

// One named check: runs `cases` (which return "" or what went wrong, naming the case)
// and reports the first failure, or how many cases passed.
void check(Reporter& reporter, bool native, const std::string& name,
           const std::function<std::string(DType, int64_t, bool)>& run_case) {
  reporter.begin("collectives: " + name);
  CheckResult r;
  r.name = name;
  int cases = 0;
  std::string failure;
  for (DType dtype : kDtypes)
    for (int64_t n : kSizes)
      for (bool in_place : {true, false}) {
        // The large size for one float, one half and one integer dtype: it is about
        // chunking and bandwidth, which depend on the width only.
        if (n > 4096 && dtype != DType::Float32 && dtype != DType::BFloat16 &&
            dtype != DType::Int64)
          continue;
        std::string what;
        try {
          what = run_case(dtype, n, in_place);
        } catch (const std::exception& e) {
          what = e.what();
        }
        ++cases;
        if (!what.empty() && failure.empty()) {
          std::ostringstream out;
          out << dtype_name(dtype) << ", " << n << " elements, "
              << (in_place ? "in place" : "out of place") << ": " << what;
          failure = out.str();
        }
      }
  if (!failure.empty()) {
    r.status = Status::Failed;
    r.message = failure;
  } else {
    r.status = native ? Status::Passed : Status::Fallback;
    r.message = std::to_string(cases) + " cases" + (native ? "" : ", through the host");
  }
  reporter.result(r);
}

}  // namespace

void collectives_check(const std::string& plugin, Reporter& reporter,
                       distributed::CommunicatorOptions communicator_options) {
  const int ranks = device_count(plugin);
  std::vector<Device> devices;
  for (int i = 0; i < ranks; ++i) devices.emplace_back(plugin, i);
  Communicator comm(devices, communicator_options);
  const bool native = comm.native();
  auto device = [&](int r) { return devices[static_cast<size_t>(r)]; };
  auto options = [&](DType dtype, int r) { return TensorOptions().dtype(dtype).device(device(r)); };
  const std::string group = " (" + std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)");

  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max}) {
    check(reporter, native, std::string("all_reduce ") + distributed::reduce_op_name(op) + group,
          [&](DType dtype, int64_t n, bool in_place) -> std::string {
            std::vector<Tensor> in, out;
            for (int r = 0; r < ranks; ++r) {
              in.push_back(rank_tensor(r, n, dtype, device(r)));
              out.push_back(in_place ? in.back() : empty({n}, options(dtype, r)));
            }
            comm.all_reduce(in, out, op);
            for (int r = 0; r < ranks; ++r) {
              std::string e = compare(out[static_cast<size_t>(r)], n,
                                      [&](int64_t i) { return reduce_ref(op, ranks, i, dtype); });
              if (!e.empty()) return "rank " + std::to_string(r) + ": " + e;
            }
            return in_place ? "" : compare(in[0], n, [&](int64_t i) { return value(0, i, dtype); });
          });
  }
  check(reporter, native, "broadcast" + group,
        [&](DType dtype, int64_t n, bool in_place) -> std::string {
          const int root = ranks - 1;
          std::vector<Tensor> in, out;
          for (int r = 0; r < ranks; ++r) {
            in.push_back(rank_tensor(r, n, dtype, device(r)));
            out.push_back(in_place ? in.back() : zeros({n}, options(dtype, r)));
          }
          comm.broadcast(in, out, root);
          for (int r = 0; r < ranks; ++r) {
            std::string e = compare(out[static_cast<size_t>(r)], n,
                                    [&](int64_t i) { return value(root, i, dtype); });
            if (!e.empty()) return "rank " + std::to_string(r) + ": " + e;
          }
          return "";
        });
  check(reporter, native, "all_gather" + group,
        [&](DType dtype, int64_t n, bool in_place) -> std::string {
          std::vector<Tensor> in, out;
          for (int r = 0; r < ranks; ++r) {
            Tensor all = zeros({ranks * n}, options(dtype, r));
            if (in_place) {
              all.narrow(0, r * n, n).copy_(rank_tensor(r, n, dtype, device(r)));
              in.push_back(all.narrow(0, r * n, n));
            } else {
              in.push_back(rank_tensor(r, n, dtype, device(r)));
            }
            out.push_back(all);
          }
          comm.all_gather(in, out);
          for (int r = 0; r < ranks; ++r) {
            std::string e = compare(out[static_cast<size_t>(r)], ranks * n, [&](int64_t i) {
              return value(static_cast<int>(i / std::max<int64_t>(n, 1)),
                           i % std::max<int64_t>(n, 1), dtype);
            });
            if (!e.empty()) return "rank " + std::to_string(r) + ": " + e;
          }
          return "";
        });
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    check(
        reporter, native, std::string("reduce_scatter ") + distributed::reduce_op_name(op) + group,
        [&](DType dtype, int64_t n, bool in_place) -> std::string {
          std::vector<Tensor> in, out;
          for (int r = 0; r < ranks; ++r) {
            in.push_back(rank_tensor(r, ranks * n, dtype, device(r)));
            out.push_back(in_place ? in.back().narrow(0, r * n, n) : empty({n}, options(dtype, r)));
          }
          comm.reduce_scatter(in, out, op);
          for (int r = 0; r < ranks; ++r) {
            std::string e = compare(out[static_cast<size_t>(r)], n, [&](int64_t i) {
              return reduce_ref(op, ranks, i, dtype, r * n);
            });
            if (!e.empty()) return "rank " + std::to_string(r) + ": " + e;
          }
          return "";
        });
  }
  reporter.begin("collectives: barrier");
  CheckResult b;
  b.name = "barrier" + group;
  try {
    for (int i = 0; i < 3; ++i) comm.barrier();
    b.status = native ? Status::Passed : Status::Fallback;
    b.message = native ? "3 barriers" : "through the host";
  } catch (const std::exception& e) {
    b.status = Status::Failed;
    b.message = e.what();
  }
  reporter.result(b);
}

}  // namespace kiln::conformance
