// A pickle's values: the tree the reader builds and the writer takes, its builders, the names
// of its kinds, and bytes as protocol 2 carries them (Latin-1 text). The writer, the opcode
// reader and the rebuilding of callables are the torch_pickle_*.cpp files beside this one.
#include "runtime/checkpoint/torch_pickle.h"

#include <optional>
#include <string>
#include <vector>

#include "runtime/checkpoint/torch_pickle_internal.h"

namespace accel::rt::checkpoint::pickle {

// Latin-1 text as UTF-8 (what `bytes.decode('latin1')` pickles as), and back.
std::string Latin1ToUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::optional<std::string> Utf8ToLatin1(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F)));
      ++i;
    } else {
      return std::nullopt;  // a code point above U+00FF: not bytes
    }
  }
  return out;
}

Object::~Object() {
  std::vector<Ref> pending = std::move(items);
  while (!pending.empty()) {
    Ref object = std::move(pending.back());
    pending.pop_back();
    // The last holder takes the children over, so the object's own destructor has none.
    if (object.use_count() == 1) {
      for (Ref& child : object->items) pending.push_back(std::move(child));
      object->items.clear();
    }
  }
}

const Object* Object::Find(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i]->kind == Kind::kString && items[i]->text == key) return items[i + 1].get();
  return nullptr;
}

const Object* Object::Find(int64_t key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i]->kind == Kind::kInt && items[i]->integer == key) return items[i + 1].get();
  return nullptr;
}

Ref None() { return Make(Object::Kind::kNone); }
Ref Bool(bool value) {
  Ref object = Make(Object::Kind::kBool);
  object->boolean = value;
  return object;
}
Ref Int(int64_t value) {
  Ref object = Make(Object::Kind::kInt);
  object->integer = value;
  return object;
}
Ref Float(double value) {
  Ref object = Make(Object::Kind::kFloat);
  object->number = value;
  return object;
}
Ref String(std::string value) {
  Ref object = Make(Object::Kind::kString);
  object->text = std::move(value);
  return object;
}
Ref Bytes(std::string value) {
  Ref object = Make(Object::Kind::kBytes);
  object->text = std::move(value);
  return object;
}
Ref Tuple(std::vector<Ref> items) {
  Ref object = Make(Object::Kind::kTuple);
  object->items = std::move(items);
  return object;
}
Ref List(std::vector<Ref> items) {
  Ref object = Make(Object::Kind::kList);
  object->items = std::move(items);
  return object;
}
Ref Dict(std::vector<std::pair<Ref, Ref>> entries) {
  Ref object = Make(Object::Kind::kDict);
  for (auto& [key, value] : entries) {
    object->items.push_back(std::move(key));
    object->items.push_back(std::move(value));
  }
  return object;
}
Ref Tensor(TensorInfo info) {
  Ref object = Make(Object::Kind::kTensor);
  object->tensor = std::move(info);
  return object;
}
Ref Array(ArrayInfo info) {
  Ref object = Make(Object::Kind::kArray);
  object->array = std::move(info);
  return object;
}

std::string_view KindName(Object::Kind kind) {
  switch (kind) {
    case Object::Kind::kNone:
      return "None";
    case Object::Kind::kBool:
      return "bool";
    case Object::Kind::kInt:
      return "int";
    case Object::Kind::kFloat:
      return "float";
    case Object::Kind::kString:
      return "str";
    case Object::Kind::kBytes:
      return "bytes";
    case Object::Kind::kTuple:
      return "tuple";
    case Object::Kind::kList:
      return "list";
    case Object::Kind::kDict:
      return "dict";
    case Object::Kind::kTensor:
      return "torch.Tensor";
    case Object::Kind::kArray:
      return "numpy.ndarray";
    case Object::Kind::kCallable:
      return "callable";
    case Object::Kind::kStorage:
      return "storage";
    case Object::Kind::kDtype:
      return "numpy.dtype";
  }
  return "?";
}

}  // namespace accel::rt::checkpoint::pickle
