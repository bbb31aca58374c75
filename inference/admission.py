"""Admission control: can a model start this reply within its tier's first-chunk budget?

Each tier has a first-chunk budget (``TIERDESK_L1_FIRST_CHUNK_BUDGET_MS`` 400,
``..._L2_...`` 800, ``..._L3_...`` 1500), counted from the moment the shopper's message
arrived. Before a turn asks a model, ``admit`` predicts when its first chunk would go
out:

    elapsed so far + (turns ahead in the role's queue / slots) x recent slot hold time
                   + recent time from a free slot to the tier's first chunk
                     at about this many requests in flight

from the role's queue (``inference.queue``: who holds a slot, who waits) and the
service times this process measured itself (moving averages, ``Ewma``; the last term
is the median of the last ``FIRST_WINDOW`` turns, at least ``FIRST_MIN`` of them,
pooled with lighter loads' when a load has fewer). The last term is kept per load
(requests in flight when the turn was admitted: 0, 1, 2-3, 4-7, 8-15, 16+): continuous
batching makes a first token slower the more replies decode beside it, and one average
over every load predicted an idle server from its busy minutes, degrading turns it
would have served in time (model-phrased share 0.43 at 5 sessions). A load
with no measurement yet uses the nearest lighter one. Over the budget less
``TIERDESK_FIRST_CHUNK_MARGIN_MS`` (the prediction's error): the turn degrades at once
(``chatbot.turn``: the tier's text that needs no model). A turn that is admitted still
has a hard deadline: no first chunk by the budget less ``TIERDESK_FIRST_CHUNK_SEND_MS``
(the degraded text's way out) and it degrades then (``deadline``). That cut-off is a
timer on a loop that runs timers late under load, so it is moved earlier by the
lateness the loop showed in the last seconds (``inference.looplag``, at most
``LAG_CAP_SHARE`` of the budget), and the prediction aims before the moved cut-off.

With a free slot a turn is always admitted unless the tier's own recent first-chunk
time is already over the budget; even then one turn per ``TIERDESK_ADMISSION_PROBE_S``
is let through, so the averages follow a model that got faster again. A trial that is
cut off doubles that tier's interval (up to ``TIERDESK_ADMISSION_PROBE_MAX_S``); one that
makes its budget (or any turn the tier's model writes) sets it back; only a tier whose
model wrote nothing in the last ``TIERDESK_ADMISSION_PROBE_MAX_S`` backs off. A trial
the model can't win still takes the model's cores until its cut-off (and a model
server goes on with a prompt it is reading after the request is closed): at one trial
per 2 s, the L2 and L3 trials at 5-25 sessions took the cores the L1 replies beside them
needed.

Counters (per process, for Prometheus and the operator console): turns that planned a
model and how many of them degraded, per tier and reason.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter, deque
from dataclasses import dataclass

from django.conf import settings

from .capacity import SlotStatus, capacity
from .looplag import loop_lag, loop_lag_reset
from .queue import Ewma, gate_for
from .registry import resolve_role

# Turns per (tier, load) whose first-chunk times the prediction takes the median of,
# and the fewest it trusts alone (fewer: pooled with the lighter loads' turns).
FIRST_WINDOW = 15
FIRST_MIN = 3

# Why a turn degraded (the ``done`` frame's ``degraded.reason``).
# The most of a budget the loop's measured lateness may move a cut-off forward: a loop
# that stalls longer than this is late whatever the cut-off, and every turn would degrade.
LAG_CAP_SHARE = 0.25

PREDICTED = "predicted"  # the queue and recent service times say the budget can't be met
DEADLINE = "deadline"  # admitted, but no first chunk by the budget


@dataclass
class Ticket:
    """The verdict for one turn."""

    admitted: bool
    tier: str
    role: str
    budget_ms: float
    # perf_counter time by which the first chunk must go out (None: no budget).
    deadline: float | None
    predicted_ms: float | None = None
    queue: int = 0  # turns ahead of this one (holding or waiting for the role's slots)
    load: int = 0  # the load bucket its service time is predicted from and counted in
    slots: int = 0
    probe: bool = False
    admitted_at: float = 0.0
    reason: str = ""
    loop_lag_ms: float = 0.0  # the loop's recent lateness the cut-off was moved by
    elapsed_ms: float | None = None  # from the message's arrival to this verdict

    def degraded(self, reason: str, **detail: float | int | None) -> dict[str, object]:
        """The ``done`` frame's ``degraded`` object."""
        out: dict[str, object] = {
            "reason": reason,
            "budget_ms": self.budget_ms,
            "queue": self.queue,
            "slots": self.slots,
        }
        if self.predicted_ms is not None:
            out["predicted_ms"] = round(self.predicted_ms, 1)
        if self.loop_lag_ms:
            out["loop_lag_ms"] = round(self.loop_lag_ms, 1)
        if self.elapsed_ms is not None:
            # How much of the budget was gone before the model was asked (receiving,
            # storing, planning): tells a slow plan from a slow model.
            out["admitted_ms"] = round(self.elapsed_ms, 1)
        out.update({k: v for k, v in detail.items() if v is not None})
        return out


