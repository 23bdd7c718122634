// Lowering of the GPU engines (MULTI_GPU, FSDP, DeepSpeed and its JSON) to `train.sharding`,
// `init_process_group.device` and `rehearsal`: one case per mapping of the tables in
// docs/rules/fsdp.md and docs/rules/deepspeed.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/pipeline/compile.h"
#include "compiler/lower/lower.h"

namespace accel::pipeline {
namespace {

class LowerEnginesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    diag::DiagnosticEngine diagnostics;
    stdlib_ = Stdlib::Load(diagnostics);
    ASSERT_FALSE(diagnostics.has_errors());
  }
  // A job whose `compute` block is `compute`, with an optional model, train and accelerator block.
  Compilation Compile(const std::string& compute, const std::string& model = "MLP { inputs = 4 }",
                      const std::string& train = "steps = 5", const std::string& accelerator = "") {
    std::string text = "job tiny {\n  compute { " + compute + " }\n  accelerator { " + accelerator +
                       " }\n  model = " + model +
                       "\n  data = SyntheticRegression { features = 4; batch_size = 8 }\n  train { " + train +
                       " }\n}\n";
    sema::MapEnvironment environment;
    return CompileText("t.accel", text, *stdlib_, environment);
  }
  // The codes of a compilation's errors, in order.
  static std::vector<std::string> Codes(const Compilation& c) {
    std::vector<std::string> codes;
    for (const diag::Diagnostic& d : c.diagnostics.diagnostics())
      if (d.severity == diag::Severity::Error) codes.push_back(d.code);
    return codes;
  }
  static const plan::Sharding& Sharding(const Compilation& c) {
    return c.plan->Find<plan::TrainLoop>()->sharding;
  }
  // Writes a DeepSpeed JSON into the test's temporary directory and returns its path.
  static std::string WriteJson(const std::string& name, const std::string& text) {
    std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::unique_ptr<Stdlib> stdlib_;
};

TEST_F(LowerEnginesTest, MultiGpuIsACudaJobOverNcclWithoutSharding) {
  Compilation c = Compile("distributed_type = MULTI_GPU; num_processes = 4; num_machines = 2");
  ASSERT_TRUE(c.plan.has_value()) << c.diagnostics.diagnostics().size();
  const auto* init = c.plan->Find<plan::InitProcessGroup>();
  EXPECT_EQ(init->device, plan::Device::cuda);
  EXPECT_EQ(init->backend, plan::Backend::nccl);
  EXPECT_FALSE(init->rehearsal);
  EXPECT_EQ(init->processes_per_machine, 2);
  EXPECT_EQ(Sharding(c).engine, plan::ShardingEngine::ddp);
  EXPECT_EQ(Sharding(c).stage, 0);
}

TEST_F(LowerEnginesTest, UseCpuMakesAGpuJobARehearsalOverGloo) {
  Compilation c = Compile("distributed_type = FSDP; num_processes = 2; use_cpu = true");
  ASSERT_TRUE(c.plan.has_value());
  const auto* init = c.plan->Find<plan::InitProcessGroup>();
  EXPECT_EQ(init->device, plan::Device::cpu);
  EXPECT_EQ(init->backend, plan::Backend::gloo);
  EXPECT_TRUE(init->rehearsal);
  EXPECT_EQ(Sharding(c).engine, plan::ShardingEngine::fsdp);  // the engine is rehearsed too
  EXPECT_EQ(Sharding(c).stage, 3);

  // A CPU job is no rehearsal, whatever use_cpu says.
  Compilation cpu = Compile("distributed_type = MULTI_CPU; num_processes = 2; use_cpu = true");
  ASSERT_TRUE(cpu.plan.has_value());
  EXPECT_FALSE(cpu.plan->Find<plan::InitProcessGroup>()->rehearsal);
}

TEST_F(LowerEnginesTest, OtherAcceleratorsBuildForTheirDeviceAndBackend) {
  struct Case {
    const char* type;
    plan::Device device;
    plan::Backend backend;
  };
  for (const Case& c : {Case{"MULTI_XPU", plan::Device::xpu, plan::Backend::xccl},
                        Case{"MULTI_NPU", plan::Device::npu, plan::Backend::hccl},
                        Case{"MULTI_MLU", plan::Device::mlu, plan::Backend::cncl},
                        Case{"MULTI_SDAA", plan::Device::sdaa, plan::Backend::tccl},
                        Case{"MULTI_MUSA", plan::Device::musa, plan::Backend::mccl},
                        Case{"MULTI_HPU", plan::Device::hpu, plan::Backend::hccl},
                        Case{"MULTI_NEURON", plan::Device::neuron, plan::Backend::neuron}}) {
    SCOPED_TRACE(c.type);
    Compilation job = Compile(fmt::format("distributed_type = {}; num_processes = 2", c.type));
    ASSERT_TRUE(job.plan.has_value()) << fmt::format("{}", fmt::join(Codes(job), " "));
    const auto* init = job.plan->Find<plan::InitProcessGroup>();
    EXPECT_EQ(init->device, c.device);
    EXPECT_EQ(init->backend, c.backend);
    EXPECT_FALSE(init->rehearsal);
    Compilation rehearsed =
        Compile(fmt::format("distributed_type = {}; num_processes = 2; use_cpu = true", c.type));
    ASSERT_TRUE(rehearsed.plan.has_value());
    EXPECT_EQ(rehearsed.plan->Find<plan::InitProcessGroup>()->device, plan::Device::cpu);
    EXPECT_EQ(rehearsed.plan->Find<plan::InitProcessGroup>()->backend, plan::Backend::gloo);
    EXPECT_TRUE(rehearsed.plan->Find<plan::InitProcessGroup>()->rehearsal);
  }
  // XLA has no device or process group accelrun could stand in for: a rehearsal only.
  Compilation xla = Compile("distributed_type = XLA; num_processes = 2");
  EXPECT_FALSE(xla.plan.has_value());
  EXPECT_EQ(Codes(xla), std::vector<std::string>{"A4024"});
  Compilation rehearsed = Compile("distributed_type = XLA; num_processes = 2; use_cpu = true");
  ASSERT_TRUE(rehearsed.plan.has_value());
  EXPECT_TRUE(rehearsed.plan->Find<plan::InitProcessGroup>()->rehearsal);
  Compilation megatron = Compile("distributed_type = MEGATRON_LM; num_processes = 2");
  EXPECT_EQ(Codes(megatron), std::vector<std::string>{"A4004"});
}

TEST_F(LowerEnginesTest, MpirunHostfileLowersForTheCpuLauncherOnly) {
  Compilation cpu = Compile(
      "distributed_type = MULTI_CPU; num_processes = 4; num_machines = 2; main_process_ip = \"10.0.0.1\"; "
      "main_process_port = 29500; mpirun_config { mpirun_hostfile = "
      "\"/etc/hosts.mpi\" }");
  ASSERT_TRUE(cpu.plan.has_value()) << fmt::format("{}", fmt::join(Codes(cpu), " "));
  EXPECT_EQ(cpu.plan->Find<plan::InitProcessGroup>()->mpirun_hostfile, "/etc/hosts.mpi");
  // accelerate launch's GPU launchers ignore the section; with use_cpu its CPU launcher reads it.
  Compilation gpu = Compile(
      "distributed_type = MULTI_GPU; num_processes = 2; mpirun_config { mpirun_hostfile = \"/etc/hosts.mpi\" "
      "}");
  ASSERT_TRUE(gpu.plan.has_value());
  EXPECT_EQ(gpu.plan->Find<plan::InitProcessGroup>()->mpirun_hostfile, "");
  Compilation rehearsal = Compile(
      "distributed_type = MULTI_GPU; num_processes = 2; use_cpu = true; mpirun_config { mpirun_hostfile = "
      "\"/etc/hosts.mpi\" }");
  ASSERT_TRUE(rehearsal.plan.has_value());
  EXPECT_EQ(rehearsal.plan->Find<plan::InitProcessGroup>()->mpirun_hostfile, "/etc/hosts.mpi");
}

TEST_F(LowerEnginesTest, Fp16LowersForAGpuJobAndStaysRefusedOnTheCpu) {
  Compilation gpu = Compile("distributed_type = MULTI_GPU; num_processes = 2; mixed_precision = FP16");
  ASSERT_TRUE(gpu.plan.has_value());
  EXPECT_EQ(gpu.plan->Find<plan::TrainLoop>()->mixed_precision, plan::MixedPrecision::fp16);
  Compilation cpu = Compile("distributed_type = MULTI_CPU; num_processes = 2; mixed_precision = FP16");
  EXPECT_EQ(Codes(cpu), std::vector<std::string>{"A4010"});
}

TEST_F(LowerEnginesTest, FsdpShardingStrategiesBecomeStagesAndResharding) {
  struct Case {
    const char* strategy;
    int64_t stage;
    bool reshard;
    bool hybrid;
  };
  for (const Case& c : {Case{"FULL_SHARD", 3, true, false}, Case{"SHARD_GRAD_OP", 3, false, false},
                        Case{"NO_SHARD", 0, false, false}, Case{"HYBRID_SHARD", 3, true, true},
                        Case{"HYBRID_SHARD_ZERO2", 3, false, true}, Case{"2", 3, false, false}}) {
    Compilation compiled = Compile(std::string("distributed_type = FSDP; num_processes = 2; fsdp_config { "
                                               "sharding_strategy = ") +
                                   c.strategy + " }");
    ASSERT_TRUE(compiled.plan.has_value()) << c.strategy;
    const plan::Sharding& s = Sharding(compiled);
    EXPECT_EQ(s.engine, plan::ShardingEngine::fsdp);
    EXPECT_EQ(s.stage, c.stage) << c.strategy;
    if (c.stage == 3) {
      EXPECT_EQ(s.reshard_after_forward, c.reshard) << c.strategy;
    }
    EXPECT_EQ(s.hybrid, c.hybrid) << c.strategy;
  }
}

TEST_F(LowerEnginesTest, FsdpLaunchDefaultsApplyWithoutASection) {
  Compilation c = Compile("distributed_type = FSDP; num_processes = 2");
  ASSERT_TRUE(c.plan.has_value());
  const plan::Sharding& s = Sharding(c);
  EXPECT_EQ(s.stage, 3);
  EXPECT_TRUE(s.reshard_after_forward);
  EXPECT_EQ(s.wrap_policy, plan::WrapPolicy::no_wrap);
  EXPECT_EQ(s.backward_prefetch, plan::BackwardPrefetch::none);
  EXPECT_TRUE(s.cpu_ram_efficient_loading);
  EXPECT_TRUE(s.sync_module_states);
  EXPECT_EQ(s.state_dict_type, plan::StateDictType::full);
}

TEST_F(LowerEnginesTest, Fsdp2ReadsReshardAfterForwardAndDefaultsToShardedState) {
  Compilation c = Compile(
      "distributed_type = FSDP; num_processes = 2; fsdp_config { fsdp_version = 2; "
      "reshard_after_forward = false }");
  ASSERT_TRUE(c.plan.has_value());
  EXPECT_EQ(Sharding(c).stage, 3);
  EXPECT_FALSE(Sharding(c).reshard_after_forward);
  EXPECT_EQ(Sharding(c).state_dict_type, plan::StateDictType::sharded);
}

TEST_F(LowerEnginesTest, FsdpWrappingPrefetchLoadingAndStateDictLower) {
  Compilation c = Compile(
      "distributed_type = FSDP; num_processes = 2; fsdp_config { auto_wrap_policy = TRANSFORMER_BASED_WRAP; "
      "transformer_cls_names_to_wrap = \"Block, Attention\"; backward_prefetch = BACKWARD_POST; "
      "forward_prefetch = "
      "true; limit_all_gathers = false; sync_module_states = false; cpu_ram_efficient_loading = false; "
      "activation_checkpointing = true; state_dict_type = LOCAL_STATE_DICT; cpu_offload = true; "
      "use_orig_params "
      "= false }",
      // A model's own classes: a built-in model has no `Block` (A3018).
      "TorchScript { path = \"model.pt\" }");
  ASSERT_TRUE(c.plan.has_value());
  const plan::Sharding& s = Sharding(c);
  EXPECT_EQ(s.wrap_policy, plan::WrapPolicy::transformer_based);
  EXPECT_EQ(s.transformer_layer_cls_to_wrap, (std::vector<std::string>{"Block", "Attention"}));
  EXPECT_EQ(s.backward_prefetch, plan::BackwardPrefetch::backward_post);
  EXPECT_TRUE(s.forward_prefetch);
  EXPECT_FALSE(s.limit_all_gathers);
  EXPECT_FALSE(s.sync_module_states);
  EXPECT_FALSE(s.cpu_ram_efficient_loading);
  EXPECT_TRUE(s.activation_checkpointing);
  EXPECT_EQ(s.state_dict_type, plan::StateDictType::sharded);  // LOCAL: each rank its own shard
  EXPECT_TRUE(s.offload_params);
  EXPECT_TRUE(s.offload_optimizer);

  Compilation sized = Compile(
      "distributed_type = FSDP; num_processes = 2; fsdp_config { auto_wrap_policy = SIZE_BASED_WRAP; "
      "min_num_params = 1000; backward_prefetch = BACKWARD_PRE; state_dict_type = FULL_STATE_DICT }");
  ASSERT_TRUE(sized.plan.has_value());
  EXPECT_EQ(Sharding(sized).wrap_policy, plan::WrapPolicy::size_based);
  EXPECT_EQ(Sharding(sized).min_num_params, 1000);
  EXPECT_EQ(Sharding(sized).backward_prefetch, plan::BackwardPrefetch::backward_pre);
  EXPECT_EQ(Sharding(sized).state_dict_type, plan::StateDictType::full);
  // CPU-RAM-efficient loading (the default) needs rank 0's weights broadcast.
  EXPECT_TRUE(Sharding(sized).sync_module_states);
}

TEST_F(LowerEnginesTest, FsdpSettingsAccelrunDoesNotRunAreRefused) {
  Compilation c =
      Compile("distributed_type = FSDP; num_processes = 2; fsdp_config { ignored_modules = \"head\" }");
  EXPECT_EQ(Codes(c), std::vector<std::string>{"A4003"});
  // A NO job ignores its fsdp_config, as `accelerate launch` does.
  Compilation ignored = Compile("distributed_type = NO; fsdp_config { ignored_modules = \"head\" }");
  EXPECT_TRUE(ignored.plan.has_value());
}

TEST_F(LowerEnginesTest, DeepSpeedPluginStageOffloadAndLoopSettings) {
  Compilation c = Compile(
      "distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { zero_stage = 3; "
      "offload_optimizer_device = CPU; offload_param_device = CPU; zero3_save_16bit_model = true; "
      "gradient_accumulation_steps = 4; gradient_clipping = 0.5 }");
  ASSERT_TRUE(c.plan.has_value());
  const plan::Sharding& s = Sharding(c);
  EXPECT_EQ(s.engine, plan::ShardingEngine::deepspeed);
  EXPECT_EQ(s.stage, 3);
  EXPECT_TRUE(s.offload_optimizer);
  EXPECT_TRUE(s.offload_params);
  EXPECT_TRUE(s.gather_16bit_weights_on_model_save);
  EXPECT_TRUE(s.overlap_comm);               // DeepSpeed's default at stage 3
  EXPECT_TRUE(s.cpu_ram_efficient_loading);  // zero3_init_flag, on by default at stage 3
  const auto* loop = c.plan->Find<plan::TrainLoop>();
  EXPECT_EQ(loop->gradient_accumulation.num_steps, 4);
  EXPECT_DOUBLE_EQ(loop->max_grad_norm, 0.5);
  EXPECT_EQ(c.plan->Find<plan::InitProcessGroup>()->device, plan::Device::cuda);

  Compilation unset = Compile("distributed_type = DEEPSPEED; num_processes = 2");
  ASSERT_TRUE(unset.plan.has_value());
  EXPECT_EQ(Sharding(unset).stage, 2);  // the plugin's default
  EXPECT_FALSE(Sharding(unset).overlap_comm);
  EXPECT_FALSE(Sharding(unset).cpu_ram_efficient_loading);  // zero3_init_flag applies to stage 3 only

  Compilation no_init = Compile(
      "distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { zero_stage = 3; "
      "zero3_init_flag = false }");
  ASSERT_TRUE(no_init.plan.has_value());
  EXPECT_FALSE(Sharding(no_init).cpu_ram_efficient_loading);
}

TEST_F(LowerEnginesTest, DeepSpeedNvmeOffloadHasItsOwnCode) {
  Compilation c = Compile(
      "distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { zero_stage = 3; "
      "offload_param_device "
      "= NVME; offload_param_nvme_path = \"/nvme\" }");
  EXPECT_EQ(Codes(c), std::vector<std::string>{"A4023"});
}

TEST_F(LowerEnginesTest, DeepSpeedJsonAutoTakesTheJobsValues) {
  std::string json = WriteJson("auto.json", R"({
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                "warmup_num_steps": "auto", "total_num_steps": "auto"}},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                        "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
                        "stage3_gather_16bit_weights_on_model_save": "auto", "allgather_bucket_size": 2e8,
                        "overlap_comm": false, "contiguous_gradients": false},
  "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
  "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto"
})");
  Compilation c = Compile(
      "distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { hf_ds_config = \"" + json + "\" }",
      "Transformer { inputs = 4; d_model = 16; heads = 2; layers = 1; feedforward = 32 }",
      "steps = 20; warmup_steps = 3; max_grad_norm = 0.25; optimizer = Adam { lr = 0.01; beta1 = 0.8; beta2 "
      "= "
      "0.95; eps = 1e-6; weight_decay = 0.1 }",
      "mixed_precision = BF16");  // the Accelerator's: with a JSON, the launch config may not set it
  ASSERT_TRUE(c.plan.has_value()) << (c.diagnostics.diagnostics().empty()
                                          ? ""
                                          : c.diagnostics.diagnostics()[0].message);
  const plan::Sharding& s = Sharding(c);
  EXPECT_EQ(s.stage, 3);
  EXPECT_EQ(s.reduce_bucket_size, 16 * 16);           // hidden x hidden
  EXPECT_EQ(s.prefetch_bucket_size, 230);             // int(0.9 x hidden x hidden)
  EXPECT_EQ(s.param_persistence_threshold, 10 * 16);  // 10 x hidden
  EXPECT_EQ(s.allgather_bucket_size, 200000000);
  EXPECT_EQ(s.max_live_parameters, 1000000000);
  EXPECT_FALSE(s.overlap_comm);
  EXPECT_FALSE(s.contiguous_gradients);
  EXPECT_FALSE(s.gather_16bit_weights_on_model_save);
  const auto* loop = c.plan->Find<plan::TrainLoop>();
  EXPECT_EQ(loop->mixed_precision, plan::MixedPrecision::bf16);
  // DeepSpeed's AdamW replaces the job's Adam, with the job's hyperparameters.
  const auto& adamw = std::get<plan::AdamW>(loop->optimizer);
  EXPECT_DOUBLE_EQ(adamw.lr, 0.01);
  EXPECT_DOUBLE_EQ(adamw.beta1, 0.8);
  EXPECT_DOUBLE_EQ(adamw.beta2, 0.95);
  EXPECT_DOUBLE_EQ(adamw.eps, 1e-6);
  EXPECT_DOUBLE_EQ(adamw.weight_decay, 0.1);
  EXPECT_EQ(loop->lr_schedule, plan::LrScheduleType::linear);
  EXPECT_EQ(loop->warmup_steps, 3);
  EXPECT_EQ(loop->warmup_curve, plan::WarmupCurve::log);  // DeepSpeed's default warmup_type
  EXPECT_EQ(loop->gradient_accumulation.num_steps, 1);
  EXPECT_DOUBLE_EQ(loop->max_grad_norm, 0.25);
}

