"""``episode_frames`` / ``render_policy``: one frame per state of one episode, stopping where it ends, with
the running return each frame's caption shows; the GIF is legible by default."""

from pathlib import Path

import jax
import numpy as np
import pytest
from PIL import Image

import jaxmarl_suite
from jaxmarl_suite.baselines import mappo
from jaxmarl_suite.evaluation.policy import episode_frames, render_policy


@pytest.mark.parametrize("env_id, ends_early", [("MPE_simple_spread_v3", False), ("SMAX_3m", True)])
def test_frames_stop_at_the_end_of_the_episode(env_id: str, ends_early: bool, tmp_path: Path) -> None:
    config = mappo.Config(env_id=env_id, num_envs=2, num_steps=4, total_timesteps=8)
    trainer = mappo.make_trainer(config, mappo.make_env(config))
    params = mappo.policy_params(jax.jit(trainer.init)(jax.random.PRNGKey(0), mappo.HParams()))
    env = jaxmarl_suite.make(env_id)
    limit = env.default_params.max_steps
    frames, returns = episode_frames(mappo, config, params, jax.random.PRNGKey(1))
    if ends_early:
        # An untrained 3m team is wiped out by the heuristic long before SMAX's 60-step limit.
        assert 2 <= len(frames) < limit + 1
    else:
        assert len(frames) == limit + 1  # MPE only ends at its time limit: the reset state and every step
        # spread pays every agent minus the distances to the landmarks each step: the return only falls
        assert (np.diff(returns) < 0).all()
    assert returns.shape == (len(frames),) and returns[0] == 0
    gif = render_policy(mappo, config, params, tmp_path / "policy.gif", jax.random.PRNGKey(1))
    height, width = frames.shape[1:3]
    with Image.open(gif) as image:
        assert image.n_frames == len(frames)  # captions differ, so no two frames merge
        assert image.width % width == 0 and min(image.width, image.width * height // width) >= 300
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    assert durations == [1000 / env.render_fps] * len(frames)  # the episode plays at the env's frame rate
