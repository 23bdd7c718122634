#include "compiler/config/reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "compiler/config/json_tree.h"
#include "compiler/config/simple_yaml.h"
#include "compiler/scalars/bool_words.h"
#include "compiler/scalars/number_words.h"

namespace accel::config {
namespace {

// The same bound as the `.accel` parser's (A1006): past it the file is hostile, not a config.
constexpr int kMaxNesting = 256;
// A config file has no `let` to name parts with.
constexpr const char* kFlatten = "flatten it: no Accelerate or DeepSpeed config nests this deep";
// Values a config file may expand to. An alias copies its anchor's whole subtree where it is
// used, so a few lines of nested aliases ("billion laughs") name billions of values. The
// largest published configs have a few hundred.
constexpr int64_t kMaxValues = 100'000;

// Where the text holds more than 3 x kMaxValues keys, values and sections, counted from
// yaml-cpp's events (no node tree is built, and counting stops there): yaml-cpp's tree costs
// ~380 bytes a value, and a flat 14 MB list took 4.3 GB before the reader's own count of
// values saw it. Aliases count once here; the reader counts them at every use.
std::optional<YAML::Mark> PastValueBudget(const std::string& text) {
  struct Counter final : YAML::EventHandler {
    struct Over {
      YAML::Mark mark;
    };
    // Keys are scalars too, and each section starts with an event: three events a value bound
    // the file as the reader's count of values does.
    void Count(const YAML::Mark& mark) {
      if (++values > 3 * kMaxValues) throw Over{mark};
    }
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
      Count(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
      Count(mark);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
      Count(mark);
    }
    void OnMapEnd() override {}
    int64_t values = 0;
  };
  std::istringstream stream(text);
  Counter counter;
  try {
    YAML::Parser parser(stream);
    while (parser.HandleNextDocument(counter)) {
    }
  } catch (const Counter::Over& over) {
    return over.mark;
  } catch (const YAML::Exception&) {
    // A syntax error: YAML::Load reports it, with its position.
  }
  return std::nullopt;
}

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Reader {
 public:
  Reader(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics, const KeyOwners& owners,
         YamlParser parser)
      : source_(source),
        diagnostics_(diagnostics),
        owners_(owners),
        json_(EndsWith(source.name(), ".json")),
        parser_(parser) {}

  ConfigFile Read() {
    ConfigFile config;
    config.file.source = &source_;
    config.root_record = "ClusterConfig";
    // yaml-cpp's scanner costs more than all the rest of checking a config, and most configs
    // are in the block style `accelerate config` writes, which the simple reader takes.
    if (parser_ == YamlParser::kOwnReaders && !json_) {
      if (std::optional<SimpleNode> root = ParseSimpleYaml(source_.text()))
        return ReadRoot(*root, std::move(config));
    }
    // yaml-cpp's node tree costs ~380 bytes a value: 77 MB for a file of 100,000 keys.
    if (parser_ == YamlParser::kOwnReaders && json_) return ReadJson(std::move(config));
    // Every counted event takes a byte of text at least: a smaller file needs no count.
    if (std::optional<YAML::Mark> past = source_.text().size() > 3 * kMaxValues
                                             ? PastValueBudget(source_.text())
                                             : std::nullopt) {
      diagnostics_.Emit(diag::Kind::TooManyValues, &source_, At(*past),
                        fmt::format("holds more than {} keys, values and sections", 3 * kMaxValues));
      return config;
    }
    YAML::Node root;
    try {
      root = YAML::Load(source_.text());
    } catch (const YAML::DeepRecursion& e) {
      // The scanner's own bound (2,000 levels) is hit before ours; report it as ours.
      diagnostics_.Emit(diag::Kind::NestingTooDeep, &source_, At(e.mark), "nesting", kMaxNesting, kFlatten);
      return config;
    } catch (const YAML::Exception& e) {
      diagnostics_.Emit(diag::Kind::SyntaxError, &source_, At(e.mark),
                        fmt::format("invalid {}: {}", json_ ? "JSON" : "YAML", e.msg));
      return config;
    }
    return ReadRoot(root, std::move(config));
  }

 private:
  ConfigFile ReadJson(ConfigFile config) {
    JsonDocument document = ParseJson(source_.text(), {kMaxNesting, kMaxValues});
    if (document.error) {
      YAML::Mark mark;
      mark.pos = static_cast<int>(document.error->offset);
      if (document.error->kind == JsonError::Kind::kTooDeep) {
        diagnostics_.Emit(diag::Kind::NestingTooDeep, &source_, At(mark), "nesting", kMaxNesting, kFlatten);
      } else {
        diagnostics_.Emit(diag::Kind::SyntaxError, &source_, At(mark),
                          "invalid JSON: " + document.error->message);
      }
      return config;
    }
    return ReadRoot(JsonNode(document, source_.text(), 0), std::move(config));
  }

  // The rest of Read, for a yaml-cpp node, a SimpleNode or a JsonNode: they answer alike.
  template <typename Node>
  ConfigFile ReadRoot(const Node& root, ConfigFile config) {
    if (!root.IsMap()) {
      diagnostics_.Emit(diag::Kind::SyntaxError, &source_,
                        root.IsDefined() ? At(root.Mark()) : source::Span{},
                        root.IsNull() ? "the file holds no settings; a config file is a mapping of keys "
                                        "such as `distributed_type: MULTI_GPU`"
                                      : "expected a mapping of keys at the top level of a config file");
      return config;
    }
    config.kind = ChooseKind(root);
    config.root_record = RootRecord(config.kind, root);
    if (config.kind == FileKind::DeepSpeedConfig && !json_) {
      diagnostics_.Emit(diag::Kind::KindByContent, &source_, first_deepspeed_key_, deepspeed_keys_,
                        deepspeed_keys_ == 1 ? "is" : "are", accelerate_keys_);
      // DeepSpeed, Accelerate and the Trainer all read a DeepSpeed config with json.load,
      // whatever its name: where the text is JSON, type its values as JSON does.
      if (parser_ == YamlParser::kOwnReaders && !ParseJson(source_.text(), {kMaxNesting, kMaxValues}).error) {
        json_ = true;
        return ReadJson(std::move(config));
      }
    }
    // Accelerate's loader passes `key: null` on as None: the dataclass field, or the launch
    // argument a section's key sets, is None, which is its absence only where None is also
    // what the key defaults to. The checker judges that by the key's type (optional or not).
    list_top_level_nulls_ = config.kind == FileKind::AccelerateConfig;

    ast::JobDecl job;
    job.name = {source_.name(), {0, 0}};
    job.span = {0, static_cast<uint32_t>(source_.text().size())};
    job.body.span = job.span;
    job.body.statements = Statements(root, 1);
    if (config.kind == FileKind::JobSpec) {
      // `job: NAME` names the job; the other keys are its body.
      auto named = std::find_if(job.body.statements.begin(), job.body.statements.end(),
                                [](const ast::Statement& s) { return s.path[0].text == "job"; });
      job.name = {named->value->text, named->value->span};
      job.body.statements.erase(named);
      config.file.jobs.push_back(std::move(job));
      return config;
    }
    config.null_keys = std::move(null_keys_);
    // A missing top-level key is reported at the first key, not at a comment above it.
    if (!job.body.statements.empty()) job.name.span = job.body.statements.front().path[0].span;
    config.file.jobs.push_back(std::move(job));
    return config;
  }

  static bool HasKey(const YAML::Node& map, const char* key) { return static_cast<bool>(map[key]); }
  static bool HasKey(const SimpleNode& map, const char* key) { return map.Find(key) != nullptr; }
  static bool HasKey(const JsonNode& map, const char* key) { return map.Find(key).has_value(); }
  // The text of `map[key]` when it is a scalar.
  static std::optional<std::string> ScalarAt(const YAML::Node& map, const char* key) {
    const YAML::Node value = map[key];
    return value && value.IsScalar() ? std::optional<std::string>(value.Scalar()) : std::nullopt;
  }
  static std::optional<std::string> ScalarAt(const SimpleNode& map, const char* key) {
    const SimpleNode* value = map.Find(key);
    return value && value->IsScalar() ? std::optional<std::string>(value->Scalar()) : std::nullopt;
  }
  static std::optional<std::string> ScalarAt(const JsonNode& map, const char* key) {
    std::optional<JsonNode> value = map.Find(key);
    return value && value->IsScalar() ? std::optional<std::string>(value->Scalar()) : std::nullopt;
  }
  // Calls `visit(key, value)` for each entry of a mapping, in order.
  template <typename Visit>
  static void ForEachEntry(const YAML::Node& map, Visit visit) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp's iterator hands out a temporary pair, so a reference to `it->first`
      // dangles at the end of the statement (ASan caught it under the config fuzzer).
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      visit(key, value);
    }
  }
  template <typename Visit>
  static void ForEachEntry(const SimpleNode& map, Visit visit) {
    for (const SimpleNode::Entry& entry : map.entries()) visit(entry.first, entry.second);
  }
  template <typename Visit>
  static void ForEachEntry(const JsonNode& map, Visit visit) {
    map.ForEachEntry(visit);
  }
  // Calls `visit(item)` for each item of a sequence, in order.
  template <typename Visit>
  static void ForEachItem(const YAML::Node& sequence, Visit visit) {
    for (auto it = sequence.begin(); it != sequence.end(); ++it) {
      const YAML::Node item = *it;  // a copy: the iterator's proxy dies with the iterator
      visit(item);
    }
  }
  // The simple reader's only sequence is `[]`.
  template <typename Visit>
  static void ForEachItem(const SimpleNode&, Visit) {}
  template <typename Visit>
  static void ForEachItem(const JsonNode& sequence, Visit visit) {
    sequence.ForEachItem(visit);
  }

