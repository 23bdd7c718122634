#include "compiler/ast/serialize.h"

#include <cstring>

namespace accel::ast {
namespace {

// Bump when the layout or the AST changes: an old image is then refused, not misread.
constexpr uint32_t kVersion = 2;
constexpr char kMagic[] = "ACCELAST";
// Images come from our own build step; this bound only stops a corrupt image from
// recursing without end.
constexpr int kMaxDepth = 1024;

class Writer {
 public:
  std::string Run(const File& file) {
    out_.append(kMagic, sizeof(kMagic) - 1);
    Uint(kVersion);
    Count(file.imports.size());
    for (const ImportDecl& i : file.imports) {
      Write(i.span);
      String(i.path);
      OptionalName(i.alias);
    }
    Count(file.lets.size());
    for (const LetDecl& l : file.lets) {
      Write(l.span);
      String(l.doc);
      Write(l.name);
      Bool(l.type.has_value());
      if (l.type) Write(*l.type);
      Write(l.value);
    }
    Count(file.enums.size());
    for (const EnumDecl& e : file.enums) {
      Write(e.span);
      String(e.doc);
      Write(e.name);
      Count(e.members.size());
      for (const EnumMember& m : e.members) {
        Write(m.span);
        String(m.doc);
        Write(m.name);
        String(m.value);
      }
    }
    Count(file.records.size());
    for (const RecordDecl& r : file.records) {
      Write(r.span);
      String(r.doc);
      String(r.kind);
      Count(r.open ? 1 : 0);
      Write(r.name);
      Count(r.fields.size());
      for (const FieldDecl& f : r.fields) Write(f);
      Count(r.rules.size());
      for (const RuleDecl& rule : r.rules) Write(rule);
    }
    Count(file.rules.size());
    for (const RuleDecl& rule : file.rules) Write(rule);
    Count(file.jobs.size());
    for (const JobDecl& j : file.jobs) {
      Write(j.span);
      String(j.doc);
      Write(j.name);
      OptionalName(j.base);
      Write(j.body);
    }
    return std::move(out_);
  }

 private:
  void Uint(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      out_.push_back(static_cast<char>(byte | (v ? 0x80 : 0)));
    } while (v);
  }
  void Int(int64_t v) { Uint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void Count(size_t n) { Uint(n); }
  void Bool(bool b) { out_.push_back(b ? 1 : 0); }
  void String(const std::string& s) {
    Uint(s.size());
    out_ += s;
  }
  void Write(Span s) {
    Uint(s.begin);
    Uint(s.end);
  }
  void Write(const Name& n) {
    String(n.text);
    Write(n.span);
  }
  void OptionalName(const std::optional<Name>& n) {
    Bool(n.has_value());
    if (n) Write(*n);
  }
  void Write(const TypeRef& t) {
    Write(t.span);
    Count(t.alternatives.size());
    for (const TypeAtom& a : t.alternatives) {
      Write(a.span);
      Write(a.name);
      Count(a.arguments.size());
      for (const TypeRef& argument : a.arguments) Write(argument);
      Bool(a.optional);
    }
  }
  void Write(const ExprPtr& e) {
    Bool(e != nullptr);
    if (!e) return;
    Uint(static_cast<uint64_t>(e->kind));
    Write(e->span);
    Int(e->int_value);
    uint64_t bits;
    std::memcpy(&bits, &e->float_value, sizeof bits);
    Uint(bits);
    Bool(e->bool_value);
    String(e->text);
    Count(e->path.size());
    for (const Name& n : e->path) Write(n);
    Count(e->operands.size());
    for (const ExprPtr& operand : e->operands) Write(operand);
    Bool(e->block != nullptr);
    if (e->block) Write(*e->block);
  }
  void Write(const Block& b) {
    Write(b.span);
    Bool(b.recovered);
    Count(b.statements.size());
    for (const Statement& s : b.statements) {
      Write(s.span);
      Count(s.path.size());
      for (const Name& n : s.path) Write(n);
      Write(s.value);
      Bool(s.block != nullptr);
      if (s.block) Write(*s.block);
    }
  }
  void Write(const FieldDecl& f) {
    Write(f.span);
    String(f.doc);
    Write(f.name);
    Write(f.type);
    Write(f.default_value);
    Count(f.env_vars.size());
    for (const Name& n : f.env_vars) Write(n);
    Write(f.constraint);
    Count(f.aliases.size());
    for (const Name& n : f.aliases) Write(n);
    Count(f.synonyms.size());
    for (const Name& n : f.synonyms) Write(n);
    Bool(f.deprecated.has_value());
    if (f.deprecated) String(*f.deprecated);
    Bool(f.file_key.has_value());
    if (f.file_key) String(*f.file_key);
  }
  void Write(const RuleDecl& r) {
    Write(r.span);
    String(r.doc);
    Write(r.code);
    Write(r.severity);
    Count(r.targets.size());
    for (const Name& target : r.targets) Write(target);
    String(r.message);
    Write(r.condition);
  }

  std::string out_;
};

// Every read checks the bounds; a short or corrupt image sets `ok_` and yields defaults.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::optional<File> Run(const source::SourceFile* source) {
    if (in_.substr(0, sizeof(kMagic) - 1) != kMagic) return std::nullopt;
    at_ = sizeof(kMagic) - 1;
    if (Uint() != kVersion) return std::nullopt;
    File file;
    file.source = source;
    file.imports.resize(Count());
    for (ImportDecl& i : file.imports) {
      i.span = ReadSpan();
      i.path = String();
      i.alias = OptionalName();
    }
    file.lets.resize(Count());
    for (LetDecl& l : file.lets) {
      l.span = ReadSpan();
      l.doc = String();
      l.name = ReadName();
      if (Bool()) l.type = ReadType();
      l.value = ReadExpr(0);
    }
    file.enums.resize(Count());
    for (EnumDecl& e : file.enums) {
      e.span = ReadSpan();
      e.doc = String();
      e.name = ReadName();
      e.members.resize(Count());
      for (EnumMember& m : e.members) {
        m.span = ReadSpan();
        m.doc = String();
        m.name = ReadName();
        m.value = String();
      }
    }
    file.records.resize(Count());
    for (RecordDecl& r : file.records) {
      r.span = ReadSpan();
      r.doc = String();
      r.kind = String();
      r.open = Count() != 0;
      r.name = ReadName();
      r.fields.resize(Count());
      for (FieldDecl& f : r.fields) ReadField(f);
      r.rules.resize(Count());
      for (RuleDecl& rule : r.rules) ReadRule(rule);
    }
    file.rules.resize(Count());
    for (RuleDecl& rule : file.rules) ReadRule(rule);
    file.jobs.resize(Count());
    for (JobDecl& j : file.jobs) {
      j.span = ReadSpan();
      j.doc = String();
      j.name = ReadName();
      j.base = OptionalName();
      ReadBlock(j.body, 0);
    }
    if (!ok_ || at_ != in_.size()) return std::nullopt;
    return file;
  }

