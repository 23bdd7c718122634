// accel_data: datasets from CSV, .npy and safetensors files, and Accelerate's sharding of a
// map-style dataset across processes (runtime/data/sampler.h). The sharding expectations are
// worked out by hand from Accelerate's BatchSamplerShard and DataLoaderDispatcher; the
// permutations come from Python's torch (see each test).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/columns.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/data/sampler.h"

namespace accel::rt::data {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

// ---- helpers ----

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "accel_data_test_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  // Writes `contents` to `name` inside the directory and returns its path.
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string path = path_ + "/" + name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ErrorText(llvm::Error error) { return llvm::toString(std::move(error)); }

template <typename T>
std::string ErrorOf(llvm::Expected<T> value) {
  EXPECT_FALSE(static_cast<bool>(value)) << "expected an error";
  return value ? std::string() : llvm::toString(value.takeError());
}

template <typename T>
T Unwrap(llvm::Expected<T> value) {
  if (!value) {
    // No default value to go on with: stop here, loudly.
    std::fprintf(stderr, "unexpected error: %s\n", llvm::toString(value.takeError()).c_str());
    std::abort();
  }
  return std::move(*value);
}

Batches Shard(ShardSpec spec, int64_t epoch = 0) { return Unwrap(ShardBatches(spec, epoch)); }

ShardSpec Spec(int64_t size, int64_t batch_size, int processes, int rank) {
  ShardSpec spec;
  spec.dataset_size = size;
  spec.batch_size = batch_size;
  spec.num_processes = processes;
  spec.process_index = rank;
  return spec;
}

std::vector<int64_t> Longs(const at::Tensor& tensor) {
  at::Tensor contiguous = tensor.contiguous();
  return std::vector<int64_t>(contiguous.data_ptr<int64_t>(),
                              contiguous.data_ptr<int64_t>() + tensor.numel());
}

std::vector<float> Floats(const at::Tensor& tensor) {
  at::Tensor contiguous = tensor.contiguous();
  return std::vector<float>(contiguous.data_ptr<float>(), contiguous.data_ptr<float>() + tensor.numel());
}

// A .npy file image as numpy.save writes it: magic, version, header padded to 64 bytes.
std::string Npy(const std::string& descr, const std::string& shape, const std::string& data, int major = 1,
                const std::string& fortran = "False") {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(major);
  file += '\0';
  uint32_t length = header.size();
  file.append(reinterpret_cast<const char*>(&length), major == 1 ? 2 : 4);
  return file + header + data;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// ---- sharding: one process ----

TEST(ShardBatches, OneProcessKeepsTheLoadersBatches) {
  // Accelerate does not wrap a single process's loader: the short last batch stays short.
  EXPECT_EQ(Shard(Spec(10, 3, 1, 0)), (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
  ShardSpec drop = Spec(10, 3, 1, 0);
  drop.drop_last = true;
  EXPECT_EQ(Shard(drop), (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}));
  ShardSpec dispatch = Spec(10, 3, 1, 0);
  dispatch.dispatch_batches = true;
  EXPECT_EQ(Shard(dispatch), (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
}

// ---- sharding: BatchSamplerShard, whole batches ----
// Loader batches of 10 samples by 3: [0 1 2] [3 4 5] [6 7 8] [9].

TEST(ShardBatches, EvenBatchesWrapsTheLastRoundAround) {
  // Round 1 is complete; in round 2 process 0 keeps [6 7 8], process 1's short [9] is
  // completed with the first samples of the epoch.
  EXPECT_EQ(Shard(Spec(10, 3, 2, 0)), (Batches{{0, 1, 2}, {6, 7, 8}}));
  EXPECT_EQ(Shard(Spec(10, 3, 2, 1)), (Batches{{3, 4, 5}, {9, 0, 1}}));
}

TEST(ShardBatches, UnevenBatchesKeepTheShortLastBatch) {
  ShardSpec spec = Spec(10, 3, 2, 0);
  spec.even_batches = false;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1, 2}, {6, 7, 8}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}, {9}}));
}

TEST(ShardBatches, DropLastDropsTheIncompleteRound) {
  for (bool even : {true, false}) {
    ShardSpec spec = Spec(10, 3, 2, 0);
    spec.drop_last = true;
    spec.even_batches = even;
    EXPECT_EQ(Shard(spec), (Batches{{0, 1, 2}}));
    spec.process_index = 1;
    EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}}));
  }
}

TEST(ShardBatches, EvenBatchesAddsWholeBatchesToFinishTheRound) {
  // 10 by 2 on 3 processes: [0 1] [2 3] [4 5] | [6 7] [8 9] and process 2 gets [0 1] again.
  EXPECT_EQ(Shard(Spec(10, 2, 3, 0)), (Batches{{0, 1}, {6, 7}}));
  EXPECT_EQ(Shard(Spec(10, 2, 3, 1)), (Batches{{2, 3}, {8, 9}}));
  EXPECT_EQ(Shard(Spec(10, 2, 3, 2)), (Batches{{4, 5}, {0, 1}}));
  ShardSpec uneven = Spec(10, 2, 3, 2);
  uneven.even_batches = false;
  EXPECT_EQ(Shard(uneven), (Batches{{4, 5}}));
}

TEST(ShardBatches, EvenBatchesRepeatsADatasetSmallerThanOneRound) {
  // 3 samples by 2 on 3 processes: [0 1] [2]; the data repeats to fill 3 batches.
  EXPECT_EQ(Shard(Spec(3, 2, 3, 0)), (Batches{{0, 1}}));
  EXPECT_EQ(Shard(Spec(3, 2, 3, 1)), (Batches{{2, 0}}));
  EXPECT_EQ(Shard(Spec(3, 2, 3, 2)), (Batches{{1, 2}}));
}

// ---- sharding: BatchSamplerShard, split batches ----
// Loader batches of 10 samples by 4: [0 1 2 3] [4 5 6 7] [8 9].

TEST(ShardBatches, SplitBatchesCutsEveryBatch) {
  EXPECT_EQ(Shard([] {
              ShardSpec spec = Spec(10, 4, 2, 0);
              spec.split_batches = true;
              return spec;
            }()),
            (Batches{{0, 1}, {4, 5}, {8, 9}}));
  ShardSpec spec = Spec(10, 4, 2, 1);
  spec.split_batches = true;
  // [8 9] is completed to [8 9 0 1]: process 1 gets the wrapped half.
  EXPECT_EQ(Shard(spec), (Batches{{2, 3}, {6, 7}, {0, 1}}));
}

TEST(ShardBatches, SplitBatchesUnevenAndDropLast) {
  ShardSpec spec = Spec(10, 4, 2, 0);
  spec.split_batches = true;
  spec.even_batches = false;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1}, {4, 5}, {8, 9}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec), (Batches{{2, 3}, {6, 7}}));
  spec.drop_last = true;
  spec.even_batches = true;
  EXPECT_EQ(Shard(spec), (Batches{{2, 3}, {6, 7}}));
  spec.process_index = 0;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1}, {4, 5}}));
}

