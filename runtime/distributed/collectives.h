#ifndef ACCEL_RUNTIME_DISTRIBUTED_COLLECTIVES_H_
#define ACCEL_RUNTIME_DISTRIBUTED_COLLECTIVES_H_

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace accel::rt::distributed {

// A collective failed: a peer died, or the operation ran past its timeout. The process group
// is unusable afterwards (Gloo closes its pairs); the worker must stop.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ReduceOp { kSum, kMax, kMin, kProduct };

// A collective that was started and may still be running (AllReduceAsync). Its tensors must
// stay alive and untouched until Wait returns.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  // Blocks until the operation is done, bounded by the group's timeout. Throws CollectiveError
  // when it failed or timed out. Call it at most once.
  virtual void Wait() = 0;
};

// A PendingWork that is already done: what a synchronous back end returns.
class CompletedWork final : public PendingWork {
 public:
  void Wait() override {}
};

// The collective primitives the runtime uses, behind an interface so tests can run one rank
// alone or inject delays and failures (tests/support/fault_injection.h). Every method is **collective**:
// every rank must call it, in the same order, with tensors of the same shapes and dtypes.
// Every call is bounded by the group's timeout and throws CollectiveError instead of hanging.
// Tensors must be contiguous; dtypes are those the backend reduces (Gloo: float16/32/64,
// int8/uint8/int32/int64) — operations.h packs everything else into bytes or upcasts it.
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // The device tensors must be on: the CPU for Gloo, this rank's GPU for NCCL.
  virtual c10::Device device() const { return c10::Device(c10::kCPU); }
  // False for the world of one process that runs without any backend (distributed type NO):
  // Accelerate's operations behave differently there (catalog §5.2, `NO`).
  virtual bool distributed() const { return true; }
  // Replaces each tensor by the elementwise `op` over all ranks. The tensors are reduced as
  // separate operations that run concurrently (one per gradient bucket).
  virtual void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) = 0;
  void AllReduceSum(std::vector<at::Tensor>& tensors) { AllReduce(tensors, ReduceOp::kSum); }
  // Starts AllReduce and returns before it finishes, so the caller can compute meanwhile (the
  // gradient reducer launches buckets while backward runs); the result is in `tensors` once
  // the returned work's Wait returns. Collective, in launch order: every rank must start the
  // same operations in the same order. May throw CollectiveError at launch. The default runs
  // AllReduce synchronously and returns a CompletedWork.
  virtual std::unique_ptr<PendingWork> AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op);
  // Replaces each tensor by rank `root`'s copy; the tensors travel concurrently.
  virtual void Broadcast(std::vector<at::Tensor>& tensors, int root) = 0;
  // Fills `output` (world_size × input.numel() elements of input's dtype) with every rank's
  // `input`, in rank order.
  virtual void AllGather(const at::Tensor& input, at::Tensor& output) = 0;
  // Returns once every rank has called it.
  virtual void Barrier() = 0;
  // Runs `work`, this rank's own part of a step all ranks take (writing its share of a
  // checkpoint), then returns once every rank has done its part. The ranks may arrive far
  // apart: a rank still at its part is waited for as long as it says so (progress::StillWorking)
  // at least once per timeout, where a Barrier would wait one timeout in all. While it waits,
  // this rank says it is at work, naming `what`, so the launcher's watchdog holds it to the own
  // work limit, not to the collective timeout. Throws CollectiveError naming the ranks that fell
  // silent; an exception from `work` passes through, and the others then wait for this rank in
  // vain, as in any collective it leaves. The default runs `work`, then Barrier.
  virtual void MeetAfterWork(const char* what, const std::function<void()>& work);

  // Sharded data parallelism (engine/sharded_engine.h). `input` holds world_size() chunks of
  // output.numel() elements each, end to end; `output` receives chunk rank() reduced with `op`
  // over every rank. The default all-reduces a copy of `input` and keeps this rank's chunk
  // (correct, but it moves twice the data); a back end overrides it with a real reduce-scatter
  // (the c10d group: an all-to-all and a local reduction, float16 reduced in float32). Throws
  // std::invalid_argument, before anything is sent, when the sizes or dtypes do not fit.
  virtual void ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op);
  // ReduceScatter, started and returned before it finishes, as AllReduceAsync. `input` and
  // `output` must stay alive and untouched until Wait returns.
  virtual std::unique_ptr<PendingWork> ReduceScatterAsync(const at::Tensor& input, at::Tensor& output,
                                                          ReduceOp op);
  // AllGather, started and returned before it finishes.
  virtual std::unique_ptr<PendingWork> AllGatherAsync(const at::Tensor& input, at::Tensor& output);
  // Rank `root` sends chunk r of `chunks` (world_size() tensors of output's size and dtype) to
  // rank r, into `output`; the other ranks pass no chunks. For weights only rank 0 holds
  // (cpu_ram_efficient_loading): each rank receives its shard and never the whole. The default
  // broadcasts every chunk and keeps this rank's (correct, but every rank receives them all).
  // Throws std::invalid_argument, before anything is sent, when the root's chunks do not fit.
  virtual void Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root);
  // The inverse: rank `root`'s `output` (world_size() × input.numel() elements of input's
  // dtype) receives every rank's `input`, in rank order; the other ranks pass an undefined
  // output. For state only the rank that writes it needs whole (a checkpoint). The default
  // all-gathers (every rank then briefly holds the whole). Throws std::invalid_argument, before
  // anything is sent, when the root's output does not fit.
  virtual void Gather(const at::Tensor& input, at::Tensor& output, int root);
  // A group of the ranks `ranks` (ranks of this group, ascending, containing rank()), for
  // hybrid sharding: shard within a machine, replicate across machines. Collective over this
  // group: every rank calls it, in the same order, with the list of its own new group; ranks in
  // the same new group pass the same list. The new group's rank() is this rank's position in
  // `ranks`. It keeps this group's timeout and must not outlive it (the c10d group's subgroups
  // hold what they need and may). The default serves a world of one (`ranks` == {0}) and throws
  // std::logic_error otherwise. A back end throws std::invalid_argument for a bad `ranks`.
  virtual std::unique_ptr<Collectives> NewGroup(const std::vector<int>& ranks);
};

