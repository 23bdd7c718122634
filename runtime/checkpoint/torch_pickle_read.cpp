// The pickle reader's opcode machine: the stack, the marks and the memo of protocols 2 to 5,
// turning bytes into a tree of values and never running anything. What a named callable
// becomes is torch_pickle_rebuild.cpp's; this file only moves values between the stack, the
// memo and the containers, and refuses a stream that is malformed, truncated or cyclic.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llvm/Support/ConvertUTF.h"
#include "runtime/checkpoint/torch_pickle_internal.h"

namespace accel::rt::checkpoint::pickle {
namespace {

class Reader {
 public:
  Reader(std::string_view bytes, int max_depth) : in_(bytes), max_depth_(max_depth) {}

  llvm::Expected<Ref> Run() {
    llvm::Expected<Ref> result = ReadAll();
    // A container given itself through the memo (`l.append(l)`) is a cycle of references that
    // would never be freed; no state_dict has one. Each is broken, and the pickle refused.
    if (BreakCycles()) {
      if (!result) llvm::consumeError(result.takeError());
      return Error("the pickle puts a container inside itself, which no saved state does");
    }
    return result;
  }

 private:
  llvm::Expected<Ref> ReadAll() {
    while (true) {
      if (pos_ >= in_.size()) return Error("the pickle ends before its STOP opcode");
      size_t at = pos_;
      unsigned char op = static_cast<unsigned char>(in_[pos_++]);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty())
          return ErrorAt(at, "STOP with no single value on the stack");
        return stack_.back();
      }
      if (llvm::Error error = Step(op, at)) return error;
    }
  }

  // Adds `items` to `container` after its creation: the only way a pickle makes a cycle.
  void Extend(const Ref& container, std::vector<Ref> items) {
    for (Ref& item : items) container->items.push_back(std::move(item));
    extended_.push_back(container);
  }

  // Whether any container extended after its creation reaches itself; if so, every such
  // container is emptied so that the cycles' memory is freed. One depth-first walk over what
  // they reach, without recursion.
  bool BreakCycles() {
    enum class Mark { kOnPath, kDone };
    std::map<const Object*, Mark> marks;
    bool cycle = false;
    for (const std::weak_ptr<Object>& weak : extended_) {
      Ref start = weak.lock();
      if (!start || marks.count(start.get()) != 0) continue;
      std::vector<std::pair<const Object*, size_t>> path{{start.get(), 0}};
      marks[start.get()] = Mark::kOnPath;
      while (!path.empty() && !cycle) {
        auto& [object, next] = path.back();
        if (next == object->items.size()) {
          marks[object] = Mark::kDone;
          path.pop_back();
          continue;
        }
        const Object* child = object->items[next++].get();
        auto found = marks.find(child);
        if (found == marks.end()) {
          marks[child] = Mark::kOnPath;
          path.emplace_back(child, 0);
        } else if (found->second == Mark::kOnPath) {
          cycle = true;
        }
      }
      if (cycle) break;
    }
    if (cycle) {
      for (const std::weak_ptr<Object>& weak : extended_)
        if (Ref container = weak.lock()) container->items.clear();
    }
    return cycle;
  }

  llvm::Error Error(const std::string& what) const { return ErrorAt(pos_, what); }

  bool Take(size_t count, std::string_view& out) {
    if (in_.size() - pos_ < count) return false;
    out = in_.substr(pos_, count);
    pos_ += count;
    return true;
  }

  std::optional<uint64_t> Little(size_t count) {
    std::string_view bytes;
    if (!Take(count, bytes)) return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < count; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    return value;
  }

  std::optional<std::string_view> Line() {
    size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view line = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return line;
  }

  void Push(Ref value) { stack_.push_back(std::move(value)); }