class Admission:
    """This process's measured service times and degradation counters."""

    def __init__(self) -> None:
        # Per tier: time from a free slot to the first chunk the shopper sees; overall
        # (figures) and per load bucket (the prediction).
        self.first: dict[str, Ewma] = {}
        self.first_at: dict[tuple[str, int], deque[float]] = {}
        self.last_probe: dict[str, float] = {}
        self.probe_every: dict[str, float] = {}  # per tier, while trials keep missing
        self.written_at: dict[str, float] = {}  # per tier, the model's last first chunk
        self.planned: Counter[str] = Counter()  # turns that planned a model, per tier
        self.degraded: Counter[tuple[str, str]] = Counter()  # (tier, reason)

    def first_ewma(self, tier: str) -> Ewma:
        # Quick to follow: one slow turn must not hold a tier off its model for long.
        return self.first.setdefault(tier, Ewma(alpha=0.3))

    def first_predicted(self, tier: str, load: int) -> float | None:
        """The tier's median first-chunk time over the last turns at ``load`` (a
        bucket), pooled with the nearest lighter loads until ``FIRST_MIN`` turns are
        in, else the overall average (None: nothing measured). A median, not an
        average: one slow turn moved an average over the budget, the turns after it
        degraded on the prediction and left no new measurement to bring it down (make
        load, 25 sessions: 25 of 62 L1 turns degraded on it while the model-written
        first chunks were p50 158 ms). Pooled, because a load seen once is a median
        of one: one turn cut off at the deadline there (its wait counts as its service
        time, ``missed``) puts every later turn at that load over the budget, and only
        a trial every ``TIERDESK_ADMISSION_PROBE_S`` can measure it back down. At 5-25
        sessions the busier loads are seen a few times a step, so that is the common
        case there, not the exception."""
        pooled: list[float] = []
        for bucket in range(load, -1, -1):
            pooled.extend(self.first_at.get((tier, bucket), ()))
            if len(pooled) >= FIRST_MIN:
                break
        if pooled:
            return statistics.median(pooled)
        return self.first_ewma(tier).value

    def _first_add(self, ticket: Ticket, seconds: float) -> None:
        self.first_ewma(ticket.tier).add(seconds)
        window = self.first_at.setdefault((ticket.tier, ticket.load), deque(maxlen=FIRST_WINDOW))
        window.append(seconds)

    def admit(
        self,
        *,
        tier: str,
        role: str,
        received_at: float,
        now: float | None = None,
        count: bool = True,
        server: SlotStatus | None = None,
    ) -> Ticket:
        """``count`` False: a second try for the same turn (L3 on the fallback's queue).
        ``server``: the model server's own slots (``inference.capacity``), which every
        web process shares: its busy and deferred requests count as ahead of this turn."""
        now = time.perf_counter() if now is None else now
        role = resolve_role(role)  # an alias shares its target's queue
        budget = budget_ms(tier)
        if count:
            self.planned[tier] += 1
        elapsed_ms = (now - received_at) * 1000
        if not settings.TIERDESK_ADMISSION or budget <= 0:
            return Ticket(True, tier, role, budget, None, admitted_at=now, elapsed_ms=elapsed_ms)
        gate = gate_for(role)
        slots = gate.capacity
        in_flight = gate.active + gate.waiting
        if server is not None and server.reachable and server.total > 0:
            slots = server.total
            in_flight = max(gate.active, server.busy + server.deferred) + gate.waiting
        # The server keeps a margin of each budget for sending the degraded text and the
        # way to the shopper: the budget is what the shopper sees. The cut-off's timer
        # fires as late as the loop runs timers now, so it is set that much earlier,
        # and the prediction must land before it.
        lag_ms = min(budget * LAG_CAP_SHARE, _loop_lag_ms())
        send_ms = settings.TIERDESK_FIRST_CHUNK_SEND_MS + lag_ms
        target = max(1.0, budget - max(settings.TIERDESK_FIRST_CHUNK_MARGIN_MS, send_ms))
        deadline = received_at + max(1.0, budget - send_ms) / 1000
        load = load_bucket(in_flight)
        first = self.first_predicted(tier, load)
        hold = gate.hold.value
        ahead = max(0, in_flight + 1 - slots)
        predicted = elapsed_ms + ahead / slots * (hold or 0.0) * 1000 + (first or 0.0) * 1000
        ticket = Ticket(
            False,
            tier,
            role,
            budget,
            deadline,
            predicted_ms=predicted,
            queue=in_flight,
            load=load,
            slots=slots,
            admitted_at=now,
            loop_lag_ms=lag_ms,
            elapsed_ms=elapsed_ms,
        )
        last = self.last_probe.get(tier, float("-inf"))
        if predicted <= target:
            ticket.admitted = True
        elif elapsed_ms < target and (in_flight < slots or hold is None):
            # A free slot (or nothing measured yet): only the tier's own first-chunk time
            # is over; let one turn through now and then to see whether it still is.
            ticket.admitted = ticket.probe = now - last >= self.probe_interval(tier)
        if ticket.admitted:
            self.last_probe[tier] = now  # every admitted turn is a fresh measurement
        if not ticket.admitted:
            ticket.reason = PREDICTED
        return ticket

    def probe_interval(self, tier: str) -> float:
        """Seconds between trials of a tier that is predicted over its budget."""
        return self.probe_every.get(tier, settings.TIERDESK_ADMISSION_PROBE_S)

    def gave_up(self, ticket: Ticket) -> None:
        """The turn degraded on the prediction (after any second try)."""
        self.degraded[(ticket.tier, PREDICTED)] += 1

    def first_chunk(self, ticket: Ticket, *, at: float, queue_s: float) -> None:
        """An admitted turn showed its first chunk at ``at``; ``queue_s`` of it was
        spent waiting for a slot."""
        self._first_add(ticket, max(0.0, at - ticket.admitted_at - queue_s))
        self.written_at[ticket.tier] = at
        self.probe_every.pop(ticket.tier, None)  # the model makes it: trials as usual

    def missed(self, ticket: Ticket, *, at: float) -> None:
        """An admitted turn hit its deadline. With a slot free at admission the time
        was service, of which only a lower bound is known: counted as the whole budget
        at least. Counted as the lower bound itself (the cut-off less the time the turn
        had spent before admission), it was below the budget whenever the turn was
        admitted late, so the next turn was predicted to make it and was cut off too
        (make load, 200 sessions: 9 L3 turns cut off at 1.48 s, each admitted on the
        last ones' 1.1-1.2 s, while the model never started within its budget)."""
        self.degraded[(ticket.tier, DEADLINE)] += 1
        longest = settings.TIERDESK_ADMISSION_PROBE_MAX_S
        written = self.written_at.get(ticket.tier, float("-inf"))
        if ticket.probe and ticket.admitted_at - written > longest:
            # Only a tier whose model wrote nothing for that long backs off. One that
            # often makes it (L1 at 1-2 requests in flight, median just over the target)
            # kept its 2 s trials from getting no trials at all: make load at 25
            # sessions, 26 L1 turns in a row degraded on the prediction with backoff
            # for every tier.
            self.probe_every[ticket.tier] = min(longest, 2 * self.probe_interval(ticket.tier))
        if ticket.queue < ticket.slots:
            self._first_add(ticket, max(at - ticket.admitted_at, ticket.budget_ms / 1000))

    def figures(self) -> dict[str, dict[str, float | int | None]]:
        """Per tier: planned, degraded (by reason), model-phrased share, the averages."""
        out: dict[str, dict[str, float | int | None]] = {}
        for tier in sorted(set(self.planned) | set(self.first)):
            planned = self.planned[tier]
            degraded = sum(n for (t, _r), n in self.degraded.items() if t == tier)
            first = self.first.get(tier)
            out[tier] = {
                "planned": planned,
                "degraded": degraded,
                "degraded_predicted": self.degraded[(tier, PREDICTED)],
                "degraded_deadline": self.degraded[(tier, DEADLINE)],
                "model_phrased_share": round(1 - degraded / planned, 4) if planned else None,
                "first_chunk_ewma_ms": None
                if first is None or first.value is None
                else round(first.value * 1000, 1),
                "budget_ms": budget_ms(tier),
            }
        return out


