// TorchFacts as the JSON accelrun-worker prints and accelrun reads, and the asking.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "runtime/tools/torch_facts.h"

namespace accel::tools {

std::string TorchFactsJson(const TorchFacts& facts) {
  llvm::json::Array accelerators;
  for (const std::string& name : facts.other_accelerators) accelerators.push_back(name);
  llvm::json::Object object{{"version", facts.version},
                            {"intra_op_threads", facts.intra_op_threads},
                            {"cuda_compiled", facts.cuda_compiled},
                            {"cuda", facts.cuda},
                            {"devices", facts.devices},
                            {"bf16", facts.bf16},
                            {"nccl", facts.nccl},
                            {"gloo", facts.gloo},
                            {"other_accelerators", std::move(accelerators)},
                            {"blas", facts.blas},
                            {"blas_optimized", facts.blas_optimized}};
  std::string text;
  llvm::raw_string_ostream out(text);
  out << llvm::json::Value(std::move(object));
  return out.str();
}

llvm::Expected<TorchFacts> TorchFactsFromJson(std::string_view text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value) return value.takeError();
  TorchFacts facts;
  llvm::json::Path::Root root("facts");
  llvm::json::ObjectMapper map(*value, root);
  if (!map || !map.map("version", facts.version) || !map.map("intra_op_threads", facts.intra_op_threads) ||
      !map.map("cuda_compiled", facts.cuda_compiled) || !map.map("cuda", facts.cuda) ||
      !map.map("devices", facts.devices) || !map.map("bf16", facts.bf16) || !map.map("nccl", facts.nccl) ||
      !map.map("gloo", facts.gloo) || !map.map("other_accelerators", facts.other_accelerators) ||
      !map.map("blas", facts.blas) || !map.map("blas_optimized", facts.blas_optimized)) {
    return root.getError();
  }
  return facts;
}

llvm::Expected<TorchFacts> AskWorkerForFacts(const std::string& worker) {
  auto fail = [&worker](const std::string& why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "`%s --facts` %s", worker.c_str(),
                                   why.c_str());
  };
  llvm::SmallString<128> answer;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("accelrun-facts", "json", answer))
    return fail("could not run: " + ec.message());
  llvm::FileRemover remove(answer);
  std::string error;
  llvm::StringRef out = answer;
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), out, llvm::None};
  int code = llvm::sys::ExecuteAndWait(worker, {worker, "--facts"}, llvm::None, redirects,
                                       /*SecondsToWait=*/60, /*MemoryLimit=*/0, &error);
  if (code != 0) return fail(error.empty() ? fmt::format("exited {}", code) : "could not run: " + error);
  std::ifstream in(answer.c_str());
  std::stringstream text;
  text << in.rdbuf();
  llvm::Expected<TorchFacts> facts = TorchFactsFromJson(text.str());
  if (!facts) return fail("answered something else: " + llvm::toString(facts.takeError()));
  return facts;
}

}  // namespace accel::tools
