#pragma once
/// @file mpi.h
/// kiln::distributed::mpi — a ProcessGroup over MPI (library Kiln::mpi, libkiln_mpi):
/// many processes on one or many machines, launched by `mpirun`, the way Horovod and
/// torch.distributed's MPI backend run.
///
/// @code
///   // mpirun -np 4 ./train
///   auto group = kiln::distributed::mpi::init();      // rank and size from the launcher
///   kiln::nn::DistributedDataParallel ddp(model, group);
/// @endcode
///
/// All MPI calls happen on one thread the group owns (MPI_THREAD_SERIALIZED), so
/// collectives can run while the caller's thread computes (DDP's overlap), and the
/// caller never blocks in MPI except in Work::wait().
///
/// Before every collective the ranks exchange what they are about to do (collective,
/// element count, dtype, op or root) point to point, under the group's timeout
/// (KILN_COLLECTIVE_TIMEOUT, default 300 s): a disagreement is an error on every rank,
/// and a rank that does not arrive in time (stuck, or dead while mpirun keeps the
/// others alive) is named in a kiln::Error on every rank that waited, after which the
/// group is unusable. Tensors may live on any device: they are staged through host
/// memory; float16 and bfloat16 are reduced in float32.

#include <memory>
#include <optional>

#include "kiln/distributed.h"

namespace kiln::distributed::mpi {

/// True when this process was started by an MPI launcher (mpirun/mpiexec of Open MPI,
/// MPICH or a PMIx-based one): the variables they set are present.
bool launched();

/// This process's rank among the ranks on its machine (OMPI_COMM_WORLD_LOCAL_RANK,
/// MPI_LOCALRANKID, PMIX_LOCAL_RANK), 0 when unknown: which local device to use.
int local_rank();

/// Initializes MPI once per process and returns the group of all its ranks
/// (MPI_COMM_WORLD). `timeout_seconds` defaults to default_collective_timeout().
/// Later calls return the same group. Throws kiln::Error when MPI cannot start, or
/// when the timeout (or KILN_COLLECTIVE_TIMEOUT) is not from kMinCollectiveTimeout to
/// kMaxCollectiveTimeout seconds.
std::shared_ptr<ProcessGroup> init(std::optional<double> timeout_seconds = std::nullopt);

}  // namespace kiln::distributed::mpi
