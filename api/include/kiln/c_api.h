/*
 * kiln/c_api.h — the Kiln plugin ABI, version 1.3.
 *
 * This header is the whole contract between libkiln (the frontend) and a backend
 * plugin. It is plain C11: opaque handles, fixed-width integers, enums with explicit
 * values, and structs that begin with `struct_size` and only ever grow at the end.
 * Nothing else crosses the boundary: no C++ types, no exceptions, no STL.
 *
 * Overview
 * --------
 * A plugin is a shared library named `libkiln_<name>.so` that exports exactly one
 * symbol, `kiln_plugin_init` (declared below with C linkage and default visibility,
 * so that a C++ definition can be neither mangled nor hidden). The loader calls it
 * once with a `kiln_host_api` describing itself and receives a pointer to the
 * plugin's `kiln_plugin_api` table, which stays valid for the life of the process
 * (plugins are never unloaded).
 *
 * @code
 *   const kiln_plugin_api *api = NULL;
 *   kiln_status *s = kiln_plugin_init(&host, &api);     // negotiate versions
 *   api->device_count(api->context, &n);                 // enumerate
 *   api->device_open(api->context, 0, &dev);             // open lazily
 *   api->allocate(dev, bytes, 64, NULL, &buf, &ptr);     // memory
 *   api->get_kernel(dev, "kiln.add", 1, &kernel);        // look an op up once...
 *   kernel.run(kernel.context, &args);                   // ...call it many times
 * @endcode
 *
 * Versioning (see share/doc/kiln/ABI.md for the full promise)
 * ------------------------------------------------------------
 * Both sides state the ABI major.minor they were built with. A different major is
 * refused with a message naming both versions. Within one major, any minor works
 * with any other: every struct carries its size, a reader touches only the fields
 * that fit inside the size the writer reported, and a NULL function pointer means
 * "not provided". Minor versions only append fields and enum values; nothing is
 * ever renumbered, reordered or removed.
 *
 * Required and optional entries
 * -----------------------------
 * Every function pointer of a table is marked `(required)` or `(optional)`. The
 * loader refuses a plugin whose table lacks a required entry, naming every missing
 * one at once (KILN_PLUGIN_API_REQUIRED_ENTRIES lists them); an optional entry may be
 * NULL, which means "not provided". Some optional entries come in groups, provided
 * together or not at all: stream_create with stream_destroy, and the five event
 * functions. The plugin kit (kiln/sdk/plugin.h) fills every entry for its author.
 *
 * Errors
 * ------
 * Every fallible call returns `kiln_status *`: NULL means success; otherwise the
 * caller owns the status and must release it with `status->destroy(status)`.
 * Plugins never abort and never let an exception escape.
 *
 * Threading
 * ---------
 * Plugin-level calls (`device_count`, `device_get_properties`, `device_open`) and
 * every device-level call may be made from any thread, concurrently; a plugin that
 * needs serialization does it itself. Work enqueued on one stream runs in enqueue
 * order; see the stream functions for ordering across streams.
 */
#ifndef KILN_C_API_H
#define KILN_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_MAJOR 1
#define KILN_ABI_MINOR 3

/* The one symbol a plugin exports, and the file-name rule the loader uses. */
#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_init"
#define KILN_PLUGIN_FILE_PREFIX "libkiln_"
#define KILN_PLUGIN_FILE_SUFFIX ".so"

#if defined(__GNUC__)
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define KILN_PLUGIN_EXPORT
#endif

/* ------------------------------------------------------------------------------ */
/* Status                                                                          */
/* ------------------------------------------------------------------------------ */

typedef enum kiln_status_code {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1, /* bad shapes, dtypes, attributes, handles */
  KILN_STATUS_OUT_OF_MEMORY = 2,    /* an allocation could not be satisfied */
  KILN_STATUS_UNSUPPORTED = 3,      /* valid request this plugin cannot serve */
  KILN_STATUS_DEVICE_ERROR = 4,     /* the device or its driver failed */
  KILN_STATUS_INTERNAL = 5,         /* a bug in the plugin */
  KILN_STATUS_ABI_MISMATCH = 6      /* versions or struct sizes are incompatible */
} kiln_status_code;

/* An owned error value. `message` is NUL-terminated, human-readable and names the
 * operation (e.g. "kiln.matmul: cublasSgemm failed: CUBLAS_STATUS_NOT_SUPPORTED").
 * The receiver releases it with `destroy(self)`, which must not be NULL. */
typedef struct kiln_status kiln_status;
struct kiln_status {
  size_t struct_size;
  int32_t code; /* kiln_status_code */
  int32_t reserved;
  const char* message;
  void (*destroy)(kiln_status* self);
};

/* ------------------------------------------------------------------------------ */
/* Data types and tensor views                                                     */
/* ------------------------------------------------------------------------------ */

typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_FLOAT64 = 2,
  KILN_DTYPE_FLOAT16 = 3, /* IEEE 754 binary16 */
  KILN_DTYPE_BFLOAT16 = 4,
  KILN_DTYPE_INT32 = 5,
  KILN_DTYPE_INT64 = 6,
  KILN_DTYPE_UINT8 = 7,
  KILN_DTYPE_BOOL = 8, /* one byte, 0 or 1 */
  /* 1.3: complex numbers, stored as (real, imaginary) pairs of float32 or float64 (C's
   * float _Complex and double _Complex, C++'s std::complex). The frontend sends them only
   * to a plugin that reports ABI 1.3 or later, and only in the ops whose dtypes name them. */
  KILN_DTYPE_COMPLEX64 = 9,
  KILN_DTYPE_COMPLEX128 = 10
} kiln_dtype;

/* Opaque handles. Their contents belong to the plugin. */
typedef struct kiln_device kiln_device;
typedef struct kiln_buffer kiln_buffer;
typedef struct kiln_stream kiln_stream;
typedef struct kiln_event kiln_event;

/* A strided view of device memory, in the manner of DLPack. Element (i0, i1, ...)
 * lives at `(char *)data + byte_offset + sizeof(dtype) * sum(ik * strides[k])`.
 * Strides are in elements and may be zero (broadcast) or, for inputs, any value
 * the op's catalogue entry allows. `shape` and `strides` have `ndim` entries and
 * are valid only for the duration of the call. ndim == 0 is a scalar (1 element);
 * a zero in `shape` is an empty tensor (the kernel must then do nothing). */
typedef struct kiln_tensor_view {
  size_t struct_size;
  void* data;
  int64_t byte_offset;
  const int64_t* shape;
  const int64_t* strides;
  int32_t ndim;
  int32_t dtype; /* kiln_dtype */
  /* The device (a device_open handle) whose memory `data` points into. Every operand
   * of a kernel call is on the device its kernel was looked up for, and a plugin may
   * find that device from any operand's handle (the first output's, say). */
  kiln_device* device;
} kiln_tensor_view;

/* ------------------------------------------------------------------------------ */
/* Ops: typed attributes, arguments, kernels                                       */
/* ------------------------------------------------------------------------------ */

typedef enum kiln_attr_type {
  KILN_ATTR_INT = 1,    /* value.i */
  KILN_ATTR_FLOAT = 2,  /* value.f */
  KILN_ATTR_INTS = 3,   /* value.ints[0..count) */
  KILN_ATTR_FLOATS = 4, /* value.floats[0..count) */
  KILN_ATTR_STRING = 5  /* value.s, NUL-terminated */
} kiln_attr_type;

/* One named attribute. The op catalogue (share/doc/kiln/OPS.md) fixes each op's attribute
 * names, types and order; the frontend always passes all of them, in that order. */
typedef struct kiln_attr {
  const char* name;
  int32_t type; /* kiln_attr_type */
  int32_t reserved;
  int64_t count; /* for INTS and FLOATS */
  union {
    int64_t i;
    double f;
    const int64_t* ints;
    const double* floats;
    const char* s;
  } value;
} kiln_attr;

/* Everything one op invocation receives. Outputs are allocated by the caller with
 * the shapes and dtypes the catalogue prescribes. `stream` NULL means the device's
 * default stream; the kernel enqueues its work there and may return before it ends. */
typedef struct kiln_op_args {
  size_t struct_size;
  const kiln_tensor_view* inputs;
  size_t num_inputs;
  const kiln_tensor_view* outputs;
  size_t num_outputs;
  const kiln_attr* attrs;
  size_t num_attrs;
  kiln_stream* stream;
} kiln_op_args;

typedef kiln_status* (*kiln_kernel_fn)(void* context, const kiln_op_args* args);

enum {
  /* The kernel accepts inputs with any strides (including 0 and negative). Without
   * this flag the frontend passes contiguous row-major inputs. */
  KILN_KERNEL_STRIDED_INPUTS = 1u << 0,
  /* The kernel may write outputs with any non-overlapping strides. Without this
   * flag outputs are contiguous row-major. */
  KILN_KERNEL_STRIDED_OUTPUTS = 1u << 1
};

typedef struct kiln_kernel {
  size_t struct_size;
  kiln_kernel_fn run;
  void* context;
  /* (optional) 1 if `run` handles these particular arguments (dtypes, ranks,
   * shapes), 0 if the frontend should fall back to the CPU plugin. NULL: the
   * kernel handles every valid argument list of its op. Must be cheap. */
  int32_t (*supports)(void* context, const kiln_op_args* args);
  uint32_t flags; /* KILN_KERNEL_* */
  uint32_t reserved;
} kiln_kernel;

/* ------------------------------------------------------------------------------ */
/* Devices and memory                                                              */
/* ------------------------------------------------------------------------------ */

typedef enum kiln_device_kind {
  KILN_DEVICE_KIND_CPU = 1,
  KILN_DEVICE_KIND_GPU = 2,
  KILN_DEVICE_KIND_ACCELERATOR = 3
} kiln_device_kind;

/* Filled by `device_get_properties`; the caller sets struct_size first and the
 * plugin writes only fields that fit in it. Unknown values are 0. */
