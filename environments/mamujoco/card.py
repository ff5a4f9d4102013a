"""The README card's generated part: every registered task's observation, agent by agent."""

from __future__ import annotations

from jaxmarl_suite.core.registry import make, registered_envs


def layout_markdown() -> str:
    """Markdown listing, per registered MaMuJoCo id, what each agent moves and observes, in order.

    Each run reads ``node.category`` (``[n]`` when it holds ``n`` values); ``global`` marks the robot's
    global joints. Builds every env (no compilation), so it takes a few seconds.
    """
    lines = []
    for env_id in registered_envs("mamujoco"):
        env = make(env_id)
        factorisation = env.factorisation
        lines += ["", f"**{env_id}** (`agent_obsk=1`, default categories)", ""]
        rows = zip(
            factorisation.node_labels, factorisation.observation_layout, factorisation.action_ids, strict=True
        )
        for agent, (labels, layout, actuators) in enumerate(rows):
            runs = [f"{label}.{category}" + (f"[{n}]" if n > 1 else "") for label, category, n in layout]
            size = sum(n for _, _, n in layout)
            lines.append(
                f"- `agent_{agent}` moves {', '.join(labels)} (actuators {', '.join(map(str, actuators))}); "
                f"observes {size}: {', '.join(runs)}"
            )
    return "\n".join(lines).strip() + "\n"
