"""The runner: drives any baseline that follows the kit's ``Baseline`` protocol.

- ``config``: ``Experiment``, flags, presets, ``build_experiment``, the one check of config values
  (``check_values``), the experiment identity and the run record ``config.yaml`` holds;
- ``run_folder``: the run folder in one module: where it goes, the checks before a run writes to it,
  ``config.yaml`` and ``summary.json`` written and read (evaluation reads folders through it);
- ``experiment``: ``run_experiment``, seeds x hyperparameter grids in one compiled program, and
  ``load_policy`` of a trained run;
- ``logger``: console progress, ``metrics.csv``, wandb; ``checkpoint``: orbax; ``sharding``: devices and
  hosts; ``sweep``: many experiments from one YAML file.

The runner imports the kit, never a baseline by name (``baseline_module`` looks one up at run time) nor
evaluation: plots, GIFs and reports are a step after a run (``jaxmarl_suite.pipeline``).
"""
