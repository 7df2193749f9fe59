"""A hard spending cap that holds with any number of calls in flight.

Before a call is sent, its worst-case cost is reserved:
    worst = (estimated prompt tokens * input price + max_tokens * output price) / 1e6
with the prompt estimated from the request's UTF-8 bytes (an upper bound on tokens for byte-level
BPE tokenizers, which every hosted model uses). A reservation is granted only while
    spent + reserved + worst <= cap,
so the sum of everything in flight can never push `spent` past the cap. When the answer arrives,
the reservation is replaced by the actual cost from the response's `usage`. A call that fails with
an HTTP error status is settled at 0 (providers do not bill rejected requests), and so is one that
never connected (nothing was sent); one whose outcome is unknown (timeout, cut connection,
unreadable body) is settled at its full reservation, since it may have been billed. A request that does not fit waits while other calls are in flight (they may
settle below their reservation); when nothing is in flight and it still does not fit, the budget
is exhausted: every waiting and later reservation raises `BudgetExhausted`, and the run stops.
"""

from __future__ import annotations

import asyncio


class BudgetExhausted(Exception):
    pass


class Budget:
    def __init__(self, cap_usd: float | None):
        self.cap = cap_usd
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False
        self._changed = asyncio.Condition()

    async def reserve(self, worst_usd: float) -> float:
        async with self._changed:
            while True:
                if self.exhausted:
                    raise BudgetExhausted(self._why())
                if self.cap is None or self.spent + self.reserved + worst_usd <= self.cap:
                    self.reserved += worst_usd
                    return worst_usd
                if self.reserved <= 1e-15:
                    self.exhausted = True
                    self._changed.notify_all()
                    raise BudgetExhausted(self._why())
                await self._changed.wait()

    async def settle(self, reservation: float, actual_usd: float) -> None:
        async with self._changed:
            self.reserved = max(0.0, self.reserved - reservation)
            self.spent += actual_usd
            self._changed.notify_all()

    def charge_now(self, reservation: float, actual_usd: float) -> None:
        """settle() for a call being cancelled, where awaiting is no longer possible (shutdown)."""
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += actual_usd

    def _why(self) -> str:
        return f"budget cap ${self.cap:.6f} reached (spent ${self.spent:.6f})"
