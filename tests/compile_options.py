"""XLA options for the few tests whose claim is about the compiled program itself.

The default selection compiles without XLA's CPU fusion emitters (``tests/conftest.py``), which is faster
and computes the same values, but not always to the last bit, and not with the same HLO. A test that
compares two different programs bit for bit, or reads the compiled HLO, passes these to ``jax.jit``
(``compiler_options``) so that it compiles with the fusion emitters, as a user's program does.
"""

AS_USERS_COMPILE = {"xla_cpu_use_fusion_emitters": True}
"""``jax.jit(..., compiler_options=AS_USERS_COMPILE)``: the fusion emitters on for that program."""