  // The kind more top-level keys belong to; on a tie, a `.json` file without Accelerate's
  // identifying keys is a DeepSpeed config.
  template <typename Node>
  FileKind ChooseKind(const Node& root) {
    if (ScalarAt(root, "job")) return FileKind::JobSpec;
    CountKeyOwners(root);
    if (deepspeed_keys_ != accelerate_keys_) {
      return deepspeed_keys_ > accelerate_keys_ ? FileKind::DeepSpeedConfig : FileKind::AccelerateConfig;
    }
    if (json_ && !HasKey(root, "distributed_type") && !HasKey(root, "compute_environment")) {
      return FileKind::DeepSpeedConfig;
    }
    return FileKind::AccelerateConfig;
  }

  // Counts the top-level keys that only an Accelerate config has and those only a DeepSpeed
  // config has, and where the first of the latter is.
  template <typename Node>
  void CountKeyOwners(const Node& root) {
    accelerate_keys_ = deepspeed_keys_ = 0;
    if (!owners_.accelerate || !owners_.deepspeed) return;
    ForEachEntry(root, [&](const Node& key, const Node&) {
      if (!key.IsScalar()) return;
      std::string_view name = key.Scalar();
      bool accelerate = owners_.accelerate(name), deepspeed = owners_.deepspeed(name);
      if (accelerate == deepspeed) return;
      if (accelerate) {
        ++accelerate_keys_;
      } else if (deepspeed_keys_++ == 0) {
        first_deepspeed_key_ = ScalarSpan(key);
      }
    });
  }