TEST_F(LowerEnginesTest, DeepSpeedJsonNumbersWinOverTheJob) {
  std::string json = WriteJson("numbers.json", R"({
  "fp16": {"enabled": true},
  "optimizer": {"type": "Adam", "params": {"lr": 0.002, "betas": [0.7, 0.9], "adam_w_mode": false}},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.003, "warmup_num_steps": 7, "warmup_type": "linear"}},
  "zero_optimization": {"stage": 1, "reduce_bucket_size": 5e7},
  "gradient_accumulation_steps": 4, "gradient_clipping": 1.5, "train_micro_batch_size_per_gpu": 8
})");
  Compilation c =
      Compile("distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { hf_ds_config = \"" + json +
              "\" }");
  ASSERT_TRUE(c.plan.has_value()) << (c.diagnostics.diagnostics().empty()
                                          ? ""
                                          : c.diagnostics.diagnostics()[0].message);
  EXPECT_EQ(Sharding(c).stage, 1);
  EXPECT_EQ(Sharding(c).reduce_bucket_size, 50000000);
  const auto* loop = c.plan->Find<plan::TrainLoop>();
  EXPECT_EQ(loop->mixed_precision, plan::MixedPrecision::fp16);
  const auto& adam = std::get<plan::Adam>(loop->optimizer);  // adam_w_mode false: plain Adam
  EXPECT_DOUBLE_EQ(adam.lr, 0.003);                          // the scheduler's peak
  EXPECT_DOUBLE_EQ(adam.beta1, 0.7);
  EXPECT_EQ(loop->lr_schedule, plan::LrScheduleType::constant_with_warmup);
  EXPECT_EQ(loop->warmup_steps, 7);
  EXPECT_EQ(loop->warmup_curve, plan::WarmupCurve::linear);
  EXPECT_EQ(loop->gradient_accumulation.num_steps, 4);
  EXPECT_DOUBLE_EQ(loop->max_grad_norm, 1.5);
}

