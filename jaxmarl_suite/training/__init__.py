"""Training, in two layers that point one way: ``kit`` (what baselines import) below ``runner`` (what
drives a baseline: configs, run folders, logging, checkpoints, sweeps, sharding). See
docs/architecture.md."""
