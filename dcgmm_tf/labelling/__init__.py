"""Labelling: a person answers the pairs that active selection asks about, on a local web page.

Modules: ``answers`` (the questions and answers on disk), ``session`` (the rounds and the training between them),
``render`` (a sample as an image or a feature view) and ``app`` (the Starlette application). Served by
``python -m experiments.label``.
"""

from dcgmm_tf.labelling.answers import AnswerBook, AnswerError
from dcgmm_tf.labelling.session import LabellingSession

__all__ = ["AnswerBook", "AnswerError", "LabellingSession"]