TEST_F(LowerEnginesTest, DeepSpeedJsonSettingsAccelrunDoesNotRunHaveTheirCodes) {
  std::string json = WriteJson("refused.json", R"({
  "optimizer": {"type": "Lamb", "params": {"lr": 0.001}},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}},
  "train_micro_batch_size_per_gpu": 4
})");
  Compilation c =
      Compile("distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { hf_ds_config = \"" + json +
              "\" }");
  EXPECT_FALSE(c.plan.has_value());
  std::vector<std::string> codes = Codes(c);
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<std::string>{"A4002", "A4002", "A4023"}));

  Compilation missing = Compile(
      "distributed_type = DEEPSPEED; num_processes = 2; deepspeed_config { hf_ds_config = \"/no/such.json\" "
      "}");
  EXPECT_FALSE(missing.plan.has_value());
  EXPECT_EQ(Codes(missing), std::vector<std::string>{"A4002"});
}

// parallelism_config (FSDP2's device mesh): tp_size, dp_shard_size and dp_replicate_size > 1
// become the sharding's tensor_parallel, dp_shard_size and hybrid.
constexpr const char* kMesh =
    "distributed_type = FSDP; num_processes = 8; use_cpu = true; fsdp_config { fsdp_version = 2 }; "
    "parallelism_config { dp_replicate_size = 2; dp_shard_size = 2; tp_size = 2";

