#include "runtime/distributed/self_test.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/distributed/operations.h"
#include "runtime/distributed/random.h"
#include "runtime/distributed/structure.h"

namespace accel::rt::distributed {
namespace {

// One rank's verdict on a check: empty when it passed, else what was wrong.
using Verdict = std::string;

// `tensor`'s values for a message: `[1, 2, 3]`.
std::string Values(const at::Tensor& tensor) {
  at::Tensor flat = tensor.detach().cpu().to(at::kDouble).contiguous().flatten();
  std::vector<double> values(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
  return fmt::format("[{:.6g}]", fmt::join(values, ", "));
}

Verdict ExpectEqual(const std::string& what, const at::Tensor& got, const at::Tensor& expected) {
  at::Tensor a = got.detach().cpu().to(at::kDouble);
  at::Tensor b = expected.detach().cpu().to(at::kDouble);
  if (a.sizes() == b.sizes() && a.equal(b)) return "";
  return fmt::format("{}: expected [{}] {}, got [{}] {}", what, fmt::join(b.sizes(), ", "), Values(b),
                     fmt::join(a.sizes(), ", "), Values(a));
}

// The checks of one rank. Each builds data that depends on the rank, so that a result mixed up
// between ranks, or left unreduced, differs from the expected one.
class SelfTest {
 public:
  SelfTest(Collectives& collectives, DataOps& ops)
      : collectives_(collectives),
        ops_(ops),
        rank_(collectives.rank()),
        world_(collectives.world_size()),
        device_(collectives.device()) {}

  Verdict WaitForEveryone() {
    ops_.WaitForEveryone();
    return "";
  }

  Verdict SendToDevice() {
    Value moved = Batch();
    Verdict wrong;
    ForEachTensor(moved, [&](const std::string& path, const at::Tensor& tensor) {
      if (tensor.device() != device_ && wrong.empty())
        wrong = fmt::format("{} is on {}, not {}", path, tensor.device().str(), device_.str());
    });
    if (!wrong.empty()) return wrong;
    if (moved.Find("source")->as_string() != fmt::format("rank {}", rank_))
      return "a string leaf changed on the way";
    int64_t size = FindBatchSize(moved);
    return size == 2 ? "" : fmt::format("find_batch_size gave {}, not 2", size);
  }

  Verdict Gather() {
    // gather takes tensors only, as Accelerate's does: the batch without its string.
    Value batch = Batch();
    Value gathered =
        ops_.Gather(Value::Dict({{"inputs", *batch.Find("inputs")}, {"labels", *batch.Find("labels")}}));
    at::Tensor ranks = at::arange(world_, kLongs);
    at::Tensor inputs =
        (at::arange(6, kFloats).view({1, 2, 3}) + 100.0 * ranks.view({-1, 1, 1}).to(at::kFloat))
            .view({2 * world_, 3});
    Verdict verdict = ExpectEqual("inputs", gathered.Find("inputs")->tensor(), inputs);
    if (!verdict.empty()) return verdict;
    return ExpectEqual("labels", gathered.Find("labels")->tensor(), ranks.repeat_interleave(2));
  }

  // gather_for_metrics: 2 * world - 1 held-out samples in batches of one per rank; the second
  // batch's last rank repeats a sample (even_batches), which is dropped after concatenating.
  Verdict GatherForMetrics() {
    std::vector<Value> batches;
    for (int64_t b = 0; b < 2; ++b) {
      int64_t sample = std::min<int64_t>(b * world_ + rank_, 2 * world_ - 2);
      batches.push_back(ops_.Gather(Value::Tensor(at::full({1}, sample, kLongs).to(device_))));
    }
    Value all = SliceTensors(Concatenate(batches), 0, 2 * world_ - 1);
    return ExpectEqual("samples", all.tensor(), at::arange(2 * world_ - 1, kLongs));
  }

  Verdict GatherObject() {
    Value all = ops_.GatherObject(
        Value::List({Value::String(fmt::format("rank {}", rank_)), Value::Int(rank_ * rank_)}));
    if (static_cast<int64_t>(all.items().size()) != 2 * world_)
      return fmt::format("{} objects, not {}", all.items().size(), 2 * world_);
    for (int64_t r = 0; r < world_; ++r) {
      const Value& name = all.items()[2 * r];
      const Value& square = all.items()[2 * r + 1];
      if (name.kind() != Value::Kind::kString || name.as_string() != fmt::format("rank {}", r) ||
          square.kind() != Value::Kind::kInt || square.as_int() != r * r)
        return fmt::format("rank {}'s objects came back as {} and {}", r, Describe(name), Describe(square));
    }
    return "";
  }

  Verdict Broadcast() {
    Value mine =
        distributed::SendToDevice(Value::Dict({{"weights", Value::Tensor(at::full({3}, rank_, kFloats))},
                                               {"step", Value::Tensor(at::full({1}, rank_, kLongs))}}),
                                  device_);
    Value got = ops_.Broadcast(mine, static_cast<int>(world_ - 1));
    Verdict verdict =
        ExpectEqual("weights", got.Find("weights")->tensor(), at::full({3}, world_ - 1, kFloats));
    if (!verdict.empty()) return verdict;
    // In place: the caller's own tensors hold the source's values.
    return ExpectEqual("step", mine.Find("step")->tensor(), at::full({1}, world_ - 1, kLongs));
  }

  Verdict BroadcastObjectList() {
    std::vector<Value> objects(3);
    if (rank_ == 0)
      objects = {Value::String("checkpoint_7"), Value::Int(7), Value::Tensor(at::arange(3, kLongs))};
    ops_.BroadcastObjectList(objects, 0);
    if (objects.size() != 3 || objects[0].kind() != Value::Kind::kString ||
        objects[0].as_string() != "checkpoint_7" || objects[1].kind() != Value::Kind::kInt ||
        objects[1].as_int() != 7 || !objects[2].is_tensor())
      return fmt::format("got {}", Describe(Value::List(objects)));
    return ExpectEqual("tensor", objects[2].tensor(), at::arange(3, kLongs));
  }

  Verdict Reduce() {
    Value mine = Value::Tensor(at::full({4}, rank_ + 1, kFloats).to(device_));
    const double sum = static_cast<double>(world_ * (world_ + 1) / 2);
    for (auto [how, expected] : {std::pair<const char*, double>{"sum", sum},
                                 {"mean", sum / static_cast<double>(world_)},
                                 {"max", static_cast<double>(world_)},
                                 {"min", 1.0}}) {
      Verdict verdict =
          ExpectEqual(how, ops_.Reduce(mine, how).tensor(), at::full({4}, expected, at::kDouble));
      if (!verdict.empty()) return verdict;
    }
    return "";
  }

  // A bfloat16 sum of small integers (1 + rank % 4), which bfloat16 and float32 hold exactly.
  Verdict ConvertToFp32() {
    at::Tensor mine = at::full({2}, 1 + rank_ % 4, at::TensorOptions(at::kBFloat16));
    Value sum = distributed::ConvertToFp32(ops_.Reduce(Value::Tensor(mine.to(device_)), "sum"));
    if (sum.tensor().scalar_type() != at::kFloat)
      return fmt::format("the result is {}, not float32", c10::toString(sum.tensor().scalar_type()));
    double expected = at::arange(world_, kLongs).remainder(4).add(1).sum().item<double>();
    if (expected > 256) return "";  // beyond the integers bfloat16 holds exactly
    return ExpectEqual("sum", sum.tensor(), at::full({2}, expected, at::kDouble));
  }

  Verdict PadAcrossProcesses() {
    Value ones = Value::Tensor(at::ones({rank_ + 1}, kLongs).to(device_));
    at::Tensor expected = at::cat({at::ones({rank_ + 1}, kLongs), at::zeros({world_ - rank_ - 1}, kLongs)});
    Verdict verdict = ExpectEqual("padded", ops_.PadAcrossProcesses(ones, 0, 0).tensor(), expected);
    if (!verdict.empty()) return verdict;
    return ExpectEqual("padded first", ops_.PadAcrossProcesses(ones, 0, 0, true).tensor(), expected.flip(0));
  }

  // Seeded per rank (set_seed's device_specific), the draws differ; synchronised, every rank
  // draws rank 0's numbers.
  Verdict SynchronizeTorch() {
    SetSeed(1234, /*device_specific=*/true, rank_);
    at::Tensor before = GatherRows(at::rand({4}, kFloats));
    SetSeed(1234, /*device_specific=*/true, rank_);
    SynchronizeRngStates(collectives_, {"torch"});
    at::Tensor after = GatherRows(at::rand({4}, kFloats));
    if (world_ > 1 && before[0].equal(before[1])) return "ranks seeded apart drew the same numbers";
    SetSeed(1234);
    return ExpectEqual("draws", after, at::rand({4}, kFloats).expand({world_, 4}));
  }

  Verdict SynchronizeGenerator() {
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(1000 + rank_);
    SynchronizeRngStates(collectives_, {"generator"}, &generator);
    at::Tensor order = GatherRows(at::randperm(8, generator, kLongs));
    at::Generator reference = at::make_generator<at::CPUGeneratorImpl>(1000);
    return ExpectEqual("permutations", order, at::randperm(8, reference, kLongs).expand({world_, 8}));
  }

  Verdict Listify() {
    Value list = distributed::Listify(ops_.Gather(Value::Tensor(at::full({1}, rank_, kLongs).to(device_))));
    bool right = static_cast<int64_t>(list.items().size()) == world_;
    for (int64_t r = 0; right && r < world_; ++r)
      right = list.items()[r].kind() == Value::Kind::kInt && list.items()[r].as_int() == r;
    return right ? "" : fmt::format("got {}", Describe(list));
  }

 private:
  static inline const at::TensorOptions kLongs = at::TensorOptions(at::kLong);
  static inline const at::TensorOptions kFloats = at::TensorOptions(at::kFloat);

  // A batch as a data loader yields it, on the group's device: rows 100 * rank + (0..5),
  // labels, and a string.
  Value Batch() const {
    return distributed::SendToDevice(
        Value::Dict({{"inputs", Value::Tensor(at::arange(6, kFloats).view({2, 3}) + 100.0 * rank_)},
                     {"labels", Value::Tensor(at::full({2}, rank_, kLongs))},
                     {"source", Value::String(fmt::format("rank {}", rank_))}}),
        device_);
  }

  // Every rank's `row`, gathered: [world, n].
  at::Tensor GatherRows(const at::Tensor& row) {
    return ops_.Gather(Value::Tensor(row.unsqueeze(0).to(device_))).tensor();
  }

  Collectives& collectives_;
  DataOps& ops_;
  const int64_t rank_;
  const int64_t world_;
  const c10::Device device_;
};

// The checks, in the order every rank runs them.
struct Check {
  SelfTestCheck description;
  Verdict (SelfTest::*run)();
};

const Check kChecks[] = {
    {{"wait_for_everyone", "a barrier"}, &SelfTest::WaitForEveryone},
    {{"send_to_device", "a batch dict onto the group's device; find_batch_size"}, &SelfTest::SendToDevice},
    {{"gather", "every rank's batch, in rank order"}, &SelfTest::Gather},
    {{"concatenate, slice_tensors", "gather_for_metrics: two batches, the padding sample dropped"},
     &SelfTest::GatherForMetrics},
    {{"gather_object", "a list per rank, flattened one level"}, &SelfTest::GatherObject},
    {{"broadcast", "from the last rank, in place"}, &SelfTest::Broadcast},
    {{"broadcast_object_list", "rank 0's string, integer and tensor"}, &SelfTest::BroadcastObjectList},
    {{"reduce", "sum, mean, max and min of rank + 1"}, &SelfTest::Reduce},
    {{"convert_to_fp32", "a bfloat16 sum, exact in float32"}, &SelfTest::ConvertToFp32},
    {{"pad_across_processes", "rank + 1 ones padded to the world size, last and first"},
     &SelfTest::PadAcrossProcesses},
    {{"synchronize_rng_states", "torch: rank 0's CPU generator everywhere"}, &SelfTest::SynchronizeTorch},
    {{"synchronize_rng_states", "generator: rank 0's sampler generator everywhere"},
     &SelfTest::SynchronizeGenerator},
    {{"listify", "every rank's index, gathered, as integers"}, &SelfTest::Listify},
};

}  // namespace

std::vector<SelfTestCheck> RunSelfTest(Collectives& collectives) {
  DataOps ops(collectives);
  SelfTest test(collectives, ops);
  std::vector<SelfTestCheck> passed;
  for (const Check& check : kChecks) {
    Verdict verdict;
    try {
      verdict = (test.*check.run)();
    } catch (const OperationError& error) {
      // Data operations raise on every rank at once, so the exchange below still happens.
      verdict = error.what();
    }
    // In a list, so that one process (where gather_object returns its input) reads the same.
    Value verdicts = ops.GatherObject(Value::List({Value::String(verdict)}));
    std::vector<std::string> failures;
    for (size_t r = 0; r < verdicts.items().size(); ++r) {
      const std::string& said = verdicts.items()[r].as_string();
      if (!said.empty()) failures.push_back(fmt::format("rank {}: {}", r, said));
    }
    if (!failures.empty()) {
      throw OperationError(fmt::format("`{}` ({}) failed on {} of {} processes: {}", check.description.name,
                                       check.description.detail, failures.size(), verdicts.items().size(),
                                       fmt::join(failures, "; ")));
    }
    passed.push_back(check.description);
  }
  return passed;
}

}  // namespace accel::rt::distributed
