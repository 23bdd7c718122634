#include "runtime/distributed/operations.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "runtime/distributed/object_codec.h"
#include "runtime/distributed/structure.h"

namespace accel::rt::distributed {
namespace {

// Operation codes in the layout header, so that ranks calling different operations at the
// same point are told so.
enum OpCode : int64_t { kGather = 1, kBroadcast, kReduce, kPad };

const char* OpName(int64_t code) {
  switch (code) {
    case kGather:
      return "gather";
    case kBroadcast:
      return "broadcast";
    case kReduce:
      return "reduce";
    case kPad:
      return "pad_across_processes";
    default:
      return "an unknown operation";
  }
}

// Packed leaves start on 16-byte boundaries (the largest element, complex128), so a leaf's
// bytes can be viewed as its dtype.
int64_t AlignUp(int64_t bytes) { return (bytes + 15) & ~int64_t{15}; }

struct Leaf {
  at::Tensor tensor;
};

// Every tensor leaf in order; any other leaf is an error naming `op` (catalog: TypeError).
std::vector<Leaf> TensorLeaves(const Value& data, const char* op) {
  std::vector<Leaf> leaves;
  RecursivelyApply(
      data,
      [&](const Value& leaf) {
        leaves.push_back({leaf.tensor()});
        return leaf;
      },
      ApplyOptions{[](const Value& leaf) { return leaf.is_tensor(); }, true, op});
  return leaves;
}

// Tensors must be where the process group communicates (catalog §5.2 debug check (a), made
// unconditional: a CPU tensor handed to NCCL would otherwise fail deep inside c10d).
void CheckDevices(const Value& data, const std::vector<Leaf>& leaves, const c10::Device& device,
                  const char* op);

// The path of the `index`th tensor leaf, for messages (computed only when one is needed).
std::string LeafPath(const Value& data, size_t index) {
  std::string found = "the top";
  size_t seen = 0;
  ForEachTensor(data, [&](const std::string& path, const at::Tensor&) {
    if (seen++ == index && !path.empty()) found = path;
  });
  return found;
}

// `data` with its tensor leaves replaced, in order, by `tensors`.
Value ReplaceTensors(const Value& data, const std::vector<at::Tensor>& tensors) {
  size_t next = 0;
  return RecursivelyApply(data, [&](const Value&) { return Value::Tensor(tensors[next++]); });
}

// The bytes of a contiguous tensor as a flat uint8 tensor sharing its storage.
at::Tensor BytesOf(const at::Tensor& contiguous) { return contiguous.reshape({-1}).view(at::kByte); }

uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// What a dtype travels as in a reduction: Gloo reduces float16/32/64, bfloat16 and
// int8/uint8/int32/64, but no int16; bool travels as int32 too, so that its sum is a logical or
// and its min a logical and on every back end.
at::ScalarType WireType(at::ScalarType type) {
  switch (type) {
    case at::kBool:
    case at::kShort:
      return at::kInt;
    default:
      return type;
  }
}

// The leaves as contiguous tensors (0-dim ones as [1]) and their offsets in a packed buffer,
// each on a 16-byte boundary. Returns the buffer's size.
int64_t Pack(const std::vector<Leaf>& leaves, std::vector<at::Tensor>& sources,
             std::vector<int64_t>& offsets) {
  int64_t total = 0;
  for (const Leaf& leaf : leaves) {
    at::Tensor tensor = leaf.tensor.dim() == 0 ? leaf.tensor.reshape({1}) : leaf.tensor;
    sources.push_back(tensor.contiguous());
    offsets.push_back(total);
    total += AlignUp(static_cast<int64_t>(sources.back().nbytes()));
  }
  return total;
}

// The shape of `source` gathered from `world` ranks along dim 0.
std::vector<int64_t> GatheredShape(const at::Tensor& source, int world) {
  std::vector<int64_t> shape = source.sizes().vec();
  shape[0] *= world;
  return shape;
}

struct Reduction {
  ReduceOp op = ReduceOp::kSum;
  bool mean = false;
};

Reduction ParseReduction(std::string_view text) {
  if (text == "sum" || text == "none") return {ReduceOp::kSum, false};
  if (text == "mean") return {ReduceOp::kSum, true};
  if (text == "max") return {ReduceOp::kMax, false};
  if (text == "min") return {ReduceOp::kMin, false};
  throw OperationError(fmt::format("reduce: unknown reduction `{}`; use sum, mean, max, min or none", text));
}

void CheckDevices(const Value& data, const std::vector<Leaf>& leaves, const c10::Device& device,
                  const char* op) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].tensor.device().type() != device.type()) {
      throw OperationError(
          fmt::format("{}: the tensor at {} is on {} but this process group communicates on {}; "
                      "move it first (send_to_device)",
                      op, LeafPath(data, i), leaves[i].tensor.device().str(), device.str()));
    }
  }
}

}  // namespace

