"""Rendering helpers: JAX drawing primitives, an episode rendered in one call, and GIF writing."""

from jaxmarl_suite.render.draw import draw_circles, world_to_pixels
from jaxmarl_suite.render.episode import RenderedEpisode, render_episode
from jaxmarl_suite.render.gif import MIN_GIF_SIDE, gif_frame_size, write_gif

__all__ = [
    "MIN_GIF_SIDE",
    "RenderedEpisode",
    "draw_circles",
    "gif_frame_size",
    "render_episode",
    "world_to_pixels",
    "write_gif",
]
