"""The runner: drives any baseline that follows the kit's ``Baseline`` protocol.

- ``config``: ``Experiment``, flags, presets, ``build_experiment``, the experiment identity, writing
  ``config.yaml``;
- ``run_folder``: the one reader of run folders (configs, metrics, summaries, trained policies) that
  evaluation and the command line use;
- ``experiment``: ``run_experiment``, seeds x hyperparameter grids in one compiled program;
- ``logger``: console progress, ``metrics.csv``, wandb; ``checkpoint``: orbax; ``sharding``: devices and
  hosts; ``sweep``: many experiments from one YAML file.

The runner imports the kit, never a baseline by name (``baseline_module`` looks one up at run time) nor
evaluation: plots, GIFs and reports are a step after a run (``jaxmarl_suite.pipeline``).
"""