typedef struct kiln_device_properties {
  size_t struct_size;
  char name[128];
  int32_t kind; /* kiln_device_kind */
  int32_t compute_capability_major;
  int32_t compute_capability_minor;
  int32_t multiprocessor_count; /* SMs, compute units, or CPU threads used */
  uint64_t total_memory_bytes;
  uint64_t free_memory_bytes; /* 0: not known (e.g. a GPU whose context is not open yet) */
  uint64_t memory_alignment;  /* alignment of every allocation, in bytes */
  /* -- 1.1 -- */
  uint64_t flags; /* KILN_DEVICE_FLAG_* */
} kiln_device_properties;

enum {
  /* The host may read and write this device's memory directly through the data
   * pointers `allocate` returns (plain loads, stores and memcpy), with no `copy`
   * call, once the work enqueued on the device is done. What decides whether a
   * tensor can be used as host memory (zero-copy reads, a single copy to another
   * device); never the plugin's name. 1.0 plugins, which cannot set it, are
   * treated as device memory. */
  KILN_DEVICE_FLAG_HOST_ACCESSIBLE = 1u << 0
};

/* Allocator statistics for one device; same size rule as the properties. */
typedef struct kiln_memory_stats {
  size_t struct_size;
  uint64_t bytes_in_use;           /* held by live allocations */
  uint64_t bytes_reserved;         /* obtained from the system, cached blocks included */
  uint64_t peak_bytes_in_use;      /* high-water mark of bytes_in_use */
  uint64_t num_allocations;        /* allocate() calls that succeeded */
  uint64_t num_system_allocations; /* times memory was obtained from the system */
} kiln_memory_stats;

typedef enum kiln_copy_kind {
  KILN_COPY_HOST_TO_DEVICE = 1,
  KILN_COPY_DEVICE_TO_HOST = 2,
  KILN_COPY_DEVICE_TO_DEVICE = 3
} kiln_copy_kind;

/* ------------------------------------------------------------------------------ */
/* The host side: what the loader hands a plugin                                   */
/* ------------------------------------------------------------------------------ */

typedef enum kiln_log_level {
  KILN_LOG_ERROR = 0,
  KILN_LOG_WARNING = 1,
  KILN_LOG_INFO = 2,
  KILN_LOG_DEBUG = 3
} kiln_log_level;

typedef struct kiln_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* kiln_version; /* e.g. "0.1.0" */
  /* Writes one line to Kiln's log if `level` <= the configured level. May be
   * called from any thread. `plugin` is the plugin's name. */
  void (*log)(int32_t level, const char* plugin, const char* message);
  int32_t log_level; /* kiln_log_level currently in force */
  int32_t reserved;
} kiln_host_api;

/* ------------------------------------------------------------------------------ */
/* The plugin's table                                                              */
/* ------------------------------------------------------------------------------ */