TEST(ShardBatches, SplitBatchesNeedsAMultipleOfTheProcessCount) {
  ShardSpec spec = Spec(10, 3, 2, 0);
  spec.split_batches = true;
  EXPECT_EQ(ErrorOf(ShardBatches(spec, 0)),
            "split_batches: batch_size 3 is not a multiple of num_processes 2 [DL-001]; each loader batch is "
            "split evenly across the processes, so use a multiple such as 4 or turn split_batches off");
  // BatchSamplerShard refuses batch size 1 too; so do we, dispatching or not.
  spec.batch_size = 1;
  spec.dispatch_batches = true;
  EXPECT_NE(ErrorOf(ShardBatches(spec, 0)).find("[DL-001]"), std::string::npos);
}

// ---- sharding: DataLoaderDispatcher ----

TEST(ShardBatches, DispatchSlicesTheConcatenatedStep) {
  // Steps [0..5] and [6 7 8 9]: the last step of 4 splits 2 and 2, unlike BatchSamplerShard.
  ShardSpec spec = Spec(10, 3, 2, 0);
  spec.dispatch_batches = true;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1, 2}, {6, 7}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}, {8, 9}}));
  // even_batches does not matter when dispatching.
  spec.even_batches = false;
  EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}, {8, 9}}));
}

TEST(ShardBatches, DispatchCompletesAnOddLastStepWithTheFirstSamples) {
  // 7 by 3 on 2: steps [0..5] and [6]; [6] + [0 1] gives each process one sample.
  ShardSpec spec = Spec(7, 3, 2, 0);
  spec.dispatch_batches = true;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1, 2}, {6}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}, {0}}));
}

TEST(ShardBatches, DispatchDropLastDropsTheIncompleteStep) {
  ShardSpec spec = Spec(10, 3, 2, 1);
  spec.dispatch_batches = true;
  spec.drop_last = true;
  EXPECT_EQ(Shard(spec), (Batches{{3, 4, 5}}));
}

TEST(ShardBatches, DispatchWithSplitBatchesSlicesEachLoaderBatch) {
  ShardSpec spec = Spec(10, 4, 2, 0);
  spec.dispatch_batches = true;
  spec.split_batches = true;
  EXPECT_EQ(Shard(spec), (Batches{{0, 1}, {4, 5}, {8}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec), (Batches{{2, 3}, {6, 7}, {9}}));
  // 9 samples: the last batch [8] + [0 1].
  spec.dataset_size = 9;
  EXPECT_EQ(Shard(spec), (Batches{{2, 3}, {6, 7}, {0}}));
}

TEST(ShardBatches, RejectsAProcessThatWouldGetAnEmptyBatch) {
  ShardSpec spec = Spec(1, 1, 3, 2);
  spec.dispatch_batches = true;
  EXPECT_EQ(ErrorOf(ShardBatches(spec, 0)),
            "process 2 of 3 would get an empty batch: 1 samples cannot give every process a share; use more "
            "samples or fewer processes");
}

TEST(ShardBatches, RejectsInvalidSpecs) {
  EXPECT_EQ(ErrorOf(ShardBatches(Spec(10, 0, 1, 0), 0)), "batch_size must be at least 1, found 0");
  EXPECT_EQ(ErrorOf(ShardBatches(Spec(10, 2, 2, 2), 0)), "process_index 2 is outside [0, 2)");
  EXPECT_EQ(ErrorOf(ShardBatches(Spec(10, 2, 0, 0), 0)), "num_processes must be at least 1, found 0");
  EXPECT_EQ(ErrorOf(ShardBatches(Spec(10, 2, 1, 0), -1)), "epoch -1 is negative");
}

// ---- orders ----

TEST(EpochOrder, SeedableSamplerMatchesTorch) {
  // Python (torch 1.13): g = torch.Generator(); g.manual_seed(42 + epoch);
  // list(torch.utils.data.RandomSampler(range(10), generator=g))
  ShardSpec spec = Spec(10, 3, 1, 0);
  spec.shuffle = true;
  spec.use_seedable_sampler = true;
  spec.seed = 42;
  EXPECT_EQ(EpochOrder(spec, 0), (std::vector<int64_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7}));
  EXPECT_EQ(EpochOrder(spec, 1), (std::vector<int64_t>{8, 4, 9, 0, 5, 1, 6, 7, 2, 3}));
}

TEST(EpochOrder, SynchronizedGeneratorMatchesTorch) {
  // Python (torch 1.13): torch.manual_seed(42);
  // s0 = int(torch.empty((), dtype=torch.int64).random_().item())  # 6909045637428952499
  // g = torch.Generator(); g.manual_seed(s0); sampler = RandomSampler(range(10), generator=g)
  // list(sampler) three times, one per epoch.
  ShardSpec spec = Spec(10, 3, 2, 0);
  spec.shuffle = true;
  spec.seed = 42;
  const std::vector<std::vector<int64_t>> expected = {
      {4, 2, 8, 9, 1, 7, 0, 3, 5, 6}, {6, 2, 3, 8, 5, 4, 7, 9, 1, 0}, {3, 4, 9, 0, 1, 8, 7, 6, 2, 5}};
  for (int64_t epoch = 0; epoch < 3; ++epoch) EXPECT_EQ(EpochOrder(spec, epoch), expected[epoch]);
  // The stateful sharder gives the same orders in any access order.
  EpochSharder sharder = Unwrap(EpochSharder::Create(spec));
  EXPECT_EQ(sharder.Batches(2)[0], (std::vector<int64_t>{3, 4, 9}));
  EXPECT_EQ(sharder.Batches(0)[0], (std::vector<int64_t>{4, 2, 8}));
  EXPECT_EQ(sharder.Batches(1)[0], (std::vector<int64_t>{6, 2, 3}));
  EpochSharder copy = sharder;
  EXPECT_EQ(copy.Batches(2)[0], (std::vector<int64_t>{3, 4, 9}));
  EXPECT_EQ(sharder.Batches(2)[0], (std::vector<int64_t>{3, 4, 9}));
}

TEST(ShardBatches, ShuffledRanksShareOneOrder) {
  // Seedable order of epoch 1 (above) sharded as in EvenBatchesWrapsTheLastRoundAround.
  ShardSpec spec = Spec(10, 3, 2, 0);
  spec.shuffle = true;
  spec.use_seedable_sampler = true;
  spec.seed = 42;
  EXPECT_EQ(Shard(spec, 1), (Batches{{8, 4, 9}, {6, 7, 2}}));
  spec.process_index = 1;
  EXPECT_EQ(Shard(spec, 1), (Batches{{0, 5, 1}, {3, 8, 4}}));
}

// ---- synthetic data ----

