"""Prometheus gauges of the human handoff, read from the database at scrape time and
served with the other figures at ``/metrics`` (registered in releases' registry by
``DeskConfig.ready``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from chatbot.handoff import handoff_figures

# Handoffs are rare next to replies (about one conversation in ten): a day is the
# shortest window in which the rates mean something.
WINDOW = timedelta(hours=24)


class HandoffCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        figures = handoff_figures(since=timezone.now() - WINDOW)
        gauges = (
            (
                "tierdesk_handoff_intervention_ratio",
                "Conversations handed to a person / all conversations, last 24 h",
                figures.intervention_rate,
            ),
            (
                "tierdesk_handoff_first_reply_seconds",
                "Mean time from joining the queue to the person's first message, last 24 h",
                figures.first_reply_s,
            ),
            (
                "tierdesk_handoff_handle_seconds",
                "Mean time from claim to resolve, last 24 h",
                figures.handle_s,
            ),
            (
                "tierdesk_handoff_queued",
                "Conversations waiting for a person now",
                figures.queued_now,
            ),
            ("tierdesk_agents_online", "Support agents online now", figures.agents_online),
        )
        for name, text, value in gauges:
            gauge = GaugeMetricFamily(name, text)
            if value is not None:
                gauge.add_metric([], float(value))
            yield gauge
        csat = GaugeMetricFamily(
            "tierdesk_csat_by_responder_ratio",
            "Share of satisfied ratings, bot replies vs a person's, last 24 h",
            labels=["responder"],
        )
        for who, value in (("bot", figures.csat_bot), ("human", figures.csat_human)):
            if value is not None:
                csat.add_metric([who], value)
        yield csat


COLLECTOR = HandoffCollector()
