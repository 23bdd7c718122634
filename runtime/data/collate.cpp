// Dataset::Collate: a batch of named columns, ragged ones padded per batch as Hugging Face's
// DataCollatorWithPadding / DataCollatorForSeq2Seq pad them.
#include <ATen/ATen.h>

#include <algorithm>

#include "runtime/data/dataset.h"

namespace accel::rt::data {
namespace {

// The length of rows `indices` of a ragged column, read from its offsets.
std::vector<int64_t> RowLengths(const Column& column, const std::vector<int64_t>& indices) {
  const at::Tensor contiguous = column.offsets.contiguous();
  const int64_t* offsets = contiguous.data_ptr<int64_t>();
  std::vector<int64_t> lengths;
  lengths.reserve(indices.size());
  for (int64_t row : indices) lengths.push_back(offsets[row + 1] - offsets[row]);
  return lengths;
}

// The batch's padded length: its longest row, rounded up to a multiple of `multiple_of`.
int64_t PaddedLength(const std::vector<int64_t>& lengths, int64_t multiple_of) {
  int64_t longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  return (longest + multiple_of - 1) / multiple_of * multiple_of;
}

// Where a row of `length` values starts in its padded row of `padded`.
int64_t RowStart(int64_t length, int64_t padded, PadSide side) {
  return side == PadSide::kLeft ? padded - length : 0;
}

// Rows `indices` of a ragged column as [B, L, ...], every row's values at its side and `pad`
// elsewhere, in the column's dtype.
at::Tensor PadRows(const Column& column, const std::vector<int64_t>& indices, const Padding& padding) {
  std::vector<int64_t> lengths = RowLengths(column, indices);
  int64_t padded = PaddedLength(lengths, padding.multiple_of);
  std::vector<int64_t> shape{static_cast<int64_t>(indices.size()), padded};
  for (int64_t d = 1; d < column.values.dim(); ++d) shape.push_back(column.values.size(d));
  at::Tensor out = at::full(shape, padding.ValueOf(column.name), column.values.options());
  const at::Tensor contiguous = column.offsets.contiguous();
  const int64_t* offsets = contiguous.data_ptr<int64_t>();
  for (size_t b = 0; b < indices.size(); ++b) {
    int64_t length = lengths[b];
    out[static_cast<int64_t>(b)]
        .narrow(0, RowStart(length, padded, padding.side), length)
        .copy_(column.values.narrow(0, offsets[indices[b]], length));
  }
  return out;
}

// 1 over each row's values of `column`, 0 over its padding: int64 [B, L] (as tokenizers
// return attention masks), with `column`'s padded length and side.
at::Tensor AttentionMask(const Column& column, const std::vector<int64_t>& indices, const Padding& padding) {
  std::vector<int64_t> lengths = RowLengths(column, indices);
  int64_t padded = PaddedLength(lengths, padding.multiple_of);
  at::Tensor mask = at::zeros({static_cast<int64_t>(indices.size()), padded}, at::kLong);
  for (size_t b = 0; b < indices.size(); ++b) {
    mask[static_cast<int64_t>(b)].narrow(0, RowStart(lengths[b], padded, padding.side), lengths[b]).fill_(1);
  }
  return mask;
}

}  // namespace

int64_t Padding::ValueOf(const std::string& column) const {
  for (const auto& [name, value] : values) {
    if (name == column) return value;
  }
  return 0;
}

Columns Dataset::Collate(const std::vector<int64_t>& indices) const {
  // A view of the indices, not a copy: index_select copies the rows out.
  at::Tensor index =
      at::from_blob(const_cast<int64_t*>(indices.data()), {static_cast<int64_t>(indices.size())}, at::kLong);
  Columns batch;
  for (const Column& column : columns) {
    at::Tensor values =
        column.ragged() ? PadRows(column, indices, padding) : at::index_select(column.values, 0, index);
    batch.push_back({column.name, std::move(values), {}});
  }
  if (!padding.attention_mask_from.empty()) {
    for (const Column& column : columns) {
      if (column.name == padding.attention_mask_from && column.ragged()) {
        batch.push_back({kAttentionMask, AttentionMask(column, indices, padding), {}});
      }
    }
  }
  return batch;
}

Columns Dataset::CollateRows(int64_t start, int64_t length) const {
  std::vector<int64_t> indices(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) indices[static_cast<size_t>(i)] = start + i;
  return Collate(indices);
}

}  // namespace accel::rt::data
