"""Rollouts: environments, single- and multi-turn sampling behind one Sampler, shared by rl, eval and workers."""
