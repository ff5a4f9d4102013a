"""Rendering helpers: JAX drawing primitives and GIF writing."""

from jaxmarl_suite.render.draw import draw_circles, world_to_pixels
from jaxmarl_suite.render.gif import write_gif

__all__ = ["draw_circles", "world_to_pixels", "write_gif"]
