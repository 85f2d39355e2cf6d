"""pygls's JSON-RPC protocol, hardened for a long editing session.

- A request whose params do not deserialize (a negative line, a line of 2**40,
  `[]` instead of an object) gets an InvalidParams error response; pygls only
  logs it, and the client waits forever.
- The future of every finished handler leaves `_request_futures`; pygls keeps
  the one of each notification (didChange...) forever, about 3 KB per edit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _UndeserializableRequest:
    """Stands for a request pygls could not structure; answered with `error`."""

    id: Any
    method: str
    error: JsonRpcException
    jsonrpc: str = "2.0"


class RobustProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "method" in data and isinstance(data.get("id"), (int, str)):
                error = exc if isinstance(exc, JsonRpcInvalidParams) else JsonRpcInvalidParams()
                if exc.__cause__ is not None:
                    error = JsonRpcInvalidParams(message=f"Invalid Params for {data['method']}: "
                                                 f"{type(exc.__cause__).__name__}")
                return _UndeserializableRequest(data["id"], str(data["method"]), error)
            raise

    def handle_message(self, message: Any):
        if isinstance(message, _UndeserializableRequest):
            logger.warning("refusing %s request %r: its params do not deserialize", message.method, message.id)
            self._send_response(message.id, error=message.error.to_response_error())
            return
        super().handle_message(message)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        def finished(future: Any) -> None:
            try:
                callback(future)
            finally:
                # A cancelled future is popped by whoever cancelled it ($/cancelRequest),
                # or belongs to shutdown, which is iterating over the dict right now.
                if not future.cancelled() and self._request_futures.get(msg_id) is future:
                    self._request_futures.pop(msg_id, None)

        super()._execute_handler(msg_id, handler, finished, args, kwargs)
