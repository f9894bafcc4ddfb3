"""What a new user lists first: tasks (`chaosproxy tasks`), and a domain's tools in OpenAI's
format through the proxy (`GET /{domain}/tools?format=openai`), on a real proxy and service."""

from __future__ import annotations

import json

import httpx
import openai.types.chat as chat_types
import pydantic
import pytest
from click.testing import CliRunner

import chaosproxy
from chaosproxy.cli import main

pytestmark = pytest.mark.timeout(300)


def test_tasks_lists_ids_texts_and_l_min_as_json() -> None:
    done = CliRunner().invoke(main, ["tasks", "--domain", "travel", "--json"])
    assert done.exit_code == 0, done.output
    listed = json.loads(done.output)
    assert {t["domain"] for t in listed} == {"travel"} and len(listed) == 16
    first = next(t for t in listed if t["id"] == "travel-01-book-named-flight")
    assert first["l_min"] == 2 and "Ana Ruiz" in first["description"]


def test_tasks_refuses_an_unknown_domain_naming_it() -> None:
    done = CliRunner().invoke(main, ["tasks", "--domain", "nope"])
    assert done.exit_code == 2 and "nope" in done.output


def test_tool_listing_in_openai_format_through_the_proxy() -> None:
    with chaosproxy.Environment(domains=["travel"], profile="lambda0.0") as env:
        base = env.endpoints("list")["travel"].rest
        listed = httpx.get(f"{base}/tools", params={"format": "openai"}, timeout=10)
        wrong = httpx.get(f"{base}/tools", params={"format": "anthropic"}, timeout=10)
    assert listed.status_code == 200
    tools = listed.json()
    names = {t["function"]["name"] for t in tools}
    assert {"search_flights", "hold_flight", "escalate_to_human"} <= names
    adapter = pydantic.TypeAdapter(list[chat_types.ChatCompletionToolParam])
    adapter.validate_python(tools)  # what openai's client accepts as `tools=`
    search = next(t for t in tools if t["function"]["name"] == "search_flights")
    assert search["function"]["parameters"]["type"] == "object"
    assert wrong.status_code == 400 and "anthropic" in wrong.json()["error"]["message"]