typedef struct kiln_plugin_api {
  size_t struct_size; /* sizeof(kiln_plugin_api) as the plugin was built */
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;    /* backend name, [a-z0-9_]+, e.g. "cpu", "cuda", "acme" */
  const char* version; /* the plugin's own version, e.g. "1.2.0" */
  void* context;       /* passed back to the plugin-level functions */

  /* -- plugin level -------------------------------------------------------------- */

  /* (optional) Free-form diagnostics, e.g. why there are zero devices. The string
   * stays valid for the life of the process. */
  const char* (*describe)(void* context);
  /* (required) How many devices the plugin has; may be 0. */
  kiln_status* (*device_count)(void* context, int32_t* count);
  /* (required) Fills `properties` as far as its struct_size reaches. */
  kiln_status* (*device_get_properties)(void* context, int32_t index,
                                        kiln_device_properties* properties);
  /* (required) Opens device `index` (0-based). Opening twice returns the same handle.
   * Devices are never closed. */
  kiln_status* (*device_open)(void* context, int32_t index, kiln_device** device);

  /* -- memory -------------------------------------------------------------------- */

  /* (required) Allocates `bytes` (0 is valid) aligned to at least `alignment` (a power of two),
   * usable by work on `stream` from now on. Returns an owning handle and the data
   * pointer kernels will see. Out of memory: KILN_STATUS_OUT_OF_MEMORY with a
   * message stating the request, the bytes in use and the bytes reserved. */
  kiln_status* (*allocate)(kiln_device* device, size_t bytes, size_t alignment, kiln_stream* stream,
                           kiln_buffer** buffer, void** data);
  /* (required) Releases a buffer once the work already enqueued on `stream` is done
   * with it. */
  kiln_status* (*deallocate)(kiln_device* device, kiln_buffer* buffer, kiln_stream* stream);
  /* (required) Allocator statistics, written as far as stats->struct_size reaches. */
  kiln_status* (*memory_stats)(kiln_device* device, kiln_memory_stats* stats);
  /* (optional) Returns cached, unused memory to the system. */
  kiln_status* (*empty_cache)(kiln_device* device);

  /* (required) Copies `bytes` contiguous bytes, ordered on `stream`. Host memory is ordinary
   * pageable memory: for HOST_TO_DEVICE the source may be reused as soon as the
   * call returns; for DEVICE_TO_HOST the destination holds the data when the call
   * returns. DEVICE_TO_DEVICE copies within this device. */
  kiln_status* (*copy)(kiln_device* device, kiln_stream* stream, int32_t kind, void* dst,
                       const void* src, size_t bytes);

  /* -- streams and events -------------------------------------------------------- */
  /* Work on one stream runs in order. `stream_wait_event(s, e)` makes all work
   * enqueued on `s` after the call wait until the work recorded by `e` is done.
   * A NULL stream is the device's default stream. A plugin that runs everything
   * synchronously provides only stream_synchronize (which then has nothing to wait
   * for) and leaves the two optional groups below NULL. */

  /* (optional, with stream_destroy) Extra streams; without them all work uses the
   * default stream. */
  kiln_status* (*stream_create)(kiln_device* device, kiln_stream** stream);
  kiln_status* (*stream_destroy)(kiln_device* device, kiln_stream* stream);
  /* (required) Blocks the calling thread until all work enqueued on `stream` is done,
   * and reports any asynchronous error that work produced. */
  kiln_status* (*stream_synchronize)(kiln_device* device, kiln_stream* stream);
  /* (optional, the five event functions together) */
  kiln_status* (*event_create)(kiln_device* device, kiln_event** event);
  kiln_status* (*event_destroy)(kiln_device* device, kiln_event* event);
  kiln_status* (*event_record)(kiln_device* device, kiln_event* event, kiln_stream* stream);
  kiln_status* (*stream_wait_event)(kiln_device* device, kiln_stream* stream, kiln_event* event);
  kiln_status* (*event_synchronize)(kiln_device* device, kiln_event* event);

  /* -- ops ----------------------------------------------------------------------- */

  /* (required) Looks up the kernel for catalogue op `name` at `version` (see
   * share/doc/kiln/OPS.md) on `device`, filling `*kernel` (whose struct_size the
   * caller sets). An op the plugin does not provide is not an error: return NULL
   * and leave kernel->run NULL (a plugin without kernels answers every lookup so,
   * and each op then runs on the CPU plugin). The frontend calls this once per
   * (device, op) and caches the result. */
  kiln_status* (*get_kernel)(kiln_device* device, const char* name, int32_t version,
                             kiln_kernel* kernel);

  /* (optional) Extension tables by name, e.g. "kiln.collectives.v1" (a later minor
   * version). NULL when the extension is not provided. */
  const void* (*get_extension)(void* context, const char* name);

  /* -- 1.1 ----------------------------------------------------------------------- */

  /* (optional) Copies `bytes` contiguous bytes from `src` on `src_device` to `dst`
   * on `dst_device`, two different devices of this plugin, without staging through
   * the host where the hardware allows (NVLink/PCIe peer access, shared memory).
   * Ordered after all work already enqueued on `stream` (of `dst_device`) and on
   * the source device's default stream; work enqueued afterwards on either sees
   * the copy done. May return before the copy ends. NULL: the frontend copies
   * through the host with `copy`. */
  kiln_status* (*copy_peer)(kiln_device* dst_device, kiln_stream* stream, void* dst,
                            kiln_device* src_device, const void* src, size_t bytes);

  /* -- 1.2: profiling ------------------------------------------------------------ */

  /* (optional; only with the five event functions) Writes the device time in
   * milliseconds from `start` to `end`, two events of this device recorded in that
   * order, whose work has completed (the caller synchronizes first). This is how
   * Kiln's profiler times ops on the device without a synchronization per op. A
   * synchronous plugin measures the host time between the two event_record calls.
   * Events the plugin cannot time: KILN_STATUS_UNSUPPORTED. */
  kiln_status* (*event_elapsed)(kiln_device* device, kiln_event* start, kiln_event* end,
                                double* milliseconds);
  /* (optional, with range_pop) Opens a named range on the calling thread, for the
   * backend's own profiling tools (the CUDA plugin emits NVTX ranges, which Nsight
   * shows): Kiln's profiler calls it around every op (named after the catalogue op)
   * and every record_function scope, and range_pop when each ends. Ranges nest per
   * thread. Called only while a profiler runs; must not fail or block. */
  void (*range_push)(void* context, const char* name);
  void (*range_pop)(void* context);
} kiln_plugin_api;

/* The entry point. `host` describes the loader; on success `*api` points to a table
 * that lives as long as the process. The plugin must check `host->abi_major` and
 * return KILN_STATUS_ABI_MISMATCH (naming both versions) if it differs. */
typedef kiln_status* (*kiln_plugin_init_fn)(const kiln_host_api* host, const kiln_plugin_api** api);

/* Every plugin defines this function, and exports nothing else. Declared here with C
 * linkage and default visibility, so that a plugin including this header exports it
 * under the name the loader looks up, even when the definition is C++ (otherwise
 * mangled to _Z16kiln_plugin_init...) or built with -fvisibility=hidden. libkiln
 * itself neither defines nor calls it by name. */
KILN_PLUGIN_EXPORT kiln_status* kiln_plugin_init(const kiln_host_api* host,
                                                 const kiln_plugin_api** api);

/* The table entries marked (required), as an X-macro list: what the loader and
 * kiln-conformance check. X(entry) is expanded once per entry. */
