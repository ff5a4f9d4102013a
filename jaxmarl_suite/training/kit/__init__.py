"""The baseline kit: what a baseline file imports to stay short without hiding its algorithm.

- ``envs``: the training env stack (``make_training_env``) and the episode metrics read from it;
- ``gae``: GAE with terminated vs truncated, per agent and per team;
- ``networks``: MLPs, the resetting GRU, action distributions and per-group parameter handling;
- ``ppo``: the PPO family's ``Config``/``HParams``, the masked clipped loss, sequence and minibatch
  shuffling and the annealed optimizer;
- ``q``: the value-based pieces (the Q-network, masked epsilon-greedy and maxima, double-Q bootstraps,
  Q(lambda) returns, target updates, the team reward, greedy envs and the greedy policy, a flashbax item
  buffer checked against free memory);
- ``replay``: the replay learner IQL, VDN and QMIX share (``make_replay_trainer`` with a ``Mixer``);
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