DataOps::DataOps(Collectives& collectives, DataOpsOptions options)
    : collectives_(collectives), options_(options) {}

at::Tensor DataOps::Staging(size_t slot, int64_t bytes) {
  if (staging_.size() <= slot) staging_.resize(slot + 1);
  at::Tensor& buffer = staging_[slot];
  // On the group's device: NCCL moves device memory only.
  if (!buffer.defined() || buffer.numel() < bytes || buffer.device() != collectives_.device()) {
    buffer =
        at::empty({std::max<int64_t>(bytes, 64)}, at::TensorOptions(at::kByte).device(collectives_.device()));
  }
  return buffer.narrow(0, 0, bytes);
}

std::vector<std::string> DataOps::AllGatherBytes(std::string_view bytes, bool failed) {
  int world = world_size();
  at::TensorOptions longs = at::TensorOptions(at::kLong).device(collectives_.device());
  at::Tensor length = at::full({1}, failed ? int64_t{-1} : static_cast<int64_t>(bytes.size()), longs);
  at::Tensor lengths = at::empty({world}, longs);
  collectives_.AllGather(length, lengths);
  lengths = lengths.cpu();
  std::vector<int64_t> sizes(lengths.data_ptr<int64_t>(), lengths.data_ptr<int64_t>() + world);
  if (failed) return {};  // the caller raises its own error; the peers raise theirs below
  for (int r = 0; r < world; ++r) {
    if (sizes[r] < 0) {
      throw OperationError(fmt::format("rank {} could not encode its object (its own error says why)", r));
    }
  }
  int64_t longest = std::max<int64_t>(*std::max_element(sizes.begin(), sizes.end()), 1);
  at::Tensor mine = at::zeros({longest}, at::kByte);
  std::memcpy(mine.data_ptr(), bytes.data(), bytes.size());
  at::Tensor send = Staging(0, longest);
  send.copy_(mine);
  at::Tensor receive = Staging(1, longest * world);
  collectives_.AllGather(send, receive);
  at::Tensor host = receive.cpu();
  std::vector<std::string> out;
  const char* base = static_cast<const char*>(host.data_ptr());
  for (int r = 0; r < world; ++r) out.emplace_back(base + r * longest, static_cast<size_t>(sizes[r]));
  return out;
}

void DataOps::Agree(int op_code, const char* op_name, const Value& data, bool dims_only,
                    const std::string& args, const std::function<void()>& validate) {
  std::string local_error;
  try {
    validate();
  } catch (const OperationError& error) {
    local_error = error.what();
  }
  if (!options_.verify_layout) {
    if (!local_error.empty()) throw OperationError(local_error);
    return;
  }
  std::string layout = Layout(data, dims_only) + (args.empty() ? "" : " with " + args);
  at::Tensor header = at::zeros({kHeaderLongs}, at::kLong);
  FillHeader(header.data_ptr<int64_t>(), op_code, layout, local_error, 0);
  header = header.to(collectives_.device());
  at::Tensor headers = at::empty({kHeaderLongs * world_size()}, header.options());
  collectives_.AllGather(header, headers);
  headers = headers.cpu();
  Judge(headers.data_ptr<int64_t>(), kHeaderLongs, op_name, layout, local_error, dims_only);
}