#define KILN_PLUGIN_API_REQUIRED_ENTRIES(X) \
  X(device_count)                           \
  X(device_get_properties)                  \
  X(device_open)                            \
  X(allocate)                               \
  X(deallocate)                             \
  X(memory_stats)                           \
  X(copy)                                   \
  X(stream_synchronize)                     \
  X(get_kernel)

/* ------------------------------------------------------------------------------ */
/* Collectives (1.1): the extension table "kiln.collectives.v1"                   */
/* ------------------------------------------------------------------------------ */
/*
 * A plugin that can reduce across its devices returns a `kiln_collectives_api`
 * from `get_extension(context, KILN_EXTENSION_COLLECTIVES)`; NULL (or a plugin
 * without get_extension) means it has none, and the frontend then reduces through
 * host copies instead (counted in the fallback report).
 *
 * A communicator (`kiln_comm`) is one rank of a group: either one device of a group
 * of devices in this process (`comm_init_group`, e.g. cpu:0..3 or cuda:0..7), or
 * one process's device in a group spanning processes (`comm_init_rank`, bootstrapped
 * by an id that rank 0 makes and the launcher's transport — e.g. MPI — hands to the
 * others). Every collective is a call that each rank of the group makes with
 * matching arguments; it is enqueued on `stream` of the rank's device (NULL: the
 * default stream) like any op, and may return before it completes. Within one
 * process the ranks' calls must be made from different threads (a rank's call may
 * block until the others have arrived).
 *
 * Buffers are contiguous arrays of `count` elements of `dtype` on the rank's
 * device; `send == recv` is in place. Reductions are over every float dtype and
 * INT32/INT64 at least (KILN_STATUS_UNSUPPORTED names any other); AVG divides the
 * sum by the group size (truncating for integers). The order in which a plugin
 * adds the ranks' values is its own, but it must be the same on every call, so
 * results are deterministic.
 *
 * Failures: arguments that differ between ranks (count, dtype, op, root, or a
 * different collective) are reported on every rank as KILN_STATUS_INVALID_ARGUMENT,
 * never mis-reduced. A rank that has not arrived within the communicator's
 * `timeout_seconds` makes the call fail on every waiting rank with
 * KILN_STATUS_DEVICE_ERROR naming the collective and the missing ranks; the
 * communicator is then aborted (every later call fails at once) and must be
 * destroyed.
 */

#define KILN_EXTENSION_COLLECTIVES "kiln.collectives.v1"
#define KILN_COMM_ID_BYTES 128

typedef struct kiln_comm kiln_comm;

typedef enum kiln_reduce_op {
  KILN_REDUCE_SUM = 1,
  KILN_REDUCE_AVG = 2,
  KILN_REDUCE_MIN = 3,
  KILN_REDUCE_MAX = 4
} kiln_reduce_op;

/* The bootstrap id of a multi-process group: opaque bytes, copied as they are. */
typedef struct kiln_comm_id {
  uint8_t bytes[KILN_COMM_ID_BYTES];
} kiln_comm_id;

typedef struct kiln_collectives_api {
  size_t struct_size; /* sizeof(kiln_collectives_api) as the plugin was built */

  /* (optional; a table provides comm_init_group, comm_init_rank or both) A group of
   * `count` devices of this plugin in this process: fills
   * comms[0..count), rank i on devices[i]. A device may appear only once.
   * `timeout_seconds` > 0 bounds every wait of every later collective. */
  kiln_status* (*comm_init_group)(void* context, kiln_device* const* devices, int32_t count,
                                  double timeout_seconds, kiln_comm** comms);
  /* (optional, with comm_init_rank) Makes the id of a new multi-process group; rank 0
   * calls it and sends the bytes to the other ranks. */
  kiln_status* (*comm_id_create)(void* context, kiln_comm_id* id);
  /* (optional) Joins rank `rank` of an `nranks`-process group on `device`; every rank
   * calls it with the same id. Blocks until all have joined or the timeout. */
  kiln_status* (*comm_init_rank)(kiln_device* device, const kiln_comm_id* id, int32_t nranks,
                                 int32_t rank, double timeout_seconds, kiln_comm** comm);
  /* (required) Releases one rank's communicator (after its work is done). */
  kiln_status* (*comm_destroy)(kiln_comm* comm);

  /* (required) recv[i] = op over ranks of send[i], on every rank; `count` elements. */
  kiln_status* (*all_reduce)(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                             size_t count, int32_t dtype, int32_t op);
  /* (required) recv = root's send on every rank (`send` is read on the root only). */
  kiln_status* (*broadcast)(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                            size_t count, int32_t dtype, int32_t root);
  /* (required) recv[r * send_count + i] = rank r's send[i]; `recv` holds size * send_count
   * elements. In place when send == recv + rank * send_count. */
  kiln_status* (*all_gather)(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                             size_t send_count, int32_t dtype);
  /* (required) recv[i] = op over ranks of send[rank * recv_count + i]; `send` holds
   * size * recv_count elements. In place when recv == send + rank * recv_count. */
  kiln_status* (*reduce_scatter)(kiln_comm* comm, kiln_stream* stream, const void* send, void* recv,
                                 size_t recv_count, int32_t dtype, int32_t op);
  /* (required) Returns (on the host, not only on the stream) when every rank has
   * called it. */
  kiln_status* (*barrier)(kiln_comm* comm, kiln_stream* stream);
} kiln_collectives_api;

