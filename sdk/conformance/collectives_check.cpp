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

// Rank r's value at element i (see the header). It repeats every kPeriod elements
// (i·7 mod 32 every 32, (i/5)·3 mod 32 every 160), so the operands and the expected
// results are tiled from one period: a per-element reference cost more than the
// collectives it checks.
constexpr int64_t kPeriod = 160;
double value(int rank, int64_t i, DType dtype) {
  const int64_t k = ((i * 7 + rank * 13 + (i / 5) * 3) % 32) - 16;
  return is_floating(dtype) ? static_cast<double>(k) * 0.5 : static_cast<double>(k);
}

// One period of a sequence: f(offset), ..., f(offset + kPeriod - 1).
template <class F>
std::vector<double> period_of(int64_t offset, F f) {
  std::vector<double> period(kPeriod);
  for (int64_t j = 0; j < kPeriod; ++j) period[static_cast<size_t>(j)] = f(offset + j);
  return period;
}

std::vector<double> rank_period(int rank, DType dtype, int64_t offset = 0) {
  return period_of(offset, [&](int64_t i) { return value(rank, i, dtype); });
}

// Rank r's elements [offset, offset + n): one period repeated on the device.
Tensor rank_tensor(int rank, int64_t n, DType dtype, const Device& device, int64_t offset = 0) {
  const Tensor period =
      from_vector<double>(rank_period(rank, dtype, offset), {kPeriod}).to(dtype).to(device);
  return period.repeat({(n + kPeriod - 1) / kPeriod}).narrow(0, 0, n);
}

// The reduction of every rank's elements, one period from `offset`.
std::vector<double> reduced_period(ReduceOp op, int ranks, DType dtype, int64_t offset = 0) {
  return period_of(offset, [&](int64_t i) {
    double acc = value(0, i, dtype);
    for (int r = 1; r < ranks; ++r) {
      const double v = value(r, i, dtype);
      if (op == ReduceOp::Sum || op == ReduceOp::Avg) acc += v;
      if (op == ReduceOp::Min) acc = std::min(acc, v);
      if (op == ReduceOp::Max) acc = std::max(acc, v);
    }
    if (op == ReduceOp::Avg) acc = is_floating(dtype) ? acc / ranks : std::trunc(acc / ranks);
    return acc;
  });
}

// "" when t's n elements repeat `period`, else the first difference. Read in chunks,
// so that no host copy of a large tensor is made.
std::string compare(const Tensor& t, int64_t n, const std::vector<double>& period) {
  if (t.numel() != n) return "wrong element count " + std::to_string(t.numel());
  constexpr int64_t kChunk = 64 * kPeriod;
  for (int64_t start = 0; start < n; start += kChunk) {
    const std::vector<double> got =
        t.narrow(0, start, std::min(kChunk, n - start)).to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = period[i % kPeriod];
      if (got[i] != e) {
        std::ostringstream out;
        out << "element " << start + static_cast<int64_t>(i) << " is " << got[i] << ", expected "
            << e;
        return out.str();
      }
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
            const std::vector<double> expected = reduced_period(op, ranks, dtype);
            for (int r = 0; r < ranks; ++r) {
              std::string e = compare(out[static_cast<size_t>(r)], n, expected);
              if (!e.empty()) return "rank " + std::to_string(r) + ": " + e;
            }
            return in_place ? "" : compare(in[0], n, rank_period(0, dtype));
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
          const std::vector<double> expected = rank_period(root, dtype);
          for (int r = 0; r < ranks; ++r) {
            std::string e = compare(out[static_cast<size_t>(r)], n, expected);
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
            const Tensor& all = out[static_cast<size_t>(r)];
            std::string e = all.numel() == ranks * n
                                ? ""
                                : "wrong element count " + std::to_string(all.numel());
            for (int part = 0; part < ranks && e.empty(); ++part) {
              e = compare(all.narrow(0, part * n, n), n, rank_period(part, dtype));
              if (!e.empty()) e = "part " + std::to_string(part) + ": " + e;
            }
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
            std::string e =
                compare(out[static_cast<size_t>(r)], n, reduced_period(op, ranks, dtype, r * n));
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
