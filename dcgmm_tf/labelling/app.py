"""The labelling page's web application (Starlette): the page, and a small JSON API over a
:class:`~dcgmm_tf.labelling.session.LabellingSession`.

Routes: ``GET /`` the page; ``GET /api/state?annotator=...`` the session's snapshot; ``POST /api/answer`` with
``{"i", "j", "answer", "annotator"}``; ``POST /api/undo`` with ``{"annotator"}`` (or no body);
``POST /api/retrain?annotator=...``;
``GET /api/sample/{index}`` one training sample (a PNG for images, the feature view as JSON otherwise). ``annotator``
names the person (optional, "" names nobody). Every error is a JSON ``{"error": message}`` with a 4xx status (507
when the disk is full, 500 for a bug) and is logged; no traceback reaches the browser. Paths never come from a
request.
"""

from __future__ import annotations

import json
import logging
from importlib import resources
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from dcgmm_tf.labelling import render
from dcgmm_tf.labelling.answers import AnswerError, check_annotator
from dcgmm_tf.labelling.session import LabellingSession
from dcgmm_tf.storage import DiskFullError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 16  # a request body of the API is a few dozen bytes


def _error(status: int, message: str) -> JSONResponse:
    log.warning("labelling page: %d %s", status, message)
    return JSONResponse({"error": message}, status_code=status)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    return _error(error.status_code, str(error.detail))


async def _server_error(request: Request, error: Exception) -> JSONResponse:
    log.exception("labelling page: %s %s failed", request.method, request.url.path, exc_info=error)
    return JSONResponse({"error": f"the server failed: {type(error).__name__}: {error}"}, status_code=500)


async def _body(request: Request, required: bool = True) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body unless ``required``), or a 400/413 HTTPException."""
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise HTTPException(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    if not raw and not required:
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        raise HTTPException(400, "the request body must be JSON") from None
    if not isinstance(body, dict):
        raise HTTPException(400, "the request body must be a JSON object")
    return body


def _annotator(value: Any) -> str:
    try:
        return check_annotator("" if value is None else value)
    except ValueError as error:
        raise HTTPException(400, str(error)) from None


def _index(body: dict[str, Any], name: str, num_samples: int) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise HTTPException(400, f"{name} must be an integer sample index, got {value!r}")
    if not 0 <= value < num_samples:
        raise HTTPException(400, f"{name}={value} is outside the {num_samples} training samples")
    return value


def create_app(session: LabellingSession) -> Starlette:
    """The web application of ``session``."""
    page = resources.files("dcgmm_tf.labelling").joinpath("page.html").read_text(encoding="utf-8")
    x_train = session.x_train
    num_samples = len(x_train)
    image_shape = session.run.data.image_shape
    mean, std = (None, None) if image_shape else (x_train.mean(0), x_train.std(0))

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    def snapshot(annotator: str, status_code: int = 200) -> JSONResponse:
        return JSONResponse({**session.snapshot(annotator), "images": image_shape is not None}, status_code=status_code)

    async def state(request: Request) -> JSONResponse:
        return snapshot(_annotator(request.query_params.get("annotator")))

    async def answer(request: Request) -> JSONResponse:
        body = await _body(request)
        i, j = _index(body, "i", num_samples), _index(body, "j", num_samples)
        annotator = _annotator(body.get("annotator"))
        try:
            session.answer(i, j, body.get("answer"), annotator)
        except AnswerError as error:
            return _error(409, str(error))
        except ValueError as error:
            return _error(400, str(error))
        except DiskFullError as error:
            return _error(507, f"the answer was not recorded: {error}")
        return snapshot(annotator)

    async def undo(request: Request) -> JSONResponse:
        annotator = _annotator((await _body(request, required=False)).get("annotator"))
        try:
            if session.undo(annotator) is None:
                return _error(409, "there is no answer to undo")
        except DiskFullError as error:
            return _error(507, f"the answer was not undone: {error}")
        return snapshot(annotator)

    async def retrain(request: Request) -> JSONResponse:
        try:
            session.retrain()
        except RuntimeError as error:
            return _error(409, str(error))
        return snapshot(_annotator(request.query_params.get("annotator")), status_code=202)

    async def sample(request: Request) -> Response:
        index = request.path_params["index"]
        if not 0 <= index < num_samples:
            raise HTTPException(404, f"sample {index} is outside the {num_samples} training samples")
        if image_shape:
            return Response(render.image_png(x_train[index], image_shape), media_type="image/png")
        return JSONResponse(render.feature_view(np.asarray(x_train[index]), mean, std))

    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/state", state),
            Route("/api/answer", answer, methods=["POST"]),
            Route("/api/undo", undo, methods=["POST"]),
            Route("/api/retrain", retrain, methods=["POST"]),
            Route("/api/sample/{index:int}", sample),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
