"""The calibration harness: gold sets, metrics with intervals, certified bands, cards, studies."""
