"""What the digest agreement adds to a guarded DiLoCo round, against the round's exchange alone.

One process, a directory store, `--sites` sites of a flat model of `--params` float32 parameters.
The other sites' rounds and digests are written first; then, for the measured site, timed apart:

  exchange (baseline):  put its pseudo-gradient (write-once, signed), gather every site's (bounded
                        read, SHA-256, signature and shape checks): what a guarded round did before
  agreement:            hash the state the step applies to (parameters and outer momentum), make
                        and sign its digest, publish it, read and check every peer's digest

A real run adds the network to the exchange (every site's full pseudo-gradient crosses it) and
nothing comparable to the agreement (a digest is a few hundred bytes per site), so the ratio here,
on a local disk, is an upper bound.

    uv run python benchmarks/diloco_agreement.py [--params 20000000 --sites 3 --reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from composer_prime import keys
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.agreement import confirm, make_digest, sign_digest, state_sha256
from composer_prime.diloco.exchange import PseudoGradientExchange
from composer_prime.store import Store


def one_round(root: Path, round_: int, params: int, sites: list[str]) -> tuple[float, float]:
    private = {site: keys.generate_key() for site in sites}
    public = {site: key.public_key() for site, key in private.items()}
    public_hex = {site: keys.public_hex(key) for site, key in private.items()}
    store = Store(str(root / f"rep{round_}"))
    exchanges = {site: PseudoGradientExchange(store, "run", site, private[site], public, poll_s=0.001) for site in sites}
    configs = {site: DiLoCoConfig(mode="guarded", site_id=site, sites=sites, store={"url": str(root)},
                                  site_public_keys=public_hex) for site in sites}
    me, others = sites[0], sites[1:]
    global_params = [torch.nn.Parameter(torch.randn(params))]
    outer = torch.optim.SGD(global_params, lr=0.7, momentum=0.9, nesterov=True)
    global_params[0].grad = torch.randn(params)
    outer.step()  # a momentum buffer to hash, as from the second round on
    state = state_sha256(global_params, outer)
    for seed, site in enumerate(others):
        exchanges[site].put(0, torch.randn(params, generator=torch.Generator().manual_seed(seed)))
    own = torch.randn(params)

    start = time.perf_counter()
    exchanges[me].put(0, own)
    received, missing = exchanges[me].gather(0, sites, 60.0, params)
    exchange_s = time.perf_counter() - start
    assert not missing, missing
    for site in others:  # the peers' digests, made from the same blobs
        exchanges[site].put_digest(0, sign_digest(private[site], make_digest(configs[site], 0, state, received,
                                                                              sorted(received))))
    start = time.perf_counter()
    mine = make_digest(configs[me], 0, state_sha256(global_params, outer), received, sorted(received))
    unconfirmed = confirm(exchanges[me], mine, sites, 60.0)
    agreement_s = time.perf_counter() - start
    assert unconfirmed == []
    return exchange_s, agreement_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=20_000_000)
    parser.add_argument("--sites", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sites = [f"s{i}" for i in range(args.sites)]
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_round(Path(tmp), rep, args.params, sites) for rep in range(args.reps)]
    exchange_s = statistics.median(r[0] for r in runs)
    agreement_s = statistics.median(r[1] for r in runs)
    print(f"{args.params} parameters, {args.sites} sites, median of {args.reps}: exchange {exchange_s:.3f} s, "
          f"agreement {agreement_s:.3f} s, agreement / exchange {agreement_s / exchange_s:.3f}")


if __name__ == "__main__":
    main()
