"""The recipe inside other frameworks: TRL (trl.py), VeRL (verl.py) and OpenEnv (openenv.py), each an optional extra."""