/* ------------------------------------------------------------------------------ */
/* Threads: the extension table "kiln.threads.v1"                                  */
/* ------------------------------------------------------------------------------ */
/*
 * A plugin whose kernels run on a pool of host threads (the CPU plugin) returns a
 * `kiln_threads_api` from `get_extension(context, KILN_EXTENSION_THREADS)`, so that
 * a program can change how many threads its ops use while it runs
 * (kiln::set_num_threads, torch.set_num_threads). Like every extension, it is
 * versioned by its name, not by the ABI's minor version: a host asks for it by
 * name and a plugin that does not know the name returns NULL.
 */

#define KILN_EXTENSION_THREADS "kiln.threads.v1"

typedef struct kiln_threads_api {
  /* sizeof(kiln_threads_api) as the plugin was built. */
  size_t struct_size;
  /* (required) Ops started after this call use at most `num_threads` host threads,
   * the calling thread included (1..1024; KILN_STATUS_INVALID_ARGUMENT otherwise).
   * Safe to call from any thread while other threads run ops: an op already running
   * finishes with the count it started with. */
  kiln_status* (*set_num_threads)(void* context, int32_t num_threads);
  /* (required) The count ops use now. */
  int32_t (*get_num_threads)(void* context);
} kiln_threads_api;

/* ------------------------------------------------------------------------------ */
/* Vendor op schemas: the extension table "kiln.op_schemas.v1"                     */
/* ------------------------------------------------------------------------------ */
/*
 * A plugin that provides ops outside the catalogue (namespaced, e.g. "acme.swish",
 * looked up through get_kernel like any op) declares them by returning a
 * `kiln_op_schemas_api` from `get_extension(context, KILN_EXTENSION_OP_SCHEMAS)`.
 * Each op is described once, as UTF-8 JSON text in the form of an entry of the
 * catalogue (share/doc/kiln/ops.json), plus an output shape rule the frontend can apply:
 *
 *   {"inputs": [{"name": "x"}],
 *    "outputs": [{"name": "y", "shape": "input 0"}],
 *    "attributes": [{"name": "beta", "type": "FLOAT", "optional": true, "default": 1.0}],
 *    "dtypes": {"class": "float", "one_dtype": true},
 *    "differentiable": false,
 *    "semantics": "y = x * sigmoid(beta * x)"}
 *
 * An output's "shape" is one of "input N" (the shape of input N), "broadcast" (the
 * broadcast of every input's shape) or "scalar" (rank 0). share/doc/kiln/ABI.md, "Vendor op
 * schemas", lists every key, the limits, and what the frontend does with them (it
 * checks each call's arity and attributes against the schema, and a typed wrapper
 * allocates outputs from the shape rules). The frontend validates every schema when
 * the plugin loads and ignores, with a warning naming the plugin and the op, one it
 * cannot accept; the op stays callable without a schema.
 *
 * All pointers (the table, the array, the entries and their strings) must stay valid
 * for the life of the process, like the plugin table. Like every extension, this one
 * is versioned by its name, not by the ABI's minor version: an older plugin answers
 * NULL.
 */

#define KILN_EXTENSION_OP_SCHEMAS "kiln.op_schemas.v1"

/* One vendor op. */
typedef struct kiln_op_schema {
  size_t struct_size;      /* sizeof(kiln_op_schema) as the plugin was built */
  const char* name;        /* "vendor.op": not in the "kiln." namespace */
  int32_t version;         /* >= 1: the version get_kernel is asked for */
  const char* schema_json; /* the JSON object above, NUL-terminated */
} kiln_op_schema;

typedef struct kiln_op_schemas_api {
  size_t struct_size; /* sizeof(kiln_op_schemas_api) as the plugin was built */
  size_t count;       /* number of entries in `schemas` */
  /* `count` pointers to entries (pointers, so that an entry may grow on its own). */
  const kiln_op_schema* const* schemas;
} kiln_op_schemas_api;

/* ------------------------------------------------------------------------------ */
/* Staged code: the extension table "kiln.staged.v1"                               */
/* ------------------------------------------------------------------------------ */
/*
 * A plugin may ship kernels or extensions that were built but never ran on its
 * hardware ("staged": written where no such device was at hand). They stay off unless
 * the plugin's own switch turns them on (the CUDA plugin: KILN_CUDA_STAGED); a staged
 * kernel answers `supports` 0, so the op takes the CPU fallback, and a staged extension
 * is not offered. A plugin lists them by returning a `kiln_staged_api` from
 * `get_extension(context, KILN_EXTENSION_STAGED)`, so that tools say so (kiln-info:
 * "staged, never ran on its hardware") even where no device is present.
 *
 * All pointers must stay valid for the life of the process. Versioned by its name.
 */

#define KILN_EXTENSION_STAGED "kiln.staged.v1"

