"""The one error shape of both transports: `{"error": {type, message, field?, fields?}}`."""

from __future__ import annotations

from typing import Any

from chaosproxy.domains.kit.schemas import FieldProblem
from pydantic import BaseModel


class ErrorDetail(BaseModel):
    type: str
    message: str
    field: str | None = None
    fields: list[FieldProblem] | None = None


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
        detail = ErrorDetail(
            type=self.type, message=self.message, field=self.field, fields=self.fields
        )
        return ErrorBody(error=detail).model_dump(mode="json", exclude_none=True)
