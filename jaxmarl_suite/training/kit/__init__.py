"""The baseline kit: the plumbing and tested numerics a baseline file imports; never an algorithm's loss,
update schedule or exploration, which each file writes out (``tests/baselines/test_single_file.py``).

- ``envs``: the training env stack (``make_training_env``) and the episode metrics read from it;
- ``gae``: GAE with terminated vs truncated, per agent and per team;
- ``networks``: MLPs, the resetting GRU, action distributions and per-group parameter handling;
- ``ppo``: the on-policy files' settings (``PPOConfig``/``PPOHParams``), the annealed optimizer built
  from them, and acting with a trained actor;
- ``q``: the value-based numerics (the Q-network, masked epsilon-greedy and maxima, double-Q bootstraps,
  Q(lambda) returns, the team reward, greedy envs and the greedy policy, a flashbax item buffer checked
  against free memory);
- ``replay``: the replay files' settings (``ReplayConfig``/``ReplayHParams``);
- ``baseline``: the contract between a baseline module and the runner (the ``Baseline`` protocol,
  ``Trainer``, ``Policy``) and ``make_train``, the one composition of init and scanned updates.

The kit imports the core, the wrappers and ``jaxmarl_suite.errors``, never the runner
(``jaxmarl_suite.training.runner``) nor evaluation; ``tests/test_layers.py`` checks it.
"""

from jaxmarl_suite.training.kit.baseline import (
    Baseline,
    Policy,
    Trainer,
    TrainOutput,
    make_train,
    scan_updates,
)

__all__ = ["Baseline", "Policy", "TrainOutput", "Trainer", "make_train", "scan_updates"]
