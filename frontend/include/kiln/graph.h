#pragma once
/// @file graph.h
/// Capture once, replay many times: a kiln::Graph records the kernel calls a stretch of
/// code makes on one device and replays them without the frontend's per-op work
/// (shape checks, dtype rules, autograd, allocation). It works on every backend: the
/// frontend records the calls its dispatcher makes, so the CPU plugin and any
/// third-party plugin get graphs with no plugin support.
///
/// The model is PyTorch's `torch.cuda.graph`:
/// - **Warm up first.** Run the step eagerly a few times before capturing, so that
///   lazily created state (optimizer moments, momentum buffers) exists.
/// - **Nothing runs during the capture.** The kernels are recorded, not executed; the
///   tensors the captured code returns are the graph's static outputs, filled by
///   each replay().
/// - **Static inputs.** A replay reads the same memory the capture saw: refill an
///   input with copy_() between replays; never replace it with a new tensor.
/// - **Memory.** Tensors allocated during the capture come from a pool private to the
///   graph (or a pool shared with other graphs that replay in the order they were
///   captured, as PyTorch's `pool` argument). Temporaries freed during the capture
///   are reused within it, so a replay allocates nothing. Memory a graph still uses
///   is never handed to a later capture, even when its tensor is dropped (gradients
///   set to none after the capture keep being written by replays, unseen).
/// - **What cannot be captured is an error**, a kiln::Error naming the call: a read
///   back to the host (item(), to_vector(), .to("cpu"), data_ptr()), a CPU fallback,
///   work or allocation on another device, a random op whose seed does not come from
///   Kiln's generator, an optimizer's first step, a collective, loss scaling. The graph
///   is then unusable; the process is not, but tensors the failed capture made or
///   assigned (gradients) hold memory nothing filled: set the gradients to none.
/// - **Between replays** the generator advances (dropout differs from one replay to
///   the next, as eager steps do), and optimizers count their steps and read their
///   current learning rate, so a scheduler keeps working. A replay counts as an
///   in-place write of every tensor it writes, for autograd's saved-tensor checks.
///
/// @code
///   kiln::Tensor x = kiln::zeros({64, 784}), y = kiln::zeros({64}, kiln::DType::Int64);
///   for (int i = 0; i < 3; ++i) train_step(x, y);      // warm-up, eager
///   optimizer.zero_grad();                              // grads come from the pool
///   kiln::Graph graph;
///   kiln::Tensor loss;
///   {
///     kiln::GraphCapture capture(graph, x.device());
///     loss = train_step(x, y);                          // recorded, not run
///   }
///   for (auto& [images, labels] : batches) {
///     x.copy_(images);
///     y.copy_(labels);
///     graph.replay();                                   // loss holds this step's loss
///   }
/// @endcode

#include <cstddef>
#include <memory>

#include "kiln/device.h"

namespace kiln {

namespace detail::graph {
class Pool;
class GraphImpl;
class Capture;
}  // namespace detail::graph

/// Memory for graphs. A default-constructed handle is empty: a capture given it
/// allocates from a new pool private to its graph. graph_pool() makes one to share.
class GraphPool {
 public:
  GraphPool() = default;
  bool defined() const { return impl_ != nullptr; }
  /// The device memory the pool holds (0 for an empty handle).
  size_t bytes() const;

 private:
  friend class GraphCapture;
  friend class Graph;
  friend GraphPool graph_pool();
  std::shared_ptr<detail::graph::Pool> impl_;
};

/// A new pool for captures that share memory (graphs replayed in capture order).
GraphPool graph_pool();

/// A recorded sequence of kernel calls on one device.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Runs the recorded calls again, in order, on the capture's device (asynchronously
  /// where the device is). Throws kiln::Error when the graph was never captured, its
  /// capture failed, a tensor made before the capture that it uses was freed since (a
  /// static input replaced by a new tensor), or an optimizer it captured was destroyed.
  void replay();
  /// True once a capture into this graph finished without error.
  bool captured() const;
  /// The number of recorded steps (kernel calls and copies).
  size_t num_calls() const;
  /// How many of the device's own graphs a replay launches ("kiln.graphs.v1": CUDA
  /// graphs): each run of recorded kernel calls that no replay changes becomes one, at
  /// the first replay. 0 before that, and where the device offers none (every call
  /// then runs on its own, with the same results).
  size_t num_device_graphs() const;
  /// The device the graph was captured on; throws when it was never captured.
  Device device() const;
  /// The pool the graph's memory came from, to pass to another capture.
  GraphPool pool() const;
  /// Forgets the recording and releases the graph's hold on its pool.
  void reset();

 private:
  friend class GraphCapture;
  std::shared_ptr<detail::graph::GraphImpl> impl_;
};

/// Records the calls this thread makes on `device` into `graph` from construction to
/// destruction (replacing what the graph held). Other threads are not captured.
/// Throws kiln::Error when a capture is already open on this thread or the graph is
/// being replayed. If the scope is left by an exception, the graph stays uncaptured.
class GraphCapture {
 public:
  GraphCapture(Graph& graph, const Device& device, GraphPool pool = {});
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

 private:
  std::unique_ptr<detail::graph::Capture> capture_;
};

/// True while a GraphCapture is open on the calling thread (PyTorch's
/// `torch.cuda.is_current_stream_capturing`).
bool is_capturing();

}  // namespace kiln