/* One staged kernel or extension. */
typedef struct kiln_staged_entry {
  size_t struct_size;  /* sizeof(kiln_staged_entry) as the plugin was built */
  const char* name;    /* the plugin's name for it, the one its switch takes */
  const char* kind;    /* "kernel" or "extension" */
  const char* test;    /* the test that covers it on the hardware */
  const char* summary; /* one line: what it is */
  int32_t enabled;     /* 1 when the switch turned it on in this process */
} kiln_staged_entry;

typedef struct kiln_staged_api {
  size_t struct_size; /* sizeof(kiln_staged_api) as the plugin was built */
  size_t count;       /* number of entries */
  /* `count` pointers to entries (pointers, so that an entry may grow on its own). */
  const kiln_staged_entry* const* entries;
} kiln_staged_api;

/* ------------------------------------------------------------------------------ */
/* Device graphs: the extension table "kiln.graphs.v1"                             */
/* ------------------------------------------------------------------------------ */
/*
 * A plugin whose device can record a sequence of kernel launches once and launch the
 * whole sequence again as one unit (CUDA graphs) offers a `kiln_graphs_api` from
 * `get_extension(context, KILN_EXTENSION_GRAPHS)`. kiln::Graph uses it: the first
 * time a Graph replays, each run of its recorded kernel calls that no replay changes
 * is recorded into a device graph, and every replay launches those graphs; the calls
 * whose attributes change between replays (a learning rate, Adam's step, a random
 * offset) run as ordinary calls between them. Without the extension every recorded
 * call runs on each replay, as before.
 *
 * Between capture_begin and capture_end on a stream, the kernels the frontend runs
 * with that stream (kiln_op_args.stream) are recorded, not run. While recorded they
 * must not touch operand memory from the host or synchronize, and any scratch memory
 * they use must stay theirs for the life of the graph. A kernel that cannot be
 * recorded returns KILN_STATUS_UNSUPPORTED; the frontend then ends and discards that
 * capture and runs that call ordinarily on each replay. The frontend captures on a
 * stream it created for the purpose (the default stream when the plugin has no
 * stream_create), one capture per device at a time, and launches on the default
 * stream. All four entries are required. Versioned by its name.
 */

#define KILN_EXTENSION_GRAPHS "kiln.graphs.v1"

typedef struct kiln_graph kiln_graph; /* opaque, the plugin's */

typedef struct kiln_graphs_api {
  size_t struct_size; /* sizeof(kiln_graphs_api) as the plugin was built */
  /* Starts recording the kernels run with `stream`. */
  kiln_status* (*capture_begin)(kiln_device* device, kiln_stream* stream);
  /* Stops recording on `stream`. Success: `*graph` holds what was recorded, ready to
   * launch (instantiated). Failure: nothing is kept, `*graph` is NULL, and the stream
   * is back to running what it is given. */
  kiln_status* (*capture_end)(kiln_device* device, kiln_stream* stream, kiln_graph** graph);
  /* Enqueues the recorded work on `stream`, after the work already there. */
  kiln_status* (*launch)(kiln_device* device, kiln_graph* graph, kiln_stream* stream);
  /* Releases the graph and its memory once the work already enqueued with it is done. */
  kiln_status* (*destroy)(kiln_device* device, kiln_graph* graph);
} kiln_graphs_api;

/* ------------------------------------------------------------------------------ */
/* Pinned sizes of the released structs. Changing any of these breaks every plugin  */
/* or host built against that version. Literal numbers (the ABI is defined for      */
/* 64-bit platforms with 8-byte pointers: x86-64, aarch64), each checked below      */
/* against the layout above: a field moved, resized or inserted before the end of a */
/* released struct stops this header from compiling. The frozen 1.0 header in the  */
/* Kiln sources (tests/abi) also pins every member's offset.                        */
/* ------------------------------------------------------------------------------ */

/* ABI 1.0. The smallest table a 1.x loader accepts ends with get_extension. */
#define KILN_PLUGIN_API_SIZE_1_0 ((size_t)192)
#define KILN_KERNEL_SIZE_1_0 ((size_t)40)
#define KILN_OP_ARGS_SIZE_1_0 ((size_t)64)
#define KILN_TENSOR_VIEW_SIZE_1_0 ((size_t)56)
#define KILN_HOST_API_SIZE_1_0 ((size_t)40)

/* What 1.1 appended: the table through copy_peer, the device properties through
 * flags, and the collectives extension table through barrier. */
#define KILN_PLUGIN_API_SIZE_1_1 ((size_t)200)
#define KILN_DEVICE_PROPERTIES_SIZE_1_1 ((size_t)184)
#define KILN_COLLECTIVES_API_SIZE_1_1 ((size_t)80)

/* What 1.2 appended: the table through range_pop. */
#define KILN_PLUGIN_API_SIZE_1_2 ((size_t)224)