TEST(GenerateSyntheticRegression, MatchesTheQuickstartGenerator) {
  // Python (torch as pinned in python/requirements.txt), mirroring runtime/train/synthetic_data.cpp:
  // g = torch.Generator(); g.manual_seed((7 * 0x9E3779B97F4A7C15) % 2**64)
  // x = torch.randn(5, 3, generator=g); w = torch.randn(3, 2, generator=g) / math.sqrt(3)
  // y = x @ w; y += 0.25 * torch.randn(y.shape, generator=g)
  Dataset dataset = GenerateSyntheticRegression(5, 3, 2, 0.25, 7);
  ASSERT_EQ(dataset.features.sizes(), (std::vector<int64_t>{5, 3}));
  ASSERT_EQ(dataset.targets.sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(Floats(dataset.features),
            (std::vector<float>{-3.01896882f, -0.994632185f, 1.40915048f, 0.412501961f, -1.48368013f,
                                -0.419855654f, 0.868035614f, 0.867536306f, -0.711420715f, 0.804134548f,
                                -0.502863228f, 0.345409572f, -1.19975305f, -1.83260036f, -0.489575326f}));
  // The targets go through a matrix product, whose last bits depend on the kernel the BLAS picks
  // for this CPU (AVX2 and AVX-512 machines differ by an ulp or two, in PyTorch too): equal to
  // within a few ulps, where a wrong generator or order would miss by whole units.
  const std::vector<float> expected{-1.70629346f, 0.897289336f, -1.14059091f, 0.769546747f, 0.330277026f,
                                    -1.18174911f, -0.366083682f, 0.345215887f, -1.57682502f, 1.45015466f};
  const std::vector<float> targets = Floats(dataset.targets);
  ASSERT_EQ(targets.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(targets[i], expected[i], 1e-6f) << "target " << i;
}

// ---- CSV ----

TEST(LoadCsv, ReadsFeaturesAndRegressionTargets) {
  TempDir dir;
  std::string path = dir.Write("data.csv", "\xEF\xBB\xBFx1, x2 ,y\r\n1,2,3\r\n\r\n -4.5 ,+5e1,6\r\n");
  Dataset dataset = Unwrap(LoadCsv(path, {}, {"y"}, TargetKind::kRegression));
  EXPECT_EQ(dataset.features.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{1, 2, -4.5f, 50}));
  EXPECT_EQ(dataset.targets.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Floats(dataset.targets), (std::vector<float>{3, 6}));
}

TEST(LoadCsv, ChoosesColumnsAndReadsClassLabels) {
  TempDir dir;
  // `id` is neither a feature nor a target, so it is not parsed.
  std::string path = dir.Write("data.csv", "id,a,b,label\nx7,1,2,0\nx8,3,4,2.0\n");
  Dataset dataset = Unwrap(LoadCsv(path, {"b", "a"}, {"label"}, TargetKind::kClassLabels));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{2, 1, 4, 3}));
  EXPECT_EQ(dataset.targets.scalar_type(), at::kLong);
  EXPECT_EQ(Longs(dataset.targets), (std::vector<int64_t>{0, 2}));
}

TEST(LoadCsv, ReportsCellErrorsWithLineAndColumn) {
  TempDir dir;
  std::string path = dir.Write("data.csv", "a,b,y\n1,2,3\n4, abc,6\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path +
                ":3:4: expected a number in column `b`, found `abc`; cells must be plain numbers such as "
                "`-1.5e3` (no quotes, units or thousands separators)");
  path = dir.Write("empty_cell.csv", "a,b,y\n1,,3\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path +
                ":2:3: expected a number in column `b`, found an empty cell; cells must be plain numbers "
                "such as `-1.5e3` (no quotes, units or thousands separators)");
  path = dir.Write("label.csv", "a,y\n1,0\n2,1.5\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kClassLabels)),
            path +
                ":3:3: expected an integer class label in column `y`, found `1.5`; labels are class indices "
                "0, 1, 2, ...");
}

// A spec can name any file as its CSV: the first line of a password file or a key must not
// come back as "the columns are ...", and a device or FIFO is refused before it is read
// (`/dev/zero` was read until every rank ran out of memory).
TEST(LoadCsv, ShowsNothingOfAFileThatIsNotItsCsvAndRefusesSpecialFiles) {
  TempDir dir;
  std::string path = dir.Write("shadow", "root:$6$secrethash:19000:0:99999:7:::\nbin:*:19000\n");
  std::string error = ErrorOf(LoadCsv(path, {}, {"label"}, TargetKind::kClassLabels));
  EXPECT_EQ(error, path + ":1:1: the header has no column `label` (named in target_columns); it has 1 column");
  EXPECT_EQ(error.find("secrethash"), std::string::npos);
  EXPECT_EQ(ErrorOf(LoadCsv("/dev/zero", {}, {"y"}, TargetKind::kRegression)),
            "/dev/zero: cannot read it as data: it is under /dev, a file the system makes, not one a config names");
  std::string fifo = dir.Write("pipe.csv", "");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ErrorOf(LoadCsv(fifo, {}, {"y"}, TargetKind::kRegression)),
            fifo + ": cannot read it as data: it is a FIFO (named pipe)");
}

TEST(LoadCsv, ReportsRowsWithTheWrongCellCount) {
  TempDir dir;
  std::string path = dir.Write("short.csv", "a,b,y\n1,2,3\n\n4,5\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path + ":4:4: expected 3 cells as in the header, found 2; every row needs one value per column");
  path = dir.Write("long.csv", "a,b,y\n1,2,3,4\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path + ":2:6: expected 3 cells as in the header, found 4; every row needs one value per column");
}

TEST(LoadCsv, ReportsHeaderAndColumnErrors) {
  TempDir dir;
  std::string path = dir.Write("data.csv", "price,size,rooms\n1,2,3\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"prise"}, TargetKind::kRegression)),
            path + ":1:1: the header has no column `prise` (named in target_columns); did you mean `price`?");
  EXPECT_EQ(
      ErrorOf(LoadCsv(path, {"zzzzzz"}, {"price"}, TargetKind::kRegression)),
      path + ":1:1: the header has no column `zzzzzz` (named in feature_columns); it has 3 columns");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {"size", "price"}, {"price"}, TargetKind::kRegression)),
            path +
                ":1:1: column `price` is named twice in feature_columns and target_columns; a column is "
                "either a feature or a target");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"price", "size", "rooms"}, TargetKind::kRegression)),
            path + ":1:1: no feature columns are left once the targets are taken; add input columns");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"price", "size"}, TargetKind::kClassLabels)),
            path + ": class labels come from exactly one column, 2 were given");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {}, TargetKind::kRegression)),
            path + ": no target columns given; name the column(s) the model must predict");
  path = dir.Write("duplicate.csv", "a,b,a\n1,2,3\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"b"}, TargetKind::kRegression)),
            path + ":1:5: duplicate column `a` (also column 1); rename one of them");
  path = dir.Write("unnamed.csv", "a,,c\n1,2,3\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"a"}, TargetKind::kRegression)),
            path + ":1:3: column 2 has no name; every header cell must name its column");
}

