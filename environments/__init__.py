"""Built-in environment families and their registry entries (the one place built-ins are declared).

Registering stores only strings: no family is imported until ``make`` asks for it.
"""

from jaxmarl_suite.core.registry import register, register_id_scheme

from . import reference_ids as _ids

register(
    "MPE_simple_spread_v3",
    "jaxmarl_suite.environments.mpe:SimpleSpread",
    family="mpe",
    reference="mpe2.simple_spread_v3",
    aliases=("simple_spread_v3", "simple_spread"),
    description="N agents cover N landmarks while avoiding collisions (cooperative).",
    variants=({"continuous_actions": True}, {"num_agents": 5}),
)

register(
    "MPE_simple_v3",
    "jaxmarl_suite.environments.mpe:Simple",
    family="mpe",
    reference="mpe2.simple_v3",
    aliases=("simple_v3", "simple"),
    description="One agent moves to one landmark (single-agent debugging scenario).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_push_v3",
    "jaxmarl_suite.environments.mpe:SimplePush",
    family="mpe",
    reference="mpe2.simple_push_v3",
    aliases=("simple_push_v3", "simple_push"),
    description="An adversary pushes a good agent away from a goal landmark only the good agent knows.",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_adversary_v3",
    "jaxmarl_suite.environments.mpe:SimpleAdversary",
    family="mpe",
    reference="mpe2.simple_adversary_v3",
    aliases=("simple_adversary_v3", "simple_adversary"),
    description="Good agents cover every landmark so an adversary cannot tell which one is the goal.",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_speaker_listener_v4",
    "jaxmarl_suite.environments.mpe:SimpleSpeakerListener",
    family="mpe",
    reference="mpe2.simple_speaker_listener_v4",
    aliases=("simple_speaker_listener_v4", "simple_speaker_listener"),
    description="An immobile speaker tells a silent listener which landmark to reach (cooperative).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_reference_v3",
    "jaxmarl_suite.environments.mpe:SimpleReference",
    family="mpe",
    reference="mpe2.simple_reference_v3",
    aliases=("simple_reference_v3", "simple_reference"),
    description="Two agents that move and talk each guide the other to a landmark (cooperative).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_crypto_v3",
    "jaxmarl_suite.environments.mpe:SimpleCrypto",
    family="mpe",
    reference="mpe2.simple_crypto_v3",
    aliases=("simple_crypto_v3", "simple_crypto"),
    description="Alice sends Bob a message encrypted with a shared key while Eve eavesdrops (adversarial).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_tag_v3",
    "jaxmarl_suite.environments.mpe:SimpleTag",
    family="mpe",
    reference="mpe2.simple_tag_v3",
    aliases=("simple_tag_v3", "simple_tag"),
    description="Slow adversaries chase faster good agents among obstacles (predator-prey).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_collect_treasure_v1",
    "jaxmarl_suite.environments.mpe:CollectTreasure",
    family="mpe",
    reference="mpe2.collect_treasure_v1",
    aliases=("collect_treasure_v1", "collect_treasure"),
    description="Collectors carry typed treasures to the deposit agent of their type (cooperative).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_world_comm_v3",
    "jaxmarl_suite.environments.mpe:SimpleWorldComm",
    family="mpe",
    reference="mpe2.simple_world_comm_v3",
    aliases=("simple_world_comm_v3", "simple_world_comm"),
    description="simple_tag with food, hiding forests and a leader adversary who talks to the others.",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_formation_v1",
    "jaxmarl_suite.environments.mpe:SimpleFormation",
    family="mpe",
    reference="mpe2.simple_formation_v1",
    aliases=("simple_formation_v1", "simple_formation"),
    description="N agents arrange themselves in a circle around a landmark (cooperative).",
    variants=({"continuous_actions": True},),
)