# The model server's slots as last probed, per role, and the probe in flight. A turn
# never waits for a probe (under load /slots answers after the current decoding step):
# it uses the last answer, at most SLOTS_MAX_AGE_S old, and starts the next probe.
SLOTS_MAX_AGE_S = 2.0
_slots: dict[str, SlotStatus] = {}
_probes: dict[str, asyncio.Task[None]] = {}


def server_slots(role: str) -> SlotStatus | None:
    """The slots of our own model server for ``role`` (every web process shares them),
    from the last probe; None for other roles or when no recent probe answered."""
    real = resolve_role(role)
    declared = settings.INFERENCE_BACKENDS.get(real, {}).get("CONFIG", {})
    if not declared.get("model_server"):
        return None
    probe = _probes.get(real)
    if probe is None or probe.done():
        _probes[real] = asyncio.ensure_future(_slots_probe(real))
    status = _slots.get(real)
    if status is None or time.monotonic() - status.fetched_at > SLOTS_MAX_AGE_S:
        return None
    return status


# How old a probed answer may be before a turn starts the next probe. Each probe is two
# HTTP GETs on this process's event loop; at 0.1 s (the capacity cache's default) they
# take 15% of Daphne's loop at 200 sessions (py-spy), and the turns' own
# gates count this process's requests exactly anyway.
SLOTS_PROBE_EVERY_S = 0.5


async def _slots_probe(role: str) -> None:
    _slots[role] = (await capacity(role, max_age_s=SLOTS_PROBE_EVERY_S)).slots


def _loop_lag_ms() -> float:
    """The running loop's recent lateness in ms (0 outside a loop)."""
    try:
        return loop_lag().recent_s() * 1000
    except RuntimeError:  # no running loop (a script or a test calling admit directly)
        return 0.0


def load_bucket(in_flight: int) -> int:
    """0 for an idle model, 1 for one request, 2 for 2-3, 3 for 4-7, 4 for 8-15, 5 beyond."""
    return min(5, max(0, in_flight).bit_length())


def budget_ms(tier: str) -> float:
    """The tier's first-chunk budget (0: none)."""
    return float(settings.TIERDESK_FIRST_CHUNK_BUDGET_MS.get(tier, 0))


_admission: Admission | None = None


def admission() -> Admission:
    global _admission
    if _admission is None:
        _admission = Admission()
    return _admission


def admission_reset() -> None:
    """Forget the averages, counters and probed slots (tests)."""
    global _admission
    _admission = None
    loop_lag_reset()
    _slots.clear()
    _probes.clear()