TEST(LoadCsv, ReportsEmptyAndMissingFiles) {
  TempDir dir;
  std::string path = dir.Write("empty.csv", "");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path + ":1:1: the first line is empty; it must be a header naming the columns, e.g. `x1,x2,y`");
  path = dir.Write("header.csv", "x,y\n\n");
  EXPECT_EQ(ErrorOf(LoadCsv(path, {}, {"y"}, TargetKind::kRegression)),
            path + ":3:1: no data rows after the header; add one line per sample");
  std::string missing = dir.Path("missing.csv");
  EXPECT_EQ(ErrorOf(LoadCsv(missing, {}, {"y"}, TargetKind::kRegression)),
            missing + ": cannot read: No such file or directory");
}

// ---- .npy ----

TEST(LoadNpy, ReadsFloatFeaturesAndIntegerLabels) {
  TempDir dir;
  std::string x = dir.Write("x.npy", Npy("<f4", "(2, 3)", Bytes<float>({1, 2, 3, 4, 5, 6})));
  std::string y = dir.Write("y.npy", Npy("<i8", "(2,)", Bytes<int64_t>({1, 0})));
  Dataset dataset = Unwrap(LoadNpy(x, y, TargetKind::kClassLabels));
  EXPECT_EQ(dataset.features.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Longs(dataset.targets), (std::vector<int64_t>{1, 0}));
}

TEST(LoadNpy, ReadsOtherVersionsAndDtypes) {
  TempDir dir;
  // Version 2 header, float64 features, 1-D regression targets become [N, 1].
  std::string x = dir.Write("x.npy", Npy("<f8", "(2, 1)", Bytes<double>({0.5, -1}), 2));
  std::string y = dir.Write("y.npy", Npy("<i4", "(2,)", Bytes<int32_t>({7, 8}), 3));
  Dataset dataset = Unwrap(LoadNpy(x, y, TargetKind::kRegression));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{0.5f, -1}));
  EXPECT_EQ(dataset.targets.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Floats(dataset.targets), (std::vector<float>{7, 8}));
  std::string u = dir.Write("u.npy", Npy("|u1", "(2, 2)", std::string("\x01\x02\x03\xff", 4)));
  std::string b = dir.Write("b.npy", Npy("|b1", "(2,)", std::string("\x01\x00", 2)));
  dataset = Unwrap(LoadNpy(u, b, TargetKind::kClassLabels));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{1, 2, 3, 255}));
  EXPECT_EQ(Longs(dataset.targets), (std::vector<int64_t>{1, 0}));
}

TEST(LoadNpy, ReportsUnsupportedLayoutsAndDtypes) {
  TempDir dir;
  std::string y = dir.Write("y.npy", Npy("<f4", "(2,)", Bytes<float>({1, 2})));
  std::string fortran = dir.Write("f.npy", Npy("<f4", "(2, 1)", Bytes<float>({1, 2}), 1, "True"));
  EXPECT_EQ(ErrorOf(LoadNpy(fortran, y, TargetKind::kRegression)),
            fortran +
                ": the array is in Fortran order; save it in C order, e.g. "
                "`np.save(path, np.ascontiguousarray(arr))`");
  std::string big = dir.Write("big.npy", Npy(">f4", "(2, 1)", Bytes<float>({1, 2})));
  EXPECT_EQ(ErrorOf(LoadNpy(big, y, TargetKind::kRegression)),
            big +
                ": big-endian dtype `>f4` is not supported; convert it with "
                "`arr.astype(arr.dtype.newbyteorder('<'))`");
  std::string object = dir.Write("o.npy", Npy("|O", "(2, 1)", std::string(16, '\0')));
  EXPECT_EQ(ErrorOf(LoadNpy(object, y, TargetKind::kRegression)),
            object +
                ": object arrays (dtype `|O`) cannot be loaded; save a numeric array, e.g. "
                "`np.asarray(x, dtype=np.float32)`");
  std::string text = dir.Write("s.npy", Npy("<U3", "(2, 1)", std::string(24, '\0')));
  EXPECT_EQ(ErrorOf(LoadNpy(text, y, TargetKind::kRegression)),
            text +
                ": unsupported dtype `<U3`; use float16/32/64, int8/16/32/64, uint8 or bool, e.g. "
                "`arr.astype(np.float32)`");
  std::string structured = dir.Write("r.npy", Npy("x", "(2,)", "").replace(10 + 10, 3, "[('a', '<f4')]"));
  EXPECT_NE(ErrorOf(LoadNpy(structured, y, TargetKind::kRegression)).find("malformed .npy header"),
            std::string::npos);
}

TEST(LoadNpy, ReportsShapeErrors) {
  TempDir dir;
  std::string x = dir.Write("x.npy", Npy("<f4", "(3, 1)", Bytes<float>({1, 2, 3})));
  std::string y2 = dir.Write("y2.npy", Npy("<f4", "(2,)", Bytes<float>({1, 2})));
  EXPECT_EQ(ErrorOf(LoadNpy(x, y2, TargetKind::kRegression)),
            x + " has 3 rows but " + y2 + " has 2; features and targets need one row per sample");
  std::string flat = dir.Write("flat.npy", Npy("<f4", "(2,)", Bytes<float>({1, 2})));
  EXPECT_EQ(ErrorOf(LoadNpy(flat, y2, TargetKind::kRegression)),
            flat +
                ": features must be 2-D [samples, features], found shape (2,); reshape them, e.g. "
                "`x.reshape(len(x), -1)`");
  std::string x2 = dir.Write("x2.npy", Npy("<f4", "(2, 1)", Bytes<float>({1, 2})));
  EXPECT_EQ(ErrorOf(LoadNpy(x2, y2, TargetKind::kClassLabels)),
            y2 + ": class labels must have an integer dtype, found Float; save them as integers, e.g. "
                 "`y.astype(np.int64)`");
  std::string cube = dir.Write("cube.npy", Npy("<f4", "(2, 1, 1)", Bytes<float>({1, 2})));
  EXPECT_EQ(
      ErrorOf(LoadNpy(x2, cube, TargetKind::kRegression)),
      cube + ": regression targets must be 1-D [samples] or 2-D [samples, outputs], found shape (2, 1, 1)");
}

TEST(LoadNpy, ReportsDamagedFiles) {
  TempDir dir;
  std::string y = dir.Write("y.npy", Npy("<f4", "(2,)", Bytes<float>({1, 2})));
  std::string truncated = dir.Write("t.npy", Npy("<f4", "(2, 2)", Bytes<float>({1, 2, 3})));
  EXPECT_EQ(ErrorOf(LoadNpy(truncated, y, TargetKind::kRegression)),
            truncated + ": truncated: shape (2, 2) of `<f4` needs 16 data bytes, the file has 12");
  std::string junk = dir.Write("junk.npy", "col1,col2\n1,2\n");
  EXPECT_EQ(ErrorOf(LoadNpy(junk, y, TargetKind::kRegression)),
            junk + ": not a .npy file (no `\\x93NUMPY` magic); write it with `numpy.save`");
  std::string future = Npy("<f4", "(2, 1)", Bytes<float>({1, 2}));
  future[6] = 4;
  future = dir.Write("v4.npy", future);
  EXPECT_EQ(ErrorOf(LoadNpy(future, y, TargetKind::kRegression)),
            future + ": unsupported .npy format version 4.0; versions 1, 2 and 3 are read");
  std::string garbled = dir.Write("g.npy", Npy("<f4", "(2, x)", ""));
  EXPECT_EQ(
      ErrorOf(LoadNpy(garbled, y, TargetKind::kRegression)),
      garbled + ": malformed .npy header: expected a dimension in `shape`; write the file with `numpy.save`");
}

