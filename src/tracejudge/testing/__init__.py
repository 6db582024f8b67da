"""A scripted, OpenAI-, Anthropic- and Gemini-compatible LLM HTTP server for tests and offline
demos.

:class:`ScriptedLLMServer` listens on ``127.0.0.1`` (a free port chosen at start) and answers
each model call with the next reply from a FIFO queue of scripted :class:`Reply` objects (or
callables producing one).  The same reply renders in whichever wire format the endpoint needs:

* ``POST /v1/chat/completions`` -- OpenAI Chat Completions (also ``"stream": true`` SSE)
* ``POST /v1/responses``        -- OpenAI Responses API (also ``"stream": true`` SSE)
* ``POST /v1/messages``         -- Anthropic Messages API (also ``"stream": true`` SSE)
* ``POST /v1beta/models/{model}:generateContent`` -- Gemini API (and
  ``:streamGenerateContent?alt=sse``); point ``google-genai`` at :attr:`ScriptedLLMServer.url`
  with ``http_options=types.HttpOptions(base_url=server.url)``
* ``GET /v1/models``            -- a one-entry model list containing ``scripted-model``

Point real SDK clients at it::

    with ScriptedLLMServer([Reply.text("hello")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        anthropic_client = anthropic.Anthropic(base_url=server.url, api_key="test")

The package uses only the standard library and imports nothing else of tracejudge.

Layout
------

* ``_replies``   -- the script's vocabulary: :class:`Reply`, :class:`ToolCall`,
  :class:`RecordedRequest`, :func:`token_logprobs`.
* ``_server``    -- the core: lifecycle, queue, recorded requests, delays, error replies
  (with ``Retry-After``) and raw replies, the in-flight counter, ids, routing.
* ``_loopback``  -- the HTTP/1.1 socket server (``TCP_NODELAY``, one write per response,
  chunked SSE).
* ``_rendered``  -- a rendered response, and the JSON / SSE shapes renderers build.
* ``_renderer``  -- the :class:`Renderer` base and the helpers renderers share (usage
  estimate, streaming pieces, OpenAI error body).
* ``_openai_chat``, ``_openai_responses``, ``_anthropic_messages``, ``_gemini`` -- one
  renderer per API.

Adding a route
--------------

1. In a new module ``_<api>.py``, subclass ``Renderer``: set ``route`` to the path suffix
   (and ``method`` if not ``POST``), implement ``complete(reply, body) -> Rendered`` and, when
   the API streams, ``stream(reply, body)`` (``render`` picks one by the body's
   ``"stream"``; override ``render`` or ``matches`` for other dispatch).  Override ``error``
   when the API's error body is not OpenAI's.  Build bodies with ``json_response`` and
   events with ``sse`` / ``sse_response``; take ids from ``self.next_id(prefix)``.
2. Add the class to ``RENDERERS`` in ``_server.py`` (first match wins), or serve it from a
   subclass: ``class MyServer(ScriptedLLMServer): renderers = (*RENDERERS, MyRenderer)``.
3. Test it in ``tests/test_testing_server.py`` with the provider's real SDK.

The core already handles everything that is not a wire format: the queue and callables,
recorded requests, ``Reply.delay``, ``Reply.error`` (through the renderer's ``error``),
``Reply.raw``, the in-flight counter, and the 404 / empty-queue answers.
"""

from __future__ import annotations

from tracejudge.testing._cassettes import Cassette, CassetteServer, RecordedExchange
from tracejudge.testing._replies import RecordedRequest, Reply, ToolCall, token_logprobs
from tracejudge.testing._server import ScriptedLLMServer

__all__ = [
    "Cassette",
    "CassetteServer",
    "RecordedExchange",
    "RecordedRequest",
    "Reply",
    "ScriptedLLMServer",
    "ToolCall",
    "token_logprobs",
]
