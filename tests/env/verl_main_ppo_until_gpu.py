"""verl's own `main_ppo` entry point, run on CPU up to the first step that needs a GPU.

`python tests/env/verl_main_ppo_until_gpu.py <overrides>` is `python -m verl.trainer.main_ppo
<overrides>` with two changes, both at the GPU boundary:
  * `run_ppo` calls the TaskRunner's run in this process instead of as a Ray actor (no cluster); on 0.9
    that is the legacy trainer's (`trainer.use_v1=False`, main_ppo_v0), the V1 trainer is not covered;
  * `RayPPOTrainer.init_workers`, the first call that places workers on GPUs, is replaced by a stop that
    runs the CPU parts of what it would start: verl's reward loading (the reward loop worker's on
    verl >= 0.7; 0.6 loaded it in TaskRunner.run already) and the interactions or tools of the agent loop.
So verl's Hydra main parses the overrides, and verl's TaskRunner validates the config, loads the
tokenizer, builds both datasets with RLHFDataset and the trainer's dataloaders. What reached the stop is
written as JSON to $KG_VERL_SUMMARY; tests/env/test_interop.py reads it.
"""

from __future__ import annotations

import json
import os
import sys


class GpuBoundary(SystemExit):
    """Raised where verl would start its GPU workers (a SystemExit: Hydra reports and swallows Exceptions)."""


def _summary(trainer) -> dict:
    from omegaconf import OmegaConf

    from kernelgym.env.adapters.verl import installed_verl

    config = trainer.config
    multi_turn = config.actor_rollout_ref.rollout.multi_turn
    item = trainer.train_dataset[0]
    out = {
        "verl": installed_verl(),
        "rollout_mode": config.actor_rollout_ref.rollout.mode,
        "rollout_name": config.actor_rollout_ref.rollout.name,
        "train_rows": len(trainer.train_dataset), "val_rows": len(trainer.val_dataset),
        "train_batches": len(trainer.train_dataloader),
        "item_keys": sorted(item),
        "agent_name": str(item.get("agent_name")),
        "interaction_kwargs": dict(item.get("interaction_kwargs") or {}),
        "tools_kwargs": OmegaConf.to_container(OmegaConf.create(dict(item.get("tools_kwargs") or {}))),
    }
    # The reward function, through the loader verl starts with the workers.
    if hasattr(config, "reward") and "custom_reward_function" in config.reward:  # verl >= 0.7: the reward loop
        from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

        manager = RewardLoopWorker(config).reward_manager
    else:
        manager = trainer.reward_fn
    score = manager.compute_score(data_source="kernelgym", solution_str="", ground_truth="",
                                  extra_info={"turn_scores": [0.25, 0.5], "tool_rewards": []})
    out["reward_manager"] = type(manager).__name__
    out["score_of_turns_0.25_0.5"] = score
    # What the tool agent loop builds from the config's paths.
    from verl.experimental.agent_loop import agent_loop  # noqa: F401  (registers the agent loops)

    out["agent_loops"] = sorted(agent_loop._agent_loop_registry)
    if multi_turn.get("interaction_config_path"):
        from verl.interactions.utils.interaction_registry import initialize_interactions_from_config

        out["interactions"] = {k: type(v).__name__ for k, v in
                               initialize_interactions_from_config(multi_turn.interaction_config_path).items()}
    if multi_turn.get("tool_config_path"):
        try:
            from verl.tools.tool_registry import initialize_tools_from_config  # verl 0.9
        except ImportError:
            from verl.tools.utils.tool_registry import initialize_tools_from_config
        out["tools"] = [tool.name for tool in initialize_tools_from_config(multi_turn.tool_config_path)]
    return out


def main() -> None:
    import verl.trainer.main_ppo as main_ppo
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    def run_here(config, task_runner_class=None):
        # 0.6 and 0.9 hand run_ppo a Ray actor class (0.9: main_ppo_v0.TaskRunner), 0.7-0.8 nothing
        runner = task_runner_class or main_ppo.TaskRunner
        getattr(runner, "__ray_actor_class__", runner)().run(config)

    def stop(trainer):
        summary = _summary(trainer)
        with open(os.environ["KG_VERL_SUMMARY"], "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1, default=str)
        raise GpuBoundary("stopped where verl starts its GPU workers (RayPPOTrainer.init_workers)")

    main_ppo.run_ppo = run_here
    RayPPOTrainer.init_workers = stop
    sys.argv[0] = main_ppo.__file__
    try:
        main_ppo.main()
    except GpuBoundary as e:
        print(f"kernelgym: {e}")


if __name__ == "__main__":
    main()
