"""`rl`'s config, found beside its entry point (as PRIME-RL keeps each command's config).

The models themselves live in `composer_prime.configs.rl`, with every other command's; this module
only names RLConfig here, and imports nothing but pydantic, so `--help` and a config check need no torch.
"""

from composer_prime.configs.rl import RLConfig

__all__ = ["RLConfig"]