// ---- safetensors ----

TEST(LoadSafetensors, ReadsTensorsByKey) {
  TempDir dir;
  std::vector<uint16_t> half = {0x3C00, 0x4000};  // 1.0, 2.0 in float16
  std::vector<int32_t> labels = {3, 1};
  std::string path = dir.Path("data.safetensors");
  ASSERT_FALSE(checkpoint::WriteSafetensors(
      path, {{"x", "F16", {2, 1}, Bytes(half)}, {"label", "I32", {2}, Bytes(labels)}}));
  Dataset dataset = Unwrap(LoadSafetensors(path, "x", "label", TargetKind::kClassLabels));
  EXPECT_EQ(Floats(dataset.features), (std::vector<float>{1, 2}));
  EXPECT_EQ(Longs(dataset.targets), (std::vector<int64_t>{3, 1}));
}

TEST(LoadSafetensors, ReportsMissingKeysDtypesAndShapes) {
  TempDir dir;
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y = {1, 2, 3};
  std::vector<uint16_t> wide = {1, 2};
  std::string path = dir.Path("data.safetensors");
  ASSERT_FALSE(checkpoint::WriteSafetensors(path, {{"features", "F32", {2, 2}, Bytes(x)},
                                                   {"targets", "F32", {3}, Bytes(y)},
                                                   {"wide", "U16", {2}, Bytes(wide)}}));
  EXPECT_EQ(ErrorOf(LoadSafetensors(path, "feature", "targets", TargetKind::kRegression)),
            path + ": no tensor `feature`; did you mean `features`?");
  EXPECT_EQ(ErrorOf(LoadSafetensors(path, "features", "qqqqqqq", TargetKind::kRegression)),
            path + ": no tensor `qqqqqqq`; the tensors are `features`, `targets`, `wide`");
  EXPECT_EQ(ErrorOf(LoadSafetensors(path, "features", "wide", TargetKind::kRegression)),
            path +
                ": tensor `wide`: unsupported dtype U16; store F16, BF16, F32, F64, I8, I16, I32, I64, U8 or "
                "BOOL");
  EXPECT_EQ(ErrorOf(LoadSafetensors(path, "features", "targets", TargetKind::kRegression)),
            path + ": tensor `features` has 2 rows but " + path +
                ": tensor `targets` has 3; features and targets need one row per sample");
  std::string junk = dir.Write("junk.safetensors", "not a safetensors file");
  EXPECT_FALSE(ErrorOf(LoadSafetensors(junk, "features", "targets", TargetKind::kRegression)).empty());
}

// ---- DataLoader ----

Dataset Rows(int64_t n) {
  // Row i holds features (i, 10 i) and target i.
  at::Tensor index = at::arange(n, at::kFloat);
  return Dataset{at::stack({index, index * 10}, 1), index.unsqueeze(1)};
}

TEST(DataLoader, GathersTheShardsRowsAndWrapsIntoTheNextEpoch) {
  ShardSpec spec = Spec(0, 3, 2, 1);
  DataLoader loader = Unwrap(DataLoader::Create(Rows(10), spec));
  ASSERT_EQ(loader.batches_per_epoch(), 2);
  Batch first = loader.Next();
  EXPECT_EQ(Floats(first.features), (std::vector<float>{3, 30, 4, 40, 5, 50}));
  EXPECT_EQ(Floats(first.targets), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(first.epoch, 0);
  EXPECT_FALSE(first.last_in_epoch);
  Batch second = loader.Next();
  EXPECT_EQ(Floats(second.targets), (std::vector<float>{9, 0, 1}));
  EXPECT_TRUE(second.last_in_epoch);
  EXPECT_EQ(loader.epoch(), 0);
  EXPECT_EQ(loader.position(), 2);
  Batch third = loader.Next();
  EXPECT_EQ(third.epoch, 1);
  EXPECT_EQ(Floats(third.targets), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(loader.position(), 1);
}

TEST(DataLoader, RestoreContinuesSampleExactly) {
  ShardSpec spec = Spec(0, 2, 2, 0);
  spec.shuffle = true;
  spec.seed = 5;
  DataLoader reference = Unwrap(DataLoader::Create(Rows(9), spec));
  std::vector<std::vector<float>> drawn;
  std::vector<std::pair<int64_t, int64_t>> points;
  for (int i = 0; i < 12; ++i) {
    points.emplace_back(reference.epoch(), reference.position());
    drawn.push_back(Floats(reference.Next().targets));
  }
  for (int i : {0, 2, 3, 7, 11}) {
    DataLoader resumed = Unwrap(DataLoader::Create(Rows(9), spec));
    ASSERT_FALSE(resumed.Restore(points[i].first, points[i].second));
    for (int j = i; j < 12; ++j) EXPECT_EQ(Floats(resumed.Next().targets), drawn[j]) << i << " " << j;
  }
  // Epochs differ: the synchronized generator moves on.
  EXPECT_NE(drawn[0], drawn[3]);
  EXPECT_EQ(
      ErrorText(reference.Restore(1, 4)),
      "cannot resume the data stream at epoch 1, batch 4: an epoch has 3 batches on this process; was the "
      "checkpoint written with another dataset, batch size or process count?");
}

TEST(DataLoader, ReportsDatasetsThatGiveNoBatch) {
  ShardSpec spec = Spec(0, 4, 1, 0);
  spec.drop_last = true;
  EXPECT_EQ(
      ErrorOf(DataLoader::Create(Rows(3), spec)),
      "process 0 of 1 gets no batch from 3 samples with batch_size 4; drop_last drops every batch: one step "
      "needs 4 samples; lower batch_size or set drop_last = false");
  ShardSpec uneven = Spec(0, 2, 2, 1);
  uneven.even_batches = false;
  EXPECT_EQ(
      ErrorOf(DataLoader::Create(Rows(2), uneven)),
      "process 1 of 2 gets no batch from 2 samples with batch_size 2; set even_batches = true so the last "
      "round wraps around, or lower batch_size");
  EXPECT_EQ(ErrorOf(DataLoader::Create(Rows(0), Spec(0, 2, 1, 0))),
            "the dataset is empty; it needs at least one sample");
}

// ---- named columns ----

TEST(LoadTokenStream, CutsWindowsWithTargetsShiftedByOne) {
  TempDir dir;
  // 12 uint16 tokens, some above int16's range: 11 / 3 = 3 windows, token 11 only as a target.
  std::vector<uint16_t> ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 65535, 40000, 9};
  std::string path = dir.Write("tokens.bin", Bytes(ids));
  Dataset dataset = Unwrap(LoadTokenStream(path, checkpoint::Dtype::kU16, 3));
  ASSERT_EQ(dataset.columns.size(), 2u);
  EXPECT_EQ(dataset.columns[0].name, "input_ids");
  EXPECT_EQ(dataset.columns[1].name, "targets");
  EXPECT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.columns[0].values.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(dataset.columns[0].values.scalar_type(), at::kLong);
  EXPECT_EQ(Longs(dataset.columns[0].values), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(Longs(dataset.columns[1].values), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 65535}));
  // int32 ids, exactly one window plus its next token.
  std::vector<int32_t> wide = {70000, 1, 2};
  std::string int32_path = dir.Write("wide.bin", Bytes(wide));
  Dataset one = Unwrap(LoadTokenStream(int32_path, checkpoint::Dtype::kI32, 2));
  EXPECT_EQ(Longs(one.columns[0].values), (std::vector<int64_t>{70000, 1}));
  EXPECT_EQ(Longs(one.columns[1].values), (std::vector<int64_t>{1, 2}));
}