void DataOps::FillHeader(int64_t* header, int op_code, const std::string& layout,
                         const std::string& local_error, int64_t payload_bytes) {
  header[0] = op_code;
  header[1] = static_cast<int64_t>(Fnv1a(layout));
  header[2] = local_error.empty() ? 0 : 1;
  header[3] = payload_bytes;
}

void DataOps::Judge(const int64_t* all, int64_t stride, const char* op_name, const std::string& layout,
                    const std::string& local_error, bool dims_only) {
  bool same = true;
  bool failed = false;
  for (int r = 0; r < world_size(); ++r) {
    same = same && all[stride * r] == all[0] && all[stride * r + 1] == all[1];
    failed = failed || all[stride * r + 2] != 0;
  }
  if (same && !failed) return;
  // Every rank saw the same headers, so every rank takes this path: exchanging the details
  // to name them cannot leave a peer waiting.
  std::vector<std::string> details = AllGatherBytes(failed ? local_error : layout);
  if (!local_error.empty()) throw OperationError(local_error);
  std::string detail;
  for (int r = 0; r < world_size(); ++r) {
    if (failed) {
      if (all[stride * r + 2] != 0) detail += fmt::format("\n  rank {}: {}", r, details[r]);
    } else {
      detail += fmt::format("\n  rank {}: {} {}", r, OpName(all[stride * r]), details[r]);
    }
  }
  if (failed)
    throw OperationError(fmt::format("{}: another rank's arguments were rejected:{}", op_name, detail));
  throw OperationError(
      fmt::format("{}: the ranks disagree on the operation, its arguments or the layout of its data ({}); "
                  "every rank must pass the same structure of tensors with the same dtypes and {}:{}",
                  op_name, dims_only ? "kinds, keys, dtypes, dimensions" : "kinds, keys, dtypes, shapes",
                  dims_only ? "number of dimensions" : "shapes", detail));
}

Value DataOps::Gather(const Value& data) {
  if (!collectives_.distributed()) return data;
  at::NoGradGuard no_grad;
  // With the layout check, the layout headers travel in the same all-gather as payloads that
  // fit the agreed inline capacity: one collective where a raw all_gather takes one.
  if (options_.verify_layout) return GatherWithHeaders(data);
  std::vector<Leaf> leaves = TensorLeaves(data, "gather");
  CheckDevices(data, leaves, collectives_.device(), "gather");
  if (leaves.empty()) return data;
  int world = world_size();
  std::vector<at::Tensor> sources;
  std::vector<int64_t> offsets;
  int64_t total = Pack(leaves, sources, offsets);
  auto shape_of = [&](const at::Tensor& source) { return GatheredShape(source, world); };
  if (total == 0) {
    // Only empty tensors: nothing to send (every rank agrees, their layouts matched).
    std::vector<at::Tensor> results;
    for (const at::Tensor& source : sources) results.push_back(at::empty(shape_of(source), source.options()));
    return ReplaceTensors(data, results);
  }
  if (sources.size() == 1) {
    // One leaf: gathered straight into the result, no staging.
    at::Tensor result = at::empty({world * sources[0].numel()}, sources[0].options());
    at::Tensor result_bytes = BytesOf(result);
    collectives_.AllGather(BytesOf(sources[0]), result_bytes);
    return ReplaceTensors(data, {result.view(shape_of(sources[0]))});
  }
  at::Tensor send = Staging(0, total);
  for (size_t i = 0; i < sources.size(); ++i) {
    send.narrow(0, offsets[i], static_cast<int64_t>(sources[i].nbytes())).copy_(BytesOf(sources[i]));
  }
  at::Tensor receive = Staging(1, total * world);
  collectives_.AllGather(send, receive);
  at::Tensor rows = receive.view({world, total});
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < sources.size(); ++i) {
    int64_t nbytes = static_cast<int64_t>(sources[i].nbytes());
    // A copy out of staging, always (contiguous() would return a view when the slice is a
    // whole row, and the next call overwrites staging).
    at::Tensor bytes = rows.narrow(1, offsets[i], nbytes).clone(at::MemoryFormat::Contiguous);
    results.push_back(nbytes == 0 ? at::empty(shape_of(sources[i]), sources[i].options())
                                  : bytes.view(sources[i].scalar_type()).view(shape_of(sources[i])));
  }
  return ReplaceTensors(data, results);
}