TEST_F(LowerEnginesTest, TheParallelismMeshLowersToTensorParallelHybridSharding) {
  Compilation c = Compile(std::string(kMesh) + " }");
  ASSERT_TRUE(c.plan.has_value()) << (Codes(c).empty() ? "" : Codes(c)[0]);
  EXPECT_EQ(Sharding(c).engine, plan::ShardingEngine::fsdp);
  EXPECT_EQ(Sharding(c).stage, 3);
  EXPECT_EQ(Sharding(c).tensor_parallel, 2);
  EXPECT_EQ(Sharding(c).dp_shard_size, 2);
  EXPECT_TRUE(Sharding(c).hybrid);

  // Without replication: no hybrid sharding; without a mesh: the defaults.
  Compilation fsdp_tp = Compile(
      "distributed_type = FSDP; num_processes = 4; use_cpu = true; fsdp_config { fsdp_version = 2 }; "
      "parallelism_config { dp_shard_size = 2; tp_size = 2 }");
  ASSERT_TRUE(fsdp_tp.plan.has_value());
  EXPECT_FALSE(Sharding(fsdp_tp).hybrid);
  EXPECT_EQ(Sharding(fsdp_tp).tensor_parallel, 2);
  Compilation plain = Compile("distributed_type = FSDP; num_processes = 4; use_cpu = true");
  ASSERT_TRUE(plain.plan.has_value());
  EXPECT_EQ(Sharding(plain).tensor_parallel, 1);
  EXPECT_EQ(Sharding(plain).dp_shard_size, 0);
}

