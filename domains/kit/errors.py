"""The one error shape of both transports: `{"error": {type, message, field?, fields?}}`."""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.schemas import FieldProblem
from pydantic import BaseModel


class ErrorDetail(BaseModel):
    """`field`/`fields` name bad input; `status`, `retry_after` and `request_id` appear on
    errors the proxy injects (and on MCP error results' `_meta`). Other keys may follow."""

    type: str
    message: str
    field: str | None = None
    fields: list[FieldProblem] | None = None
    status: int | None = None
    retry_after: float | None = None
    request_id: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class KitError(Exception):
    """A request the kit refuses (bad input, unknown name, domain refusal, tool bug)."""

    def __init__(
        self,
        status: int,
        type: str,
        message: str,
        *,
        field: str | None = None,
        fields: list[FieldProblem] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.field = field
        self.fields = fields

    def body(self) -> dict[str, Any]:
        """The error as JSON carries it: a message quoting odd text (a lone surrogate a tool
        echoed) is escaped, so the error itself never fails to encode."""
        message = self.message.encode("utf-8", "backslashreplace").decode("utf-8")
        detail = ErrorDetail(type=self.type, message=message, field=self.field, fields=self.fields)
        return ErrorBody(error=detail).model_dump(mode="json", exclude_none=True)