Value DataOps::GatherWithHeaders(const Value& data) {
  std::vector<Leaf> leaves;
  std::string local_error;
  try {
    leaves = TensorLeaves(data, "gather");
    CheckDevices(data, leaves, collectives_.device(), "gather");
  } catch (const OperationError& error) {
    local_error = error.what();
  }
  std::vector<at::Tensor> sources;
  std::vector<int64_t> offsets;
  int64_t total = local_error.empty() ? Pack(leaves, sources, offsets) : 0;
  // Every rank sends a frame of the same size, the header and then, if it fits, the payload:
  // the capacity is agreed (the largest payload of the previous gather, from its headers), so
  // frames never differ in size across ranks, whatever their layouts.
  const int world = world_size();
  const int64_t capacity = gather_inline_bytes_;
  const int64_t frame = kHeaderLongs * 8 + capacity;
  std::string layout = Layout(data, /*dims_only=*/false);
  // Built in place on the CPU (Gloo); through host memory for a device group. Bytes past the
  // payload are never read.
  const bool on_host = collectives_.device().is_cpu();
  at::Tensor send = on_host ? Staging(0, frame) : at::empty({frame}, at::kByte);
  FillHeader(static_cast<int64_t*>(send.data_ptr()), kGather, layout, local_error, total);
  if (local_error.empty() && total <= capacity) {
    for (size_t i = 0; i < sources.size(); ++i) {
      send.narrow(0, kHeaderLongs * 8 + offsets[i], static_cast<int64_t>(sources[i].nbytes()))
          .copy_(BytesOf(sources[i].cpu()));
    }
  }
  if (!on_host) Staging(0, frame).copy_(send);
  at::Tensor receive = Staging(1, frame * world);
  collectives_.AllGather(Staging(0, frame), receive);
  at::Tensor frames = receive.cpu().view({world, frame});
  // Headers are int64s at the start of each frame (frames are a multiple of 8 bytes long),
  // copied out: explaining a disagreement reuses the staging buffers.
  at::Tensor headers =
      frames.narrow(1, 0, kHeaderLongs * 8).clone(at::MemoryFormat::Contiguous).view(at::kLong);
  const int64_t* all = headers.data_ptr<int64_t>();
  Judge(all, kHeaderLongs, "gather", layout, local_error, /*dims_only=*/false);
  // From here every rank agrees on the layout, so every rank sees the same payload sizes.
  int64_t largest = 0;
  for (int r = 0; r < world; ++r) largest = std::max(largest, all[kHeaderLongs * r + 3]);
  gather_inline_bytes_ = std::min(AlignUp(largest), kMaxInlineBytes);
  if (leaves.empty()) return data;
  if (largest > capacity) {
    // Too large for this call's frame: the payload follows in its own all-gather, as without
    // the check (the next call with this layout fits, if it is small enough to inline).
    at::Tensor packed = Staging(0, std::max<int64_t>(total, 1)).narrow(0, 0, total);
    for (size_t i = 0; i < sources.size(); ++i) {
      packed.narrow(0, offsets[i], static_cast<int64_t>(sources[i].nbytes())).copy_(BytesOf(sources[i]));
    }
    at::Tensor rows = Staging(1, total * world);
    if (total > 0) collectives_.AllGather(packed, rows);
    frames = rows.cpu().view({world, total});
  } else {
    frames = frames.narrow(1, kHeaderLongs * 8, capacity);
  }
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < sources.size(); ++i) {
    int64_t nbytes = static_cast<int64_t>(sources[i].nbytes());
    at::Tensor result = at::empty(GatheredShape(sources[i], world), sources[i].options().device(at::kCPU));
    if (nbytes > 0) BytesOf(result).view({world, nbytes}).copy_(frames.narrow(1, offsets[i], nbytes));
    results.push_back(result.to(collectives_.device()));
  }
  return ReplaceTensors(data, results);
}

