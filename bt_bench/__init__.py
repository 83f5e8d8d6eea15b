"""bt-bench: the BehaviorTrace checklist for training-data attribution in online RL (GRPO)."""

__version__ = "0.1.0"