  llvm::Expected<Ref> Pop(size_t at) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return ErrorAt(at, "an opcode needs a value, the stack has none");
    Ref value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }

  // The values above the topmost mark, which is removed.
  llvm::Expected<std::vector<Ref>> PopMark(size_t at) {
    if (marks_.empty()) return ErrorAt(at, "an opcode needs a MARK, there is none");
    size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(mark)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }

  llvm::Error PushText(size_t at, size_t length_bytes, Object::Kind kind) {
    std::optional<uint64_t> length = Little(length_bytes);
    std::string_view text;
    if (!length || *length > in_.size() || !Take(static_cast<size_t>(*length), text))
      return ErrorAt(at, "a string runs past the end of the pickle");
    Ref value = Make(kind);
    value->text = std::string(text);
    if (kind == Object::Kind::kString) {
      const auto* begin = reinterpret_cast<const llvm::UTF8*>(value->text.data());
      if (!llvm::isLegalUTF8String(&begin, begin + value->text.size()))
        return ErrorAt(at, "a string is not UTF-8");
    }
    Push(std::move(value));
    return llvm::Error::success();
  }

  llvm::Error Memoize(size_t at, uint64_t index) {
    if (stack_.empty()) return ErrorAt(at, "nothing to memoise");
    if (index > in_.size()) return ErrorAt(at, "a memo index beyond any this pickle can fill");
    memo_[index] = stack_.back();
    return llvm::Error::success();
  }

  llvm::Error Recall(size_t at, uint64_t index) {
    auto found = memo_.find(index);
    if (found == memo_.end()) return ErrorAt(at, fmt::format("memo entry {} was never stored", index));
    Push(found->second);
    return llvm::Error::success();
  }

  llvm::Error PushGlobal(size_t at, std::string name) {
    // The name is the file's text: shown only when it is a dotted Python name.
    const bool printable =
        !name.empty() && name.size() <= 200 && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
        });
    if (!printable) return ErrorAt(at, "the pickle names a callable whose name is not a Python name");
    if (!Allowed(name)) {
      return ErrorAt(at, fmt::format("the pickle names `{}`, which could run code; Accel reads tensors, "
                                     "numbers, strings and containers only, and never runs a pickle",
                                     name));
    }
    Ref callable = Make(Object::Kind::kCallable);
    callable->text = std::move(name);
    Push(std::move(callable));
    return llvm::Error::success();
  }

  llvm::Error Step(unsigned char op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        std::optional<uint64_t> version = Little(1);
        if (!version || *version < 2 || *version > 5)
          return ErrorAt(at, "a pickle protocol other than 2 to 5");
        return llvm::Error::success();
      }
      case 0x95:  // FRAME: a length hint
        return Little(8) ? llvm::Error::success() : ErrorAt(at, "a truncated FRAME");
      case '(':
        if (marks_.size() >= static_cast<size_t>(max_depth_))
          return ErrorAt(at, fmt::format("nested deeper than {} levels", max_depth_));
        marks_.push_back(stack_.size());
        return llvm::Error::success();
      case '0': {  // POP
        llvm::Expected<Ref> value = Pop(at);
        return value ? llvm::Error::success() : value.takeError();
      }
      case '1': {  // POP_MARK
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        return items ? llvm::Error::success() : items.takeError();
      }
      case 'N':
        Push(Make(Object::Kind::kNone));
        return llvm::Error::success();
      case 0x88:
      case 0x89:
        Push(pickle::Bool(op == 0x88));
        return llvm::Error::success();
      case 'J': {
        std::optional<uint64_t> value = Little(4);
        if (!value) return ErrorAt(at, "a truncated integer");
        Push(Int(static_cast<int32_t>(static_cast<uint32_t>(*value))));
        return llvm::Error::success();
      }
      case 'K':
      case 'M': {
        std::optional<uint64_t> value = Little(op == 'K' ? 1 : 2);
        if (!value) return ErrorAt(at, "a truncated integer");
        Push(Int(static_cast<int64_t>(*value)));
        return llvm::Error::success();
      }
      case 0x8a: {  // LONG1
        std::optional<uint64_t> length = Little(1);
        if (!length || *length > 8) return ErrorAt(at, "an integer beyond 64 bits");
        std::optional<uint64_t> bits = *length == 0 ? 0 : Little(static_cast<size_t>(*length));
        if (!bits) return ErrorAt(at, "a truncated integer");
        int64_t value = static_cast<int64_t>(*bits);
        if (*length > 0 && *length < 8 && (*bits >> (8 * *length - 1)) & 1)
          value = static_cast<int64_t>(*bits | (~uint64_t{0} << (8 * *length)));  // sign-extend
        Push(Int(value));
        return llvm::Error::success();
      }
      case 'G': {
        std::string_view bytes;
        if (!Take(8, bytes)) return ErrorAt(at, "a truncated float");
        uint64_t bits = 0;
        for (char c : bytes) bits = (bits << 8) | static_cast<unsigned char>(c);
        double value;
        std::memcpy(&value, &bits, sizeof value);
        Push(Float(value));
        return llvm::Error::success();
      }
      case 'X':
        return PushText(at, 4, Object::Kind::kString);
      case 0x8c:  // SHORT_BINUNICODE
        return PushText(at, 1, Object::Kind::kString);
      case 0x8d:  // BINUNICODE8
        return PushText(at, 8, Object::Kind::kString);
      case 'B':
        return PushText(at, 4, Object::Kind::kBytes);
      case 'C':  // SHORT_BINBYTES
        return PushText(at, 1, Object::Kind::kBytes);
      case 0x8e:  // BINBYTES8
        return PushText(at, 8, Object::Kind::kBytes);
      case ')':
        Push(Make(Object::Kind::kTuple));
        return llvm::Error::success();
      case 't': {
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        if (!items) return items.takeError();
        Push(Tuple(std::move(*items)));
        return llvm::Error::success();
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<Ref> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) {
          llvm::Expected<Ref> item = Pop(at);
          if (!item) return item.takeError();
          items[i] = std::move(*item);
        }
        Push(Tuple(std::move(items)));
        return llvm::Error::success();
      }
      case ']':
        Push(Make(Object::Kind::kList));
        return llvm::Error::success();
      case 'l': {
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        if (!items) return items.takeError();
        Push(List(std::move(*items)));
        return llvm::Error::success();
      }
      case 'a':
      case 'e': {
        std::vector<Ref> items;
        if (op == 'a') {
          llvm::Expected<Ref> item = Pop(at);
          if (!item) return item.takeError();
          items.push_back(std::move(*item));
        } else {
          llvm::Expected<std::vector<Ref>> popped = PopMark(at);
          if (!popped) return popped.takeError();
          items = std::move(*popped);
        }
        if (stack_.empty() || stack_.back()->kind != Object::Kind::kList)
          return ErrorAt(at, "APPEND to something that is not a list");
        Extend(stack_.back(), std::move(items));
        return llvm::Error::success();
      }
      case '}':
        Push(Make(Object::Kind::kDict));
        return llvm::Error::success();
      case 'd':
      case 's':
      case 'u': {
        std::vector<Ref> items;
        if (op == 's') {
          llvm::Expected<Ref> value = Pop(at);
          if (!value) return value.takeError();
          llvm::Expected<Ref> key = Pop(at);
          if (!key) return key.takeError();
          items = {std::move(*key), std::move(*value)};
        } else {
          llvm::Expected<std::vector<Ref>> popped = PopMark(at);
          if (!popped) return popped.takeError();
          items = std::move(*popped);
        }
        if (items.size() % 2 != 0) return ErrorAt(at, "a dict of an odd number of keys and values");
        if (op == 'd') {
          Push(Make(Object::Kind::kDict));
        } else if (stack_.empty() || stack_.back()->kind != Object::Kind::kDict) {
          return ErrorAt(at, "SETITEM on something that is not a dict");
        }
        Extend(stack_.back(), std::move(items));
        return llvm::Error::success();
      }
      case 'q':
      case 'r': {
        std::optional<uint64_t> index = Little(op == 'q' ? 1 : 4);
        if (!index) return ErrorAt(at, "a truncated memo index");
        return Memoize(at, *index);
      }
      case 0x94:  // MEMOIZE
        return Memoize(at, memo_.size());
      case 'h':
      case 'j': {
        std::optional<uint64_t> index = Little(op == 'h' ? 1 : 4);
        if (!index) return ErrorAt(at, "a truncated memo index");
        return Recall(at, *index);
      }
      case 'c': {
        std::optional<std::string_view> module = Line();
        std::optional<std::string_view> name = module ? Line() : std::nullopt;
        if (!name) return ErrorAt(at, "a truncated GLOBAL");
        return PushGlobal(at, fmt::format("{}.{}", *module, *name));
      }
      case 0x93: {  // STACK_GLOBAL
        llvm::Expected<Ref> name = Pop(at);
        if (!name) return name.takeError();
        llvm::Expected<Ref> module = Pop(at);
        if (!module) return module.takeError();
        if ((*name)->kind != Object::Kind::kString || (*module)->kind != Object::Kind::kString)
          return ErrorAt(at, "STACK_GLOBAL of something other than two strings");
        return PushGlobal(at, fmt::format("{}.{}", (*module)->text, (*name)->text));
      }
      case 'R': {
        llvm::Expected<Ref> args = Pop(at);
        if (!args) return args.takeError();
        llvm::Expected<Ref> callable = Pop(at);
        if (!callable) return callable.takeError();
        llvm::Expected<Ref> value = Reduce(at, **callable, **args);
        if (!value) return value.takeError();
        Push(std::move(*value));
        return llvm::Error::success();
      }
      case 'b': {
        llvm::Expected<Ref> state = Pop(at);
        if (!state) return state.takeError();
        if (stack_.empty()) return ErrorAt(at, "BUILD with no object");
        return Build(at, *stack_.back(), **state);
      }
      case 'Q': {
        llvm::Expected<Ref> id = Pop(at);
        if (!id) return id.takeError();
        llvm::Expected<Ref> storage = PersistentLoad(at, **id);
        if (!storage) return storage.takeError();
        Push(std::move(*storage));
        return llvm::Error::success();
      }
      default:
        return ErrorAt(at, fmt::format("opcode 0x{:02x} is not one this reader takes", op));
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
  int max_depth_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Ref> memo_;
  std::vector<std::weak_ptr<Object>> extended_;  // Extend's containers, for BreakCycles
};

}  // namespace

llvm::Expected<Ref> Read(std::string_view bytes, int max_depth) { return Reader(bytes, max_depth).Run(); }

}  // namespace accel::rt::checkpoint::pickle