Value DataOps::GatherObject(const Value& object) {
  if (!collectives_.distributed()) return object;
  std::string payload;
  std::string local_error;
  try {
    payload = EncodeValue(object);
  } catch (const OperationError& error) {
    local_error = fmt::format("gather_object: {}", error.what());
  }
  // An object one rank cannot encode travels as an empty payload marked failed, so every rank
  // learns of it in the same exchange.
  std::vector<std::string> payloads =
      AllGatherBytes(local_error.empty() ? payload : "", !local_error.empty());
  if (!local_error.empty()) throw OperationError(local_error);
  std::vector<Value> items;
  for (size_t r = 0; r < payloads.size(); ++r) {
    Value value = DecodeValue(payloads[r]);
    if (value.is_sequence()) {
      for (Value& item : value.items()) items.push_back(std::move(item));
    } else {
      items.push_back(std::move(value));
    }
  }
  return Value::List(std::move(items));
}

Value DataOps::Broadcast(const Value& data, int from_process) {
  if (!collectives_.distributed()) return data;
  // Broadcasting parameters is common: writing into leaves that require grad is what
  // torch.distributed.broadcast does too.
  at::NoGradGuard no_grad;
  std::vector<Leaf> leaves;
  Agree(kBroadcast, "broadcast", data, /*dims_only=*/false, fmt::format("from_process={}", from_process),
        [&] {
          if (from_process < 0 || from_process >= world_size()) {
            throw OperationError(fmt::format("broadcast: `from_process` {} is not a rank of this world of {}",
                                             from_process, world_size()));
          }
          leaves = TensorLeaves(data, "broadcast");
          CheckDevices(data, leaves, collectives_.device(), "broadcast");
          for (size_t i = 0; i < leaves.size(); ++i) {
            // An expanded or overlapping tensor cannot receive every element (torch refuses it too).
            if (!leaves[i].tensor.is_non_overlapping_and_dense()) {
              throw OperationError(
                  fmt::format("broadcast: the tensor at {} overlaps itself (expanded?) and cannot be "
                              "written in place; pass a contiguous tensor",
                              LeafPath(data, i)));
            }
          }
        });
  if (leaves.empty()) return data;
  if (leaves.size() == 1 && leaves[0].tensor.numel() > 0) {
    const at::Tensor& target = leaves[0].tensor;
    at::Tensor contiguous = target.contiguous();
    std::vector<at::Tensor> bytes{BytesOf(contiguous)};
    collectives_.Broadcast(bytes, from_process);
    if (!contiguous.is_same(target)) target.copy_(contiguous);
    return data;
  }
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const Leaf& leaf : leaves) {
    offsets.push_back(total);
    total += AlignUp(static_cast<int64_t>(leaf.tensor.nbytes()));
  }
  if (total == 0) return data;  // only empty tensors
  at::Tensor buffer = Staging(0, total);
  bool source = rank() == from_process;
  if (source) {
    for (size_t i = 0; i < leaves.size(); ++i) {
      buffer.narrow(0, offsets[i], static_cast<int64_t>(leaves[i].tensor.nbytes()))
          .copy_(BytesOf(leaves[i].tensor.contiguous()));
    }
  }
  std::vector<at::Tensor> buffers{buffer};
  collectives_.Broadcast(buffers, from_process);
  if (!source) {
    for (size_t i = 0; i < leaves.size(); ++i) {
      const at::Tensor& target = leaves[i].tensor;
      int64_t nbytes = static_cast<int64_t>(target.nbytes());
      if (nbytes == 0) continue;
      target.copy_(buffer.narrow(0, offsets[i], nbytes).view(target.scalar_type()).view(target.sizes()));
    }
  }
  return data;
}