register(
    "MPE_simple_line_v1",
    "jaxmarl_suite.environments.mpe:SimpleLine",
    family="mpe",
    reference="mpe2.simple_line_v1",
    aliases=("simple_line_v1", "simple_line"),
    description="N agents spread evenly along the segment between two landmarks (cooperative).",
    variants=({"continuous_actions": True},),
)

# FACMAC's continuous predator-prey (JaxMARL only; no mpe2 version). One class, four JaxMARL ids.
register(
    "MPE_simple_facmac_v1",
    "jaxmarl_suite.environments.mpe:SimpleFacmac",
    family="mpe",
    reference="jaxmarl.MPE_simple_facmac_v1",
    aliases=("simple_facmac",),
    kwargs={},
    description="FACMAC predator-prey: 3 adversaries, 1 scripted prey, 2 obstacles ('sum' prey score).",
    variants=({"continuous_actions": False},),
)

register(
    "MPE_simple_facmac_3a_v1",
    "jaxmarl_suite.environments.mpe:SimpleFacmac",
    family="mpe",
    reference="jaxmarl.MPE_simple_facmac_3a_v1",
    aliases=("simple_facmac_3a",),
    kwargs={"num_good_agents": 1, "num_adversaries": 3, "num_landmarks": 2, "score_function": "min"},
    description="FACMAC predator-prey: 3 adversaries, 1 scripted prey, 2 obstacles.",
    variants=({"continuous_actions": False},),
)

register(
    "MPE_simple_facmac_6a_v1",
    "jaxmarl_suite.environments.mpe:SimpleFacmac",
    family="mpe",
    reference="jaxmarl.MPE_simple_facmac_6a_v1",
    aliases=("simple_facmac_6a",),
    kwargs={"num_good_agents": 2, "num_adversaries": 6, "num_landmarks": 4, "score_function": "min"},
    description="FACMAC predator-prey: 6 adversaries, 2 scripted prey, 4 obstacles.",
    variants=({"continuous_actions": False},),
)

register(
    "MPE_simple_facmac_9a_v1",
    "jaxmarl_suite.environments.mpe:SimpleFacmac",
    family="mpe",
    reference="jaxmarl.MPE_simple_facmac_9a_v1",
    aliases=("simple_facmac_9a",),
    kwargs={"num_good_agents": 3, "num_adversaries": 9, "num_landmarks": 6, "score_function": "min"},
    description="FACMAC predator-prey: 9 adversaries, 3 scripted prey, 6 obstacles.",
    variants=({"continuous_actions": False},),
)

# SMAX: one id per built-in scenario (names mirror environments/smax/scenarios.py; a test checks it),
# plus "SMAX" itself, which takes ``scenario=`` (JaxMARL's HeuristicEnemySMAX is the same env).
SMAX_SCENARIOS = (
    "3m", "8m", "25m", "5m_vs_6m", "10m_vs_11m", "27m_vs_30m", "2s3z", "3s5z", "3s5z_vs_3s6z",
    "3s_vs_5z", "6h_vs_8z", "MMM", "MMM2", "smacv2_5_units", "smacv2_10_units", "smacv2_20_units",
)

register(
    "SMAX",
    "jaxmarl_suite.environments.smax:SMAX",
    family="smax",
    aliases=("HeuristicEnemySMAX",),
    description="SMAX on any scenario (scenario='3m' by default) against the heuristic enemy.",
    variants=({"enemy": "agents"}, {"obs_last_actions": False}),
)

for _name in SMAX_SCENARIOS:
    register(
        f"SMAX_{_name}",
        "jaxmarl_suite.environments.smax:SMAX",
        family="smax",
        kwargs={"scenario": _name},
        description=f"SMAX {_name} against the heuristic enemy.",
    )

