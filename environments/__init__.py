"""Built-in environment families and their registry entries (the one place built-ins are declared).

Registering stores only strings: no family is imported until ``make`` asks for it.
"""

from jaxmarl_suite.core.registry import register

register(
    "MPE_simple_spread_v3",
    "jaxmarl_suite.environments.mpe:SimpleSpread",
    family="mpe",
    reference="mpe2.simple_spread_v3",
    aliases=("simple_spread_v3", "simple_spread"),
    description="N agents cover N landmarks while avoiding collisions (cooperative).",
    variants=({"continuous_actions": True}, {"num_agents": 5}),
)