void DataOps::BroadcastObjectList(std::vector<Value>& objects, int from_process) {
  if (!collectives_.distributed()) return;
  if (from_process < 0 || from_process >= world_size()) {
    throw OperationError(
        fmt::format("broadcast_object_list: `from_process` {} is not a rank of this world of {}",
                    from_process, world_size()));
  }
  bool source = rank() == from_process;
  std::string payload;
  std::string local_error;
  if (source) {
    try {
      payload = EncodeValue(Value::List(objects));
    } catch (const OperationError& error) {
      local_error = fmt::format("broadcast_object_list: {}", error.what());
    }
  }
  // A list the source cannot encode travels as length -1, so the receivers fail with it.
  at::TensorOptions longs = at::TensorOptions(at::kLong).device(collectives_.device());
  int64_t sent = local_error.empty() ? static_cast<int64_t>(payload.size()) : -1;
  std::vector<at::Tensor> length{at::full({1}, sent, longs)};
  collectives_.Broadcast(length, from_process);
  if (!local_error.empty()) throw OperationError(local_error);
  int64_t size = length[0].item<int64_t>();
  if (size < 0) {
    throw OperationError(
        fmt::format("broadcast_object_list: rank {} could not encode its list (its own error "
                    "says why)",
                    from_process));
  }
  std::vector<at::Tensor> buffer{Staging(0, std::max<int64_t>(size, 1))};
  if (source) {
    at::Tensor host = at::empty({std::max<int64_t>(size, 1)}, at::kByte);
    std::memcpy(host.data_ptr(), payload.data(), payload.size());
    buffer[0].copy_(host);
  }
  collectives_.Broadcast(buffer, from_process);
  if (source) return;
  at::Tensor host = buffer[0].cpu();
  Value list =
      DecodeValue(std::string_view(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(size)));
  objects = std::move(list.items());
}

Value DataOps::Reduce(const Value& data, std::string_view reduction, double scale) {
  at::NoGradGuard no_grad;
  Reduction how;
  std::vector<Leaf> leaves;
  auto clones = [&] {
    std::vector<at::Tensor> copies;
    for (const Leaf& leaf : leaves) copies.push_back(leaf.tensor.clone(at::MemoryFormat::Contiguous));
    return copies;
  };
  if (!collectives_.distributed()) {
    how = ParseReduction(reduction);
    leaves = TensorLeaves(data, "reduce");
    return ReplaceTensors(data, clones());
  }
  // Argument checks run inside the agreement, so a bad one on any rank fails every rank.
  Agree(kReduce, "reduce", data, /*dims_only=*/false, fmt::format("reduction={} scale={}", reduction, scale),
        [&] {
          how = ParseReduction(reduction);
          leaves = TensorLeaves(data, "reduce");
          CheckDevices(data, leaves, collectives_.device(), "reduce");
          for (size_t i = 0; i < leaves.size(); ++i) {
            if ((how.mean || scale != 1.0) && !at::isFloatingType(leaves[i].tensor.scalar_type())) {
              throw OperationError(
                  fmt::format("reduce: {} of the {} tensor at {} cannot be stored in its own dtype "
                              "(torch refuses the in-place {}); use `sum` without a scale, or "
                              "convert it to a floating dtype first",
                              how.mean ? "`mean`" : "scaling", c10::toString(leaves[i].tensor.scalar_type()),
                              LeafPath(data, i), how.mean ? "division" : "multiplication"));
            }
          }
        });
  if (leaves.empty()) return data;
  std::vector<at::Tensor> results = clones();

  // One flat buffer per wire dtype; a lone leaf already of its wire dtype is reduced in place.
  // Empty tensors need no reduction and take no part.
  std::map<at::ScalarType, std::vector<size_t>> groups;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].numel() > 0) groups[WireType(results[i].scalar_type())].push_back(i);
  }
  std::vector<at::Tensor> wire;
  std::vector<std::pair<size_t, std::vector<size_t>>> packed;  // index in `wire`, members
  for (const auto& [type, members] : groups) {
    if (members.size() == 1 && results[members[0]].scalar_type() == type) {
      wire.push_back(results[members[0]].view({-1}));
      continue;
    }
    int64_t count = 0;
    for (size_t i : members) count += results[i].numel();
    at::Tensor flat = at::empty({count}, results[members[0]].options().dtype(type));
    int64_t offset = 0;
    for (size_t i : members) {
      flat.narrow(0, offset, results[i].numel()).copy_(results[i].view({-1}));
      offset += results[i].numel();
    }
    packed.emplace_back(wire.size(), members);
    wire.push_back(flat);
  }
  if (!wire.empty()) collectives_.AllReduce(wire, how.op);
  for (const auto& [index, members] : packed) {
    int64_t offset = 0;
    for (size_t i : members) {
      at::Tensor part = wire[index].narrow(0, offset, results[i].numel()).view(results[i].sizes());
      if (results[i].scalar_type() == at::kBool) part = part.ne(0);
      results[i].copy_(part);
      offset += results[i].numel();
    }
  }
  for (at::Tensor& result : results) {
    if (how.mean) result.div_(world_size());
    if (scale != 1.0) result.mul_(scale);
  }
  return ReplaceTensors(data, results);
}