# Overcooked: "Overcooked" takes ``layout=`` (JaxMARL's id "overcooked" is an alias); one id per classic
# layout (overcooked-ai's names).
register(
    "Overcooked",
    "jaxmarl_suite.environments.overcooked:Overcooked",
    family="overcooked",
    reference="overcooked_ai_py.cramped_room",
    aliases=("overcooked",),
    description="Two chefs cook and serve onion soup (overcooked-ai's rules); layout='cramped_room'.",
    variants=({"old_dynamics": False}, {"random_start": True}, {"observation": "featurized"}),
)

for _name in ("cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
              "counter_circuit"):
    register(
        f"Overcooked_{_name}",
        "jaxmarl_suite.environments.overcooked:Overcooked",
        family="overcooked",
        reference=f"overcooked_ai_py.{_name}",
        kwargs={"layout": _name},
        description=f"Overcooked on {_name}.",
    )

# Overcooked V2: "OvercookedV2" takes JaxMARL's arguments (layout=, max_steps, observation_type,
# agent_view_size, random_reset, ...; JaxMARL's id "overcooked_v2" is an alias); one id per JaxMARL V2 layout.
register(
    "OvercookedV2",
    "jaxmarl_suite.environments.overcooked_v2:OvercookedV2",
    family="overcooked_v2",
    reference="jaxmarl.overcooked_v2",
    aliases=("overcooked_v2",),
    description="Chefs cook and serve recipes of several ingredients (JaxMARL's Overcooked V2); "
                "layout='cramped_room'.",
    variants=({"layout": "grounded_coord_simple", "random_agent_positions": True},
              {"agent_view_size": 2, "random_reset": True}),
)

for _name in ("cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit",
              "cramped_room_v2", "asymm_advantages_recipes_center", "asymm_advantages_recipes_right",
              "asymm_advantages_recipes_left", "two_rooms", "two_rooms_both", "long_room", "fun_coordination",
              "more_fun_coordination", "fun_symmetries", "fun_symmetries_plates", "fun_symmetries1",
              "grounded_coord_simple", "grounded_coord_ring", "test_time_simple", "test_time_wide",
              "demo_cook_simple", "demo_cook_wide"):
    register(
        f"OvercookedV2_{_name}",
        "jaxmarl_suite.environments.overcooked_v2:OvercookedV2",
        family="overcooked_v2",
        reference="jaxmarl.overcooked_v2",
        kwargs={"layout": _name},
        description=f"Overcooked V2 on {_name}.",
    )

# Hanabi: "Hanabi" takes ``num_agents=`` (2-5; JaxMARL's id "hanabi" is an alias) and HLE's smaller
# configurations.
register(
    "Hanabi",
    "jaxmarl_suite.environments.hanabi:Hanabi",
    family="hanabi",
    reference="hanabi_learning_environment",
    aliases=("hanabi",),
    description="Cooperative fireworks with hidden hands (the Hanabi Learning Environment's rules).",
    variants=({"observation": "v0_belief"}, {"num_agents": 3}, {"num_agents": 4}, {"num_agents": 5}),
)

# Iterated matrix games: "MatrixGame" takes ``game=`` (prisoners_dilemma by default, stag_hunt, chicken,
# matching_pennies), ``payoffs=`` and ``max_steps=``. JaxMARL has no plain matrix games.
register(
    "MatrixGame",
    "jaxmarl_suite.environments.matrix:IteratedMatrixGame",
    family="matrix",
    aliases=("iterated_prisoners_dilemma", "ipd"),
    description="Two players repeat a 2x2 game (Prisoner's Dilemma by default) seeing the last round.",
    variants=({"game": "stag_hunt"}, {"game": "chicken"}, {"game": "matching_pennies"}),
)

# Coin Game: "CoinGame" (JaxMARL's id "coin_game" is an alias) takes JaxMARL's arguments: num_inner_steps,
# num_outer_steps, cnn, egocentric, shared_rewards, payoff_matrix.
register(
    "CoinGame",
    "jaxmarl_suite.environments.coin_game:CoinGame",
    family="coin_game",
    reference="jaxmarl.coin_game",
    aliases=("coin_game",),
    description="Two players collect red and blue coins on a 3x3 torus; taking the other's coin costs it.",
    variants=({"egocentric": True}, {"cnn": True, "num_inner_steps": 16, "num_outer_steps": 4}),
)