 private:
  uint64_t Uint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= in_.size()) return Fail();
      uint8_t byte = static_cast<uint8_t>(in_[at_++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    return Fail();
  }
  int64_t Int() {
    uint64_t v = Uint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  // A count can never exceed the bytes left: each element takes at least one.
  size_t Count() {
    uint64_t n = Uint();
    if (n > in_.size() - at_) return Fail();
    return static_cast<size_t>(n);
  }
  bool Bool() {
    if (at_ >= in_.size()) return Fail();
    return in_[at_++] != 0;
  }
  std::string String() {
    size_t n = Count();
    if (!ok_) return {};
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  Span ReadSpan() {
    uint64_t begin = Uint(), end = Uint();
    return {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
  }
  Name ReadName() {
    Name n;
    n.text = String();
    n.span = ReadSpan();
    return n;
  }
  std::optional<Name> OptionalName() {
    if (!Bool()) return std::nullopt;
    return ReadName();
  }
  TypeRef ReadType(int depth = 0) {
    TypeRef t;
    if (depth > kMaxDepth) return Fail(), t;
    t.span = ReadSpan();
    t.alternatives.resize(Count());
    for (TypeAtom& a : t.alternatives) {
      a.span = ReadSpan();
      a.name = ReadName();
      a.arguments.resize(Count());
      for (TypeRef& argument : a.arguments) argument = ReadType(depth + 1);
      a.optional = Bool();
    }
    return t;
  }
  ExprPtr ReadExpr(int depth) {
    if (!Bool() || !ok_) return nullptr;
    if (depth > kMaxDepth) return Fail(), nullptr;
    auto e = std::make_unique<Expr>();
    uint64_t kind = Uint();
    if (kind > static_cast<uint64_t>(ExprKind::IsSet)) return Fail(), nullptr;
    e->kind = static_cast<ExprKind>(kind);
    e->span = ReadSpan();
    e->int_value = Int();
    uint64_t bits = Uint();
    std::memcpy(&e->float_value, &bits, sizeof bits);
    e->bool_value = Bool();
    e->text = String();
    e->path.resize(Count());
    for (Name& n : e->path) n = ReadName();
    e->operands.resize(Count());
    for (ExprPtr& operand : e->operands) operand = ReadExpr(depth + 1);
    if (Bool()) {
      e->block = std::make_unique<Block>();
      ReadBlock(*e->block, depth + 1);
    }
    return e;
  }
  void ReadBlock(Block& b, int depth) {
    if (depth > kMaxDepth) return (void)Fail();
    b.span = ReadSpan();
    b.recovered = Bool();
    b.statements.resize(Count());
    for (Statement& s : b.statements) {
      s.span = ReadSpan();
      s.path.resize(Count());
      for (Name& n : s.path) n = ReadName();
      s.value = ReadExpr(depth + 1);
      if (Bool()) {
        s.block = std::make_unique<Block>();
        ReadBlock(*s.block, depth + 1);
      }
    }
  }
  void ReadField(FieldDecl& f) {
    f.span = ReadSpan();
    f.doc = String();
    f.name = ReadName();
    f.type = ReadType();
    f.default_value = ReadExpr(0);
    f.env_vars.resize(Count());
    for (Name& n : f.env_vars) n = ReadName();
    f.constraint = ReadExpr(0);
    f.aliases.resize(Count());
    for (Name& n : f.aliases) n = ReadName();
    f.synonyms.resize(Count());
    for (Name& n : f.synonyms) n = ReadName();
    if (Bool()) f.deprecated = String();
    if (Bool()) f.file_key = String();
  }
  void ReadRule(RuleDecl& r) {
    r.span = ReadSpan();
    r.doc = String();
    r.code = ReadName();
    r.severity = ReadName();
    r.targets.resize(Count());
    for (Name& target : r.targets) target = ReadName();
    r.message = String();
    r.condition = ReadExpr(0);
  }
  // Marks the image bad; returns 0 so callers can `return Fail();` from any numeric reader.
  int Fail() {
    ok_ = false;
    at_ = in_.size();
    return 0;
  }

  std::string_view in_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

std::string Serialize(const File& file) { return Writer().Run(file); }

std::optional<File> Deserialize(std::string_view image, const source::SourceFile* source) {
  return Reader(image).Run(source);
}

}  // namespace accel::ast