TEST(LoadTokenStream, ReportsTornFilesShortFilesAndNegativeIds) {
  TempDir dir;
  std::string odd = dir.Write("odd.bin", std::string(5, '\0'));
  EXPECT_EQ(ErrorOf(LoadTokenStream(odd, checkpoint::Dtype::kU16, 1)),
            odd +
                ": 5 bytes is not a whole number of uint16 tokens (2 bytes each); was the file written with "
                "another dtype?");
  std::string short_file = dir.Write("short.bin", Bytes(std::vector<uint16_t>{1, 2, 3}));
  EXPECT_EQ(ErrorOf(LoadTokenStream(short_file, checkpoint::Dtype::kU16, 3)),
            short_file +
                ": 3 tokens make no window: one needs block_size 3 tokens and the token after them; "
                "lower `block_size` or use a longer file");
  std::string negative = dir.Write("negative.bin", Bytes(std::vector<int32_t>{1, -4, 2}));
  EXPECT_EQ(ErrorOf(LoadTokenStream(negative, checkpoint::Dtype::kI32, 1)),
            negative + ": token 1 has the negative id -4; ids index a vocabulary from 0");
  EXPECT_EQ(ErrorOf(LoadTokenStream(short_file, checkpoint::Dtype::kF32, 1)),
            short_file + ": token ids of dtype float32 cannot be read; write uint16 or int32 ids");
}

TEST(LoadNpyColumns, ReadsEveryArrayOfADirectoryKeepingIntegerDtypes) {
  TempDir dir;
  std::filesystem::create_directory(dir.Path("cols"));
  dir.Write("cols/input_ids.npy", Npy("<i4", "(2, 3)", Bytes<int32_t>({1, 2, 3, 4, 5, 6})));
  dir.Write("cols/mask.npy", Npy("|u1", "(2, 3)", std::string("\x01\x01\x00\x01\x00\x00", 6)));
  dir.Write("cols/score.npy", Npy("<f8", "(2,)", Bytes<double>({0.5, 1.5})));
  dir.Write("cols/notes.txt", "not a column");
  Dataset dataset = Unwrap(LoadNpyColumns(dir.Path("cols"), {}));
  ASSERT_EQ(dataset.columns.size(), 3u);
  EXPECT_EQ(dataset.columns[0].name, "input_ids");
  EXPECT_EQ(dataset.columns[0].values.scalar_type(), at::kInt);
  EXPECT_EQ(dataset.columns[1].name, "mask");
  EXPECT_EQ(dataset.columns[1].values.scalar_type(), at::kByte);
  EXPECT_EQ(dataset.columns[2].name, "score");
  EXPECT_EQ(Floats(dataset.columns[2].values), (std::vector<float>{0.5, 1.5}));
  // Named columns come in the order asked for.
  Dataset chosen = Unwrap(LoadNpyColumns(dir.Path("cols"), {"score", "input_ids"}));
  ASSERT_EQ(chosen.columns.size(), 2u);
  EXPECT_EQ(chosen.columns[0].name, "score");
  EXPECT_EQ(chosen.columns[1].name, "input_ids");
}

TEST(LoadNpyColumns, ReportsMissingColumnsAndUnequalLengths) {
  TempDir dir;
  std::filesystem::create_directory(dir.Path("cols"));
  dir.Write("cols/input_ids.npy", Npy("<i8", "(2, 2)", Bytes<int64_t>({1, 2, 3, 4})));
  dir.Write("cols/labels.npy", Npy("<i8", "(3,)", Bytes<int64_t>({0, 1, 0})));
  EXPECT_EQ(ErrorOf(LoadNpyColumns(dir.Path("cols"), {"input_id"})),
            dir.Path("cols") + ": no file `input_id.npy` for column `input_id`; did you mean `input_ids`?");
  EXPECT_EQ(
      ErrorOf(LoadNpyColumns(dir.Path("cols"), {})),
      dir.Path("cols") +
          ": column `labels` has 3 rows (shape (3,)) but column `input_ids` has 2 (shape (2, 2)); every "
          "column needs one row per sample");
  EXPECT_EQ(ErrorOf(LoadNpyColumns(dir.Path("none"), {})).rfind(dir.Path("none") + ": cannot list", 0), 0u);
}

