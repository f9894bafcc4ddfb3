"""Protocol adapters: parse a request into a `ToolCall`, render decisions back.

- `rest`: REST tools (`POST /tools/{name}`) and any REST API (generic routes);
- `mcp`: MCP `tools/call` over streamable HTTP (plain JSON or SSE replies);
- `model`: OpenAI-compatible model calls (`/v1/chat/completions`, `/v1/embeddings`).
The pipeline (`chaosproxy.proxy.pipeline`) drives every call the same way.
"""
