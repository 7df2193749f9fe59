"""Training across sites with DiLoCo: few, large synchronisations instead of one all-reduce per step.

fragments.py  cut a model into contiguous parameter fragments (Streaming DiLoCo syncs one at a time)
site.py       DiLoCoSite: torchft Manager + DiLoCo between trusted sites (gloo on CPU, NCCL on GPU)
robust.py     checks and robust combination of pseudo-gradients (pure tensor functions)
exchange.py   pseudo-gradients through a store (directory or s3), write-once, each signed for (run, round, site)
agreement.py  signed digests of what each site aggregated, compared before a round applies (no split)
guarded.py    GuardedDiLoCoSite: DiLoCo for sites that do not trust each other
lighthouse.py start torchft's lighthouse as a child process
toy.py        a small regression task run as a site process (tests and benchmarks)
"""