# Switch Riddle: "SwitchRiddle" takes ``num_agents=`` (3 by default; JaxMARL's id "switch_riddle" aliases it).
register(
    "SwitchRiddle",
    "jaxmarl_suite.environments.switch_riddle:SwitchRiddle",
    family="switch_riddle",
    reference="jaxmarl.switch_riddle",
    aliases=("switch_riddle",),
    description="Prisoners visit a room one a day and signal with its light bulb until one announces.",
    variants=({"num_agents": 4}, {"num_agents": 5}),
)

# STORM (grid "in the matrix" social dilemmas): "STORM_2p" (JaxMARL's "storm_2p" is an alias) takes JaxMARL's
# arguments (num_inner_steps, num_outer_steps, fixed_coin_location, payoff_matrix, freeze_penalty) and
# ``game=`` (prisoners_dilemma by default, stag_hunt, chicken, matching_pennies).
register(
    "STORM_2p",
    "jaxmarl_suite.environments.storm:Storm2p",
    family="storm",
    reference="jaxmarl.storm_2p",
    aliases=("storm_2p",),
    description="Two players gather cooperate/defect coins and zap each other to play their inventories.",
    variants=({"game": "stag_hunt", "fixed_coin_location": False}, {"game": "chicken"}),
)

# n-player STORM, JaxMARL's "storm_np" (InTheMatrix) with its bugs fixed (environments/storm/README.md):
# JaxMARL's arguments (num_agents, grid_size, obs_size, num_coins, cnn, num_inner_steps, num_outer_steps,
# fixed_coin_location, payoff_matrix, freeze_penalty) and ``game=``. JaxMARL's "storm" (InTheGrid) is the
# same n-player game with the same defaults (2 agents, 8x8, 5x5 view, 6 coins of each kind), so "STORM" is
# this class.
register(
    "STORM_np",
    "jaxmarl_suite.environments.storm:Storm",
    family="storm",
    reference="jaxmarl.storm_np",
    aliases=("storm_np",),
    description="n players gather cooperate/defect coins and zap one another to play their inventories.",
    variants=({"num_agents": 3}, {"num_agents": 4, "game": "stag_hunt"}),
)
register(
    "STORM",
    "jaxmarl_suite.environments.storm:StormInTheGrid",
    family="storm",
    reference="jaxmarl.storm",
    aliases=("storm",),
    description="n-player STORM under JaxMARL's InTheGrid id (the same game as STORM_np).",
    variants=({"num_agents": 4}, {"num_agents": 8, "grid_size": 10}),
)