  template <typename Node>
  static std::string RootRecord(FileKind kind, const Node& root) {
    if (kind == FileKind::DeepSpeedConfig) return "DeepSpeedConfig";
    if (kind == FileKind::JobSpec) return "Job";
    if (ScalarAt(root, "compute_environment") == "AMAZON_SAGEMAKER") return "SageMakerConfig";
    return "ClusterConfig";
  }

  // A key given twice is legal YAML that PyYAML resolves to the last value: warn at the
  // second one and keep it, as Accelerate does.
  template <typename Node>
  std::vector<ast::Statement> Statements(const Node& map, int depth) {
    std::vector<ast::Statement> statements;
    std::map<std::string, size_t> index;
    ForEachEntry(map, [&](const Node& key, const Node& value) {
      if (!key.IsScalar()) {
        diagnostics_.Emit(diag::Kind::SyntaxError, &source_, At(key.Mark()),
                          "a key of a config file must be a plain name, not a list or a mapping");
        return;
      }
      ast::Statement statement;
      ast::Name name{std::string(key.Scalar()), ScalarSpan(key)};
      statement.value = Expression(value, depth, name.span);
      statement.span = source::Span::Join(name.span, statement.value->span);
      auto [it_index, inserted] = index.emplace(name.text, statements.size());
      if (!inserted) {
        ast::Statement& first = statements[it_index->second];
        diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::DuplicateKey, &source_, name.span, name.text);
        d.notes.push_back(
            diag::DiagnosticEngine::Note(diag::Kind::NotePreviousValue, &source_, first.path[0].span));
        statement.path.push_back(std::move(name));
        first = std::move(statement);
        return;
      }
      statement.path.push_back(std::move(name));
      statements.push_back(std::move(statement));
    });
    // A top-level null is kept for the checker (an optional key reads it as unset, a key the
    // loader needs refuses it) and listed, for the keys launch takes null for a value.
    if (list_top_level_nulls_ && depth == 1) {
      for (const ast::Statement& s : statements) {
        if (s.value->kind == ast::ExprKind::None) null_keys_.push_back(s.path[0]);
      }
    }
    return statements;
  }

  // `owner` locates values YAML gives no position of its own (an empty value after `key:`).
  template <typename Node>
  ast::ExprPtr Expression(const Node& node, int depth, source::Span owner) {
    auto expr = std::make_unique<ast::Expr>();
    expr->span = owner;
    if (++values_ > kMaxValues) {
      // Once: everything past the budget is dropped unread.
      if (values_ == kMaxValues + 1)
        diagnostics_.Emit(diag::Kind::TooManyValues, &source_, At(node.Mark()),
                          fmt::format("expands to more than {} values (each YAML alias copies what its anchor "
                                      "names)",
                                      kMaxValues));
      expr->kind = ast::ExprKind::None;
      return expr;
    }
    if (depth > kMaxNesting) {
      diagnostics_.Emit(diag::Kind::NestingTooDeep, &source_, At(node.Mark()), "nesting", kMaxNesting,
                        kFlatten);
      expr->kind = ast::ExprKind::None;
      return expr;
    }
    if (!SafeTag(node.Tag())) {
      diagnostics_.Emit(
          diag::Kind::SyntaxError, &source_, At(node.Mark()),
          fmt::format("the tag `{}` is refused by yaml.safe_load, which Accelerate loads configs "
                      "with; remove it",
                      Shorthand(node.Tag())));
      expr->kind = ast::ExprKind::None;
      return expr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Map:
        expr->kind = ast::ExprKind::Record;  // anonymous: the field's type names it
        expr->span = Start(node, owner);
        expr->block = std::make_unique<ast::Block>();
        expr->block->statements = Statements(node, depth + 1);
        expr->block->span = expr->span;
        return expr;
      case YAML::NodeType::Sequence:
        expr->kind = ast::ExprKind::List;
        expr->span = Start(node, owner);
        ForEachItem(node, [&](const Node& item) {
          expr->operands.push_back(Expression(item, depth + 1, expr->span));
        });
        return expr;
      case YAML::NodeType::Scalar:
        expr->span = ScalarSpan(node);
        Scalar(node, *expr);
        return expr;
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        expr->kind = ast::ExprKind::None;
        if (node.IsDefined() && node.Mark().pos >= 0) expr->span = ScalarSpan(node);
        return expr;
    }
    return expr;
  }

  static constexpr std::string_view kYamlTagPrefix = "tag:yaml.org,2002:";

  // A tag as the file wrote it: `!!python/object:os.system`, not its resolved URI.
  static std::string Shorthand(std::string_view tag) {
    if (tag.substr(0, kYamlTagPrefix.size()) == kYamlTagPrefix)
      return "!!" + std::string(tag.substr(kYamlTagPrefix.size()));
    return std::string(tag);
  }

  // Whether yaml.safe_load constructs a node with this tag: untagged (`?` plain, `!` quoted) or
  // one of SafeConstructor's YAML 1.1 types. Anything else (`!!python/object:...`, a local
  // `!tag`) makes it raise ConstructorError.
  static bool SafeTag(std::string_view tag) {
    if (tag.empty() || tag == "?" || tag == "!") return true;
    if (tag.substr(0, kYamlTagPrefix.size()) != kYamlTagPrefix) return false;
    std::string_view type = tag.substr(kYamlTagPrefix.size());
    for (std::string_view safe : {"null", "bool", "int", "float", "binary", "timestamp", "omap", "pairs",
                                  "set", "str", "seq", "map"}) {
      if (type == safe) return true;
    }
    return false;
  }

  // Types a scalar the way Accelerate's loader would: json.load for `.json`, PyYAML's
  // safe_load otherwise. Quoted scalars are always strings.
  template <typename Node>
  void Scalar(const Node& node, ast::Expr& expr) {
    expr.text = node.Scalar();
    const std::string& text = expr.text;
    expr.kind = ast::ExprKind::String;
    std::string_view tag = node.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return;
    if (json_) {
      if (text == "true" || text == "false") {
        expr.kind = ast::ExprKind::Bool;
        expr.bool_value = text == "true";
      } else if (scalars::IsJsonNumber(text)) {
        Number(text, text.find_first_of(".eE") == std::string::npos, expr);
      } else if (text == "NaN" || text == "Infinity" || text == "-Infinity") {
        // Not RFC 8259, but Python's json.load reads them as floats, and so does DeepSpeed.
        Number(text, false, expr);
      }
      return;
    }
    if (std::optional<int64_t> amount = Quantity(text, expr)) {
      expr.int_value = *amount;  // Quantity set the kind: a duration or a byte size
      return;
    }
    if (std::optional<bool> b = scalars::Yaml11Bool(text)) {
      expr.kind = ast::ExprKind::Bool;
      expr.bool_value = *b;
    } else if (scalars::IsYaml11Int(text)) {
      Number(text, true, expr);
    } else if (scalars::IsYaml11Float(text)) {
      Number(text, false, expr);
    }
  }

  // `60s`, `250ms`, `10GB`, `512MiB` as the `.accel` language writes them: PyYAML reads them as
  // strings, so they are typed here (a string field still takes them as text).
  std::optional<int64_t> Quantity(const std::string& text, ast::Expr& expr) {
    std::optional<scalars::QuantityWords> quantity = scalars::SplitQuantity(text);
    if (!quantity) return std::nullopt;
    static const std::map<std::string_view, int64_t> scale = {
        {"ms", 1},          {"s", 1000},        {"m", 60000},       {"h", 3600000},        {"B", 1},
        {"KB", 1000},       {"MB", 1000000},    {"GB", 1000000000}, {"TB", 1000000000000}, {"KiB", 1LL << 10},
        {"MiB", 1LL << 20}, {"GiB", 1LL << 30}, {"TiB", 1LL << 40}};
    std::string digits;
    for (char c : quantity->digits) {
      if (c != '_') digits += c;
    }
    errno = 0;
    long long count = std::strtoll(digits.c_str(), nullptr, 10);
    int64_t amount = 0;
    if (errno == ERANGE || __builtin_mul_overflow(count, scale.at(quantity->unit), &amount))
      return std::nullopt;
    std::string_view unit = quantity->unit;
    bool duration = unit == "ms" || unit == "s" || unit == "m" || unit == "h";
    expr.kind = duration ? ast::ExprKind::Duration : ast::ExprKind::Bytes;
    return amount;
  }

  // A number; a float with an integral value becomes an int, as Python's json numbers do
  // where DeepSpeed's validators expect ints (`"reduce_bucket_size": 5e8`).
  void Number(const std::string& text, bool integral, ast::Expr& expr) {
    std::string digits;
    for (char c : text) {
      if (c != '_') digits += c;
    }
    if (integral) {
      int base = 10;
      size_t start = digits[0] == '-' || digits[0] == '+' ? 1 : 0;
      std::string body = digits.substr(start);
      if (body.rfind("0x", 0) == 0) {
        base = 16;
        body = body.substr(2);
      } else if (body.rfind("0b", 0) == 0) {
        base = 2;
        body = body.substr(2);
      } else if (body.size() > 1 && body[0] == '0') {
        base = 8;
      }
      errno = 0;
      char* end = nullptr;
      long long value = std::strtoll((digits.substr(0, start) + body).c_str(), &end, base);
      if (errno == ERANGE) {
        diagnostics_.Emit(diag::Kind::IntegerTooLarge, &source_, expr.span, text);
        expr.kind = ast::ExprKind::None;
        return;
      }
      expr.kind = ast::ExprKind::Int;
      expr.int_value = value;
      return;
    }
    std::string lowered = digits;
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double value = lowered.find("nan") != std::string::npos   ? std::nan("")
                   : lowered.find("inf") != std::string::npos ? (lowered[0] == '-' ? -HUGE_VAL : HUGE_VAL)
                                                              : std::strtod(digits.c_str(), nullptr);
    if (json_ && std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9.0e18) {
      expr.kind = ast::ExprKind::Int;
      expr.int_value = static_cast<int64_t>(value);
      return;
    }
    if (std::isinf(value) && lowered.find("inf") == std::string::npos) {
      diagnostics_.Emit(diag::Kind::FloatOutOfRange, &source_, expr.span, text);
      expr.kind = ast::ExprKind::None;
      return;
    }
    expr.kind = ast::ExprKind::Float;
    expr.float_value = value;
  }

  source::Span At(const YAML::Mark& mark) const {
    if (mark.pos < 0) return {};
    uint32_t at = std::min<uint32_t>(static_cast<uint32_t>(mark.pos), source_.text().size());
    return {at, std::min<uint32_t>(at + 1, source_.text().size())};
  }

  // The opening character of a mapping or sequence (one character: it may span many lines).
  template <typename Node>
  source::Span Start(const Node& node, source::Span owner) const {
    if (node.Mark().pos < 0) return owner;
    return At(node.Mark());
  }

  // The text of a scalar in the file: its quotes included, up to the end of its first line.
  template <typename Node>
  source::Span ScalarSpan(const Node& node) const {
    const std::string& text = source_.text();
    if (node.Mark().pos < 0) return {};
    size_t begin = std::min<size_t>(static_cast<size_t>(node.Mark().pos), text.size());
    size_t end = begin;
    char quote = begin < text.size() ? text[begin] : '\0';
    if (quote == '"' || quote == '\'') {
      end = begin + 1;
      while (end < text.size() && text[end] != quote && text[end] != '\n') {
        if (quote == '"' && text[end] == '\\') ++end;
        ++end;
      }
      end = std::min(end + 1, text.size());
    } else {
      end = std::min(begin + std::max<size_t>(node.IsScalar() ? node.Scalar().size() : 1, 1), text.size());
      // Search the scalar's own bytes only: from `begin` to the end of the file would make a
      // one-line JSON file of n keys cost n^2.
      size_t newline = std::string_view(text).substr(begin, end - begin).find('\n');
      if (newline != std::string_view::npos) end = begin + newline;
    }
    if (end <= begin) end = std::min(begin + 1, text.size());
    return {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
  }

  const source::SourceFile& source_;
  diag::DiagnosticEngine& diagnostics_;
  const KeyOwners& owners_;
  bool json_;
  YamlParser parser_;
  // An Accelerate config file's top-level nulls go to ConfigFile::null_keys.
  bool list_top_level_nulls_ = false;
  std::vector<ast::Name> null_keys_;
  // Top-level keys only one kind of file has (CountKeyOwners).
  int accelerate_keys_ = 0;
  int deepspeed_keys_ = 0;
  source::Span first_deepspeed_key_;
  // Values read so far, aliases counted at every use (kMaxValues).
  int64_t values_ = 0;
};

}  // namespace

bool IsConfigFileName(const std::string& path) {
  return EndsWith(path, ".yaml") || EndsWith(path, ".yml") || EndsWith(path, ".json");
}

ConfigFile ReadConfigFile(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                          const KeyOwners& owners, YamlParser parser) {
  return Reader(source, diagnostics, owners, parser).Read();
}

}  // namespace accel::config