TEST(LoadSafetensorsColumns, ReadsNamedTensorsAsColumns) {
  TempDir dir;
  std::string path = dir.Path("columns.safetensors");
  ASSERT_FALSE(checkpoint::WriteSafetensors(path, {{"input_ids", "I64", {2, 2}, Bytes<int64_t>({5, 6, 7, 8})},
                                                   {"labels", "I32", {2}, Bytes<int32_t>({1, 0})},
                                                   {"scalar", "F32", {}, Bytes<float>({1})}}));
  Dataset dataset = Unwrap(LoadSafetensorsColumns(path, {"labels", "input_ids"}));
  ASSERT_EQ(dataset.columns.size(), 2u);
  EXPECT_EQ(dataset.columns[0].values.scalar_type(), at::kInt);
  EXPECT_EQ(Longs(dataset.columns[1].values), (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(ErrorOf(LoadSafetensorsColumns(path, {})),
            path +
                ": column `scalar` is a single value; a column needs one row per sample along its first "
                "dimension");
  EXPECT_EQ(ErrorOf(LoadSafetensorsColumns(path, {"label"})),
            path + ": no tensor `label`; did you mean `labels`?");
}

TEST(DataLoader, DealsTheSameRowsOfEveryNamedColumn) {
  Dataset dataset;
  dataset.columns.push_back({"ids", at::arange(20, at::kLong).reshape({10, 2}), {}});
  dataset.columns.push_back({"label", at::arange(10, at::kInt), {}});
  ShardSpec spec = Spec(0, 3, 2, 1);
  spec.shuffle = true;
  spec.seed = 5;
  DataLoader loader = Unwrap(DataLoader::Create(dataset, spec));
  for (int i = 0; i < 4; ++i) {
    Batch batch = loader.Next();
    ASSERT_FALSE(batch.features.defined());
    ASSERT_EQ(batch.columns.size(), 2u);
    EXPECT_EQ(batch.size(), 3);
    EXPECT_EQ(batch.columns[1].values.scalar_type(), at::kInt);
    // Row r of `ids` is [2r, 2r + 1]: both columns were indexed with the same rows.
    EXPECT_TRUE(at::equal(batch.columns[0].values.select(1, 0), batch.columns[1].values.to(at::kLong) * 2));
  }
  Dataset uneven = dataset;
  uneven.columns[1].values = at::arange(9, at::kInt);
  EXPECT_EQ(ErrorOf(DataLoader::Create(uneven, Spec(0, 3, 1, 0))),
            "dataset column `label` has 9 rows, column `ids` has 10");
}

// ---- ragged columns and collation ----

// Rows [1, 2], [3], [4, 5, 6] of `ids` (int32) and of `labels` (int64, the same lengths), and
// a fixed int64 column `score` [3].
Dataset RaggedRows() {
  Dataset dataset;
  dataset.columns.push_back({"ids", at::tensor(std::vector<int32_t>{1, 2, 3, 4, 5, 6}),
                             at::tensor(std::vector<int64_t>{0, 2, 3, 6})});
  dataset.columns.push_back({"labels", at::tensor(std::vector<int64_t>{10, 20, 30, 40, 50, 60}),
                             at::tensor(std::vector<int64_t>{0, 2, 3, 6})});
  dataset.columns.push_back({"score", at::tensor(std::vector<int64_t>{7, 8, 9}), {}});
  return dataset;
}

at::Tensor Longs2d(std::vector<int64_t> values, int64_t rows) {
  return at::tensor(values).reshape({rows, -1});
}

TEST(Collate, PadsRaggedColumnsOnTheRightWithEachColumnsValue) {
  Dataset dataset = RaggedRows();
  dataset.padding.values = {{"labels", -100}};
  dataset.padding.attention_mask_from = "ids";
  Columns batch = dataset.Collate({2, 1});
  ASSERT_EQ(batch.size(), 4u);
  EXPECT_EQ(batch[0].name, "ids");
  EXPECT_EQ(batch[0].values.scalar_type(), at::kInt);
  EXPECT_TRUE(at::equal(batch[0].values, Longs2d({4, 5, 6, 3, 0, 0}, 2).to(at::kInt)));
  EXPECT_EQ(batch[1].values.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(batch[1].values, Longs2d({40, 50, 60, 30, -100, -100}, 2)));
  // A fixed-shape column is indexed, not padded.
  EXPECT_TRUE(at::equal(batch[2].values, at::tensor(std::vector<int64_t>{9, 8})));
  EXPECT_EQ(batch[3].name, kAttentionMask);
  EXPECT_EQ(batch[3].values.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(batch[3].values, Longs2d({1, 1, 1, 1, 0, 0}, 2)));
  for (const Column& column : batch) EXPECT_FALSE(column.ragged()) << column.name;
}

TEST(Collate, PadsOnTheLeftToAMultipleOfTheLongestRow) {
  Dataset dataset = RaggedRows();
  dataset.padding.values = {{"labels", -100}, {"score", 5}};
  dataset.padding.side = PadSide::kLeft;
  dataset.padding.multiple_of = 4;
  dataset.padding.attention_mask_from = "ids";
  Columns batch = dataset.Collate({0, 1});
  // The longest row has 2 values; 4 is the next multiple of 4.
  EXPECT_TRUE(at::equal(batch[0].values, Longs2d({0, 0, 1, 2, 0, 0, 0, 3}, 2).to(at::kInt)));
  EXPECT_TRUE(at::equal(batch[1].values, Longs2d({-100, -100, 10, 20, -100, -100, -100, 30}, 2)));
  EXPECT_TRUE(at::equal(batch[2].values, at::tensor(std::vector<int64_t>{7, 8})));
  EXPECT_TRUE(at::equal(batch[3].values, Longs2d({0, 0, 1, 1, 0, 0, 0, 1}, 2)));
  // A length already a multiple is not grown.
  EXPECT_EQ(dataset.Collate({2, 0})[0].values.size(1), 4);
  dataset.padding.multiple_of = 3;
  EXPECT_EQ(dataset.Collate({2, 0})[0].values.size(1), 3);
}

TEST(Collate, KeepsTrailingDimensionsAndFloatValues) {
  Dataset dataset;
  // Rows of 1 and 2 vectors of width 2.
  dataset.columns.push_back(
      {"frames", at::arange(6, at::kFloat).reshape({3, 2}), at::tensor(std::vector<int64_t>{0, 1, 3})});
  dataset.padding.values = {{"frames", -1}};
  Columns batch = dataset.CollateRows(0, 2);
  EXPECT_EQ(batch[0].values.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(batch[0].values,
                        at::tensor(std::vector<float>{0, 1, -1, -1, 2, 3, 4, 5}).reshape({2, 2, 2})));
}

TEST(Collate, RowsRebaseTheOffsetsOfRaggedColumns) {
  Dataset dataset = RaggedRows();
  Dataset tail = dataset.Rows(1, 2);
  EXPECT_EQ(tail.size(), 2);
  EXPECT_EQ(Longs(tail.columns[0].offsets), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_TRUE(at::equal(tail.columns[0].values, at::tensor(std::vector<int32_t>{3, 4, 5, 6})));
  EXPECT_TRUE(at::equal(tail.CollateRows(0, 2)[0].values, Longs2d({3, 0, 0, 4, 5, 6}, 2).to(at::kInt)));
}

TEST(DataLoader, DealsPaddedBatchesOfRaggedColumns) {
  Dataset dataset = RaggedRows();
  dataset.padding.attention_mask_from = "ids";
  DataLoader loader = Unwrap(DataLoader::Create(dataset, Spec(0, 2, 1, 0)));
  Batch first = loader.Next();
  EXPECT_EQ(first.size(), 2);
  EXPECT_TRUE(at::equal(first.columns[0].values, Longs2d({1, 2, 3, 0}, 2).to(at::kInt)));
  EXPECT_TRUE(at::equal(first.columns[3].values, Longs2d({1, 1, 1, 0}, 2)));
  // The last batch holds one row: padded to its own length.
  Batch second = loader.Next();
  EXPECT_TRUE(at::equal(second.columns[0].values, Longs2d({4, 5, 6}, 1).to(at::kInt)));
}

TEST(LoadNpyColumns, ReadsRaggedColumnsFromOffsetsFiles) {
  TempDir dir;
  std::filesystem::create_directory(dir.Path("cols"));
  dir.Write("cols/input_ids.npy", Npy("<i4", "(5,)", Bytes<int32_t>({1, 2, 3, 4, 5})));
  dir.Write("cols/input_ids.offsets.npy", Npy("<i8", "(3,)", Bytes<int64_t>({0, 3, 5})));
  dir.Write("cols/label.npy", Npy("<i8", "(2,)", Bytes<int64_t>({1, 0})));
  Dataset dataset = Unwrap(LoadNpyColumns(dir.Path("cols"), {}));
  // The offsets file is not a column of its own.
  ASSERT_EQ(dataset.columns.size(), 2u);
  EXPECT_EQ(dataset.size(), 2);
  EXPECT_TRUE(dataset.columns[0].ragged());
  EXPECT_EQ(dataset.columns[0].values.scalar_type(), at::kInt);
  EXPECT_EQ(Longs(dataset.columns[0].offsets), (std::vector<int64_t>{0, 3, 5}));
  EXPECT_FALSE(dataset.columns[1].ragged());
}

TEST(LoadNpyColumns, ReportsInvalidOffsetsNamingTheFile) {
  TempDir dir;
  std::filesystem::create_directory(dir.Path("cols"));
  dir.Write("cols/ids.npy", Npy("<i8", "(4,)", Bytes<int64_t>({1, 2, 3, 4})));
  dir.Write("cols/label.npy", Npy("<i8", "(2,)", Bytes<int64_t>({1, 0})));
  const std::string offsets = dir.Path("cols") + "/ids.offsets.npy";
  const std::string values = dir.Path("cols") + "/ids.npy";
  auto error_with = [&](const std::string& file) {
    dir.Write("cols/ids.offsets.npy", file);
    return ErrorOf(LoadNpyColumns(dir.Path("cols"), {}));
  };
  EXPECT_EQ(error_with(Npy("<i8", "(3,)", Bytes<int64_t>({0, 3, 2}))),
            offsets + ": offsets decrease at row 1 (from 3 to 2); offsets must never decrease");
  EXPECT_EQ(error_with(Npy("<i8", "(3,)", Bytes<int64_t>({1, 3, 4}))),
            offsets + ": the first offset is 1; row 0 starts at value 0");
  EXPECT_EQ(error_with(Npy("<i8", "(3,)", Bytes<int64_t>({0, 3, 5}))),
            offsets + ": the last offset is 5 but " + values +
                " holds 4 values along its first dimension; the last offset is the number of values");
  EXPECT_EQ(
      error_with(Npy("<f8", "(3,)", Bytes<double>({0, 3, 4}))),
      offsets +
          ": offsets must be a 1-D integer array of rows + 1 entries, found float64 of shape (3,); write "
          "numpy.cumsum([0] + lengths) as int64");
  EXPECT_EQ(error_with(Npy("<i8", "(1,)", Bytes<int64_t>({0}))),
            offsets + ": 1 offsets describe no row; N rows need N + 1 offsets, starting at 0");
  // 3 rows against the 2 of `label`: the offsets count them.
  EXPECT_EQ(
      error_with(Npy("<i4", "(4,)", Bytes<int32_t>({0, 1, 2, 4}))),
      dir.Path("cols") +
          ": column `label` has 2 rows (shape (2,)) but column `ids` has 3 (offsets of 4 entries); every "
          "column needs one row per sample");
}

TEST(LoadSafetensorsColumns, ReadsRaggedColumnsFromOffsetsTensors) {
  TempDir dir;
  std::string path = dir.Path("columns.safetensors");
  ASSERT_FALSE(
      checkpoint::WriteSafetensors(path, {{"input_ids", "I64", {3}, Bytes<int64_t>({5, 6, 7})},
                                          {"input_ids.offsets", "I32", {3}, Bytes<int32_t>({0, 1, 3})},
                                          {"labels", "I64", {2}, Bytes<int64_t>({1, 0})}}));
  Dataset dataset = Unwrap(LoadSafetensorsColumns(path, {}));
  ASSERT_EQ(dataset.columns.size(), 2u);
  EXPECT_EQ(dataset.columns[0].name, "input_ids");
  EXPECT_EQ(Longs(dataset.columns[0].offsets), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_TRUE(at::equal(dataset.CollateRows(0, 2)[0].values, Longs2d({5, 0, 6, 7}, 2)));

  std::string broken = dir.Path("broken.safetensors");
  ASSERT_FALSE(
      checkpoint::WriteSafetensors(broken, {{"input_ids", "I64", {3}, Bytes<int64_t>({5, 6, 7})},
                                            {"input_ids.offsets", "I64", {3}, Bytes<int64_t>({0, 2, 1})}}));
  EXPECT_EQ(ErrorOf(LoadSafetensorsColumns(broken, {"input_ids"})),
            broken +
                ": tensor `input_ids.offsets`: offsets decrease at row 1 (from 2 to 1); offsets must never "
                "decrease");
}

TEST(WithPadding, ChecksTheColumnsItNames) {
  const std::string where = "data";
  auto error_with = [&](Padding padding, std::vector<std::string> same_length = {}) {
    return ErrorOf(WithPadding(RaggedRows(), std::move(padding), same_length, where));
  };
  Padding unknown;
  unknown.values = {{"label", -100}};
  EXPECT_EQ(
      error_with(unknown),
      "data: `pad_values` names column `label`, which the dataset does not have; did you mean `labels`?");
  Padding fixed_mask;
  fixed_mask.attention_mask_from = "score";
  EXPECT_EQ(
      error_with(fixed_mask),
      "data: `attention_mask_from` names `score`, which has no offsets; it needs a ragged column (one with "
      "offsets)");
  EXPECT_EQ(
      error_with({}, {"ids", "score"}),
      "data: `same_length` names `score`, which has no offsets; it lists ragged columns (ones with offsets)");
  Dataset masked = RaggedRows();
  masked.columns.push_back({kAttentionMask, at::ones({3}, at::kLong), {}});
  Padding mask;
  mask.attention_mask_from = "ids";
  EXPECT_EQ(
      ErrorOf(WithPadding(masked, mask, {}, where)),
      "data: the dataset has a column `attention_mask` already; drop `attention_mask_from`, or that column");
  // A pad value for a fixed-shape column is allowed; equal lengths pass.
  Padding fine;
  fine.values = {{"score", 1}};
  Dataset padded = Unwrap(WithPadding(RaggedRows(), fine, {"ids", "labels"}, where));
  EXPECT_EQ(padded.padding.ValueOf("score"), 1);

  Dataset unequal = RaggedRows();
  unequal.columns[1].offsets = at::tensor(std::vector<int64_t>{0, 2, 4, 6});
  EXPECT_EQ(
      ErrorOf(WithPadding(unequal, {}, {"ids", "labels"}, where)),
      "data: row 1 of column `labels` has 2 values but the same row of `ids` has 1; `same_length` needs them "
      "as long as each other");
}

}  // namespace
}  // namespace accel::rt::data
