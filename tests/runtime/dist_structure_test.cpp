// The local (non-collective) data operations and the object codec: no process group needed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "runtime/distributed/object_codec.h"
#include "runtime/distributed/structure.h"

namespace accel::rt::distributed {
namespace {

Value T(at::Tensor tensor) { return Value::Tensor(std::move(tensor)); }

// A batch with every container kind and some non-tensor leaves.
Value Batch() {
  return Value::Dict({
      {"input_ids", T(at::arange(6, at::kLong).view({2, 3}))},
      {"pair", Value::Tuple({T(at::ones({2, 2}, at::kHalf)), Value::String("meta")})},
      {"span", Value::NamedTuple("Span", {"start", "end"}, {T(at::zeros({2})), Value::Int(7)})},
      {"extra", Value::List({Value(), Value::Float(0.5), Value::Bool(true)})},
  });
}

std::string Message(const std::function<void()>& body) {
  try {
    body();
  } catch (const OperationError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no OperationError";
  return "";
}

TEST(RecursivelyApply, RebuildsEveryContainerKindAndLeavesOtherLeavesAlone) {
  Value doubled = RecursivelyApply(Batch(), [](const Value& leaf) { return T(leaf.tensor() * 2); });
  EXPECT_EQ(Layout(doubled), Layout(Batch()));
  EXPECT_EQ(doubled.keys(), (std::vector<std::string>{"input_ids", "pair", "span", "extra"}));
  EXPECT_TRUE(at::equal(doubled.Find("input_ids")->tensor(), at::arange(6, at::kLong).view({2, 3}) * 2));
  const Value& span = *doubled.Find("span");
  EXPECT_EQ(span.kind(), Value::Kind::kNamedTuple);
  EXPECT_EQ(span.type_name(), "Span");
  EXPECT_EQ(span.Find("end")->as_int(), 7);
  EXPECT_EQ(doubled.Find("pair")->items()[1].as_string(), "meta");
  EXPECT_TRUE(doubled.Find("extra")->items()[0].is_none());
}

TEST(RecursivelyApply, ErrorOnOtherTypeNamesTheFunctionAndThePath) {
  ApplyOptions options;
  options.error_on_other_type = true;
  options.function_name = "gather";
  std::string message = Message([&] {
    RecursivelyApply(
        Batch(), [](const Value& v) { return v; }, options);
  });
  EXPECT_NE(message.find("gather: the leaf at [\"pair\"][1] is a string"), std::string::npos) << message;
}

TEST(SendToDevice, MovesTensorsButNotSkippedKeysAtAnyDepth) {
  Value data = Value::Dict({{"x", T(at::ones({2}))},
                            {"labels", T(at::ones({2}))},
                            {"inner", Value::Dict({{"labels", T(at::ones({1}))}, {"y", T(at::ones({1}))}})}});
  Value moved = SendToDevice(data, c10::Device(c10::kMeta), false, {"labels"});
  EXPECT_TRUE(moved.Find("x")->tensor().is_meta());
  EXPECT_FALSE(moved.Find("labels")->tensor().is_meta());
  EXPECT_FALSE(moved.Find("inner")->Find("labels")->tensor().is_meta());
  EXPECT_TRUE(moved.Find("inner")->Find("y")->tensor().is_meta());
}

TEST(SliceTensors, TakesViewsWithPythonSliceBounds) {
  at::Tensor base = at::arange(10, at::kFloat);
  Value sliced = SliceTensors(Value::List({T(base), Value::Int(3)}), -4, 100);
  const at::Tensor& view = sliced.items()[0].tensor();
  EXPECT_TRUE(at::equal(view, at::arange(6, 10, at::kFloat)));
  EXPECT_TRUE(view.is_alias_of(base));
  EXPECT_EQ(sliced.items()[1].as_int(), 3);
  EXPECT_EQ(SliceTensors(T(base), 0, 10, 3).tensor().numel(), 4);
  EXPECT_EQ(SliceTensors(T(base), 7, 2).tensor().numel(), 0);
}

TEST(Concatenate, ConcatenatesPositionByPositionAndKeyByKey) {
  std::vector<Value> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(Value::Dict(
        {{"a", T(at::full({1, 2}, float(i)))}, {"b", Value::List({T(at::full({2}, int64_t(i)))})}}));
  }
  Value joined = Concatenate(parts);
  EXPECT_EQ(Layout(joined), "{\"a\": float32[3, 2], \"b\": [int64[6]]}");
  EXPECT_TRUE(at::equal(joined.Find("b")->items()[0].tensor(), at::tensor({0, 0, 1, 1, 2, 2}, at::kLong)));
  EXPECT_EQ(Layout(Concatenate({T(at::ones({2, 1})), T(at::ones({2, 3}))}, 1)), "float32[2, 4]");
  // A single element of any kind comes back as is; a single tensor is still concatenated.
  EXPECT_EQ(Concatenate({Value::String("x")}).as_string(), "x");
  EXPECT_EQ(Layout(Concatenate({T(at::ones({2}))})), "float32[2]");
}

TEST(Concatenate, ReportsMissingKeysNonTensorsAndShapeMismatches) {
  EXPECT_NE(Message([] {
              Concatenate({Value::Dict({{"a", T(at::ones({1}))}}), Value::Dict({})});
            }).find("element 1 has no key \"a\""),
            std::string::npos);
  EXPECT_NE(Message([] {
              Concatenate({Value::Int(1), Value::Int(2)});
            }).find("not 2 ints"),
            std::string::npos);
  EXPECT_NE(Message([] {
              Concatenate({T(at::ones({2, 2})), T(at::ones({2, 3}))});
            }).find("concatenate: "),
            std::string::npos);
  EXPECT_NE(Message([] { Concatenate({}); }).find("empty"), std::string::npos);
}

TEST(ConvertToFp32, UpcastsHalfAndBFloat16Only) {
  Value data = Value::List({T(at::ones({2}, at::kHalf)), T(at::ones({2}, at::kBFloat16)),
                            T(at::ones({2}, at::kDouble)), T(at::ones({2}, at::kInt)), Value::String("s")});
  EXPECT_EQ(Layout(ConvertToFp32(data)), "[float32[2], float32[2], float64[2], int32[2], str]");
}

TEST(Listify, GivesNestedNumbersAndScalarsForZeroDimTensors) {
  Value data = Value::Dict({{"m", T(at::arange(4, at::kLong).view({2, 2}))},
                            {"s", T(at::scalar_tensor(2.5, at::kBFloat16))},
                            {"b", T(at::tensor({1, 0}, at::kInt).to(at::kBool))}});
  Value list = Listify(data);
  EXPECT_EQ(Describe(list), "{\"m\": [[0, 1], [2, 3]], \"s\": 2.5, \"b\": [True, False]}");
}

TEST(FindBatchSize, FollowsTheFirstElementDownToATensor) {
  EXPECT_EQ(FindBatchSize(Batch()), 2);
  EXPECT_EQ(FindBatchSize(Value::List({Value::Tuple({T(at::ones({5, 3}))})})), 5);
  EXPECT_NE(Message([] { FindBatchSize(Value::List({})); }).find("is empty"), std::string::npos);
  EXPECT_NE(Message([] { FindBatchSize(Value::List({Value::Int(3)})); }).find("[0]) is a int"),
            std::string::npos);
  EXPECT_NE(Message([] { FindBatchSize(T(at::scalar_tensor(1.0))); }).find("no dimensions"),
            std::string::npos);
}

TEST(Value, RejectsDuplicateKeysAndMismatchedNamedTuples) {
  EXPECT_THROW(Value::Dict({{"a", Value()}, {"a", Value()}}), OperationError);
  EXPECT_THROW(Value::NamedTuple("P", {"x"}, {}), OperationError);
  EXPECT_THROW(Value::Int(1).as_string(), OperationError);
}

TEST(ObjectCodec, RoundTripsEveryKind) {
  Value data = Value::List({Batch(), T(at::arange(12, at::kFloat).view({3, 4}).t()),  // non-contiguous
                            T(at::ones({2}, at::kBFloat16)), T(at::empty({0, 3})), Value::Float(-0.25),
                            Value::Int(-(int64_t{1} << 40)), Value::String(std::string("a\0b", 3))});
  Value back = DecodeValue(EncodeValue(data));
  EXPECT_TRUE(Identical(back, data)) << Describe(back);
}

TEST(ObjectCodec, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = EncodeValue(Batch());
  for (size_t length = 0; length < bytes.size(); ++length) {
    EXPECT_THROW(DecodeValue(std::string_view(bytes.data(), length)), OperationError) << length;
  }
  EXPECT_THROW(DecodeValue(bytes + "x"), OperationError);
  std::string wrong_version = bytes;
  wrong_version[0] = 9;
  EXPECT_THROW(DecodeValue(wrong_version), OperationError);
}

}  // namespace
}  // namespace accel::rt::distributed
