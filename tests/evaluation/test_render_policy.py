"""``episode_frames`` / ``render_policy``: one frame per state of one episode, stopping where it ends."""

from pathlib import Path

import jax
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
    frames = episode_frames(mappo, config, params, jax.random.PRNGKey(1))
    if ends_early:
        # An untrained 3m team is wiped out by the heuristic long before SMAX's 60-step limit.
        assert 2 <= len(frames) < limit + 1
    else:
        assert len(frames) == limit + 1  # MPE only ends at its time limit: the reset state and every step
    gif = render_policy(mappo, config, params, tmp_path / "policy.gif", jax.random.PRNGKey(1))
    with Image.open(gif) as image:
        assert image.size == frames.shape[2:0:-1]
        assert 2 <= image.n_frames <= len(frames)  # GIF writers merge identical consecutive frames
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    # A merged frame lasts as long as the frames it replaced, so the episode plays at the env's frame rate.
    frame_ms = 1000 / env.render_fps
    assert all(d % frame_ms == 0 for d in durations) and sum(durations) == len(frames) * frame_ms