// Scatter's argument check, for back ends that override it: `expected` chunks (world_size on
// the root, none elsewhere), each of output's shape and dtype.
void CheckScatterChunks(const std::vector<at::Tensor>& chunks, const at::Tensor& output, int expected);
// Gather's: the root (`receives`) passes an output of world × input's elements; others none.
void CheckGatherOutput(const at::Tensor& input, const at::Tensor& output, bool receives, int world);

// A world of one process without a backend (distributed type NO): every operation is the
// identity and distributed() is false.
std::unique_ptr<Collectives> MakeSingleProcess();

struct RendezvousOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Bounds the rendezvous (all ranks connecting) and every collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // The launch this rank belongs to (launch::kEnvLaunchId). Rank 0 publishes its own in the
  // store; any other rank with a different one is refused before it checks in.
  std::string launch_id;
};

// This rank failed the rendezvous for a reason of its own, not its peers': it reached the
// store of another launch (another job on the same address and port), rank 0 could not serve
// the store (the port is taken), or it ran out of file descriptors. Unlike a CollectiveError,
// the launcher names this rank as the cause.
class OwnRendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a back end carries out the two collectives of sharded data parallelism, chosen by what
// measures faster on it (docs/performance.md, "Reduce-scatter").
enum class ShardedPath {
  // Gloo's default: a reduce-scatter composed of one all-to-all and a local reduction, and an
  // all-gather into one slot per rank. On loopback this reduce-scatter takes 0.26 to 0.76 of
  // the time of Gloo's own `_reduce_scatter_base` in 15 of 16 cases (1 to 64 MiB, 2 and 4
  // ranks, two runs), whose all-gather into one buffer is no faster.
  kComposed,
  // NCCL's: its own reduce-scatter and all-gather into one buffer, ring kernels on the device
  // (what PyTorch's FSDP and DeepSpeed's ZeRO call).
  kNative,
};

// Joins the group: rank 0 serves a TCPStore at master_addr:master_port, the others connect,
// check in, and all build a ProcessGroupGloo. Collective. Throws CollectiveError naming the
// address, the timeout and the ranks that never checked in when the rendezvous does not
// complete in time. `sharded` picks the reduce-scatter and all-gather (tests take Gloo's own,
// the path NCCL's groups take, to check it without a GPU).
std::unique_ptr<Collectives> ConnectGloo(const RendezvousOptions& options,
                                         ShardedPath sharded = ShardedPath::kComposed);

// The same rendezvous, then a ProcessGroupNCCL on GPU `local_rank` (modulo the visible
// devices), made by the CUDA back end (runtime/cuda), with NCCL's asynchronous error handling
// on so timeouts abort instead of hanging. An OwnRendezvousError, before the rendezvous, when
// the back end does not load or no GPU is visible.
std::unique_ptr<Collectives> ConnectNccl(const RendezvousOptions& options, int local_rank);

// Opens the CUDA back end and makes GPU `local_rank` (modulo the visible devices) this
// process's current device: the GPU of a rank of a `cuda` plan, with or without a process
// group. An OwnRendezvousError naming `rank` when the back end does not load or no GPU is
// visible.
c10::Device UseCudaDevice(int rank, int local_rank);

// Turns PyTorch's collective flight recorder off unless the user sized it (TORCH_FR_BUFFER_SIZE).
// Every group in a process shares one recorder, whose first record for a group edits a map
// outside its lock: two groups starting collectives on two threads at once corrupt it and
// crash. Accel never dumps that record (its own watchdog names a stuck rank), so it is pure
// cost on every collective. Call once, before any thread starts: it sets the environment.
void KeepFlightRecorderOff();

// ConnectGloo or ConnectNccl by the plan's backend name (`gloo`, `nccl`).
std::unique_ptr<Collectives> Connect(const std::string& backend, const RendezvousOptions& options,
                                     int local_rank);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_COLLECTIVES_H_