# Multi-agent MuJoCo (Gymnasium-Robotics' mamujoco_v1 on MJX; the ``mujoco`` extra): one id per task and
# partition, ``MaMuJoCo_<Scenario>_<partition>``, each taking ``agent_obsk=``, ``local_categories=`` and
# ``global_categories=``; JaxMARL's MABrax ids are aliases of the same partitions (MuJoCo's physics, not
# Brax's). The many-segment robots take any ``agent_conf="NxM"`` (N agents of M segments). Every id takes
# ``physics="c"`` (MuJoCo's C engine through a host callback: the CPU's fast path).
_MAMUJOCO_TASKS = (
    # (scenario, partition, JaxMARL MABrax alias, what it is); the first two are the family's default-suite
    # cases (tests/env_cases.py): the cheapest to compile, with two observation groups each
    ("HalfCheetah", "6x1", "halfcheetah_6x1", "a cheetah's six joints, one agent each"),
    ("Reacher", "2x1", None, "a two-joint arm reaches a target, one agent per joint"),
    ("Ant", "4x2", "ant_4x2", "an ant's four legs, one agent each"),
    ("HalfCheetah", "2x3", None, "a cheetah's back and front legs, one agent each"),
    ("Ant", "2x4", None, "an ant's front and back leg pairs, one agent each"),
    ("Ant", "2x4d", None, "an ant's diagonal leg pairs, one agent each"),
    ("Hopper", "3x1", "hopper_3x1", "a hopper's thigh, leg and foot, one agent each"),
    ("Walker2d", "2x3", "walker2d_2x3", "a walker's two legs, one agent each"),
    ("Humanoid", "9|8", "humanoid_9|8", "a humanoid's upper and lower body, one agent each"),
    ("HumanoidStandup", "9|8", None, "a lying humanoid's upper and lower body stand it up"),
    ("Swimmer", "2x1", None, "a three-link swimmer's two joints, one agent each"),
    ("ManySegmentSwimmer", "10x2", None, "a 20-segment swimmer, ten agents of two segments (any NxM)"),
    ("ManySegmentAnt", "2x3", None, "a six-segment ant chain, two agents of three segments (any NxM)"),
)
for _index, (_scenario, _partition, _alias, _what) in enumerate(_MAMUJOCO_TASKS):
    register(
        f"MaMuJoCo_{_scenario}_{_partition}",
        "jaxmarl_suite.environments.mamujoco:MaMuJoCo",
        family="mamujoco",
        reference=f"gymnasium_robotics.mamujoco_v1:{_scenario}:{_partition}",
        aliases=(_alias,) if _alias else (),
        kwargs={"scenario": _scenario, "agent_conf": _partition},
        description=f"Multi-agent MuJoCo on MJX: {_what}.",
        requires=("mujoco", "mujoco.mjx", "gymnasium_robotics"),
        # the C-engine backend as the first task's variant: the registry-driven suites check both engines
        variants=({"physics": "c"},) if _index == 0 else (),
    )

# Level-Based Foraging (lbforaging 2.0.0): "LBF" takes lbforaging's arguments and defaults to its
# Foraging-8x8-2p-2f-coop-v3; every lbforaging id (Foraging{-2s}-{s}x{s}-{p}p-{f}f{-coop}-v3) is accepted.
register(
    "LBF",
    "jaxmarl_suite.environments.lbf:LevelBasedForaging",
    family="lbf",
    reference="lbforaging",
    aliases=("lbf", "LevelBasedForaging"),
    description="Players of levels pick up foods together when their levels add up (lbforaging's rules); "
                "also every Foraging-...-v3 id.",
    variants=({"sight": 2}, {"num_agents": 3, "field_size": 10, "max_num_food": 3, "force_coop": False},
              {"observation_type": "grid", "sight": 2}, {"penalty": 0.1, "normalize_reward": False}),
)
register_id_scheme(_ids.LBFORAGING_ID, "LBF", "jaxmarl_suite.environments.reference_ids:lbforaging_kwargs")

# Multi-Robot Warehouse (rware 2.0.0): "RWARE" takes rware's arguments and defaults to its rware-tiny-2ag-v2;
# every rware id (rware-{tiny|small|medium|large}-{N}ag{-easy|-hard}-v2) is accepted.
register(
    "RWARE",
    "jaxmarl_suite.environments.rware:RobotWarehouse",
    family="rware",
    reference="rware",
    aliases=("rware", "RobotWarehouse"),
    description="Robots fetch requested shelves to the goals and bring them back (rware's rules); also every "
                "rware-...-v2 id.",
    variants=({"num_agents": 4, "request_queue_size": 4}, {"msg_bits": 2, "sensor_range": 2},
              {"observation_type": "image"}, {"reward_type": "two_stage", "shelf_rows": 2}),
)
register_id_scheme(_ids.RWARE_ID, "RWARE", "jaxmarl_suite.environments.reference_ids:rware_kwargs")