/* The extension "kiln.op_schemas.v1" as first released (outside the minor versions). */
#define KILN_OP_SCHEMAS_API_SIZE_V1 ((size_t)24)
#define KILN_OP_SCHEMA_SIZE_V1 ((size_t)32)
/* The extension "kiln.staged.v1" as first released. */
#define KILN_STAGED_API_SIZE_V1 ((size_t)24)
#define KILN_STAGED_ENTRY_SIZE_V1 ((size_t)44)
/* The extension "kiln.graphs.v1" as first released. */
#define KILN_GRAPHS_API_SIZE_V1 ((size_t)40)

#if !defined(UINTPTR_MAX) || UINTPTR_MAX != UINT64_MAX
#error "the Kiln ABI is defined for 64-bit platforms (8-byte pointers)"
#endif
#ifdef __cplusplus
#define KILN_ABI_ASSERT(cond, what) static_assert(cond, what)
#else
#define KILN_ABI_ASSERT(cond, what) _Static_assert(cond, what)
#endif
#define KILN_ABI_END(type, last) (offsetof(type, last) + sizeof(((type*)0)->last))
KILN_ABI_ASSERT(KILN_PLUGIN_API_SIZE_1_0 == KILN_ABI_END(kiln_plugin_api, get_extension),
                "kiln_plugin_api 1.0 changed");
KILN_ABI_ASSERT(KILN_KERNEL_SIZE_1_0 == KILN_ABI_END(kiln_kernel, reserved),
                "kiln_kernel 1.0 changed");
KILN_ABI_ASSERT(KILN_OP_ARGS_SIZE_1_0 == KILN_ABI_END(kiln_op_args, stream),
                "kiln_op_args 1.0 changed");
KILN_ABI_ASSERT(KILN_TENSOR_VIEW_SIZE_1_0 == KILN_ABI_END(kiln_tensor_view, device),
                "kiln_tensor_view 1.0 changed");
KILN_ABI_ASSERT(KILN_HOST_API_SIZE_1_0 == KILN_ABI_END(kiln_host_api, reserved),
                "kiln_host_api 1.0 changed");
KILN_ABI_ASSERT(KILN_PLUGIN_API_SIZE_1_1 == KILN_ABI_END(kiln_plugin_api, copy_peer),
                "kiln_plugin_api 1.1 changed");
KILN_ABI_ASSERT(KILN_DEVICE_PROPERTIES_SIZE_1_1 == KILN_ABI_END(kiln_device_properties, flags),
                "kiln_device_properties 1.1 changed");
KILN_ABI_ASSERT(KILN_COLLECTIVES_API_SIZE_1_1 == KILN_ABI_END(kiln_collectives_api, barrier),
                "kiln_collectives_api 1.1 changed");
KILN_ABI_ASSERT(KILN_PLUGIN_API_SIZE_1_2 == KILN_ABI_END(kiln_plugin_api, range_pop),
                "kiln_plugin_api 1.2 changed");
KILN_ABI_ASSERT(KILN_OP_SCHEMAS_API_SIZE_V1 == KILN_ABI_END(kiln_op_schemas_api, schemas),
                "kiln_op_schemas_api v1 changed");
KILN_ABI_ASSERT(KILN_OP_SCHEMA_SIZE_V1 == KILN_ABI_END(kiln_op_schema, schema_json),
                "kiln_op_schema v1 changed");
KILN_ABI_ASSERT(KILN_STAGED_API_SIZE_V1 == KILN_ABI_END(kiln_staged_api, entries),
                "kiln_staged_api v1 changed");
KILN_ABI_ASSERT(KILN_GRAPHS_API_SIZE_V1 == KILN_ABI_END(kiln_graphs_api, destroy),
                "kiln_graphs_api v1 changed");
KILN_ABI_ASSERT(KILN_STAGED_ENTRY_SIZE_V1 == KILN_ABI_END(kiln_staged_entry, enabled),
                "kiln_staged_entry v1 changed");
#undef KILN_ABI_END
#undef KILN_ABI_ASSERT

/* ------------------------------------------------------------------------------ */
/* Small inline helpers for kernels                                                */
/* ------------------------------------------------------------------------------ */

/* Returns the attribute called `name`, or NULL. */
static inline const kiln_attr* kiln_find_attr(const kiln_op_args* args, const char* name) {
  for (size_t i = 0; i < args->num_attrs; ++i) {
    const char* a = args->attrs[i].name;
    const char* b = name;
    while (*a && *a == *b) {
      ++a;
      ++b;
    }
    if (*a == *b) return &args->attrs[i];
  }
  return NULL;
}

/* Size in bytes of one element of `dtype`, or 0 for an unknown dtype. */
static inline size_t kiln_dtype_size(int32_t dtype) {
  switch (dtype) {
    case KILN_DTYPE_COMPLEX128:
      return 16;
    case KILN_DTYPE_COMPLEX64:
    case KILN_DTYPE_FLOAT64:
    case KILN_DTYPE_INT64:
      return 8;
    case KILN_DTYPE_FLOAT32:
    case KILN_DTYPE_INT32:
      return 4;
    case KILN_DTYPE_FLOAT16:
    case KILN_DTYPE_BFLOAT16:
      return 2;
    case KILN_DTYPE_UINT8:
    case KILN_DTYPE_BOOL:
      return 1;
    default:
      return 0;
  }
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_C_API_H */