Value DataOps::PadAcrossProcesses(const Value& data, int64_t dim, const c10::Scalar& pad_index,
                                  bool pad_first) {
  if (!collectives_.distributed()) return data;
  at::NoGradGuard no_grad;
  std::vector<Leaf> leaves;
  Agree(kPad, "pad_across_processes", data, /*dims_only=*/true,
        fmt::format("dim={} pad_index={} pad_first={}", dim, pad_index.toDouble(), pad_first), [&] {
          leaves = TensorLeaves(data, "pad_across_processes");
          CheckDevices(data, leaves, collectives_.device(), "pad_across_processes");
        });
  // Which leaves take part: those `dim` indexes (nested tensors cannot be padded).
  std::vector<size_t> padded;
  int64_t shape_values = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const at::Tensor& tensor = leaves[i].tensor;
    if (tensor.is_nested() || dim < -tensor.dim() || dim >= tensor.dim()) continue;
    padded.push_back(i);
    shape_values += tensor.dim();
  }
  if (padded.empty()) return data;
  int world = world_size();
  at::Tensor shapes = at::empty({shape_values}, at::kLong);
  int64_t offset = 0;
  for (size_t i : padded) {
    for (int64_t size : leaves[i].tensor.sizes()) shapes[offset++] = size;
  }
  shapes = shapes.to(collectives_.device());
  at::Tensor all = at::empty({world, shape_values}, shapes.options());
  collectives_.AllGather(shapes, all);
  all = all.cpu();
  std::vector<at::Tensor> results;
  for (const Leaf& leaf : leaves) results.push_back(leaf.tensor);
  offset = 0;
  for (size_t i : padded) {
    const at::Tensor& tensor = leaves[i].tensor;
    int64_t axis = dim < 0 ? dim + tensor.dim() : dim;
    int64_t largest = all.select(1, offset + axis).max().item<int64_t>();
    offset += tensor.dim();
    int64_t own = tensor.size(axis);
    if (own == largest) continue;
    std::vector<int64_t> shape = tensor.sizes().vec();
    shape[axis] = largest;
    at::Tensor grown = at::zeros(shape, tensor.options()) + pad_index;
    grown.narrow(axis, pad_first ? largest - own : 0, own).copy_(tensor);
    results[i] = grown;
  }
  return ReplaceTensors(data, results);
}

void DataOps::WaitForEveryone() { collectives_.Barrier(); }

}  // namespace accel::rt::distributed