TEST_F(LowerEnginesTest, WhatTheMeshCannotRunIsRefusedWithItsOwnCode) {
  // Context parallelism, a model without a tensor-parallel plan, clipping across slices.
  EXPECT_EQ(
      Codes(Compile(
          "distributed_type = FSDP; num_processes = 4; use_cpu = true; fsdp_config { fsdp_version = 2 }; "
          "parallelism_config { dp_shard_size = 2; cp_size = 2 }")),
      std::vector<std::string>{"A4006"});
  // A TorchScript file carries no tensor-parallel plan; a split width tp_size does not divide.
  EXPECT_EQ(Codes(Compile(std::string(kMesh) + " }", "TorchScript { path = \"m.pt\" }")),
            std::vector<std::string>{"A4006"});
  EXPECT_EQ(Codes(Compile(std::string(kMesh) + " }", "MLP { inputs = 4; hidden = [7] }")),
            std::vector<std::string>{"A4006"});
  EXPECT_EQ(
      Codes(Compile(std::string(kMesh) + " }",
                    "Transformer { inputs = 4; d_model = 8; heads = 2; layers = 1; feedforward = 15 }")),
      std::vector<std::string>{"A4006"});
  // The built-in Transformer's feed-forward blocks split.
  EXPECT_TRUE(Compile(std::string(kMesh) + " }",
                      "Transformer { inputs = 4; d_model = 8; heads = 2; layers = 1; feedforward = 16 }")
                  .plan.has_value());
  EXPECT_EQ(Codes(Compile(std::string(kMesh) + " }", "MLP { inputs = 4 }", "steps = 5; max_grad_norm = 1.0")),
            std::vector<std::string>{"A4006"});
  // The product of the sizes is the number of processes (Accelerate's own check).
  std::string six = std::string(kMesh) + " }";
  six.replace(six.find("num_processes = 8"), 17, "num_processes = 6");
  EXPECT_EQ(Codes(Compile(six)), std::vector<std::string>{"PAR-003"});
}

}  // namespace
}  // namespace accel::pipeline
