#include "runtime/train/process_group.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "runtime/launch/launch_id.h"
#include "runtime/launch/topology.h"

namespace accel::rt::train {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

}  // namespace

WorkerContext WorkerContextFromEnvironment() {
  WorkerContext context;
  context.rank = EnvInt(launch::kEnvRank, 0);
  context.world_size = EnvInt(launch::kEnvWorldSize, 1);
  context.local_rank = EnvInt(launch::kEnvLocalRank, 0);
  if (const char* addr = std::getenv(launch::kEnvMasterAddr)) context.master_addr = addr;
  context.master_port = EnvInt(launch::kEnvMasterPort, 0);
  if (const char* id = std::getenv(launch::kEnvLaunchId)) context.launch_id = id;
  return context;
}

std::unique_ptr<distributed::Collectives> ConnectGroup(const plan::InitProcessGroup& init,
                                                       const WorkerContext& context) {
  if (context.world_size <= 1) return distributed::MakeSingleProcess();
  return distributed::Connect(std::string(plan::EnumName(init.backend)),
                              {context.rank, context.world_size, context.master_addr, context.master_port,
                               std::chrono::milliseconds(init.timeout), context.launch_id},
                              context.local_rank);
}

}  // namespace accel::rt::train
