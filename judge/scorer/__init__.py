"""judge as an Inspect AI scorer: ``inspect score LOG --scorer judge/calibrated -S ...``.

:mod:`judge.scorer.calibrated` holds the ``@scorer`` (it imports inspect_ai, from the
``calibrated-judge[inspect]`` extra, and is loaded only by Inspect, through the ``inspect_ai``
entry point named ``judge``); :mod:`judge.scorer.verdicts` judges and routes one case and says
what Score to return, without inspect_ai. A sample becomes a case exactly as ``judge import``
makes it (:func:`judge.traces.inspect_case`).
"""

from judge.scorer.verdicts import GRADER_FAILED, MARK, NEEDS_REVIEW, CalibratedJudge, ScoreParts

__all__ = ["GRADER_FAILED", "MARK", "NEEDS_REVIEW", "CalibratedJudge", "ScoreParts"]
